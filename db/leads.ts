// A lead matched by email, or created (with its `lead.created` event) when the
// company has none: what a booking does with its booker. The email is locked
// for the transaction, so two bookings by one new person make one lead.
import { objectId } from '../lib/objectid.ts';
import { recordEvent } from './events.ts';
import type { JobSender } from './job-sender.ts';
import type { Queryable } from './pool.ts';

export async function matchOrCreateLead(
  db: Queryable,
  jobs: JobSender,
  companyId: string,
  person: { name: string; email: string; phone?: string | null; source: string },
): Promise<{ id: string; created: boolean }> {
  const email = person.email.toLowerCase();
  await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`${companyId}:leads:${email}`]);
  const found = await db.query<{ id: string }>(
    'SELECT id FROM leads WHERE company_id = $1 AND lower(email) = $2 ORDER BY created_at, id LIMIT 1',
    [companyId, email],
  );
  if (found.rows[0]) return { id: found.rows[0].id, created: false };
  const id = objectId();
  await db.query('INSERT INTO leads (id, company_id, name, email, phone, source) VALUES ($1, $2, $3, $4, $5, $6)', [
    id,
    companyId,
    person.name,
    email,
    person.phone ?? null,
    person.source,
  ]);
  await recordEvent(db, jobs, companyId, 'lead.created', { object: 'lead', id, name: person.name, email });
  return { id, created: true };
}
