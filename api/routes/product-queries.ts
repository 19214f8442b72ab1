// Product queries: the product row (write, delete, list with its filters and
// search plan) and the detail with everything it shows. Every function takes
// the pool or its caller's transaction client first. The nested items
// (variants, option types, components, stock) are written by
// product-item-queries.ts.
import { transaction, type Client, type Queryable } from '../../db/pool.ts';
import { insertRow, updateRow } from '../../db/tables.ts';
import { iso } from '../../db/timestamps.ts';
import { deleteMedia, imageUrlColumns, ownThumbnail, productMediaIds } from '../../storage/media-items.ts';
import { flattenCustomProperties, mergeCustomProperties } from '../custom-properties.ts';
import { ApiError, validationFailed, type FieldErrors } from '../errors.ts';
import { likePattern, listPage, searchTerm, type ListMeta, type PaginationQuery, type Params, type TotalsCache } from '../pagination.ts';
import { splitIdsAndSlugs, type IdsAndSlugs } from './catalog-fields.ts';
import type { ProductListQuery, productSchema } from './product-schemas.ts';
import { writeProductItems } from './product-item-queries.ts';
import { PRODUCT_RESERVED, type ProductWrite } from './product-schemas.ts';
import { freeSlug, resolveIdOrSlug, slugOrSkuTaken } from './slug-queries.ts';
import type { z } from 'zod';

/** A timestamptz: a Date from single reads, the API's ISO string from lists (ISO_TIMESTAMPS). */
type Timestamp = Date | string;
type Cents = Record<string, number>;

export type ProductImage = { url: string; alt?: string | null; position?: number };

export type ProductRow = {
  id: string;
  company_id: string;
  name: string;
  slug: string;
  sku: string | null;
  description: string | null;
  status: 'active' | 'archived';
  unit: string | null;
  prices_cents: Cents;
  vat_rate: number;
  vat_exempt: boolean;
  prices_include_vat: boolean;
  sat_product_key: string | null;
  sat_unit_key: string | null;
  brand_id: string | null;
  /** Brand snapshot, rewritten when the brand changes. */
  brand_name: string | null;
  brand_slug: string | null;
  product_category_id: string | null;
  image_url: string | null;
  thumbnail_url: string | null;
  image_media_id: string | null;
  images: ProductImage[];
  custom_properties: Record<string, unknown>;
  search_text: string;
  created_at: Timestamp;
  updated_at: Timestamp;
};

/** A product as PRODUCT_COLUMNS reads it: with its category's reference. */
export type ProductReadRow = ProductRow & { category: { id: string; name: string; slug: string } | null };

export type VariantRow = {
  id: string;
  company_id: string;
  product_id: string;
  name: string;
  sku: string | null;
  /** Empty: the variant inherits the product's prices. */
  prices_cents: Cents;
  position: number;
  image_url: string | null;
  thumbnail_url: string | null;
  image_media_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export type OptionValue = { id: string; name: string; extra_price_cents: number; position: number };

export type OptionTypeRow = {
  id: string;
  company_id: string;
  product_id: string;
  name: string;
  position: number;
  values: OptionValue[];
  created_at: Timestamp;
  updated_at: Timestamp;
};

export type ComponentRow = {
  id: string;
  company_id: string;
  product_id: string;
  name: string;
  component_product_id: string | null;
  quantity: number;
  required: boolean;
  extra_prices_cents: Cents;
  position: number;
  created_at: Timestamp;
  updated_at: Timestamp;
};

/** On-hand quantity of the product (`variant_id` '') or a variant at one location (`rack` '' for none). */
export type StockRow = { warehouse: string; rack: string; variant_id: string; quantity: number };

const TABLE = { table: 'products', jsonColumns: new Set(['prices_cents', 'images', 'custom_properties']) };

/** Select list for products: the category reference comes from its table, so a rename shows at once. */
export const PRODUCT_COLUMNS = `products.*,
  (SELECT json_build_object('id', c.id, 'name', c.name, 'slug', c.slug) FROM product_categories c
    WHERE c.company_id = products.company_id AND c.id = products.product_category_id) AS category`;

export function serializeProduct(row: ProductReadRow): z.output<typeof productSchema> {
  const images = (row.images ?? [])
    .map((img, i) => ({ url: img.url, alt: img.alt ?? null, position: img.position ?? i }))
    .sort((a, b) => a.position - b.position);
  return flattenCustomProperties(
    {
      id: row.id,
      name: row.name,
      slug: row.slug,
      sku: row.sku,
      description: row.description,
      status: row.status,
      unit: row.unit,
      prices_cents: row.prices_cents,
      vat_rate: row.vat_rate,
      vat_exempt: row.vat_exempt,
      prices_include_vat: row.prices_include_vat,
      sat_product_key: row.sat_product_key,
      sat_unit_key: row.sat_unit_key,
      brand_id: row.brand_id,
      // The snapshot's name and slug are written with brand_id (productColumns), never without it.
      brand: row.brand_id ? { id: row.brand_id, name: row.brand_name!, slug: row.brand_slug! } : null,
      product_category_id: row.product_category_id,
      product_category: row.category ?? null,
      category_name: row.category?.name ?? null,
      image_url: row.image_url,
      thumbnail_url: row.thumbnail_url,
      images,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
    },
    row.custom_properties,
    PRODUCT_RESERVED,
  );
}

type Warehouse = { warehouse: string; quantity: number; racks: Array<{ rack: string | null; variant_id: string | null; quantity: number }> };

/** The detail: the product plus variants, option types, components and stock (quantities only); not_found when absent. */
export async function loadProductDetail(db: Queryable, companyId: string, id: string) {
  const { rows } = await db.query<ProductReadRow>(`SELECT ${PRODUCT_COLUMNS} FROM products WHERE company_id = $1 AND id = $2`, [companyId, id]);
  if (!rows[0]) throw new ApiError('not_found');
  // Sequential on purpose: `db` may be one transaction client, which runs one query at a time.
  const variants = await db.query<VariantRow>('SELECT * FROM product_variants WHERE product_id = $1 ORDER BY position, id', [id]);
  const optionTypes = await db.query<OptionTypeRow>('SELECT * FROM product_option_types WHERE product_id = $1 ORDER BY position, id', [id]);
  const components = await db.query<ComponentRow>('SELECT * FROM product_components WHERE product_id = $1 ORDER BY position, id', [id]);
  const stock = await db.query<StockRow>(
    'SELECT warehouse, rack, variant_id, quantity FROM product_stock WHERE product_id = $1 ORDER BY warehouse, rack, variant_id',
    [id],
  );
  const warehouses = new Map<string, Warehouse>();
  let total = 0;
  for (const s of stock.rows) {
    const w = warehouses.get(s.warehouse) ?? { warehouse: s.warehouse, quantity: 0, racks: [] };
    w.quantity += s.quantity;
    w.racks.push({ rack: s.rack || null, variant_id: s.variant_id || null, quantity: s.quantity });
    warehouses.set(s.warehouse, w);
    total += s.quantity;
  }
  return {
    ...serializeProduct(rows[0]),
    variants: variants.rows.map((v) => ({
      id: v.id,
      name: v.name,
      sku: v.sku,
      prices_cents: v.prices_cents,
      position: v.position,
      image_url: v.image_url,
      thumbnail_url: v.thumbnail_url,
    })),
    option_types: optionTypes.rows.map((o) => ({ id: o.id, name: o.name, position: o.position, values: o.values })),
    components: components.rows.map((c) => ({
      id: c.id,
      name: c.name,
      component_product_id: c.component_product_id,
      quantity: c.quantity,
      required: c.required,
      extra_prices_cents: c.extra_prices_cents,
      position: c.position,
    })),
    inventory: { total_quantity: total, warehouses: [...warehouses.values()] },
  };
}

/** Maps a write payload to product columns (brand snapshot, slug, custom properties, image by URL). */
async function productColumns(client: Client, companyId: string, data: ProductWrite, existing: ProductRow | null): Promise<Record<string, unknown>> {
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
  // The brand snapshot (name, slug) is copied from the brand, which is held (FOR SHARE) until this write
  // commits: a rename of it waits, and then finds this product among the brand's and updates its
  // snapshot; unlocked, the rename missed a product written at the same moment, whose snapshot stayed
  // stale for good. The brand the product already has is not read again (its snapshot is the rename's
  // to keep current), so a PATCH that holds the product never waits on a rename that waits on the product.
  if (brand_id !== undefined && !(existing && existing.brand_id === brand_id)) {
    if (brand_id === null) Object.assign(values, { brand_id: null, brand_name: null, brand_slug: null });
    else {
      const { rows } = await client.query<{ name: string; slug: string }>('SELECT id, name, slug FROM brands WHERE company_id = $1 AND id = $2 FOR SHARE', [
        companyId,
        brand_id,
      ]);
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
    values.slug = await freeSlug(client, 'products', companyId, { explicit: slug, name: data.name ?? existing!.name }, existing?.id);
  }
  // The stored URL sent back (a record written back as read), or the upload's under another name, is no
  // change: the uploaded image stays (imageUrlColumns).
  if (image_url !== undefined) {
    const image = await imageUrlColumns(client, companyId, image_url, existing);
    if (image === 'own_thumbnail') throw validationFailed({ image_url: [ownThumbnail('image_url')] });
    Object.assign(values, image);
  }
  if (images !== undefined) {
    // An image sent without a position goes after those sent with one, in the order sent (as a nested
    // item without one goes after the list's), so it never takes a place a client gave another.
    let next = Math.max(-1, ...images.map((img) => img.position ?? -1)) + 1;
    values.images = images.map((img) => ({ url: img.url, alt: img.alt ?? null, position: img.position ?? next++ }));
  }
  if (custom_properties !== undefined) {
    values.custom_properties = mergeCustomProperties(existing?.custom_properties ?? {}, custom_properties, PRODUCT_RESERVED);
  }
  return values;
}

/** Creates the product with its nested items; returns its id. */
export async function createProduct(client: Client, companyId: string, data: ProductWrite): Promise<string> {
  const row = await insertRow<ProductRow>(client, TABLE, companyId, await productColumns(client, companyId, data, null)).catch(slugOrSkuTaken);
  await writeProductItems(client, companyId, row.id, data);
  return row.id;
}

/** Applies a PATCH to the (locked) product and its nested items. */
export async function updateProduct(client: Client, companyId: string, id: string, data: ProductWrite): Promise<void> {
  const { rows } = await client.query<ProductRow>('SELECT * FROM products WHERE id = $1', [id]);
  // A PATCH naming a nested list (variants, option types, components, stock: other tables) always moves
  // `updated_at`; otherwise only a change of the product's own columns does, so `{data: {}}` writes nothing.
  const nested = data.variants || data.option_types || data.components || data.inventory;
  await updateRow(client, TABLE, companyId, id, await productColumns(client, companyId, data, rows[0]), { touch: nested ? 'always' : 'changed' }).catch(slugOrSkuTaken);
  await writeProductItems(client, companyId, id, data);
}

/** Deletes the product; its variants, option types, components and stock go by cascade, its images' files here. */
export async function deleteProduct(client: Client, companyId: string, id: string): Promise<void> {
  // The variants locked before their images are read, as a variant's image upload locks its row: an
  // upload under way commits its image first and it is read here (and deleted); one after it finds its
  // variant gone. Read unlocked, an image committed in between was left stored and served.
  await client.query('SELECT 1 FROM product_variants WHERE company_id = $1 AND product_id = $2 ORDER BY id FOR UPDATE', [companyId, id]);
  await deleteMedia(client, companyId, await productMediaIds(client, companyId, id));
  // The products that use it as a component: the foreign key clears component_product_id but leaves
  // their updated_at behind, and a client syncing on it must see the change (as a deleted category's
  // or brand's products do). One being written meanwhile is skipped, not waited for: its writer holds
  // it and may be waiting for this one (a component added), and its own write moves updated_at.
  await client.query(
    `UPDATE products SET updated_at = now()
      WHERE id IN (SELECT p.id FROM products p
                    WHERE p.company_id = $1 AND p.id <> $2
                      AND EXISTS (SELECT 1 FROM product_components c WHERE c.company_id = $1 AND c.product_id = p.id AND c.component_product_id = $2)
                    ORDER BY p.id FOR UPDATE SKIP LOCKED)`,
    [companyId, id],
  );
  await client.query('DELETE FROM products WHERE company_id = $1 AND id = $2', [companyId, id]);
}

/** A variant of the product the path names (id, slug or sku); not_found unless both are the company's. */
export async function findVariant(db: Queryable, companyId: string, product: string, variantId: string): Promise<{ productId: string; variantId: string }> {
  const productId = await resolveIdOrSlug(db, 'products', companyId, product, { sku: true });
  const { rowCount } = await db.query('SELECT 1 FROM product_variants WHERE company_id = $1 AND product_id = $2 AND id = $3', [companyId, productId, variantId]);
  if (!rowCount) throw new ApiError('not_found');
  return { productId, variantId };
}

/** Search plan choice (see listProducts): 1% density or more is "common". */
const SEARCH_PROBE_ROWS = 2000;
const SEARCH_DENSE_MATCHES = 20;

export type ProductFilters = { term?: string; brand?: IdsAndSlugs; category?: IdsAndSlugs; status?: ProductRow['status'] };

type ProductFilterQuery = Pick<ProductListQuery, 'q' | 'search' | 'brand' | 'brand_id' | 'category' | 'product_category_id' | 'status'>;

/** The list's filters from its query (the REST list's, and MCP's list_products, which takes the same names); an alias is ignored when the main name is present; over 100 values is 400 (named as sent). */
export function productFilters(query: ProductFilterQuery): ProductFilters {
  return {
    term: searchTerm(query),
    brand: query.brand ? splitIdsAndSlugs(query.brand, 'brand') : query.brand_id ? splitIdsAndSlugs(query.brand_id, 'brand_id') : undefined,
    category: query.category
      ? splitIdsAndSlugs(query.category, 'category')
      : query.product_category_id
        ? splitIdsAndSlugs(query.product_category_id, 'product_category_id')
        : undefined,
    status: query.status,
  };
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

/** A page of products; an unknown or foreign brand or category matches no row (the filter is never dropped). */
export async function listProducts(
  pool: Queryable,
  totals: TotalsCache,
  companyId: string,
  filters: ProductFilters,
  page: PaginationQuery,
): Promise<{ data: unknown[]; meta: ListMeta }> {
  const { term, brand, category, status } = filters;
  const categoryIds = category ? await resolveCategoryIds(pool, companyId, category) : undefined;
  const list = (db: Queryable) =>
    listPage<ProductReadRow>(
      db,
      totals,
      {
        table: 'products',
        columns: PRODUCT_COLUMNS,
        companyId,
        searching: !!term,
        where: (p) => {
          const conditions: string[] = [];
          // search_text is stored folded (migration 102): only the term is folded here (textMatch).
          if (term) conditions.push(`search_text ILIKE fold_accents(${p.add(likePattern(term))})`);
          if (brand) conditions.push(brandCondition(p, brand));
          if (categoryIds) conditions.push(`product_category_id = ANY(${p.add(categoryIds)}::text[])`);
          if (status) conditions.push(`status = ${p.add(status)}`);
          return conditions;
        },
        serialize: serializeProduct,
      },
      page,
    );
  if (!term) return list(pool);
  // A text search has two good plans and the planner cannot tell which:
  // it does not know how common the term is. For a common term, walking
  // the page index and filtering finds a page in a few hundred rows; for a
  // rare or absent one that walk reads the whole company (≈100 ms at
  // 100,000 products) while the trigram GIN index answers in time
  // proportional to the matches. So we measure: count matches among the
  // newest SEARCH_PROBE_ROWS products (one short index walk). Dense: keep
  // the planner's walk. Sparse: forbid plain index and sequential scans
  // for this transaction, which leaves the trigram bitmap.
  const { rows } = await pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT search_text FROM products WHERE company_id = $1
       ORDER BY created_at DESC, id DESC LIMIT ${SEARCH_PROBE_ROWS}) newest WHERE search_text ILIKE fold_accents($2)`,
    [companyId, likePattern(term)],
  );
  if (rows[0].n >= SEARCH_DENSE_MATCHES) return list(pool);
  return transaction(pool, async (client) => {
    await client.query('SET LOCAL enable_indexscan = off');
    await client.query('SET LOCAL enable_seqscan = off');
    return list(client);
  });
}
