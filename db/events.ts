// The event outbox (DESIGN.md, transactional outbox): a write that notifies
// records its event with the same client, inside the same transaction, so a
// crash never leaves a record without its event or an event without its record.
import { randomBytes } from 'node:crypto';
import { WEBHOOK_API_VERSION } from '../lib/version.ts';
import type { Queryable } from './pool.ts';

export type EventData = { object: string; id: string; metadata?: Record<string, string>; [field: string]: unknown };

export function eventId(): string {
  return `evt_${randomBytes(12).toString('hex')}`;
}

export async function recordEvent(db: Queryable, companyId: string, name: string, data: EventData): Promise<string> {
  const id = eventId();
  await db.query(
    `INSERT INTO events (id, company_id, name, api_version, data) VALUES ($1, $2, $3, $4, $5)`,
    [id, companyId, name, WEBHOOK_API_VERSION, { ...data, metadata: data.metadata ?? {} }],
  );
  return id;
}
