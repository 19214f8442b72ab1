// Slugs of tenant resources addressed by id or slug (products, categories,
// brands): picking a free slug, resolving a path value to a row id, and
// turning the UNIQUE index's verdict into a 422.
import type { Queryable } from '../../db/pool.ts';
import { slugify } from '../../lib/slug.ts';
import { ApiError, validationFailed } from '../errors.ts';

/** Tables with a `slug` unique per company; identifiers from code only. A new id-or-slug resource adds its table here. */
export type SlugTable = 'products' | 'brands' | 'product_categories' | 'booking_links';

/**
 * A slug free in the company: the explicit one must be free (else 422); one
 * derived from the name gets `-2`, `-3`… Under concurrency the UNIQUE index
 * still decides (see uniqueViolation).
 */
export async function freeSlug(
  db: Queryable,
  table: SlugTable,
  companyId: string,
  wanted: { explicit?: string; name: string },
  exceptId?: string,
): Promise<string> {
  const taken = async (slug: string) =>
    (await db.query(`SELECT 1 FROM ${table} WHERE company_id = $1 AND slug = $2 AND id IS DISTINCT FROM $3`, [companyId, slug, exceptId ?? null]))
      .rowCount! > 0;
  if (wanted.explicit) {
    if (await taken(wanted.explicit)) throw validationFailed({ slug: ['ya está en uso en la empresa'] });
    return wanted.explicit;
  }
  const base = slugify(wanted.name, { maxLength: 80, fallback: 'item' });
  for (let n = 1; n < 50; n++) {
    const candidate = n === 1 ? base : `${base}-${n}`;
    if (!(await taken(candidate))) return candidate;
  }
  return `${base}-${Date.now().toString(36)}`;
}

/** Turns a UNIQUE violation on slug/sku into 422 validation_failed; rethrows anything else. */
export function uniqueViolation(error: unknown): never {
  const pgError = error as { code?: string; constraint?: string };
  if (pgError?.code === '23505') {
    const field = pgError.constraint?.includes('sku') ? 'sku' : 'slug';
    throw validationFailed({ [field]: ['ya está en uso en la empresa'] });
  }
  throw error;
}

/** Resolves an id-or-slug path value to the row id within the company; 404 when none matches. */
export async function resolveIdOrSlug(
  db: Queryable,
  table: SlugTable,
  companyId: string,
  value: string,
  options: { sku?: boolean; lock?: boolean } = {},
): Promise<string> {
  const sku = options.sku ? ' OR sku = $2' : '';
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM ${table} WHERE company_id = $1 AND (id = $2 OR slug = $2${sku})
      ORDER BY (id = $2) DESC, (slug = $2) DESC LIMIT 1${options.lock ? ' FOR UPDATE' : ''}`,
    [companyId, value],
  );
  if (!rows[0]) throw new ApiError('not_found');
  return rows[0].id;
}
