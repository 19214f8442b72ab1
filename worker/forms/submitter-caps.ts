// What may reach the address a submitter typed. A form with
// `send_to_submitter` sends its email to an address nobody proved, with text
// the submitter chose: without limits it is a relay for spam to any inbox.
// Limits, exact across worker processes and their parallel jobs (counted in
// PostgreSQL under advisory locks per recipient and per form):
// - per recipient inbox (inboxOf), across the whole service: 3 emails in 24 hours;
// - per form: 20 submitter emails in an hour.
// Over a limit, the submitter's copy is skipped (the operator's recipients
// still get theirs) and the action's result says why. The subject of such an
// email carries no text from the answers (post-action-emails.ts).
import { transaction, type Pool } from '../../db/pool.ts';

export const SUBMITTER_CAPS = { perRecipientPerDay: 3, perFormPerHour: 20 } as const;

export type SubmitterDecision = { allowed: true } | { allowed: false; reason: 'recipient_cap' | 'form_cap' };

/**
 * The inbox an address reaches, as the cap counts it: lower-cased, without a sub-address (`ana+1@x` is
 * `ana@x`, at any provider), and for Gmail without dots in the name and with googlemail.com as gmail.com
 * (Gmail delivers all of those to one inbox). The copy still goes to the address as typed.
 */
function inboxOf(address: string): string {
  const lower = address.trim().toLowerCase();
  const at = lower.lastIndexOf('@');
  let [name, domain] = [lower.slice(0, at), lower.slice(at + 1)];
  if (name.indexOf('+') > 0) name = name.slice(0, name.indexOf('+'));
  if (domain === 'googlemail.com') domain = 'gmail.com';
  if (domain === 'gmail.com') name = name.replaceAll('.', '');
  return `${name}@${domain}`;
}

/** Claims one submitter email for this submission, or says which cap refuses it. A submission already counted is allowed again (a retried send). */
export async function claimSubmitterEmail(
  pool: Pool,
  input: { submissionId: string; companyId: string; formId: string; recipient: string },
): Promise<SubmitterDecision> {
  const recipient = inboxOf(input.recipient);
  return transaction(pool, async (db) => {
    // The recipient, then the form (always that order): the two counts are exact with submissions of a
    // form processed in parallel (the worker runs several at once).
    await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`submitter-email:${recipient}`]);
    await db.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`submitter-form:${input.formId}`]);
    const already = await db.query('SELECT 1 FROM submitter_email_log WHERE submission_id = $1', [input.submissionId]);
    if (already.rowCount) return { allowed: true };
    const { rows } = await db.query<{ recipient_day: number; form_hour: number }>(
      `SELECT (SELECT count(*)::int FROM submitter_email_log WHERE recipient = $1 AND created_at > now() - interval '24 hours') AS recipient_day,
              (SELECT count(*)::int FROM submitter_email_log WHERE form_id = $2 AND created_at > now() - interval '1 hour') AS form_hour`,
      [recipient, input.formId],
    );
    if (rows[0].recipient_day >= SUBMITTER_CAPS.perRecipientPerDay) return { allowed: false, reason: 'recipient_cap' };
    if (rows[0].form_hour >= SUBMITTER_CAPS.perFormPerHour) return { allowed: false, reason: 'form_cap' };
    await db.query(
      'INSERT INTO submitter_email_log (submission_id, company_id, form_id, recipient) VALUES ($1, $2, $3, $4)',
      [input.submissionId, input.companyId, input.formId, recipient],
    );
    return { allowed: true };
  });
}
