// Products (contract: Product, Products endpoint table). The list filters by
// text (`q`/`search`), brand and category (ids and slugs, comma lists); the
// detail path takes an id, slug or sku; nested variants, option types,
// components and stock are written in the product's transaction.
import { z } from 'zod';
import { transaction, type Client, type Queryable } from '../../db/pool.ts';
import { insertRow, updateRow } from '../../db/rows.ts';
import { deleteMedia, productMediaIds } from '../../storage/media.ts';
import { mergeCustomProperties } from '../custom-properties.ts';
import { ApiError, validationFailed, type FieldErrors } from '../errors.ts';
import { likePattern, listPage, paginationQuery, type Params } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { freeSlug, resolveIdOrSlug, splitIdsAndSlugs, uniqueViolation, type IdsAndSlugs } from './catalog-fields.ts';
import {
  PRODUCT_RESERVED,
  PRODUCT_STATUSES,
  productCreate,
  productDetailSchema,
  productExample,
  productSchema,
  productUpdate,
  type ProductWrite,
} from './product-schemas.ts';
import {
  loadProductDetail,
  PRODUCT_COLUMNS,
  serializeProduct,
  writeComponents,
  writeInventory,
  writeOptionTypes,
  writeVariants,
} from './product-store.ts';

/** Search plan choice (see the list handler): 1% density or more is "common". */
const SEARCH_PROBE_ROWS = 2000;
const SEARCH_DENSE_MATCHES = 20;

const TABLE = { table: 'products', jsonColumns: new Set(['prices_cents', 'images', 'custom_properties']) };

const filterValue = z
  .string()
  .max(4000)
  .optional()
  .transform((v) => (v && v.trim() ? v : undefined));

export const productListQuery = paginationQuery.extend({
  q: z.string().trim().max(200).optional().describe('Búsqueda de texto en nombre, SKU y marca'),
  search: z.string().trim().max(200).optional().describe('Alias de q; se ignora si q está presente'),
  brand: filterValue.describe('Una o varias marcas separadas por comas: ObjectIds o slugs, mezclados'),
  brand_id: filterValue.describe('Alias de brand; se ignora si brand está presente'),
  category: filterValue.describe('Una o varias categorías separadas por comas: ObjectIds o slugs, mezclados'),
  product_category_id: filterValue.describe('Alias de category; se ignora si category está presente'),
  status: z.enum(PRODUCT_STATUSES).optional().describe('Solo productos con ese estado'),
});

/** Maps a write payload to product columns (brand snapshot, slug, custom properties, image by URL). */
async function productColumns(
  client: Client,
  companyId: string,
  data: ProductWrite,
  existing: Record<string, any> | null,
): Promise<Record<string, unknown>> {
  const {
    custom_properties,
    variants: _v,
    option_types: _o,
    components: _c,
    inventory: _i,
    currency: _cur,
    price_cents: _pc,
    brand_id,
    product_category_id,
    slug,
    image_url,
    images,
    ...fields
  } = data;
  const values: Record<string, unknown> = { ...fields };
  const errors: FieldErrors = {};
  if (brand_id !== undefined) {
    if (brand_id === null) Object.assign(values, { brand_id: null, brand_name: null, brand_slug: null });
    else {
      const { rows } = await client.query('SELECT id, name, slug FROM brands WHERE company_id = $1 AND id = $2', [companyId, brand_id]);
      if (!rows[0]) errors.brand_id = ['no existe'];
      else Object.assign(values, { brand_id, brand_name: rows[0].name, brand_slug: rows[0].slug });
    }
  }
  if (product_category_id !== undefined) {
    if (product_category_id !== null) {
      const { rowCount } = await client.query('SELECT 1 FROM product_categories WHERE company_id = $1 AND id = $2', [companyId, product_category_id]);
      if (!rowCount) errors.product_category_id = ['no existe'];
    }
    values.product_category_id = product_category_id;
  }
  if (Object.keys(errors).length) throw validationFailed(errors);
  if (slug !== undefined || !existing) {
    values.slug = await freeSlug(client, 'products', companyId, { explicit: slug, name: data.name ?? existing?.name }, existing?.id);
  }
  if (image_url !== undefined) {
    if (existing) await deleteMedia(client, companyId, [existing.image_media_id]);
    Object.assign(values, { image_url, thumbnail_url: null, image_media_id: null });
  }
  if (images !== undefined) values.images = images.map((img, i) => ({ url: img.url, alt: img.alt ?? null, position: img.position ?? i }));
  if (custom_properties !== undefined) {
    values.custom_properties = mergeCustomProperties(existing?.custom_properties ?? {}, custom_properties, PRODUCT_RESERVED);
  }
  return values;
}

/**
 * Category ids and slugs resolved to this company's category ids in one
 * query, before the page query. The page then filters on
 * `product_category_id = ANY($ids)`, which the products_category index
 * answers in page order; a slug matched by a subquery inside the filter
 * instead ran once per product row walked (a rare category read the whole
 * company). Another company's id or slug resolves to nothing.
 */
async function resolveCategoryIds(db: Queryable, companyId: string, { ids, slugs }: IdsAndSlugs): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM product_categories WHERE company_id = $1 AND (id = ANY($2::text[]) OR slug = ANY($3::text[]))',
    [companyId, ids, slugs],
  );
  return rows.map((r) => r.id);
}

/**
 * Brand ids match `brand_id`, brand slugs match the snapshot `brand_slug` on
 * the product (contract). Only the kinds present in the list are tested: an
 * `OR` with an always-empty array still keeps the planner from walking one
 * index (products_brand or products_brand_slug) in page order.
 */
function brandCondition(p: Params, { ids, slugs }: IdsAndSlugs): string {
  const parts: string[] = [];
  if (ids.length) parts.push(`brand_id = ANY(${p.add(ids)}::text[])`);
  if (slugs.length) parts.push(`brand_slug = ANY(${p.add(slugs)}::text[])`);
  return parts.length ? `(${parts.join(' OR ')})` : 'false';
}

async function writeNested(client: Client, companyId: string, productId: string, data: ProductWrite): Promise<void> {
  if (data.variants) await writeVariants(client, companyId, productId, data.variants);
  if (data.option_types) await writeOptionTypes(client, companyId, productId, data.option_types);
  if (data.components) await writeComponents(client, companyId, productId, data.components);
  if (data.inventory) await writeInventory(client, companyId, productId, data.inventory);
}

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
    handler: async (ctx, { query, companyId }) => {
      const term = query.q || query.search || undefined;
      // The alias is ignored when the main name is present; a list over 100 values is 400 (named as sent).
      const brand = query.brand ? splitIdsAndSlugs(query.brand, 'brand') : query.brand_id ? splitIdsAndSlugs(query.brand_id, 'brand_id') : undefined;
      const category = query.category
        ? splitIdsAndSlugs(query.category, 'category')
        : query.product_category_id
          ? splitIdsAndSlugs(query.product_category_id, 'product_category_id')
          : undefined;
      const categoryIds = category ? await resolveCategoryIds(ctx.deps.pool, companyId, category) : undefined;
      const list = (db: Queryable) => listPage(
        db,
        ctx.deps.totals,
        {
          table: 'products',
          columns: PRODUCT_COLUMNS,
          companyId,
          searching: !!term,
          where: (p) => {
            const conditions: string[] = [];
            if (term) conditions.push(`search_text ILIKE ${p.add(likePattern(term))}`);
            if (brand) conditions.push(brandCondition(p, brand));
            // An empty set (only unknown or foreign values) matches no row: the filter is never dropped.
            if (categoryIds) conditions.push(`product_category_id = ANY(${p.add(categoryIds)}::text[])`);
            if (query.status) conditions.push(`status = ${p.add(query.status)}`);
            return conditions;
          },
          serialize: serializeProduct,
        },
        query,
      );
      if (!term) return list(ctx.deps.pool);
      // A text search has two good plans and the planner cannot tell which:
      // it does not know how common the term is. For a common term, walking
      // the page index and filtering finds a page in a few hundred rows; for a
      // rare or absent one that walk reads the whole company (≈100 ms at
      // 100,000 products) while the trigram GIN index answers in time
      // proportional to the matches. So we measure: count matches among the
      // newest SEARCH_PROBE_ROWS products (one short index walk). Dense: keep
      // the planner's walk. Sparse: forbid plain index and sequential scans
      // for this transaction, which leaves the trigram bitmap.
      const { rows } = await ctx.deps.pool.query(
        `SELECT count(*)::int AS n FROM (SELECT search_text FROM products WHERE company_id = $1
           ORDER BY created_at DESC, id DESC LIMIT ${SEARCH_PROBE_ROWS}) newest WHERE search_text ILIKE $2`,
        [companyId, likePattern(term)],
      );
      if (rows[0].n >= SEARCH_DENSE_MATCHES) return list(ctx.deps.pool);
      return transaction(ctx.deps.pool, async (client) => {
        await client.query('SET LOCAL enable_indexscan = off');
        await client.query('SET LOCAL enable_seqscan = off');
        return list(client);
      });
    },
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
    handler: async (ctx, { data, companyId }) => {
      const product = await transaction(ctx.deps.pool, async (client) => {
        const row = await insertRow<{ id: string }>(client, TABLE, companyId, await productColumns(client, companyId, data, null)).catch(uniqueViolation);
        await writeNested(client, companyId, row.id, data);
        return loadProductDetail(client, companyId, row.id);
      });
      return { data: product };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/products/:id',
    scope: 'read-products',
    tag: 'Products',
    summary: 'Obtiene un producto (por id, slug o sku)',
    params: { id: 'id_or_slug' },
    response: productDetailSchema,
    status: 200,
    errors: ['not_found'],
    handler: async (ctx, { params, companyId }) => {
      const id = await resolveIdOrSlug(ctx.deps.pool, 'products', companyId, params.id, { sku: true });
      const product = await loadProductDetail(ctx.deps.pool, companyId, id);
      if (!product) throw new ApiError('not_found');
      return { data: product };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/products/:id',
    scope: 'update-products',
    tag: 'Products',
    summary: 'Actualiza un producto y sus elementos anidados',
    description: 'Variantes, tipos de opción (y sus valores) y componentes se emparejan por `id`; `_destroy: true` elimina; sin `id` se crean. Todo en una transacción.',
    params: { id: 'id_or_slug' },
    body: productUpdate,
    example: { name: 'Playera básica v2' },
    response: productDetailSchema,
    status: 200,
    errors: ['not_found', 'validation_failed'],
    handler: async (ctx, { params, data, companyId }) => {
      const product = await transaction(ctx.deps.pool, async (client) => {
        const id = await resolveIdOrSlug(client, 'products', companyId, params.id, { sku: true, lock: true });
        const { rows } = await client.query('SELECT * FROM products WHERE id = $1', [id]);
        await updateRow(client, TABLE, companyId, id, await productColumns(client, companyId, data, rows[0])).catch(uniqueViolation);
        await writeNested(client, companyId, id, data);
        return loadProductDetail(client, companyId, id);
      });
      return { data: product };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/products/:id',
    scope: 'delete-products',
    tag: 'Products',
    summary: 'Elimina un producto, sus variantes, existencias e imágenes',
    params: { id: 'id_or_slug' },
    status: 204,
    errors: ['not_found'],
    handler: async (ctx, { params, companyId }) => {
      await transaction(ctx.deps.pool, async (client) => {
        const id = await resolveIdOrSlug(client, 'products', companyId, params.id, { sku: true, lock: true });
        await deleteMedia(client, companyId, await productMediaIds(client, companyId, id));
        await client.query('DELETE FROM products WHERE company_id = $1 AND id = $2', [companyId, id]);
      });
      return undefined;
    },
  }),
];
