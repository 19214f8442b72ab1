// Product categories (contract: Product category): the catalog taxonomy, a
// tree through `parent_id` (no cycles), `icon`, an image, and counts of
// active products: `product_count` (pointing at the category itself) and
// `product_count_including_descendants` (its whole subtree), which is what
// `has_products=true` filters on.
import { z } from 'zod';
import { transaction, type Client, type Queryable } from '../../db/pool.ts';
import { insertRow, iso, updateRow } from '../../db/rows.ts';
import { isObjectId } from '../../lib/objectid.ts';
import { deleteMedia } from '../../storage/media.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { listPage, paginationQuery, queryBoolean } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { freeSlug, imageUrlSchema, nameSchema, optionalText, resolveIdOrSlug, slugSchema, uniqueViolation } from './catalog-fields.ts';

const TABLE = { table: 'product_categories' };
const MAX_DEPTH = 20;

const categoryFields = {
  name: nameSchema,
  slug: slugSchema.optional().describe('Por defecto se deriva del nombre; único en la empresa'),
  description: optionalText(5000),
  parent_id: z.string().refine(isObjectId, 'no es un ObjectId válido').nullable().optional().describe('Categoría padre; null para una raíz'),
  icon: z
    .string()
    .trim()
    .regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, 'nombre de símbolo de icono: minúsculas, dígitos, - _ .')
    .nullable()
    .optional()
    .describe('Nombre de un símbolo de icono (por ejemplo shirt, local_cafe)'),
  position: z.number().int().min(0).max(100_000).optional(),
  image_url: imageUrlSchema.describe('Imagen por URL; para subir un archivo usa POST /product-categories/{id}/image'),
};

export const categoryCreate = z.strictObject(categoryFields);
export const categoryUpdate = z.strictObject(categoryFields).partial();
type CategoryWrite = z.infer<typeof categoryUpdate>;

export const categorySchema = z.object({
  id: z.string(),
  name: z.string(),
  slug: z.string(),
  description: z.string().nullable(),
  parent_id: z.string().nullable(),
  icon: z.string().nullable(),
  position: z.number().int(),
  image_url: z.string().nullable(),
  thumbnail_url: z.string().nullable(),
  product_count: z.number().int().describe('Productos activos que apuntan a esta categoría'),
  product_count_including_descendants: z.number().int().describe('Productos activos en toda la subcategoría'),
  children_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});

type Counts = { direct: number; total: number; children: number };

/** Counts for a page of categories in one query: the subtree of each, then active products per node. */
async function categoryCounts(db: Queryable, companyId: string, ids: string[]): Promise<Map<string, Counts>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query(
    `WITH RECURSIVE tree AS (
       SELECT id AS root, id, 0 AS depth FROM product_categories WHERE company_id = $1 AND id = ANY($2)
       UNION
       SELECT t.root, c.id, t.depth + 1 FROM product_categories c JOIN tree t ON c.parent_id = t.id
        WHERE c.company_id = $1 AND t.depth < ${MAX_DEPTH}
     )
     SELECT t.root,
            coalesce(sum(n.count) FILTER (WHERE t.id = t.root), 0)::int AS direct,
            coalesce(sum(n.count), 0)::int AS total,
            (count(*) FILTER (WHERE t.depth = 1))::int AS children
       FROM tree t
       CROSS JOIN LATERAL (SELECT count(*) FROM products p
                            WHERE p.company_id = $1 AND p.product_category_id = t.id AND p.status = 'active') n
      GROUP BY t.root`,
    [companyId, ids],
  );
  return new Map(rows.map((r) => [r.root, { direct: r.direct, total: r.total, children: r.children }]));
}

/**
 * Ids of the categories whose subtree holds an active product (the
 * `has_products` filter): the categories active products point at, then
 * every ancestor of them. The first part is a loose index scan over
 * products_active_category (011): one index descent per populated category,
 * instead of reading every active product of the company (a DISTINCT over
 * 100,000 rows on each request).
 */
export async function categoriesWithActiveProducts(db: Queryable, companyId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `WITH RECURSIVE populated AS (
       (SELECT product_category_id AS id FROM products
         WHERE company_id = $1 AND status = 'active' AND product_category_id IS NOT NULL
         ORDER BY product_category_id LIMIT 1)
       UNION ALL
       SELECT (SELECT p.product_category_id FROM products p
                WHERE p.company_id = $1 AND p.status = 'active' AND p.product_category_id > populated.id
                ORDER BY p.product_category_id LIMIT 1)
         FROM populated WHERE populated.id IS NOT NULL
     ), up AS (
       SELECT id FROM populated WHERE id IS NOT NULL
       UNION
       SELECT c.parent_id FROM product_categories c JOIN up ON c.id = up.id
        WHERE c.company_id = $1 AND c.parent_id IS NOT NULL
     )
     SELECT id FROM up`,
    [companyId],
  );
  return rows.map((r) => r.id);
}

export function serializeCategory(row: Record<string, any>, counts: Counts | undefined) {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    description: row.description,
    parent_id: row.parent_id,
    icon: row.icon,
    position: row.position,
    image_url: row.image_url,
    thumbnail_url: row.thumbnail_url,
    product_count: counts?.direct ?? 0,
    product_count_including_descendants: counts?.total ?? 0,
    children_count: counts?.children ?? 0,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export async function loadCategory(db: Queryable, companyId: string, id: string) {
  const { rows } = await db.query('SELECT * FROM product_categories WHERE company_id = $1 AND id = $2', [companyId, id]);
  if (!rows[0]) throw new ApiError('not_found');
  return serializeCategory(rows[0], (await categoryCounts(db, companyId, [id])).get(id));
}

/** Serialises hierarchy changes per company, so two concurrent moves cannot build a cycle together. */
async function lockTree(client: Client, companyId: string): Promise<void> {
  await client.query(`SELECT pg_advisory_xact_lock(hashtext('product_categories:' || $1))`, [companyId]);
}

async function checkParent(client: Client, companyId: string, parentId: string, selfId: string | null): Promise<void> {
  const { rows } = await client.query(
    `WITH RECURSIVE up AS (
       SELECT id, parent_id, 0 AS depth FROM product_categories WHERE company_id = $1 AND id = $2
       UNION
       SELECT c.id, c.parent_id, up.depth + 1 FROM product_categories c JOIN up ON c.id = up.parent_id
        WHERE c.company_id = $1 AND up.depth < 100
     )
     SELECT count(*)::int AS n, bool_or(id = $3) AS cycle, max(depth)::int AS depth FROM up`,
    [companyId, parentId, selfId],
  );
  if (rows[0].n === 0) throw validationFailed({ parent_id: ['no existe'] });
  if (rows[0].cycle) throw validationFailed({ parent_id: ['crearía un ciclo: la categoría no puede colgar de sí misma ni de una descendiente'] });
  // A moved category brings its subtree along: the deepest descendant lands
  // `height` levels below it. Checking the parent's ancestors alone let a
  // move build a tree deeper than MAX_DEPTH (the counts walk stops there).
  const height = selfId ? await subtreeHeight(client, companyId, selfId) : 0;
  const deepest = rows[0].depth + 2 + height; // levels from the root: the parent's ancestors, the parent, self, its subtree
  if (deepest > MAX_DEPTH) {
    throw validationFailed({
      parent_id: [`la jerarquía no puede tener más de ${MAX_DEPTH} niveles (con sus descendientes, la categoría llegaría a ${deepest})`],
    });
  }
}

/** Levels below a category (0 without children); the walk stops past MAX_DEPTH, which already says "too deep". */
async function subtreeHeight(client: Client, companyId: string, id: string): Promise<number> {
  const { rows } = await client.query(
    `WITH RECURSIVE down AS (
       SELECT id, 0 AS depth FROM product_categories WHERE company_id = $1 AND id = $2
       UNION
       SELECT c.id, down.depth + 1 FROM product_categories c JOIN down ON c.parent_id = down.id
        WHERE c.company_id = $1 AND down.depth <= ${MAX_DEPTH}
     )
     SELECT max(depth)::int AS height FROM down`,
    [companyId, id],
  );
  return rows[0].height ?? 0;
}

async function categoryColumns(client: Client, companyId: string, data: CategoryWrite, existing: Record<string, any> | null) {
  const { slug, parent_id, image_url, ...fields } = data;
  const values: Record<string, unknown> = { ...fields };
  if (parent_id !== undefined) {
    if (parent_id !== null) await checkParent(client, companyId, parent_id, existing?.id ?? null);
    values.parent_id = parent_id;
  }
  if (image_url !== undefined) {
    if (existing) await deleteMedia(client, companyId, [existing.image_media_id]);
    Object.assign(values, { image_url, thumbnail_url: null, image_media_id: null });
  }
  if (slug !== undefined || !existing) {
    values.slug = await freeSlug(client, 'product_categories', companyId, { explicit: slug, name: data.name ?? existing?.name }, existing?.id);
  }
  return values;
}

export const categoryListQuery = paginationQuery.extend({
  has_products: queryBoolean.optional().describe('true: solo categorías con al menos un producto activo en su subárbol; false: solo las que no tienen'),
  parent_id: z.string().refine(isObjectId, 'invalid_id').optional().describe('Solo las hijas directas de esta categoría'),
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
    cache: 'product_categories',
    status: 200,
    errors: ['invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId }) => {
      const populated = query.has_products === undefined ? undefined : await categoriesWithActiveProducts(ctx.deps.pool, companyId);
      const page = await listPage<Record<string, any>>(
        ctx.deps.pool,
        ctx.deps.totals,
        {
          table: 'product_categories',
          columns: '*',
          companyId,
          where: (p) => {
            const conditions: string[] = [];
            if (populated) {
              const ids = `${p.add(populated)}::text[]`;
              conditions.push(query.has_products ? `id = ANY(${ids})` : `NOT (id = ANY(${ids}))`);
            }
            if (query.parent_id) conditions.push(`parent_id = ${p.add(query.parent_id)}`);
            return conditions;
          },
          serialize: (row) => row,
        },
        query,
      );
      const rows = page.data as Array<Record<string, any>>;
      const counts = await categoryCounts(ctx.deps.pool, companyId, rows.map((r) => r.id));
      return { data: rows.map((row) => serializeCategory(row, counts.get(row.id))), meta: page.meta };
    },
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
    handler: async (ctx, { data, companyId }) => {
      const category = await transaction(ctx.deps.pool, async (client) => {
        await lockTree(client, companyId);
        const row = await insertRow<{ id: string }>(client, TABLE, companyId, await categoryColumns(client, companyId, data, null)).catch(uniqueViolation);
        return loadCategory(client, companyId, row.id);
      });
      return { data: category };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/product-categories/:id',
    scope: 'read-product_categories',
    tag: 'Product categories',
    summary: 'Obtiene una categoría (por id o slug)',
    params: { id: 'id_or_slug' },
    response: categorySchema,
    status: 200,
    errors: ['not_found'],
    handler: async (ctx, { params, companyId }) => {
      const id = await resolveIdOrSlug(ctx.deps.pool, 'product_categories', companyId, params.id);
      return { data: await loadCategory(ctx.deps.pool, companyId, id) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/product-categories/:id',
    scope: 'update-product_categories',
    tag: 'Product categories',
    summary: 'Actualiza una categoría',
    description: 'Un `parent_id` que crearía un ciclo (la propia categoría o una descendiente) se rechaza con 422.',
    params: { id: 'id_or_slug' },
    body: categoryUpdate,
    example: { name: 'Ropa y accesorios' },
    response: categorySchema,
    status: 200,
    errors: ['not_found', 'validation_failed'],
    handler: async (ctx, { params, data, companyId }) => {
      const category = await transaction(ctx.deps.pool, async (client) => {
        await lockTree(client, companyId);
        const id = await resolveIdOrSlug(client, 'product_categories', companyId, params.id, { lock: true });
        const { rows } = await client.query('SELECT * FROM product_categories WHERE id = $1', [id]);
        await updateRow(client, TABLE, companyId, id, await categoryColumns(client, companyId, data, rows[0])).catch(uniqueViolation);
        return loadCategory(client, companyId, id);
      });
      return { data: category };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/product-categories/:id',
    scope: 'delete-product_categories',
    tag: 'Product categories',
    summary: 'Elimina una categoría',
    description: 'Sus subcategorías pasan a colgar del padre de la eliminada; sus productos quedan sin categoría.',
    params: { id: 'id_or_slug' },
    status: 204,
    errors: ['not_found'],
    handler: async (ctx, { params, companyId }) => {
      await transaction(ctx.deps.pool, async (client) => {
        await lockTree(client, companyId);
        const id = await resolveIdOrSlug(client, 'product_categories', companyId, params.id, { lock: true });
        const { rows } = await client.query('SELECT parent_id, image_media_id FROM product_categories WHERE id = $1', [id]);
        await client.query('UPDATE product_categories SET parent_id = $3, updated_at = now() WHERE company_id = $1 AND parent_id = $2', [
          companyId,
          id,
          rows[0].parent_id,
        ]);
        await deleteMedia(client, companyId, [rows[0].image_media_id]);
        await client.query('DELETE FROM product_categories WHERE company_id = $1 AND id = $2', [companyId, id]);
      });
      return undefined;
    },
  }),
];
