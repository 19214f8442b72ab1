// Brand queries: read with product counts, write (a rename reaches the
// brand snapshot on its products), delete. Every function takes the pool or
// its caller's transaction client first.
import type { Client, Queryable } from '../../db/pool.ts';
import { insertRow, updateRow } from '../../db/tables.ts';
import { iso } from '../../db/timestamps.ts';
import { deleteMedia, imageUrlColumns, LOGO_COLUMNS, ownThumbnail } from '../../storage/media-items.ts';
import { flattenCustomProperties, mergeCustomProperties } from '../custom-properties.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { likePattern, listPage, searchTerm, textMatch, type ListMeta, type TotalsCache } from '../pagination.ts';
import { BRAND_RESERVED, type BrandListQuery, type BrandWrite, type brandSchema } from './brand-schemas.ts';
import { freeSlug, slugOrSkuTaken } from './slug-queries.ts';
import type { z } from 'zod';

export type BrandRow = {
  id: string;
  company_id: string;
  name: string;
  slug: string;
  description: string | null;
  website: string | null;
  logo_url: string | null;
  logo_thumbnail_url: string | null;
  logo_media_id: string | null;
  custom_properties: Record<string, unknown>;
  /** A Date from single reads, the API's ISO string from lists (ISO_TIMESTAMPS). */
  created_at: Date | string;
  updated_at: Date | string;
};

/** A brand as BRAND_COLUMNS reads it: with the facts of its uploaded logo (null for a logo by URL or none). */
export type BrandReadRow = BrandRow & {
  logo_media: { content_type: string; width: number; height: number; size_bytes: number } | null;
};

const TABLE = { table: 'brands', jsonColumns: new Set(['custom_properties']) };

const BRAND_COLUMNS = `brands.*,
  (SELECT json_build_object('content_type', m.content_type, 'width', m.width, 'height', m.height, 'size_bytes', m.size_bytes)
     FROM media m WHERE m.id = brands.logo_media_id) AS logo_media`;

export function serializeBrand(row: BrandReadRow, productCount: number): z.output<typeof brandSchema> {
  const media = row.logo_media;
  return flattenCustomProperties(
    {
      id: row.id,
      name: row.name,
      slug: row.slug,
      description: row.description,
      website: row.website,
      logo_url: row.logo_url,
      logo: row.logo_url
        ? {
            url: row.logo_url,
            thumbnail_url: row.logo_thumbnail_url,
            content_type: media?.content_type ?? null,
            width: media?.width ?? null,
            height: media?.height ?? null,
            size_bytes: media?.size_bytes ?? null,
          }
        : null,
      product_count: productCount,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
    },
    row.custom_properties,
    BRAND_RESERVED,
  );
}

/** One aggregation for a whole page of brands (contract, Brand: product_count). */
async function productCounts(db: Queryable, companyId: string, ids: string[]): Promise<Map<string, number>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query<{ brand_id: string; n: number }>(
    'SELECT brand_id, count(*)::int AS n FROM products WHERE company_id = $1 AND brand_id = ANY($2) GROUP BY brand_id',
    [companyId, ids],
  );
  return new Map(rows.map((r) => [r.brand_id, r.n]));
}

/** The brand as the API shows it; not_found when absent. */
export async function loadBrand(db: Queryable, companyId: string, id: string) {
  const { rows } = await db.query<BrandReadRow>(`SELECT ${BRAND_COLUMNS} FROM brands WHERE company_id = $1 AND id = $2`, [companyId, id]);
  if (!rows[0]) throw new ApiError('not_found');
  const counts = await productCounts(db, companyId, [id]);
  return serializeBrand(rows[0], counts.get(id) ?? 0);
}

/** A page of brands, `q` matching the name. */
export async function listBrands(db: Queryable, totals: TotalsCache, companyId: string, query: BrandListQuery): Promise<{ data: unknown[]; meta: ListMeta }> {
  const term = searchTerm(query);
  const page = await listPage<BrandReadRow>(
    db,
    totals,
    {
      table: 'brands',
      columns: BRAND_COLUMNS,
      companyId,
      searching: !!term,
      where: (p) => (term ? [textMatch('name', p.add(likePattern(term)))] : []),
      serialize: (row) => row,
    },
    query,
  );
  const rows = page.data as BrandReadRow[];
  const counts = await productCounts(db, companyId, rows.map((r) => r.id));
  return { data: rows.map((row) => serializeBrand(row, counts.get(row.id) ?? 0)), meta: page.meta };
}

/** Maps a write payload to brand columns (slug, custom properties, logo by URL). */
async function brandColumns(client: Client, companyId: string, data: BrandWrite, existing: BrandRow | null): Promise<Record<string, unknown>> {
  const { custom_properties, logo, logo_url, slug, ...fields } = data;
  const values: Record<string, unknown> = { ...fields };
  if (logo !== undefined && logo_url !== undefined && logo !== logo_url) {
    throw validationFailed({ logo: ['logo y logo_url son sinónimos; envía solo uno'] });
  }
  const url = logo_url !== undefined ? logo_url : logo;
  // The stored URL sent back (a record written back as read), or the upload's under another name, is no
  // change: the uploaded logo stays (imageUrlColumns).
  if (url !== undefined) {
    const logoColumns = await imageUrlColumns(client, companyId, url, existing, LOGO_COLUMNS);
    if (logoColumns === 'own_thumbnail') throw validationFailed({ [logo_url !== undefined ? 'logo_url' : 'logo']: [ownThumbnail('logo_url')] });
    Object.assign(values, logoColumns);
  }
  if (slug !== undefined || !existing) {
    values.slug = await freeSlug(client, 'brands', companyId, { explicit: slug, name: data.name ?? existing!.name }, existing?.id);
  }
  if (custom_properties !== undefined) {
    values.custom_properties = mergeCustomProperties(existing?.custom_properties ?? {}, custom_properties, BRAND_RESERVED);
  }
  return values;
}

/** Creates the brand; returns its id. */
export async function createBrand(client: Client, companyId: string, data: BrandWrite): Promise<string> {
  const row = await insertRow<BrandRow>(client, TABLE, companyId, await brandColumns(client, companyId, data, null)).catch(slugOrSkuTaken);
  return row.id;
}

/** Applies a PATCH to the (locked) brand; a new name or slug is copied into its products' brand snapshot. */
export async function updateBrand(client: Client, companyId: string, id: string, data: BrandWrite): Promise<void> {
  const { rows } = await client.query<BrandRow>('SELECT * FROM brands WHERE id = $1', [id]);
  const before = rows[0];
  const row = (await updateRow<BrandRow>(client, TABLE, companyId, id, await brandColumns(client, companyId, data, before)).catch(slugOrSkuTaken))!;
  if (row.name !== before.name || row.slug !== before.slug) {
    await client.query('UPDATE products SET brand_name = $3, brand_slug = $4, updated_at = now() WHERE company_id = $1 AND brand_id = $2', [
      companyId,
      id,
      row.name,
      row.slug,
    ]);
  }
}

/** Deletes the (locked) brand and its logo's files; its products are left without a brand. */
export async function deleteBrand(client: Client, companyId: string, id: string): Promise<void> {
  const { rows } = await client.query<Pick<BrandRow, 'logo_media_id'>>('SELECT logo_media_id FROM brands WHERE id = $1', [id]);
  await client.query(
    'UPDATE products SET brand_id = NULL, brand_name = NULL, brand_slug = NULL, updated_at = now() WHERE company_id = $1 AND brand_id = $2',
    [companyId, id],
  );
  await deleteMedia(client, companyId, [rows[0].logo_media_id]);
  await client.query('DELETE FROM brands WHERE company_id = $1 AND id = $2', [companyId, id]);
}
