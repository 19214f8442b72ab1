// The email post-actions of a form submission: the operator's email (`email`,
// with the files attached while they fit), the visitor's copy
// (`submitter_copy`, capped by submitter-caps.ts) and the team's notice
// (`notify_team`). Each sends one message with a Message-ID fixed per
// submission and action; claiming and settling the action around the send is
// worker/jobs/form-post-actions.ts's.
import type { FormRow, Locale, SubmissionFile, SubmissionRow } from '../../db/forms.ts';
import type { Pool } from '../../db/pool.ts';
import type { Config } from '../../lib/config.ts';
import type { WorkerDeps } from '../jobs/types.ts';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { mailerFor, noReplyFrom, type Refusal } from '../mail/mailer.ts';
import { quoted } from '../mail/quoted.ts';
import { DEFAULT_TEMPLATES, FILES_TEXT, renderTemplate } from './templates.ts';
import { claimSubmitterEmail } from './submitter-caps.ts';

type MailDeps = Pick<WorkerDeps, 'pool' | 'config' | 'blobs'>;

/** Attachments per email (contract, Limits: 18 MB), counted on the files' own bytes. */
export const EMAIL_ATTACHMENT_BYTES = 18_000_000;

/** The submission as the post-actions read it (`SELECT *`), its locale one the forms speak. */
export type PostActionSubmission = Pick<SubmissionRow, 'id' | 'company_id' | 'form_id' | 'answers' | 'email' | 'name' | 'phone' | 'status' | 'files' | 'files_error'> & {
  locale: Locale;
  created_at: Date;
};
type Submission = PostActionSubmission;

/** A failure no retry can mend (nobody to send to). */
export class PermanentError extends Error {}

function answersText(form: FormRow, s: Submission, locale: Locale): string {
  const lines: string[] = [];
  for (const field of [...form.fields].sort((a, b) => a.position - b.position)) {
    if (field.field_type === 'file') continue;
    const value = s.answers[field.key];
    if (value === undefined) continue;
    const label = field.label_translations[locale] ?? field.label_translations[form.default_locale] ?? field.key;
    // A textarea's later lines are indented (whatever breaks them): no answer can make a line that reads as another field's.
    lines.push(`${label}: ${quoted(Array.isArray(value) ? value.join(', ') : String(value))}`);
  }
  return lines.join('\n');
}

/**
 * Files the visitor sent that were not stored (the company's storage was full): the submission's
 * `files_error`, under a heading, so whoever reads the email knows to ask for them again.
 */
function notStoredLines(s: Submission, locale: Locale): string[] {
  if (!s.files_error) return [];
  return [(FILES_TEXT[locale] ?? FILES_TEXT.es).notStored, s.files_error, ''];
}

function messageId(s: Submission, action: string, config: Config): string {
  return `<form-${s.id}-${action}@${new URL(config.siteUrl).hostname}>`;
}

function formTitle(form: FormRow, locale: Locale): string {
  return form.title_translations[locale] ?? form.title_translations[form.default_locale] ?? form.name;
}

/**
 * The language an email of this submission is written in: the submission's when the form has a template
 * in it (or, with no templates of its own, the built-in one), else the form's default language, whose
 * template is used. Everything the email says (its template, the files lines, the labels of the
 * answers, the form's title, Content-Language) is in that one language.
 */
function emailLanguage(form: FormRow, locale: Locale): Locale {
  const templates = form.post_actions.email?.templates;
  if (templates?.[locale]) return locale;
  if (templates?.[form.default_locale]) return form.default_locale;
  return DEFAULT_TEMPLATES[locale] ? locale : 'es';
}

function templateOf(form: FormRow, language: Locale) {
  return form.post_actions.email?.templates?.[language] ?? DEFAULT_TEMPLATES[language] ?? DEFAULT_TEMPLATES.es;
}

/** The template's placeholders for this submission, in `language`; `files` is the text `{{files}}` stands for. */
function templateValues(form: FormRow, s: Submission, language: Locale, files: string): Record<string, string> {
  const values: Record<string, string> = {
    form: formTitle(form, language),
    name: s.name ?? '',
    email: s.email ?? '',
    phone: s.phone ?? '',
    answers: answersText(form, s, language),
    files,
  };
  for (const [key, value] of Object.entries(s.answers)) values[`answer.${key}`] = Array.isArray(value) ? value.join(', ') : String(value);
  return values;
}

const sender = noReplyFrom;

/** The operator's email: to the form's recipients, with the files attached while they fit. */
/**
 * What a send records on its action row (`result`): the message, its recipients, and those the server
 * refused while it took the message for the others (`refused`; the job retries the temporary ones).
 */
export type SendResult = Record<string, unknown> & { refused?: Refusal[] };

/**
 * A retry of a message some recipients took and others refused for now: `owed`, those refused, and
 * `to`, the recipients of that first attempt.
 */
export type OwedRetry = { owed: string[]; to: string[] };

/**
 * Who a retry sends to, given the recipients `to` the form (or the team) has now: the owed ones that
 * are still recipients, and any added since the first attempt (an operator fixing a mistyped address
 * gets the new one sent to; the removed one is not). Compared without case. Undefined: no retry, all.
 */
export function recipientsNow(retry: OwedRetry | undefined, to: string[]): string[] | undefined {
  if (!retry) return undefined;
  const now = new Set(to.map((a) => a.toLowerCase()));
  const before = new Set(retry.to.map((a) => a.toLowerCase()));
  return [...retry.owed.filter((a) => now.has(a.toLowerCase())), ...to.filter((a) => !before.has(a.toLowerCase()))];
}

/**
 * The SMTP envelope of a retry owed to some recipients only: the message is the same, its To header
 * names everyone the form sends to now, as a mail server's own retry would be; the others have it already.
 */
function envelopeFor(recipients: string[] | undefined, from: Mail.Address) {
  return recipients ? { envelope: { from: from.address, to: recipients } } : {};
}

export async function sendEmail(deps: MailDeps, form: FormRow, s: Submission, retry?: OwedRetry): Promise<SendResult> {
  const { pool, config, blobs: store } = deps;
  const settings = form.post_actions.email!;
  // No recipient of the operator's (the form was changed since, or the submission predates the visitor's
  // copy being an action of its own, which migration 091 gave it): nothing to send, not a failure.
  if (!settings.to.length) return { skipped: 'no_recipients', to: [] };
  const locale = emailLanguage(form, s.locale);
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
  const notices: string[] = [];
  if (attached.length) fileLines.push(text.attached, ...attached.map((f) => `- ${f.filename}`), '');
  if (left.length) {
    const heading = settings.attach_files === false ? text.stored : text.notAttached;
    const leftLines = [heading, ...left.map((f) => `- ${f.folder_path}/${f.filename}`)];
    fileLines.push(...leftLines, '');
    // Files not attached are named in the email whatever the operator's template says (contract: what
    // does not fit stays only in the file manager, and the email says so; with attach_files off, every
    // file is there, and the email is the operator's one sign of them).
    notices.push(...leftLines, '');
  }
  const lost = notStoredLines(s, locale);
  fileLines.push(...lost);
  notices.push(...lost);
  const values = templateValues(form, s, locale, fileLines.join('\n'));
  let body = renderTemplate(template.body, values);
  // Without {{files}} in the template, those notices are appended.
  if (notices.length && !/\{\{\s*files\s*\}\}/.test(template.body)) body = `${body.trimEnd()}\n\n${notices.join('\n').trimEnd()}\n`;
  const to = [...settings.to];
  const recipients = recipientsNow(retry, to);
  if (recipients?.length === 0) return { skipped: 'no_recipients_owed', to, refused: [] };
  const from = sender(values.form, config);
  const sent = await mailerFor(config).send({
    from,
    ...envelopeFor(recipients, from),
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
    refused: sent.refused,
  };
}

/**
 * The visitor's copy (`send_to_submitter`): a message of its own to the address
 * they typed, which nobody proved. It carries their answers and the names of
 * their files, nothing of the company's: not the operator's recipients, not
 * the files themselves, not the file manager's paths; no answer in its subject.
 * Capped per address and per form (submitter-caps.ts); over a cap it is skipped.
 */
export async function sendSubmitterCopy({ pool, config }: MailDeps, form: FormRow, s: Submission): Promise<SendResult> {
  const decision = await claimSubmitterEmail(pool, { submissionId: s.id, companyId: s.company_id, formId: s.form_id, recipient: s.email! });
  if (!decision.allowed) return { skipped: decision.reason, to: [] };
  const locale = emailLanguage(form, s.locale);
  const text = FILES_TEXT[locale] ?? FILES_TEXT.es;
  const template = templateOf(form, locale);
  const files = s.files.length ? [text.received, ...s.files.map((f) => `- ${f.filename}`), ''].join('\n') : '';
  const values = templateValues(form, s, locale, files);
  const sent = await mailerFor(config).send({
    from: sender(values.form, config),
    to: [s.email!],
    subject: renderTemplate(template.subject, { form: values.form }).replace(/[\r\n]+/g, ' '),
    text: renderTemplate(template.body, values),
    messageId: messageId(s, 'submitter_copy', config),
    headers: { 'Content-Language': locale },
  });
  return { message_id: sent.messageId, to: [s.email!], refused: sent.refused };
}

export async function notifyTeam(pool: Pool, config: Config, form: FormRow, s: Submission, retry?: OwedRetry): Promise<SendResult> {
  let to = form.post_actions.notify_team?.to ?? [];
  if (!to.length) {
    const { rows } = await pool.query(
      `SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.company_id = $1 AND u.deleted_at IS NULL ORDER BY m.created_at, m.user_id`,
      [s.company_id],
    );
    to = rows.map((r) => r.email);
  }
  if (!to.length) throw new PermanentError('la empresa no tiene miembros a quienes avisar');
  const locale = form.default_locale; // the team reads the company's language, not the submitter's
  const text = FILES_TEXT[locale] ?? FILES_TEXT.es;
  const title = form.title_translations[locale] ?? form.name;
  const recipients = recipientsNow(retry, to);
  if (recipients?.length === 0) return { skipped: 'no_recipients_owed', to, refused: [] };
  const from = sender(title, config);
  const sent = await mailerFor(config).send({
    from,
    ...envelopeFor(recipients, from),
    to,
    subject: `${text.notify} ${title}`.replace(/[\r\n]+/g, ' '),
    text: [answersText(form, s, locale), '', ...s.files.map((f) => `- ${f.folder_path}/${f.filename}`), ...(s.files.length ? [''] : []), ...notStoredLines(s, locale)].join('\n').trimEnd(),
    messageId: messageId(s, 'notify', config),
  });
  return { message_id: sent.messageId, to, refused: sent.refused };
}
