// The event outbox (DESIGN.md, transactional outbox): a write that notifies
// records its event with the same client, inside the same transaction, so a
// crash never leaves a record without its event or an event without its
// record. Recording also fans the event out: one webhook delivery per
// matching active endpoint, and its first attempt's job, in that same
// transaction and the same statement.
import { randomBytes } from 'node:crypto';
import { objectIdSql } from '../lib/objectid.ts';
import { WEBHOOK_API_VERSION } from '../lib/version.ts';
import { MAX_ATTEMPTS } from '../lib/webhook-retry.ts';
import { selectorsOf, type EventName } from '../lib/webhook-events.ts';
import { JOBS_PARAMETER, type JobSender } from './job-sender.ts';
import { WEBHOOK_DELIVERY } from './queues.ts';
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

export async function recordEvent(db: Queryable, jobs: JobSender, companyId: string, name: EventName, data: EventData): Promise<string> {
  const id = eventId();
  const createdAt = new Date();
  const full = withMetadata(data);
  const payload = envelope(id, name, createdAt, full);
  const values = [id, companyId, name, WEBHOOK_API_VERSION, full, payload, createdAt, selectorsOf(name)];
  const oneStatement = await fanOutStatement(jobs);
  if (oneStatement) {
    await db.query(prepared(oneStatement, values));
    return id;
  }
  // pg-boss's insert for the queue cannot be nested (see JobSender.insertStatement): the jobs apart.
  const { rows } = await db.query<{ id: string; endpoint_id: string }>(prepared(`${EVENT_AND_DELIVERIES} SELECT id, endpoint_id FROM deliveries`, values));
  await enqueueAttempts(db, jobs, rows.map((row) => ({ deliveryId: row.id, endpointId: row.endpoint_id, attempt: 1 })));
  return id;
}

/** The event and a delivery for every active endpoint of the company whose enabled_events select its name. */
const EVENT_AND_DELIVERIES = `WITH event AS (
    INSERT INTO events (id, company_id, name, api_version, data, payload, created_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id
  ), deliveries AS (
    INSERT INTO webhook_deliveries (id, company_id, endpoint_id, event_id, event, next_attempt_at, created_at)
    SELECT ${objectIdSql('$7::timestamptz')}, e.company_id, e.id, (SELECT id FROM event), $3, $7, $7
      FROM webhook_endpoints e
     WHERE e.company_id = $2 AND e.active AND e.enabled_events && $8::text[]
    RETURNING id, endpoint_id
  )`;

/**
 * One statement per write, however many endpoints (issue 20): the event, its
 * deliveries, and each delivery's first-attempt job, inserted by pg-boss's own
 * statement for the queue fed from the deliveries just inserted. A second
 * statement for the jobs cost a round trip and pg-boss's per-call work on
 * every write that fans out. Null when pg-boss's statement cannot be nested.
 */
function fanOutStatement(jobs: JobSender): Promise<string | null> {
  let statement = fanOutStatements.get(jobs);
  if (!statement) {
    statement = jobs.insertStatement(WEBHOOK_DELIVERY).then((insertJobs) => {
      if (!insertJobs) return null;
      const firstAttempts = `(SELECT coalesce(json_agg(json_build_object(
           'data', json_build_object('delivery_id', d.id, 'attempt', 1), 'groupId', d.endpoint_id)), '[]'::json)
         FROM deliveries d)`;
      return `${EVENT_AND_DELIVERIES}, first_attempts AS (
         ${insertJobs.replace(JOBS_PARAMETER, () => firstAttempts)}
       )
       SELECT count(*)::int AS deliveries FROM deliveries`;
    });
    statement.catch(() => fanOutStatements.delete(jobs));
    fanOutStatements.set(jobs, statement);
  }
  return statement;
}

const fanOutStatements = new WeakMap<JobSender, Promise<string | null>>();

/** Jobs of delivery attempts, in the caller's transaction. */
export async function enqueueAttempts(
  db: Queryable,
  jobs: JobSender,
  attempts: Array<{ deliveryId: string; endpointId: string; attempt: number; startAfter?: Date }>,
): Promise<void> {
  await jobs.insert(
    db,
    WEBHOOK_DELIVERY,
    attempts.map((a) => ({
      data: { delivery_id: a.deliveryId, attempt: a.attempt },
      group: { id: a.endpointId },
      startAfter: a.startAfter,
      // Retry, expiry and retention come from the queue (db/queues.ts).
    })),
  );
}

/**
 * An endpoint switched off (automatically after 20 failures, or paused)
 * makes no further attempts: its waiting deliveries (pending, or failed with
 * a retry due) lose their `next_attempt_at`. Their jobs stay queued: one that
 * comes due while the endpoint is off is written as held (its status kept, no
 * next attempt) and its job dropped; rescheduleAttempts owes it again.
 */
export async function unscheduleAttempts(db: Queryable, endpointIds: string[]): Promise<void> {
  await db.query(
    `UPDATE webhook_deliveries SET next_attempt_at = NULL
      WHERE endpoint_id = ANY($1::text[]) AND next_attempt_at IS NOT NULL AND status IN ('pending', 'failed')`,
    [endpointIds],
  );
}

/**
 * An endpoint switched on again (it was off): nothing it was owed is lost.
 * Every delivery still owed an attempt (pending, or failed with attempts
 * left) is scheduled again: at its queued retry's time when that job is still
 * waiting; at once when its job is being run (an attempt in flight, or one the
 * dispatcher is writing as held: that write locks the endpoint, sees it on,
 * and queues the attempt again, worker/webhooks/dispatcher.ts), with no second
 * job; else at once with a new job for its next attempt (held while the
 * endpoint was off, the failure that shut it off, a retry that came due
 * meanwhile). In the caller's transaction, which holds the endpoint's row;
 * the deliveries are locked in id order, as the dispatcher writes them.
 */
export async function rescheduleAttempts(db: Queryable, jobs: JobSender, endpointId: string): Promise<void> {
  const { rows } = await db.query<{ id: string; attempts: number; covered: boolean }>(
    `WITH queued AS (
       SELECT j.data->>'delivery_id' AS delivery_id,
              min(j.start_after) FILTER (WHERE j.state IN ('created', 'retry')) AS queued_at,
              bool_or(j.state = 'active') AS running
         FROM pgboss.job j
        WHERE j.name = $2 AND j.group_id = $1 AND j.state IN ('created', 'retry', 'active')
        GROUP BY 1
     ), owed AS (
       SELECT d.id, d.attempts FROM webhook_deliveries d
        WHERE d.endpoint_id = $1 AND d.status IN ('pending', 'failed') AND d.attempts < $3
        ORDER BY d.id
          FOR NO KEY UPDATE
     )
     UPDATE webhook_deliveries d SET next_attempt_at = coalesce(q.queued_at, now()), updated_at = now()
       FROM owed LEFT JOIN queued q ON q.delivery_id = owed.id
      WHERE d.id = owed.id
     RETURNING d.id, d.attempts, (q.queued_at IS NOT NULL OR coalesce(q.running, false)) AS covered`,
    [endpointId, WEBHOOK_DELIVERY.name, MAX_ATTEMPTS],
  );
  const unqueued = rows.filter((row) => !row.covered);
  if (unqueued.length) await enqueueAttempts(db, jobs, unqueued.map((row) => ({ deliveryId: row.id, endpointId, attempt: row.attempts + 1 })));
}
