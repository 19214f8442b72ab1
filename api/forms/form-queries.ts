// Reads of forms and their submissions for the REST routes (api/routes/forms.ts).
// Writes of submissions are in submissions.ts; form definitions are written by
// operators (api/admin/forms.ts).
import { SUBMISSION_COLUMNS, type FormRow, type SubmissionRow } from '../../db/forms.ts';
import type { Queryable } from '../../db/pool.ts';
import { ApiError } from '../errors.ts';
import { idOrSlugMatch } from '../../db/tables.ts';

/** A form of the company by id or slug, or null. */
export async function findForm(db: Queryable, companyId: string, idOrSlug: string): Promise<FormRow | null> {
  const { rows } = await db.query<FormRow>(
    `SELECT * FROM forms WHERE company_id = $1 AND ${idOrSlugMatch(idOrSlug, '$2')}`,
    [companyId, idOrSlug],
  );
  return rows[0] ?? null;
}

/** Like findForm; another company's form, or none, is 404 not_found. */
export async function requireForm(db: Queryable, companyId: string, idOrSlug: string): Promise<FormRow> {
  const form = await findForm(db, companyId, idOrSlug);
  if (!form) throw new ApiError('not_found');
  return form;
}

export async function findSubmission(db: Queryable, companyId: string, formId: string, id: string): Promise<SubmissionRow | null> {
  const { rows } = await db.query<SubmissionRow>(`SELECT ${SUBMISSION_COLUMNS} FROM form_submissions WHERE company_id = $1 AND form_id = $2 AND id = $3`, [
    companyId,
    formId,
    id,
  ]);
  return rows[0] ?? null;
}
