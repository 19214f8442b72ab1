// Leads and customers as the flows that make them for a person see them (a
// booking's booker, a form's mapped answers): matched by email,
// case-insensitively, the oldest record first, under a transaction lock on
// the company and the lowered email, so two at once make one record. Their
// `lead.created` / `customer.created` events carry the same data whether the
// REST create or a booking (its booker, a lead) made the record; a form's
// post-actions send none (docs/forms.md).
import type { EventData } from './events.ts';
import type { Queryable } from './pool.ts';

/**
 * How long each CRM text column may be, in code points: what the API takes (api/routes/crm-fields.ts,
 * leads.ts) and what a form's post-action fits its answers to (worker/forms/post-action-contacts.ts),
 * so a lead or customer a form makes is one a client can read and write back as it is.
 */
export const CONTACT_LIMITS = { name: 200, email: 254, phone: 50, notes: 5000, company_name: 200, job_title: 200 } as const;

export type ContactTable = 'leads' | 'customers';

const OBJECT = { leads: 'lead', customers: 'customer' } as const;

/** The `data` of a contact's `*.created` event. */
export function contactCreatedData(table: ContactTable, row: { id: string; name: string; email: string | null }): EventData {
  return { object: OBJECT[table], id: row.id, name: row.name, email: row.email };
}

/**
 * Takes the transaction lock on (company, table, email) and returns the id of
 * the oldest record with that email, locked for update, or undefined. Without
 * an email there is nothing to match or lock.
 */
export async function lockContactByEmail(
  db: Queryable,
  table: ContactTable,
  companyId: string,
  email: string | undefined,
): Promise<string | undefined> {
  if (!email) return undefined;
  const lowered = email.toLowerCase();
  await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`${companyId}:${table}:${lowered}`]);
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM ${table} WHERE company_id = $1 AND lower(email) = $2 ORDER BY created_at, id LIMIT 1 FOR UPDATE`,
    [companyId, lowered],
  );
  return rows[0]?.id;
}
