// Delivery history is kept 30 days (contract, Limits), then purged, with the
// events it delivered (the outbox rows carry the signed bodies) once no
// delivery of them is left: a delivery's age, not its event's, decides. Runs every
// hour so no single run has a day's worth of rows to delete; batches of 5,000
// keep each statement's locks short on a busy table. Expired user sessions
// go too, and deliveries left scheduled on an endpoint that is off lose their
// next attempt (below).
import { unscheduleSet, WAITING } from '../../db/events.ts';
import type { Pool } from '../../db/pool.ts';
import { HELD_MESSAGE } from '../../lib/webhook-retry.ts';
import { PURGE_WEBHOOK_HISTORY } from '../../db/queues.ts';
import type { JobDefinition } from './types.ts';

export const HISTORY_DAYS = 30;
const BATCH = 5000;

async function deleteInBatches(pool: Pool, sql: string): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await pool.query(sql);
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < BATCH) return total;
  }
}

export async function purgeWebhookHistory(pool: Pool): Promise<{ deliveries: number; events: number; unscheduled: number }> {
  const deliveries = await deleteInBatches(
    pool,
    `DELETE FROM webhook_deliveries WHERE id IN (
       SELECT id FROM webhook_deliveries WHERE created_at < now() - interval '${HISTORY_DAYS} days' LIMIT ${BATCH})`,
  );
  const events = await deleteInBatches(
    pool,
    // An event still delivered (a replay made since, of an event older than the history) stays, with
    // that delivery and its retries, until the delivery itself is 30 days old.
    `DELETE FROM events WHERE id IN (
       SELECT e.id FROM events e
        WHERE e.created_at < now() - interval '${HISTORY_DAYS} days'
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id)
        LIMIT ${BATCH})`,
  );
  await pool.query(`DELETE FROM user_sessions WHERE expires_at < now() - interval '1 day'`);
  // A write that fanned out while its endpoint was being paused (each read the other's row before it
  // committed) leaves a delivery scheduled on an endpoint that is off. No claim takes it (claims read
  // endpoints that are on), and switching the endpoint on makes it due anyway; here it loses its next
  // attempt, as the pause would have done, so it reads as the docs say.
  const { rowCount: unscheduled } = await pool.query(
    `UPDATE webhook_deliveries d SET ${unscheduleSet('$1')}
       FROM webhook_endpoints e
      WHERE e.id = d.endpoint_id AND NOT e.active AND (d.leased_until IS NULL OR d.leased_until <= now()) AND ${WAITING}`,
    [HELD_MESSAGE],
  );
  return { deliveries, events, unscheduled: unscheduled ?? 0 };
}

export const purgeWebhookHistoryJob: JobDefinition = {
  queue: PURGE_WEBHOOK_HISTORY,
  cron: '41 * * * *',
  handler: async ({ pool }) => purgeWebhookHistory(pool),
};
