// Post-actions of a form submission (contract: States and transitions). Runs
// each open action of the submission, then settles it: `processed` when at
// least one action did not fail (or there were none), `failed` when all did.
//
// Run-once rule: every action has a row in form_submission_actions.
// - lead / customer: the upsert and `done` commit in one transaction, under an
//   advisory lock on (company, email), so a retry or two concurrent
//   submissions never create a second lead for one email.
// - email / submitter_copy / notify_team: no transaction is open while the message is sent (an
//   SMTP server may take minutes, and a transaction held that long pins a
//   connection and the vacuum horizon). Three steps:
//     1. claim: one statement, committed, moves the row pending → sending,
//        attempts + 1, lease_until = now + SEND_LEASE_SECONDS;
//     2. send, with no transaction (the attachments are read chunk by chunk
//        in statements of their own);
//     3. one statement marks it done (or, on failure, puts the claim back:
//        pending for a retry, failed at the last attempt).
//   A run finding the action `sending` under a live lease leaves it alone
//   and asks pg-boss to retry the job later; once the lease has passed (the
//   run that claimed it died), a retry claims it again and sends again.
//   The window: a death (or a lost database) between the server's acceptance
//   and step 3 sends the message a second time after the lease (15 min). The
//   Message-ID is fixed per submission and action, so the receiving server or
//   client can drop that duplicate. A send slower than the lease can be
//   doubled the same way.
// Transient failures leave the action pending and throw, so pg-boss retries
// the job with backoff; after MAX_ACTION_ATTEMPTS an action is `failed`.
import type { Client, Pool } from '../../db/pool.ts';
import { contactCreatedData, lockContactByEmail } from '../../db/contacts.ts';
import { recordEvent } from '../../db/events.ts';
import { transaction } from '../../db/pool.ts';
import type { Config } from '../../lib/config.ts';
import { log } from '../../lib/log.ts';
import { objectId } from '../../lib/objectid.ts';
import type { FormRow, Locale, SubmissionFile } from '../../db/forms.ts';
import { claimSubmitterEmail } from '../forms/submitter-caps.ts';
import { createMailer, DEFAULT_TEMPLATES, FILES_TEXT, isTransientMailError, renderTemplate, type Mailer } from '../forms/mailer.ts';
import { FORM_POST_ACTIONS, type FormPostActionsJob } from '../../db/queues.ts';
import type { JobSender } from '../../db/job-sender.ts';
import type { JobDefinition, WorkerDeps } from './types.ts';

/** What the post-actions need: the pool, the config, and a sender for the events they record. */
export type PostActionDeps = Pick<WorkerDeps, 'pool' | 'config' | 'jobs' | 'blobs'>;

export const MAX_ACTION_ATTEMPTS = 6;
/**
 * How long a claimed email belongs to the run that claimed it: pg-boss's job
 * expiry (15 min, its default for this queue), after which a run that died
 * is retried anyway. Longer than any send nodemailer lets run on one
 * connection in practice (its socket timeout is 10 min of silence).
 */
export const SEND_LEASE_SECONDS = 900;
/** Attachments per email (contract, Limits: 18 MB), counted on the files' own bytes. */
export const EMAIL_ATTACHMENT_BYTES = 18_000_000;

type Submission = {
  id: string;
  company_id: string;
  form_id: string;
  locale: Locale;
  answers: Record<string, unknown>;
  email: string | null;
  name: string | null;
  phone: string | null;
  status: string;
  files: SubmissionFile[];
  created_at: Date;
};

class PermanentError extends Error {}

const mailers = new Map<string, Mailer>();
function mailerFor(config: Config): Mailer {
  const key = `${config.smtpUrl ?? ''}|${config.dataDir}`;
  let mailer = mailers.get(key);
  if (!mailer) mailers.set(key, (mailer = createMailer(config)));
  return mailer;
}

/** Values of the fields mapped to `<target>.*`, by CRM column. */
function mapped(form: FormRow, submission: Submission, target: 'lead' | 'customer'): Record<string, string> {
  const out: Record<string, string> = {};
  for (const field of form.fields) {
    if (!field.maps_to?.startsWith(`${target}.`)) continue;
    const value = submission.answers[field.key];
    // A number answer is its decimal text (a phone in a number field), as the submission's own `phone`.
    const textual = typeof value === 'number' ? String(value) : value;
    if (typeof textual === 'string' && textual) out[field.maps_to.slice(target.length + 1)] ??= textual;
  }
  return out;
}

/** Creates or updates the lead matched by email; mapped values overwrite, absent ones keep what the lead had. */
async function upsertLead(db: Client, jobs: JobSender, form: FormRow, s: Submission): Promise<Record<string, unknown>> {
  const v = mapped(form, s, 'lead');
  // Nothing answered for the lead (every lead.* field optional and left empty): no record to make.
  if (!Object.keys(v).length) return { skipped: 'no_lead_answers' };
  const email = v.email?.toLowerCase();
  const found = await lockContactByEmail(db, 'leads', s.company_id, email);
  if (found) {
    await db.query(
      `UPDATE leads SET name = coalesce($3, name), phone = coalesce($4, phone), company_name = coalesce($5, company_name),
              job_title = coalesce($6, job_title), updated_at = now() WHERE company_id = $1 AND id = $2`,
      [s.company_id, found, v.name ?? null, v.phone ?? null, v.company_name ?? null, v.job_title ?? null],
    );
    return { lead_id: found, created: false };
  }
  const id = objectId();
  const name = v.name ?? s.name ?? email ?? 'Sin nombre';
  await db.query(
    `INSERT INTO leads (id, company_id, name, email, phone, company_name, job_title, source)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'formulario')`,
    [id, s.company_id, name, email ?? null, v.phone ?? null, v.company_name ?? null, v.job_title ?? null],
  );
  await recordEvent(db, jobs, s.company_id, 'lead.created', contactCreatedData('leads', { id, name, email: email ?? null }));
  return { lead_id: id, created: true };
}

/** Associates the customer with this email, creating it when the company has none. */
async function associateCustomer(db: Client, jobs: JobSender, form: FormRow, s: Submission): Promise<Record<string, unknown>> {
  const v = mapped(form, s, 'customer');
  if (!Object.keys(v).length) return { skipped: 'no_customer_answers' };
  const email = v.email?.toLowerCase();
  const found = await lockContactByEmail(db, 'customers', s.company_id, email);
  if (found) {
    // An existing customer keeps its data; only empty fields are filled in.
    await db.query(
      `UPDATE customers SET name = CASE WHEN name = '' THEN coalesce($3, name) ELSE name END, phone = coalesce(phone, $4), updated_at = now()
        WHERE company_id = $1 AND id = $2`,
      [s.company_id, found, v.name ?? null, v.phone ?? null],
    );
    return { customer_id: found, created: false };
  }
  const id = objectId();
  const name = v.name ?? s.name ?? email ?? 'Sin nombre';
  await db.query('INSERT INTO customers (id, company_id, name, email, phone) VALUES ($1, $2, $3, $4, $5)', [
    id, s.company_id, name, email ?? null, v.phone ?? null,
  ]);
  await recordEvent(db, jobs, s.company_id, 'customer.created', contactCreatedData('customers', { id, name, email: email ?? null }));
  return { customer_id: id, created: true };
}

function answersText(form: FormRow, s: Submission, locale: Locale): string {
  const lines: string[] = [];
  for (const field of [...form.fields].sort((a, b) => a.position - b.position)) {
    if (field.field_type === 'file') continue;
    const value = s.answers[field.key];
    if (value === undefined) continue;
    const label = field.label_translations[locale] ?? field.label_translations[form.default_locale] ?? field.key;
    lines.push(`${label}: ${Array.isArray(value) ? value.join(', ') : String(value)}`);
  }
  return lines.join('\n');
}

function messageId(s: Submission, action: string, config: Config): string {
  return `<form-${s.id}-${action}@${new URL(config.siteUrl).hostname}>`;
}

function formTitle(form: FormRow, locale: Locale): string {
  return form.title_translations[locale] ?? form.title_translations[form.default_locale] ?? form.name;
}

function templateOf(form: FormRow, locale: Locale) {
  const settings = form.post_actions.email!;
  return settings.templates?.[locale] ?? settings.templates?.[form.default_locale] ?? DEFAULT_TEMPLATES[locale] ?? DEFAULT_TEMPLATES.es;
}

/** The template's placeholders for this submission; `files` is the text `{{files}}` stands for. */
function templateValues(form: FormRow, s: Submission, files: string): Record<string, string> {
  const values: Record<string, string> = {
    form: formTitle(form, s.locale),
    name: s.name ?? '',
    email: s.email ?? '',
    phone: s.phone ?? '',
    answers: answersText(form, s, s.locale),
    files,
  };
  for (const [key, value] of Object.entries(s.answers)) values[`answer.${key}`] = Array.isArray(value) ? value.join(', ') : String(value);
  return values;
}

const sender = (title: string, config: Config) => `"${title.replace(/["\r\n]/g, '')}" <no-reply@${new URL(config.siteUrl).hostname}>`;

/** The operator's email: to the form's recipients, with the files attached while they fit. */
async function sendEmail(deps: PostActionDeps, form: FormRow, s: Submission): Promise<Record<string, unknown>> {
  const { pool, config, blobs: store } = deps;
  const settings = form.post_actions.email!;
  // No recipient of the operator's (the form was changed since, or the submission predates the visitor's
  // copy being an action of its own, which migration 091 gave it): nothing to send, not a failure.
  if (!settings.to.length) return { skipped: 'no_recipients', to: [] };
  const locale = s.locale;
  const text = FILES_TEXT[locale] ?? FILES_TEXT.es;
  const template = templateOf(form, locale);

  // Attach in order while the total stays within 18 MB; the rest is named in the body.
  const attached: SubmissionFile[] = [];
  const left: SubmissionFile[] = [];
  let total = 0;
  for (const file of s.files) {
    if (settings.attach_files !== false && total + file.size_bytes <= EMAIL_ATTACHMENT_BYTES) {
      attached.push(file);
      total += file.size_bytes;
    } else left.push(file);
  }
  const blobs = new Map<string, string>();
  if (s.files.length) {
    const { rows } = await pool.query('SELECT id, blob_id FROM files WHERE company_id = $1 AND id = ANY($2)', [s.company_id, s.files.map((f) => f.asset_id)]);
    for (const row of rows) blobs.set(row.id, row.blob_id);
  }
  const fileLines: string[] = [];
  const leftLines: string[] = [];
  if (attached.length) fileLines.push(text.attached, ...attached.map((f) => `- ${f.filename}`), '');
  if (left.length) {
    const heading = settings.attach_files === false ? text.stored : text.notAttached;
    leftLines.push(heading, ...left.map((f) => `- ${f.folder_path}/${f.filename}`));
    fileLines.push(...leftLines, '');
  }
  const values = templateValues(form, s, fileLines.join('\n'));
  let body = renderTemplate(template.body, values);
  // Files that did not fit are named in the email whatever the operator's
  // template says (contract: what does not fit stays only in the file
  // manager, and the email says so): without {{files}} the notice is appended.
  const tooBig = settings.attach_files !== false && left.length > 0;
  if (tooBig && !/\{\{\s*files\s*\}\}/.test(template.body)) body = `${body.trimEnd()}\n\n${leftLines.join('\n')}\n`;
  const to = [...settings.to];
  const sent = await mailerFor(config).send({
    from: sender(values.form, config),
    to,
    replyTo: s.email ?? undefined,
    subject: renderTemplate(template.subject, values).replace(/[\r\n]+/g, ' '),
    text: body,
    messageId: messageId(s, 'email', config),
    headers: { 'Content-Language': locale },
    attachments: attached.map((f) => ({
      filename: f.filename,
      contentType: f.content_type,
      contentDisposition: 'attachment' as const,
      content: store.read(pool, blobs.get(f.asset_id) ?? ''),
    })),
  });
  return {
    message_id: sent.messageId,
    to,
    attached: attached.map((f) => f.asset_id),
    not_attached: left.map((f) => f.asset_id),
  };
}

/**
 * The visitor's copy (`send_to_submitter`): a message of its own to the address
 * they typed, which nobody proved. It carries their answers and the names of
 * their files, nothing of the company's: not the operator's recipients, not
 * the files themselves, not the file manager's paths; no answer in its subject.
 * Capped per address and per form (submitter-caps.ts); over a cap it is skipped.
 */
async function sendSubmitterCopy({ pool, config }: PostActionDeps, form: FormRow, s: Submission): Promise<Record<string, unknown>> {
  const decision = await claimSubmitterEmail(pool, { submissionId: s.id, companyId: s.company_id, formId: s.form_id, recipient: s.email! });
  if (!decision.allowed) return { skipped: decision.reason, to: [] };
  const text = FILES_TEXT[s.locale] ?? FILES_TEXT.es;
  const template = templateOf(form, s.locale);
  const files = s.files.length ? [text.received, ...s.files.map((f) => `- ${f.filename}`), ''].join('\n') : '';
  const values = templateValues(form, s, files);
  const sent = await mailerFor(config).send({
    from: sender(values.form, config),
    to: [s.email!],
    subject: renderTemplate(template.subject, { form: values.form }).replace(/[\r\n]+/g, ' '),
    text: renderTemplate(template.body, values),
    messageId: messageId(s, 'submitter_copy', config),
    headers: { 'Content-Language': s.locale },
  });
  return { message_id: sent.messageId, to: [s.email!] };
}

async function notifyTeam(pool: Pool, config: Config, form: FormRow, s: Submission): Promise<Record<string, unknown>> {
  let to = form.post_actions.notify_team?.to ?? [];
  if (!to.length) {
    const { rows } = await pool.query(
      `SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.company_id = $1 AND u.deleted_at IS NULL ORDER BY m.created_at`,
      [s.company_id],
    );
    to = rows.map((r) => r.email);
  }
  if (!to.length) throw new PermanentError('la empresa no tiene miembros a quienes avisar');
  const locale = form.default_locale; // the team reads the company's language, not the submitter's
  const text = FILES_TEXT[locale] ?? FILES_TEXT.es;
  const title = form.title_translations[locale] ?? form.name;
  const sent = await mailerFor(config).send({
    from: sender(title, config),
    to,
    subject: `${text.notify} ${title}`.replace(/[\r\n]+/g, ' '),
    text: [answersText(form, s, locale), '', ...s.files.map((f) => `- ${f.folder_path}/${f.filename}`)].join('\n'),
    messageId: messageId(s, 'notify', config),
  });
  return { message_id: sent.messageId, to };
}

type ActionRow = { action: string; status: string; attempts: number; result: Record<string, unknown> | null };

/** The action is being sent by another run, or by one that died before its lease ran out. */
class LeasedError extends Error {}

type Outcome = { kind: 'done' | 'skipped' | 'failed' } | { kind: 'retry'; error: unknown };

function errorText(error: unknown): string {
  return String((error as Error)?.message ?? error).slice(0, 1000);
}

/** lead / customer: the database effect and `done` in one transaction. */
async function runWrite({ pool, jobs }: PostActionDeps, form: FormRow, s: Submission, action: 'lead' | 'customer'): Promise<Outcome> {
  try {
    return await transaction(pool, async (db) => {
      // The row lock makes a concurrent run of the same job wait, then skip.
      const { rows } = await db.query(`SELECT status FROM form_submission_actions WHERE submission_id = $1 AND action = $2 FOR UPDATE`, [s.id, action]);
      if (rows[0]?.status !== 'pending') return { kind: 'skipped' } as const;
      const result = action === 'lead' ? await upsertLead(db, jobs, form, s) : await associateCustomer(db, jobs, form, s);
      await db.query(
        `UPDATE form_submission_actions SET status = 'done', result = $3, error = NULL, attempts = attempts + 1, updated_at = now()
          WHERE submission_id = $1 AND action = $2`,
        [s.id, action, result],
      );
      return { kind: 'done' } as const;
    });
  } catch (error) {
    const { rows } = await pool.query<{ attempts: number }>(
      `UPDATE form_submission_actions SET attempts = attempts + 1, error = $3,
              status = CASE WHEN attempts + 1 >= $4 THEN 'failed' ELSE 'pending' END, updated_at = now()
        WHERE submission_id = $1 AND action = $2 AND status = 'pending' RETURNING attempts`,
      [s.id, action, errorText(error), MAX_ACTION_ATTEMPTS],
    );
    if (!rows[0]) return { kind: 'skipped' }; // no longer pending: a concurrent run settled it
    const attempts = rows[0].attempts;
    const final = attempts >= MAX_ACTION_ATTEMPTS;
    log('form.post_action_failed', { submission_id: s.id, action, attempt: attempts, final, error: (error as Error)?.message });
    return final ? { kind: 'failed' } : { kind: 'retry', error };
  }
}

/** Step 1: pending (or sending past its lease) → sending, in one committed statement. The claim's attempt number, or null. */
async function claimSend(pool: Pool, submissionId: string, action: string): Promise<number | null> {
  const { rows } = await pool.query<{ attempts: number }>(
    `UPDATE form_submission_actions SET status = 'sending', attempts = attempts + 1, lease_until = now() + make_interval(secs => $3), updated_at = now()
      WHERE submission_id = $1 AND action = $2 AND (status = 'pending' OR (status = 'sending' AND lease_until <= now()))
      RETURNING attempts`,
    [submissionId, action, SEND_LEASE_SECONDS],
  );
  return rows[0]?.attempts ?? null;
}

type SendAction = 'email' | 'submitter_copy' | 'notify_team';

/** email / submitter_copy / notify_team: claim, send with no transaction open, mark done (see the header). */
async function runSend(deps: PostActionDeps, form: FormRow, s: Submission, action: SendAction): Promise<Outcome> {
  const { pool, config } = deps;
  const attempt = await claimSend(pool, s.id, action);
  if (attempt === null) {
    const { rows } = await pool.query('SELECT status FROM form_submission_actions WHERE submission_id = $1 AND action = $2', [s.id, action]);
    if (rows[0]?.status !== 'sending') return { kind: 'skipped' };
    return { kind: 'retry', error: new LeasedError(`la acción ${action} se está enviando en otra ejecución`) };
  }
  let result: Record<string, unknown>;
  try {
    result =
      action === 'email' ? await sendEmail(deps, form, s)
      : action === 'submitter_copy' ? await sendSubmitterCopy(deps, form, s)
      : await notifyTeam(pool, config, form, s);
  } catch (error) {
    const transient = !(error instanceof PermanentError) && isTransientMailError(error);
    const final = !transient || attempt >= MAX_ACTION_ATTEMPTS;
    // Only our own claim is put back: a run that re-claimed after our lease ran out owns the row now.
    await pool.query(
      `UPDATE form_submission_actions SET status = $4, error = $3, lease_until = NULL, updated_at = now()
        WHERE submission_id = $1 AND action = $2 AND status = 'sending' AND attempts = $5`,
      [s.id, action, errorText(error), final ? 'failed' : 'pending', attempt],
    );
    log('form.post_action_failed', { submission_id: s.id, action, attempt, final, error: (error as Error)?.message });
    return final ? { kind: 'failed' } : { kind: 'retry', error };
  }
  // Sent: whoever holds the row now, the message is out. Should this write
  // fail, the row stays `sending` and the lease decides (the window above).
  await pool.query(
    `UPDATE form_submission_actions SET status = 'done', result = $3, error = NULL, lease_until = NULL, updated_at = now()
      WHERE submission_id = $1 AND action = $2 AND status <> 'done'`,
    [s.id, action, result],
  );
  return { kind: 'done' };
}

/** Settles the submission once no action is pending or being sent. */
async function settle(pool: Pool, submissionId: string): Promise<boolean> {
  const { rows } = await pool.query<ActionRow>('SELECT action, status, attempts, result FROM form_submission_actions WHERE submission_id = $1', [submissionId]);
  if (rows.some((r) => r.status === 'pending' || r.status === 'sending')) return false;
  const done = rows.filter((r) => r.status === 'done');
  const status = rows.length === 0 || done.length > 0 ? 'processed' : 'failed';
  const customer = done.find((r) => r.action === 'customer')?.result?.customer_id as string | undefined;
  const lead = done.find((r) => r.action === 'lead')?.result?.lead_id as string | undefined;
  // A customer is the firmer relation: when both resolve, the submission points at the customer.
  const [contactType, contactId] = customer ? ['customer', customer] : lead ? ['lead', lead] : ['none', null];
  await pool.query(
    `UPDATE form_submissions SET status = $2, contact_type = $3, contact_id = $4, updated_at = now() WHERE id = $1 AND status = 'received'`,
    [submissionId, status, contactType, contactId],
  );
  return true;
}

/** Submissions whose post-actions one worker process runs at once. */
export const FORM_POST_ACTION_CONCURRENCY = 4;

/** Processes one submission; throws when a transient failure should be retried. */
export async function processSubmission(deps: PostActionDeps, job: FormPostActionsJob): Promise<void> {
  const { pool } = deps;
  const s = (await pool.query<Submission>('SELECT * FROM form_submissions WHERE id = $1 AND company_id = $2', [job.submissionId, job.companyId])).rows[0];
  if (!s || s.status !== 'received') return;
  const form = (await pool.query<FormRow>('SELECT * FROM forms WHERE id = $1', [s.form_id])).rows[0];
  if (!form) return;
  const { rows: open } = await pool.query<ActionRow>(
    `SELECT action, status, attempts, result FROM form_submission_actions WHERE submission_id = $1 AND status IN ('pending', 'sending') ORDER BY action`,
    [s.id],
  );
  let retry: unknown = null;
  for (const { action } of open) {
    const outcome = action === 'lead' || action === 'customer' ? await runWrite(deps, form, s, action) : await runSend(deps, form, s, action as SendAction);
    if (outcome.kind === 'retry') retry ??= outcome.error;
  }
  await settle(pool, s.id);
  if (retry) throw new Error(`Post-acción pendiente de reintento: ${(retry as Error)?.message ?? retry}`, { cause: retry });
}

export const formPostActions: JobDefinition<FormPostActionsJob> = {
  queue: FORM_POST_ACTIONS,
  // Four submissions at once, each fetched as soon as one ends: one at a time, every company's forms
  // waited behind a slow mail server. Parallel runs are safe: the contact upserts lock the email, the
  // submitter caps lock the recipient and the form, and each action is claimed by its row.
  work: { batchSize: 1, localConcurrency: FORM_POST_ACTION_CONCURRENCY, pollingIntervalSeconds: 0.5 },
  handler: async (deps, jobs) => {
    for (const job of jobs) await processSubmission(deps, job.data);
  },
};
