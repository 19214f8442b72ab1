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
import type { FormRow } from '../../db/forms.ts';
import { transaction, type Pool } from '../../db/pool.ts';
import { FORM_POST_ACTIONS, type FormPostActionsJob } from '../../db/queues.ts';
import { log } from '../../lib/log.ts';
import { isTemporaryRefusal, isTransientMailError, type Refusal } from '../mail/mailer.ts';
import { associateCustomer, upsertLead } from '../forms/post-action-contacts.ts';
import { notifyTeam, PermanentError, sendEmail, sendSubmitterCopy, type PostActionSubmission as Submission, type SendResult } from '../forms/post-action-emails.ts';
import type { JobDefinition, WorkerDeps } from './types.ts';

/** What the post-actions need: the pool, the config (SMTP) and the blob store (attachments). They record no events. */
export type PostActionDeps = Pick<WorkerDeps, 'pool' | 'config' | 'blobs'>;

/** Attempts per action: with the queue's backoff (db/queues.ts) the last is 4 to 7 hours after the first. */
export const MAX_ACTION_ATTEMPTS = 12;
/**
 * How long a claimed email belongs to the run that claimed it: pg-boss's job
 * expiry (15 min, its default for this queue), after which a run that died
 * is retried anyway. Longer than any send nodemailer lets run on one
 * connection in practice (its socket timeout is 10 min of silence).
 */
export const SEND_LEASE_SECONDS = 900;

type ActionRow = { action: string; status: string; attempts: number; result: Record<string, unknown> | null };

/** The action is being sent by another run, or by one that died before its lease ran out. */
class LeasedError extends Error {}

type Outcome = { kind: 'done' | 'skipped' | 'failed' } | { kind: 'retry'; error: unknown };

function errorText(error: unknown): string {
  return String((error as Error)?.message ?? error).slice(0, 1000);
}

/** lead / customer: the database effect and `done` in one transaction. */
async function runWrite({ pool }: PostActionDeps, form: FormRow, s: Submission, action: 'lead' | 'customer'): Promise<Outcome> {
  try {
    return await transaction(pool, async (db) => {
      // The row lock makes a concurrent run of the same job wait, then skip.
      const { rows } = await db.query(`SELECT status FROM form_submission_actions WHERE submission_id = $1 AND action = $2 FOR UPDATE`, [s.id, action]);
      if (rows[0]?.status !== 'pending') return { kind: 'skipped' } as const;
      const result = action === 'lead' ? await upsertLead(db, form, s) : await associateCustomer(db, form, s);
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

type SendAction = 'email' | 'submitter_copy' | 'notify_team';

/** What a send action's row carries between attempts: recipients still owed, and those refused for good. */
type SendState = SendResult & { owed_to?: string[]; refused?: Refusal[] };

/** email / submitter_copy / notify_team: claim, send with no transaction open, mark done (see the header). */
async function runSend(deps: PostActionDeps, form: FormRow, s: Submission, action: SendAction): Promise<Outcome> {
  const { pool, config } = deps;
  const claim = await claimSend(pool, s.id, action);
  if (claim === null) {
    const { rows } = await pool.query('SELECT status FROM form_submission_actions WHERE submission_id = $1 AND action = $2', [s.id, action]);
    if (rows[0]?.status !== 'sending') return { kind: 'skipped' };
    return { kind: 'retry', error: new LeasedError(`la acción ${action} se está enviando en otra ejecución`) };
  }
  const { attempt, previous } = claim;
  const final = attempt >= MAX_ACTION_ATTEMPTS;
  // Recipients an earlier attempt left owed (they refused for now while the others took the message).
  const owed = previous?.owed_to;
  const retry = owed ? { owed, to: Array.isArray(previous?.to) ? (previous.to as string[]) : [] } : undefined;
  const earlier = previous?.refused ?? [];
  // Only our own claim is settled: a run that re-claimed after our lease ran out owns the row now.
  const settleClaim = (status: 'pending' | 'done' | 'failed', result: SendResult | null, error: string | null) =>
    pool.query(
      `UPDATE form_submission_actions SET status = $3, result = coalesce($4, result), error = $5, lease_until = NULL, updated_at = now()
        WHERE submission_id = $1 AND action = $2 AND status = 'sending' AND attempts = $6`,
      [s.id, action, status, result, error, attempt],
    );
  let result: SendResult;
  try {
    result =
      action === 'email' ? await sendEmail(deps, form, s, retry)
      : action === 'submitter_copy' ? await sendSubmitterCopy(deps, form, s)
      : await notifyTeam(pool, config, form, s, retry);
  } catch (error) {
    const transient = !(error instanceof PermanentError) && isTransientMailError(error);
    if (owed && (final || !transient)) {
      // The others have had the message since an earlier attempt: the action is done, and these
      // recipients are recorded as refused with the server's last answer.
      const code = (error as { responseCode?: number })?.responseCode ?? null;
      const refused = [...earlier, ...owed.map((address) => ({ address, code, response: errorText(error).slice(0, 300) }))];
      await settleClaim('done', { ...previous, owed_to: undefined, refused }, null);
      log('form.post_action_refused', { submission_id: s.id, action, refused });
      return { kind: 'done' };
    }
    const failed = !transient || final;
    await settleClaim(failed ? 'failed' : 'pending', null, errorText(error));
    log('form.post_action_failed', { submission_id: s.id, action, attempt, final: failed, error: (error as Error)?.message });
    return failed ? { kind: 'failed' } : { kind: 'retry', error };
  }
  const refused = result.refused ?? [];
  const deferred = refused.filter(isTemporaryRefusal);
  if (deferred.length && !final) {
    // Sent to the others; these are sent to again at the next attempt, and only they.
    const error = new Error(`destinatarios rechazados por ahora: ${deferred.map((r) => `${r.address} (${r.code ?? 'sin código'})`).join(', ')}`);
    const permanent = refused.filter((r) => !isTemporaryRefusal(r));
    await settleClaim('pending', { ...result, owed_to: deferred.map((r) => r.address), refused: [...earlier, ...permanent] }, errorText(error));
    log('form.post_action_deferred', { submission_id: s.id, action, attempt, deferred: deferred.map((r) => r.address) });
    return { kind: 'retry', error };
  }
  // Sent: whoever holds the row now, the message is out. Should this write
  // fail, the row stays `sending` and the lease decides (the window above).
  const all = [...earlier, ...refused];
  await pool.query(
    `UPDATE form_submission_actions SET status = 'done', result = $3, error = NULL, lease_until = NULL, updated_at = now()
      WHERE submission_id = $1 AND action = $2 AND status <> 'done'`,
    [s.id, action, { ...result, owed_to: undefined, refused: all }],
  );
  if (all.length) log('form.post_action_refused', { submission_id: s.id, action, refused: all });
  return { kind: 'done' };
}

/** Step 1: pending (or sending past its lease) → sending, in one committed statement. The claim's attempt number and what the last attempt recorded, or null. */
async function claimSend(pool: Pool, submissionId: string, action: string): Promise<{ attempt: number; previous: SendState | null } | null> {
  const { rows } = await pool.query<{ attempts: number; result: SendState | null }>(
    `UPDATE form_submission_actions SET status = 'sending', attempts = attempts + 1, lease_until = now() + make_interval(secs => $3), updated_at = now()
      WHERE submission_id = $1 AND action = $2 AND (status = 'pending' OR (status = 'sending' AND lease_until <= now()))
      RETURNING attempts, result`,
    [submissionId, action, SEND_LEASE_SECONDS],
  );
  return rows[0] ? { attempt: rows[0].attempts, previous: rows[0].result } : null;
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
