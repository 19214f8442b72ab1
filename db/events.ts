// The event outbox (DESIGN.md, transactional outbox): a write that notifies
// records its event with the same client, inside the same transaction, so a
// crash never leaves a record without its event or an event without its
// record. Recording also fans the event out: one webhook delivery per
// matching active endpoint, due at once, in that same transaction and the
// same statement. The deliveries are the queue: the worker's dispatcher
// claims the due ones (worker/webhooks/dispatcher.ts).
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { objectIdSql } from '../lib/objectid.ts';
import { WEBHOOK_API_VERSION } from '../lib/version.ts';
import { HELD_MESSAGE, MAX_ATTEMPTS } from '../lib/webhook-retry.ts';
import { selectorsOf, type EventName } from '../lib/webhook-events.ts';
import { prepared, type Queryable } from './pool.ts';

export type EventData = { object: string; id: string; metadata?: Record<string, string>; [field: string]: unknown };

export function eventId(): string {
  return `evt_${randomBytes(12).toString('hex')}`;
}

/**
 * The envelope of the contract (Events: "Envelope"), serialized once: these
 * bytes are stored, signed and sent, identical on every attempt.
 */
export function envelope(id: string, name: string, createdAt: Date, data: EventData): string {
  return JSON.stringify({
    id,
    evento: name,
    event: name,
    created_at: createdAt.toISOString(),
    api_version: WEBHOOK_API_VERSION,
    data: withMetadata(data),
  });
}

/** `data` as the envelope carries it: `metadata` always present. */
function withMetadata(data: EventData): EventData {
  return data.metadata === undefined || data.metadata === null ? { ...data, metadata: {} } : data;
}

/**
 * Records the event and its deliveries in ONE statement, however many
 * endpoints (issue 20): a delivery is due from its `next_attempt_at`, and the
 * dispatcher claims due deliveries from the table itself (no job per attempt).
 */
export async function recordEvent(db: Queryable, companyId: string, name: EventName, data: EventData): Promise<string> {
  const id = eventId();
  const createdAt = eventTime(db);
  const full = withMetadata(data);
  const payload = envelope(id, name, createdAt, full);
  await db.query(prepared(EVENT_AND_DELIVERIES, [id, companyId, name, WEBHOOK_API_VERSION, full, payload, createdAt, selectorsOf(name)]));
  return id;
}

/** The last `created_at` (ms) each connection gave an event. */
const lastEventAt = new WeakMap<Queryable, number>();

/**
 * An event's `created_at`: now, but after the last event recorded on the same
 * connection. One write may record two events in the same millisecond (a sale
 * of total 0: `sale.created`, then `sale.paid`; an income created paid), and
 * a receiver ordering them by `created_at` must not see a tie. Only a
 * connection's own events move it forward (at most a millisecond per event
 * recorded within one millisecond of the last); a pool (no single
 * transaction) keeps the clock as it is.
 */
function eventTime(db: Queryable): Date {
  const now = Date.now();
  if (db instanceof pg.Pool) return new Date(now);
  const last = lastEventAt.get(db) ?? 0;
  const at = now > last ? now : last + 1;
  lastEventAt.set(db, at);
  return new Date(at);
}

/** The event and a delivery, due at once, for every active endpoint of the company whose enabled_events select its name. */
const EVENT_AND_DELIVERIES = `WITH event AS (
    INSERT INTO events (id, company_id, name, api_version, data, payload, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id
  )
  INSERT INTO webhook_deliveries (id, company_id, endpoint_id, event_id, event, next_attempt_at, created_at)
  SELECT ${objectIdSql('$7::timestamptz')}, e.company_id, e.id, (SELECT id FROM event), $3, $7, $7
    FROM webhook_endpoints e
   WHERE e.company_id = $2 AND e.active AND e.enabled_events && $8::text[]`;

/**
 * An endpoint switched off (automatically after SHUT_OFF_AFTER failures in a row, or paused)
 * makes no further attempts: its waiting deliveries (pending, or failed with
 * a retry due) lose their `next_attempt_at`, so no claim finds them; one
 * never attempted says why (HELD_MESSAGE). One in flight is written when its
 * attempt ends, with no next attempt.
 */
export async function unscheduleAttempts(db: Queryable, endpointIds: string[]): Promise<void> {
  await db.query(`UPDATE webhook_deliveries SET ${unscheduleSet('$2')} WHERE endpoint_id = ANY($1::text[]) AND ${WAITING}`, [endpointIds, HELD_MESSAGE]);
}

/** Deliveries waiting for an attempt: pending, or failed with a retry scheduled (claimed ones included). */
export const WAITING = `next_attempt_at IS NOT NULL AND status IN ('pending', 'failed')`;
/** What unscheduling writes: no next attempt; one never attempted says why (`message`: the parameter holding HELD_MESSAGE). */
export function unscheduleSet(message: string): string {
  return `next_attempt_at = NULL, error_message = CASE WHEN attempts = 0 THEN ${message} ELSE error_message END`;
}

/**
 * An endpoint switched on again (it was off): nothing it was owed is lost.
 * Every delivery still owed an attempt (pending, or failed with attempts
 * left) is due at once; one whose attempt is in flight (leased) when its
 * lease ends, so it is not sent a second time meanwhile: the attempt's result
 * sets its next attempt. In the caller's transaction, which holds the
 * endpoint's row; the deliveries are locked in id order.
 */
export async function rescheduleAttempts(db: Queryable, endpointId: string): Promise<void> {
  await db.query(
    `WITH owed AS (
       SELECT d.id FROM webhook_deliveries d
        WHERE d.endpoint_id = $1 AND d.status IN ('pending', 'failed') AND d.attempts < $2 AND d.next_attempt_at IS NULL
        ORDER BY d.id
          FOR NO KEY UPDATE
     )
     UPDATE webhook_deliveries d SET next_attempt_at = greatest(now(), d.leased_until),
            error_message = CASE WHEN d.attempts = 0 THEN NULL ELSE d.error_message END, updated_at = now()
       FROM owed WHERE d.id = owed.id`,
    [endpointId, MAX_ATTEMPTS],
  );
}
