// The CRM post-actions of a form submission (`lead`, `customer`): the
// fields mapped to `lead.*` / `customer.*` make or update the record matched
// by email (db/contacts.ts: the lock and the match). Each runs inside the
// transaction that marks its action done (worker/jobs/form-post-actions.ts).
// They record no event: the contract (Events) says form submissions "send no
// webhook notification named in the event list", so a lead or customer a form
// makes has no `lead.created` / `customer.created` (docs/forms.md).
import { CONTACT_LIMITS, lockContactByEmail } from '../../db/contacts.ts';
import type { FormRow, SubmissionRow } from '../../db/forms.ts';
import type { Client } from '../../db/pool.ts';
import { objectId } from '../../lib/objectid.ts';

type Submission = Pick<SubmissionRow, 'company_id' | 'answers' | 'name'>;

/**
 * An answer as its CRM column takes it (CONTACT_LIMITS, db/contacts.ts: what the API takes). A longer
 * answer is cut to fit (the submission keeps it whole); an email that does not fit is no email (cut, it
 * would be another address).
 */
function fit(column: string, value: string): string | undefined {
  const points = [...value];
  if (column === 'email') return points.length <= CONTACT_LIMITS.email ? value : undefined;
  const limit = (CONTACT_LIMITS as Record<string, number>)[column];
  return limit && points.length > limit ? points.slice(0, limit).join('').trimEnd() : value;
}

/** Values of the fields mapped to `<target>.*`, by CRM column, each within what the API takes. */
function mapped(form: FormRow, submission: Submission, target: 'lead' | 'customer'): Record<string, string> {
  const out: Record<string, string> = {};
  for (const field of form.fields) {
    if (!field.maps_to?.startsWith(`${target}.`)) continue;
    const value = submission.answers[field.key];
    // A number answer is its decimal text (a phone in a number field), as the submission's own `phone`.
    const textual = typeof value === 'number' ? String(value) : value;
    const column = field.maps_to.slice(target.length + 1);
    const fitted = typeof textual === 'string' && textual ? fit(column, textual) : undefined;
    if (fitted) out[column] ??= fitted;
  }
  return out;
}

/** Creates or updates the lead matched by email; mapped values overwrite, absent ones keep what the lead had. */
export async function upsertLead(db: Client, form: FormRow, s: Submission): Promise<Record<string, unknown>> {
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
  const name = v.name ?? fit('name', s.name || email || 'Sin nombre')!;
  await db.query(
    `INSERT INTO leads (id, company_id, name, email, phone, company_name, job_title, source)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'formulario')`,
    [id, s.company_id, name, email ?? null, v.phone ?? null, v.company_name ?? null, v.job_title ?? null],
  );
  return { lead_id: id, created: true };
}

/** Associates the customer with this email, creating it when the company has none. */
export async function associateCustomer(db: Client, form: FormRow, s: Submission): Promise<Record<string, unknown>> {
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
  const name = v.name ?? fit('name', s.name || email || 'Sin nombre')!;
  await db.query('INSERT INTO customers (id, company_id, name, email, phone) VALUES ($1, $2, $3, $4, $5)', [
    id, s.company_id, name, email ?? null, v.phone ?? null,
  ]);
  return { customer_id: id, created: true };
}
