// Slugs of tenant resources addressed by id or slug (products, categories,
// brands, booking links; SlugTable): picking a free slug, resolving a path value to a row id, and
// turning the UNIQUE index's verdict into a 422.
import type { Queryable } from '../../db/pool.ts';
import { idOrSlugMatch } from '../../db/tables.ts';
import { isObjectId } from '../../lib/objectid.ts';
import { slugCandidates, slugify } from '../../lib/slug.ts';
import { ApiError, validationFailed } from '../errors.ts';

/** Tables with a `slug` unique per company; identifiers from code only. A new id-or-slug resource adds its table here. */
export type SlugTable = 'products' | 'brands' | 'product_categories' | 'booking_links';

/**
 * A slug free in the company: the explicit one must be free (else 422); one
 * derived from the name gets `-2`, `-3`… (lib/slug.ts slugCandidates: never
 * shaped like an ObjectId, so it cannot be read as another record's id). Slug choices of one table and company take turns on a
 * transaction lock (call inside the write's transaction), so each sees the
 * slugs committed before it and none gets a 422 for a slug it never sent.
 */
export async function freeSlug(
  db: Queryable,
  table: SlugTable,
  companyId: string,
  wanted: { explicit?: string; name: string },
  exceptId?: string,
): Promise<string> {
  // Every slug choice of the company's table takes turns (derived or explicit, whatever the base: a
  // derived `taza-2` may meet another name's base or an explicit slug), so none sees a slug another
  // transaction is about to insert; held to the transaction's end. Creates of one table and company
  // serialize from here on, which these catalog writes can afford.
  await db.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`slug:${table}:${companyId}`]);
  const taken = async (slug: string) =>
    (await db.query(`SELECT 1 FROM ${table} WHERE company_id = $1 AND slug = $2 AND id IS DISTINCT FROM $3`, [companyId, slug, exceptId ?? null]))
      .rowCount! > 0;
  if (wanted.explicit) {
    if (await taken(wanted.explicit)) throw validationFailed({ slug: ['ya está en uso en la empresa'] });
    return wanted.explicit;
  }
  // One indexed lookup per candidate (a catalog may have thousands of slugs starting with the base).
  const base = slugify(wanted.name, { maxLength: 80, fallback: 'item' });
  let tries = 0;
  for (const candidate of slugCandidates(base)) {
    if (++tries > 50) break;
    if (!(await taken(candidate))) return candidate;
  }
  return `${base}-${Date.now().toString(36)}`;
}

/** A UNIQUE violation of a slug or sku as 422 validation_failed naming it (the constraint says which); anything else rethrown. */
export function slugOrSkuTaken(error: unknown): never {
  const pgError = error as { code?: string; constraint?: string };
  if (pgError?.code === '23505') {
    const field = pgError.constraint?.includes('sku') ? 'sku' : 'slug';
    throw validationFailed({ [field]: ['ya está en uso en la empresa'] });
  }
  throw error;
}

/**
 * Resolves an id-or-slug path value to the row id within the company; 404
 * when none matches. A value shaped like an ObjectId is an id and only an id:
 * were it also tried as a slug or sku, a retried DELETE of a deleted record
 * could reach another record whose slug or sku spells that id.
 */
export async function resolveIdOrSlug(
  db: Queryable,
  table: SlugTable,
  companyId: string,
  value: string,
  options: { sku?: boolean; lock?: boolean } = {},
): Promise<string> {
  // A sku is matched as written (it is stored as written); a slug lowercased, as it is stored. An exact
  // slug comes first, then an exact sku, then a slug only case-folding matched: `TAZA-1` is the product
  // whose sku it is, not the one whose slug is taza-1.
  const bySku = options.sku && !isObjectId(value);
  const match = bySku ? 'slug = lower($2) OR sku = $2' : idOrSlugMatch(value, '$2');
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM ${table} WHERE company_id = $1 AND (${match})
      ORDER BY (slug = $2) DESC${bySku ? ', (sku = $2) DESC NULLS LAST' : ''} LIMIT 1${options.lock ? ' FOR UPDATE' : ''}`,
    [companyId, value],
  );
  if (!rows[0]) throw new ApiError('not_found');
  return rows[0].id;
}
