// Brands at /brands, shaped like /product-categories (DESIGN.md). The
// contract's scope list has no brand slug, so brands use the `products`
// scopes (read-products, create-products…): a brand is part of the product
// catalog, and inventing `*-brands` scopes would grant nothing a documented
// key could hold (docs/catalog.md). SQL: brand-queries.ts.
import { transaction } from '../../db/pool.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { createBrand, deleteBrand, listBrands, loadBrand, updateBrand } from './brand-queries.ts';
import { brandCreate, brandListQuery, brandSchema, brandUpdate } from './brand-schemas.ts';
import { idOrSlugResource } from './id-or-slug-resource.ts';

const brand = idOrSlugResource({
  path: '/brands',
  table: 'brands',
  scopeResource: 'products',
  tag: 'Brands',
  response: brandSchema,
  summaries: {
    read: 'Obtiene una marca (por id o slug)',
    update: 'Actualiza una marca',
    delete: 'Elimina una marca (sus productos quedan sin marca)',
  },
  descriptions: { update: 'Un cambio de nombre o slug se copia en la marca desnormalizada de sus productos, en la misma transacción.' },
  updateBody: brandUpdate,
  updateExample: { name: 'Acme 2' },
  load: loadBrand,
  update: updateBrand,
  remove: deleteBrand,
  image: {
    segment: 'logo',
    owner: 'brand',
    fields: ['logo', 'file', 'image'],
    summaries: { upload: 'Sube el logo de una marca', remove: 'Quita el logo de una marca' },
    answer: 'record',
  },
});

export const brandRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/brands',
    scope: 'read-products',
    tag: 'Brands',
    summary: 'Lista marcas',
    query: brandListQuery,
    response: brandSchema,
    list: true,
    cache: 'brands',
    status: 200,
    errors: ['invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) => listBrands(db, ctx.deps.totals, companyId, query),
  }),
  defineRoute({
    method: 'POST',
    path: '/brands',
    scope: 'create-products',
    tag: 'Brands',
    summary: 'Crea una marca',
    body: brandCreate,
    example: { name: 'Acme', logo_url: 'https://cdn.example.com/acme.png', custom_properties: [{ key: 'pais', value: 'MX' }] },
    response: brandSchema,
    status: 201,
    errors: ['validation_failed', 'parameter_missing', 'idempotency_key_reused'],
    handler: async (ctx, { data, companyId, db }) => {
      const created = await transaction(db, async (client) => loadBrand(client, companyId, await createBrand(client, companyId, data)));
      return { data: created };
    },
  }),
  ...brand.routes,
];

/** POST and DELETE /brands/:id/logo: they answer the whole brand. */
export const brandImageRoutes: RouteDef[] = brand.imageRoutes;
