// A lead matched by email, or created (with its `lead.created` event) when the
// company has none: what a booking does with its booker. Matching and its
// lock are db/contacts.ts's, shared with the form post-actions, so two
// bookings by one new person make one lead.
import { objectId } from '../lib/objectid.ts';
import { contactCreatedData, lockContactByEmail } from './contacts.ts';
import { recordEvent } from './events.ts';
import type { Queryable } from './pool.ts';

export async function matchOrCreateLead(
  db: Queryable,
  companyId: string,
  person: { name: string; email: string; phone?: string | null; source: string },
): Promise<{ id: string; created: boolean }> {
  const email = person.email.toLowerCase();
  const found = await lockContactByEmail(db, 'leads', companyId, email);
  if (found) return { id: found, created: false };
  const id = objectId();
  await db.query('INSERT INTO leads (id, company_id, name, email, phone, source) VALUES ($1, $2, $3, $4, $5, $6)', [
    id,
    companyId,
    person.name,
    email,
    person.phone ?? null,
    person.source,
  ]);
  await recordEvent(db, companyId, 'lead.created', contactCreatedData('leads', { id, name: person.name, email }));
  return { id, created: true };
}
