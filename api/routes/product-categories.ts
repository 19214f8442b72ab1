// Product categories (contract: Product category): the catalog taxonomy, a
// tree through `parent_id` (no cycles), `icon`, an image, and counts of
// active products: `product_count` (pointing at the category itself) and
// `product_count_including_descendants` (its whole subtree), which is what
// `has_products=true` filters on. SQL: product-category-queries.ts.
import { transaction } from '../../db/pool.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { idOrSlugResource } from './id-or-slug-resource.ts';
import { createCategory, deleteCategory, listCategories, loadCategory, lockCategoryTree, updateCategory } from './product-category-queries.ts';
import { categoryCreate, categoryListQuery, categorySchema, categoryUpdate } from './product-category-schemas.ts';

const category = idOrSlugResource({
  path: '/product-categories',
  table: 'product_categories',
  scopeResource: 'product_categories',
  tag: 'Product categories',
  response: categorySchema,
  summaries: { read: 'Obtiene una categoría (por id o slug)', update: 'Actualiza una categoría', delete: 'Elimina una categoría' },
  descriptions: {
    update: 'Un `parent_id` que crearía un ciclo (la propia categoría o una descendiente) se rechaza con 422.',
    delete: 'Sus subcategorías pasan a colgar del padre de la eliminada; sus productos quedan sin categoría.',
  },
  updateBody: categoryUpdate,
  updateExample: { name: 'Ropa y accesorios' },
  writeLock: lockCategoryTree,
  load: loadCategory,
  update: updateCategory,
  remove: deleteCategory,
  image: {
    segment: 'image',
    owner: 'product_category',
    fields: ['file', 'image'],
    summaries: { upload: 'Sube la imagen de una categoría', remove: 'Quita la imagen de una categoría' },
    answer: 'image',
  },
});

export const productCategoryRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/product-categories',
    scope: 'read-product_categories',
    tag: 'Product categories',
    summary: 'Lista categorías de producto',
    query: categoryListQuery,
    response: categorySchema,
    list: true,
    // Not in the contract's covered lists (Pagination: products, brands, customers, leads, automations,
    // calendar events, bookings, booking links): never cached, no X-Cache.
    status: 200,
    errors: ['invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) => listCategories(db, ctx.deps.totals, companyId, query),
  }),
  defineRoute({
    method: 'POST',
    path: '/product-categories',
    scope: 'create-product_categories',
    tag: 'Product categories',
    summary: 'Crea una categoría de producto',
    body: categoryCreate,
    example: { name: 'Ropa', icon: 'shirt' },
    response: categorySchema,
    status: 201,
    errors: ['validation_failed', 'parameter_missing', 'idempotency_key_reused'],
    handler: async (ctx, { data, companyId, db }) => {
      const created = await transaction(db, async (client) => loadCategory(client, companyId, await createCategory(client, companyId, data)));
      return { data: created };
    },
  }),
  ...category.routes,
];

/** POST and DELETE /product-categories/:id/image. */
export const productCategoryImageRoutes: RouteDef[] = category.imageRoutes;
