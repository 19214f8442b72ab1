// Operator procedures for forms (`wsctl form create/update --file form.json`):
// forms are read-only in the REST API, so this is the only way to write one.
// The file is validated by the same schema that documents it (definition.ts).
import type { Pool, Queryable } from '../../db/pool.ts';
import { transaction } from '../../db/pool.ts';
import { objectId } from '../../lib/objectid.ts';
import { formColumns, formFileSchema, serializeForm, type FormRow } from '../forms/definition.ts';
import { firstFreeSlug, slugify } from '../../lib/slug.ts';
import { ApiError } from '../errors.ts';
import { getCompany } from './companies.ts';

/** Parses a form file; problems become one operator-readable message listing each path. */
export function parseFormFile(input: unknown) {
  const result = formFileSchema.safeParse(input);
  if (result.success) return result.data;
  const lines = result.error.issues.map((i) => `${i.path.map(String).join('.') || '(file)'}: ${i.message}`);
  throw new ApiError('validation_failed', `Invalid form file: ${lines.join('; ')}`);
}

/** A form slug free in the company (lib/slug.ts firstFreeSlug; the caller holds the company's `slug:forms:<company>` advisory lock). */
async function uniqueSlug(db: Queryable, companyId: string, wanted: string, exceptId: string | null): Promise<string> {
  const { rows } = await db.query('SELECT slug FROM forms WHERE company_id = $1 AND (slug = $2 OR slug LIKE $3) AND id IS DISTINCT FROM $4', [
    companyId,
    wanted,
    `${wanted}-%`,
    exceptId,
  ]);
  return firstFreeSlug(wanted, new Set(rows.map((r) => r.slug)));
}

export async function createForm(pool: Pool, companyId: string, file: unknown) {
  const parsed = parseFormFile(file);
  await getCompany(pool, companyId);
  return transaction(pool, async (db) => {
    // Slug choices of the company's forms take turns (as freeSlug does for the catalog): two creates
    // with one slug get a clash answer, not a unique violation.
    await db.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`slug:forms:${companyId}`]);
    const c = formColumns(parsed);
    if (c.slug) {
      const clash = await db.query('SELECT 1 FROM forms WHERE company_id = $1 AND slug = $2', [companyId, c.slug]);
      if (clash.rowCount) throw new ApiError('conflict', `A form with slug ${c.slug} already exists in this company`);
    }
    const slug = c.slug ?? (await uniqueSlug(db, companyId, slugify(c.name, { maxLength: 48, fallback: 'formulario' }), null));
    const { rows } = await db.query(
      `INSERT INTO forms (id, company_id, name, slug, locales, default_locale, title_translations, description_translations, active, fields, post_actions)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
      [objectId(), companyId, c.name, slug, c.locales, c.default_locale, c.title_translations, c.description_translations, c.active,
        JSON.stringify(c.fields), JSON.stringify(c.post_actions)],
    );
    return adminForm(rows[0]);
  });
}

/**
 * Replaces the definition whole (the file is the form); slug, id and counters stay unless the file sets
 * a slug, and the post-actions stay unless the file has `post_actions`: the REST read carries none, so a
 * read edited and sent back would otherwise switch them off.
 */
export async function updateForm(pool: Pool, formId: string, file: unknown) {
  parseFormFile(file);
  return transaction(pool, async (db) => {
    const existing = (await db.query<FormRow>('SELECT * FROM forms WHERE id = $1 FOR UPDATE', [formId])).rows[0];
    if (!existing) throw new ApiError('not_found', `Form ${formId} not found`);
    const keepPostActions = !Object.hasOwn(file as object, 'post_actions');
    const c = formColumns(keepPostActions ? parseFormFile({ ...(file as object), post_actions: existing.post_actions }) : parseFormFile(file));
    if (c.slug && c.slug !== existing.slug) {
      await db.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`slug:forms:${existing.company_id}`]);
      const clash = await db.query('SELECT 1 FROM forms WHERE company_id = $1 AND slug = $2 AND id <> $3', [existing.company_id, c.slug, formId]);
      if (clash.rowCount) throw new ApiError('conflict', `A form with slug ${c.slug} already exists in this company`);
    }
    const { rows } = await db.query(
      `UPDATE forms SET name = $2, slug = $3, locales = $4, default_locale = $5, title_translations = $6, description_translations = $7,
              active = $8, fields = $9, post_actions = $10, updated_at = now()
        WHERE id = $1 RETURNING *`,
      [formId, c.name, c.slug ?? existing.slug, c.locales, c.default_locale, c.title_translations, c.description_translations, c.active,
        JSON.stringify(c.fields), JSON.stringify(c.post_actions)],
    );
    return adminForm(rows[0]);
  });
}

/** The Form read plus what operators also set (company and post-actions). */
function adminForm(row: FormRow) {
  return { ...serializeForm(row), company_id: row.company_id, post_actions: row.post_actions };
}
