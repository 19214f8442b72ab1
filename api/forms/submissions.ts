// Storing a submission (contract: Form submission; States and transitions):
// one transaction files the staged blobs in the company file manager within
// the storage quota, inserts the submission with status `received` and its
// pending post-actions, counts it on the form, and enqueues the worker job.
import { z } from 'zod';
import type { Client, Queryable } from '../../db/pool.ts';
import { iso } from '../../db/timestamps.ts';
import { objectId } from '../../lib/objectid.ts';
import { deleteBlob } from '../../storage/blobs.ts';
import { createUniqueFolder, insertFile, lockFreeBytes, pathSegment, uniqueFileName } from '../../storage/files.ts';
import { FORM_POST_ACTIONS } from '../../db/queues.ts';
import type { JobSender } from '../../db/job-sender.ts';
import type { CheckedAnswers } from './answers.ts';
import type { FormRow, Locale, SubmissionFile, SubmissionRow } from '../../db/forms.ts';

export type { SubmissionFile };
import type { StagedFile } from './intake.ts';

export const POST_ACTIONS = ['lead', 'customer', 'email', 'submitter_copy', 'notify_team'] as const;
export type PostAction = (typeof POST_ACTIONS)[number];

/**
 * The post-actions a form runs for one submission (DESIGN.md): the lead when a
 * field maps to `lead.*`, the customer when one maps to `customer.*` (either
 * can be turned off with `false`); the email to the operator's recipients, the
 * visitor's copy (`send_to_submitter`, when the submission has an email) and
 * the team notification only when switched on.
 */
export function actionsOf(form: FormRow, submitterEmail: string | null): PostAction[] {
  const pa = form.post_actions ?? {};
  const maps = form.fields.map((f) => f.maps_to ?? '');
  const out: PostAction[] = [];
  if (pa.lead !== false && maps.some((m) => m.startsWith('lead.'))) out.push('lead');
  if (pa.customer !== false && maps.some((m) => m.startsWith('customer.'))) out.push('customer');
  if (pa.email?.enabled && pa.email.to.length) out.push('email');
  if (pa.email?.enabled && pa.email.send_to_submitter && submitterEmail) out.push('submitter_copy');
  if (pa.notify_team?.enabled) out.push('notify_team');
  return out;
}

export type NewSubmission = {
  form: FormRow;
  companyId: string;
  locale: Locale;
  checked: CheckedAnswers;
  files: StagedFile[];
  /** Files refused for the storage quota before they were stored (FileStager.overQuota). */
  overQuota?: string[];
  referrer: string | null;
};

function folderPath(form: FormRow, email: string | null, now: Date): string {
  const date = now.toISOString().slice(0, 10);
  return `/Formularios/${pathSegment(form.name, form.slug)}/${date} - ${pathSegment(email ?? '', 'sin correo')}`;
}

/** Files the staged blobs, inserts the submission and enqueues its post-actions, in one transaction. */
export async function insertSubmission(db: Client, jobs: JobSender, input: NewSubmission) {
  const id = objectId();
  const now = new Date();
  const stored: SubmissionFile[] = [];
  const refused: StagedFile[] = [];
  if (input.files.length) {
    let free = await lockFreeBytes(db, input.companyId);
    let folder: { id: string; path: string } | null = null;
    const names = new Set<string>(); // the folder is the submission's own: only its files share it
    for (const file of input.files) {
      if (file.sizeBytes > free) {
        refused.push(file);
        continue;
      }
      folder ??= await createUniqueFolder(db, input.companyId, folderPath(input.form, input.checked.email, now));
      const filename = uniqueFileName(names, file.filename);
      const assetId = await insertFile(db, input.companyId, folder.id, {
        blobId: file.blobId,
        name: filename,
        contentType: file.contentType,
        sizeBytes: file.sizeBytes,
        sha256: file.sha256,
      });
      free -= file.sizeBytes;
      stored.push({
        field_key: file.fieldKey,
        filename,
        content_type: file.contentType,
        size_bytes: file.sizeBytes,
        asset_id: assetId,
        folder_path: folder.path,
      });
    }
  }
  // A file field's answer names the files actually stored: one refused for
  // the quota is in files_error, not in answers.
  const answers = { ...input.checked.answers };
  for (const field of input.form.fields) {
    if (field.field_type !== 'file') continue;
    const names = stored.filter((f) => f.field_key === field.key).map((f) => f.filename);
    if (names.length) answers[field.key] = names;
    else delete answers[field.key];
  }
  const notStored = [...(input.overQuota ?? []), ...refused.map((f) => f.filename)];
  const filesError = notStored.length ? `Almacenamiento de la empresa agotado: no se guardaron ${notStored.join(', ')}.` : null;
  const { rows } = await db.query(
    `INSERT INTO form_submissions (id, company_id, form_id, locale, answers, email, name, phone, files, files_error, referrer, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12) RETURNING *`,
    [
      id, input.companyId, input.form.id, input.locale, JSON.stringify(answers),
      input.checked.email, input.checked.name, input.checked.phone, JSON.stringify(stored), filesError, input.referrer, now,
    ],
  );
  const actions = actionsOf(input.form, input.checked.email);
  for (const action of actions) {
    await db.query('INSERT INTO form_submission_actions (submission_id, company_id, action) VALUES ($1, $2, $3)', [id, input.companyId, action]);
  }
  await db.query('UPDATE forms SET submissions_count = submissions_count + 1 WHERE id = $1', [input.form.id]);
  await jobs.send(db, FORM_POST_ACTIONS, { submissionId: id, companyId: input.companyId });
  const row: SubmissionRow = { ...rows[0], post_actions: [...actions].sort().map((action) => ({ action, status: 'pending' as const })) };
  return { row, refused };
}

/** Blobs of refused files are removed once the transaction that refused them has committed. */
export async function deleteStaged(db: Queryable, files: StagedFile[]): Promise<void> {
  for (const file of files) await deleteBlob(db, file.blobId);
}

export function serializeSubmission(row: SubmissionRow): z.output<typeof submissionSchema> {
  return {
    id: row.id,
    form_id: row.form_id,
    locale: row.locale,
    answers: row.answers,
    email: row.email,
    name: row.name,
    phone: row.phone,
    // `none` until processed (the contract's enum has no null; contact_id is null until then, and status says whether it was).
    contact_type: row.contact_type,
    contact_id: row.contact_id,
    source: row.source,
    status: row.status,
    files: row.files,
    files_error: row.files_error,
    referrer: row.referrer,
    // A post-action being sent right now is still pending to a reader.
    post_actions: row.post_actions.map(({ action, status }) => ({ action: action as PostAction, status: status === 'sending' ? ('pending' as const) : status })),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export const submissionSchema = z.object({
  id: z.string(),
  form_id: z.string(),
  locale: z.string(),
  answers: z.record(z.string(), z.unknown()),
  email: z.string().nullable(),
  name: z.string().nullable(),
  phone: z.string().nullable(),
  contact_type: z.enum(['lead', 'customer', 'none']).describe('`none` mientras `status` es `received` y cuando el envío se procesó sin contacto'),
  contact_id: z.string().nullable().describe('Vacío hasta que el trabajo en segundo plano termina'),
  source: z.string(),
  status: z.enum(['received', 'processed', 'failed']),
  files: z.array(
    z.object({
      field_key: z.string(),
      filename: z.string(),
      content_type: z.string(),
      size_bytes: z.number().int(),
      asset_id: z.string(),
      folder_path: z.string(),
    }),
  ),
  files_error: z.string().nullable(),
  referrer: z.string().nullable(),
  post_actions: z
    .array(z.object({ action: z.enum(POST_ACTIONS), status: z.enum(['pending', 'done', 'failed']) }))
    .describe(
      'Cada post-acción del envío (por nombre) y cómo va: pending (por hacer o reintentándose), done, failed. Así se ve un correo que no salió aunque status sea processed (basta una acción que no falló)',
    ),
  created_at: z.string(),
  updated_at: z.string(),
});
