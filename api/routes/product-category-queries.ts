// Product category queries: the tree through `parent_id` (no cycles, at most
// MAX_DEPTH levels), counts of active products per category and subtree, and
// writes. Every function takes the pool or its caller's transaction client
// first; writers of the tree take lockCategoryTree first.
import type { Client, Queryable } from '../../db/pool.ts';
import { insertRow, updateRow } from '../../db/tables.ts';
import { iso } from '../../db/timestamps.ts';
import { deleteMedia, imageUrlColumns, ownThumbnail } from '../../storage/media-items.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { listPage, type ListMeta, type TotalsCache } from '../pagination.ts';
import type { CategoryListQuery, CategoryWrite, categorySchema } from './product-category-schemas.ts';
import { freeSlug, slugOrSkuTaken } from './slug-queries.ts';
import type { z } from 'zod';

export type CategoryRow = {
  id: string;
  company_id: string;
  name: string;
  slug: string;
  description: string | null;
  parent_id: string | null;
  icon: string | null;
  position: number;
  image_url: string | null;
  thumbnail_url: string | null;
  image_media_id: string | null;
  /** A Date from single reads, the API's ISO string from lists (ISO_TIMESTAMPS). */
  created_at: Date | string;
  updated_at: Date | string;
};

const TABLE = { table: 'product_categories' };
const MAX_DEPTH = 20;

type Counts = { direct: number; total: number; children: number };

/** Counts for a page of categories in one query: the subtree of each, then active products per node. */
async function categoryCounts(db: Queryable, companyId: string, ids: string[]): Promise<Map<string, Counts>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<Counts & { root: string }>(
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

export function serializeCategory(row: CategoryRow, counts: Counts | undefined): z.output<typeof categorySchema> {
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

/** The category as the API shows it; not_found when absent. */
export async function loadCategory(db: Queryable, companyId: string, id: string) {
  const { rows } = await db.query<CategoryRow>('SELECT * FROM product_categories WHERE company_id = $1 AND id = $2', [companyId, id]);
  if (!rows[0]) throw new ApiError('not_found');
  return serializeCategory(rows[0], (await categoryCounts(db, companyId, [id])).get(id));
}

/** A page of categories, filtered by `has_products` and `parent_id`. */
export async function listCategories(db: Queryable, totals: TotalsCache, companyId: string, query: CategoryListQuery): Promise<{ data: unknown[]; meta: ListMeta }> {
  const populated = query.has_products === undefined ? undefined : await categoriesWithActiveProducts(db, companyId);
  const page = await listPage<CategoryRow>(
    db,
    totals,
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
  const rows = page.data as CategoryRow[];
  const counts = await categoryCounts(db, companyId, rows.map((r) => r.id));
  return { data: rows.map((row) => serializeCategory(row, counts.get(row.id))), meta: page.meta };
}

/** Serialises hierarchy changes per company, so two concurrent moves cannot build a cycle together. Taken before any row lock. */
export async function lockCategoryTree(client: Client, companyId: string): Promise<void> {
  await client.query(`SELECT pg_advisory_xact_lock(hashtext('product_categories:' || $1))`, [companyId]);
}

async function checkParent(client: Client, companyId: string, parentId: string, selfId: string | null): Promise<void> {
  const { rows } = await client.query<{ n: number; cycle: boolean | null; depth: number | null }>(
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
  const deepest = rows[0].depth! + 2 + height; // levels from the root: the parent's ancestors, the parent, self, its subtree
  if (deepest > MAX_DEPTH) {
    throw validationFailed({
      parent_id: [`la jerarquía no puede tener más de ${MAX_DEPTH} niveles (con sus descendientes, la categoría llegaría a ${deepest})`],
    });
  }
}

/** Levels below a category (0 without children); the walk stops past MAX_DEPTH, which already says "too deep". */
async function subtreeHeight(client: Client, companyId: string, id: string): Promise<number> {
  const { rows } = await client.query<{ height: number | null }>(
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

/** Maps a write payload to category columns (parent checked, slug, image by URL). */
async function categoryColumns(client: Client, companyId: string, data: CategoryWrite, existing: CategoryRow | null): Promise<Record<string, unknown>> {
  const { slug, parent_id, image_url, ...fields } = data;
  const values: Record<string, unknown> = { ...fields };
  if (parent_id !== undefined) {
    if (parent_id !== null) await checkParent(client, companyId, parent_id, existing?.id ?? null);
    values.parent_id = parent_id;
  }
  // The stored URL sent back (a record written back as read), or the upload's under another name, is no
  // change: the uploaded image stays (imageUrlColumns).
  if (image_url !== undefined) {
    const image = await imageUrlColumns(client, companyId, image_url, existing);
    if (image === 'own_thumbnail') throw validationFailed({ image_url: [ownThumbnail('image_url')] });
    Object.assign(values, image);
  }
  if (slug !== undefined || !existing) {
    values.slug = await freeSlug(client, 'product_categories', companyId, { explicit: slug, name: data.name ?? existing!.name }, existing?.id);
  }
  return values;
}

/** Creates the category under the tree lock; returns its id. */
export async function createCategory(client: Client, companyId: string, data: CategoryWrite): Promise<string> {
  await lockCategoryTree(client, companyId);
  const row = await insertRow<CategoryRow>(client, TABLE, companyId, await categoryColumns(client, companyId, data, null)).catch(slugOrSkuTaken);
  return row.id;
}

/** Applies a PATCH to the (locked) category; the caller holds the tree lock. */
export async function updateCategory(client: Client, companyId: string, id: string, data: CategoryWrite): Promise<void> {
  const { rows } = await client.query<CategoryRow>('SELECT * FROM product_categories WHERE id = $1', [id]);
  await updateRow(client, TABLE, companyId, id, await categoryColumns(client, companyId, data, rows[0])).catch(slugOrSkuTaken);
}

/** Deletes the (locked) category and its image's files; its children move up to its parent, its products lose their category. */
export async function deleteCategory(client: Client, companyId: string, id: string): Promise<void> {
  const { rows } = await client.query<Pick<CategoryRow, 'parent_id' | 'image_media_id'>>(
    'SELECT parent_id, image_media_id FROM product_categories WHERE id = $1',
    [id],
  );
  await client.query('UPDATE product_categories SET parent_id = $3, updated_at = now() WHERE company_id = $1 AND parent_id = $2', [
    companyId,
    id,
    rows[0].parent_id,
  ]);
  await deleteMedia(client, companyId, [rows[0].image_media_id]);
  // The foreign key would clear it too, but leave updated_at behind: a client syncing on it must see the change.
  await client.query('UPDATE products SET product_category_id = NULL, updated_at = now() WHERE company_id = $1 AND product_category_id = $2', [companyId, id]);
  await client.query('DELETE FROM product_categories WHERE company_id = $1 AND id = $2', [companyId, id]);
}
