// Products (contract: Product, Products endpoint table). The list filters by
// text (`q`/`search`), brand and category (ids and slugs, comma lists); the
// detail path takes an id, slug or sku; nested variants, option types,
// components and stock are written in the product's transaction. SQL:
// product-queries.ts and product-item-queries.ts.
import { z } from 'zod';
import { transaction } from '../../db/pool.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { imageSlotRoutes, ownerImage, ownerImageSchema } from '../uploads/image-route.ts';
import { idOrSlugResource } from './id-or-slug-resource.ts';
import {
  createProduct,
  deleteProduct,
  findVariant,
  listProducts,
  loadProductDetail,
  productFilters,
  updateProduct,
} from './product-queries.ts';
import { productCreate, productDetailSchema, productExample, productListQuery, productSchema, productUpdate } from './product-schemas.ts';

const IMAGE_FIELDS = ['file', 'image'] as const;

const product = idOrSlugResource({
  path: '/products',
  table: 'products',
  bySku: true,
  scopeResource: 'products',
  tag: 'Products',
  response: productDetailSchema,
  summaries: {
    read: 'Obtiene un producto (por id, slug o sku)',
    update: 'Actualiza un producto y sus elementos anidados',
    delete: 'Elimina un producto, sus variantes, existencias e imágenes',
  },
  descriptions: {
    update: 'Variantes, tipos de opción (y sus valores) y componentes se emparejan por `id`; `_destroy: true` elimina; sin `id` se crean. Todo en una transacción.',
  },
  updateBody: productUpdate,
  updateExample: { name: 'Playera básica v2' },
  load: loadProductDetail,
  update: updateProduct,
  remove: deleteProduct,
  image: {
    segment: 'image',
    owner: 'product',
    fields: IMAGE_FIELDS,
    summaries: { upload: 'Sube la imagen principal de un producto', remove: 'Quita la imagen principal de un producto (y borra sus archivos)' },
    answer: 'image',
  },
});

export const productRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/products',
    scope: 'read-products',
    tag: 'Products',
    summary: 'Lista productos',
    description:
      'Filtros `brand`/`brand_id` y `category`/`product_category_id`: listas separadas por comas que mezclan ObjectIds y slugs; ' +
      'un valor desconocido no aporta filas (el filtro nunca se ignora); más de 100 valores es 400 invalid_parameter. ' +
      'Se combinan con `q` y con `include_filtered_total`.',
    query: productListQuery,
    response: productSchema,
    list: true,
    cache: 'products',
    status: 200,
    errors: ['invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) => listProducts(db, ctx.deps.totals, companyId, productFilters(query), query),
  }),
  defineRoute({
    method: 'POST',
    path: '/products',
    scope: 'create-products',
    tag: 'Products',
    summary: 'Crea un producto',
    description: 'Precios en `prices_cents` (mapa por moneda). `currency` y `price_cents` escalares ya no existen: se rechazan con 422.',
    body: productCreate,
    example: productExample,
    response: productDetailSchema,
    status: 201,
    errors: ['validation_failed', 'parameter_missing', 'idempotency_key_reused'],
    handler: async (ctx, { data, companyId, db }) => {
      const created = await transaction(db, async (client) => loadProductDetail(client, companyId, await createProduct(client, companyId, data)));
      return { data: created };
    },
  }),
  ...product.routes,
];

/** The product's image, then its variants' (a nested slot: the variant must be the product's). */
export const productImageRoutes: RouteDef[] = [
  ...product.imageRoutes,
  ...imageSlotRoutes({
    path: '/products/:id/variants/:variant_id/image',
    params: { id: 'id_slug_or_sku', variant_id: 'id' },
    scope: 'update-products',
    tag: 'Products',
    summaries: { upload: 'Sube la imagen de una variante', remove: 'Quita la imagen de una variante' },
    owner: 'variant',
    fields: IMAGE_FIELDS,
    filename: 'image',
    locate: async (db, companyId, params) => {
      const { productId, variantId } = await findVariant(db, companyId, params.id, params.variant_id);
      return { productId, ownerId: variantId };
    },
    response: ownerImageSchema.extend({ variant_id: z.string() }),
    answer: async (db, companyId, { productId, ownerId }, uploadedUrl) => ({
      id: productId,
      variant_id: ownerId,
      ...(await ownerImage(db, 'variant', companyId, ownerId, uploadedUrl)),
    }),
  }),
];
