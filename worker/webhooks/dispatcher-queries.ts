// The dispatcher's statements (worker/webhooks/dispatcher.ts): the claim of due deliveries, the give-back
// of those claimed and not sent, and the batch of results with endpoint health and the automatic
// shut-off. Each is one statement, so each costs one round trip; the dispatcher's header says how
// they fit together.
import { unscheduleSet, WAITING } from '../../db/events.ts';
import { SHUT_OFF_AFTER } from '../../lib/webhook-retry.ts';

/**
 * How many deliveries of endpoint `e` may be claimed and not yet written by
 * one worker (`$6`: PER_ENDPOINT and the prefetch). Healthy (its last
 * attempt succeeded): all of them. Otherwise only the failures it has left
 * before the shut-off, so attempts that all fail stop at exactly
 * SHUT_OFF_AFTER (the worker counts its failures not yet written as busy).
 */
const WINDOW = `CASE WHEN e.consecutive_failures = 0 AND e.last_delivery_status = 'succeeded' THEN $6
                ELSE least($6, ${SHUT_OFF_AFTER} - e.consecutive_failures) END`;

/**
 * The claim: due deliveries of some endpoints, at most `room` per endpoint
 * (its WINDOW, less what this worker has in flight to it, claimed ahead, or
 * failed and not yet written), oldest due first, `$4` in all; leased for `$5` seconds.
 * One statement, so a claim costs one round trip. Two texts, one per way of
 * choosing the endpoints (`endpoints`, a subquery over webhook_endpoints):
 * - targeted (CLAIM_FOR): the endpoints whose attempts just ended (`$3`),
 *   read by primary key;
 * - full (CLAIM_ALL): every endpoint that has a delivery scheduled at all,
 *   found by walking the due index from one endpoint to the next (a loose
 *   index scan), so its cost follows the endpoints with work, not every
 *   endpoint of every company.
 * After the deliveries, in the same snapshot: the endpoints in `$7` (those
 * with deliveries claimed ahead) that are still on, with their URL and
 * secret now.
 */
const claimSql = (endpoints: string, recursive = '') => `
  WITH RECURSIVE ${recursive} busy AS (
    SELECT * FROM unnest($1::text[], $2::int[]) AS b(endpoint_id, n)
  ), picked AS (
    SELECT c.id
      FROM ${endpoints} e
      LEFT JOIN busy b ON b.endpoint_id = e.id
      CROSS JOIN LATERAL (
        SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
         WHERE d.endpoint_id = e.id AND d.next_attempt_at IS NOT NULL AND d.next_attempt_at <= now()
           AND (d.leased_until IS NULL OR d.leased_until <= now())
         ORDER BY d.next_attempt_at
         LIMIT greatest(${WINDOW} - coalesce(b.n, 0), 0)
           FOR NO KEY UPDATE OF d SKIP LOCKED
      ) c
     WHERE e.active
     ORDER BY c.next_attempt_at
     LIMIT $4
  ), claimed AS (
    UPDATE webhook_deliveries d
       SET leased_until = now() + make_interval(secs => $5)
      FROM picked p, webhook_endpoints e, events ev
     WHERE d.id = p.id AND e.id = d.endpoint_id AND ev.id = d.event_id
    RETURNING d.id, d.endpoint_id, d.event_id, d.event, d.attempts, e.url, e.secret, ev.payload, d.leased_until::text AS lease
  )
  SELECT * FROM claimed
  UNION ALL
  SELECT NULL, e.id, NULL, NULL, NULL, e.url, e.secret, NULL, NULL FROM webhook_endpoints e WHERE e.id = ANY($7::text[]) AND e.active`;

export const CLAIM_FOR = claimSql('(SELECT * FROM webhook_endpoints WHERE id = ANY($3::text[]))');

export const CLAIM_ALL = claimSql(
  '(SELECT * FROM webhook_endpoints WHERE id IN (SELECT endpoint_id FROM scheduled WHERE endpoint_id IS NOT NULL))',
  // $3 is null here (no targets); named so both texts take the same parameters.
  `scheduled AS (
    (SELECT endpoint_id FROM webhook_deliveries WHERE next_attempt_at IS NOT NULL AND $3::text[] IS NULL ORDER BY endpoint_id LIMIT 1)
    UNION ALL
    SELECT (SELECT d.endpoint_id FROM webhook_deliveries d WHERE d.next_attempt_at IS NOT NULL AND d.endpoint_id > s.endpoint_id ORDER BY d.endpoint_id LIMIT 1)
      FROM scheduled s WHERE s.endpoint_id IS NOT NULL
  ),`,
);

/**
 * Gives deliveries back (lease cleared) that this worker claimed and will
 * not send, each only while its lease is still the one this worker set: a
 * lease that ran out and was taken by another worker is that worker's. Due
 * again at once, unless unscheduled meanwhile (its endpoint switched off):
 * one rescheduled to the end of this lease (its endpoint switched back on)
 * is due now, since it was never sent. The rows are locked in id order, as
 * rescheduleAttempts (a switch-on) locks them: in any other order the two
 * could deadlock.
 */
export const GIVE_BACK = `
  WITH mine AS (
    SELECT d.id FROM webhook_deliveries d
      JOIN unnest($1::text[], $2::timestamptz[]) AS r(id, lease) ON d.id = r.id AND d.leased_until = r.lease
     ORDER BY d.id
       FOR NO KEY UPDATE OF d
  )
  UPDATE webhook_deliveries d
     SET leased_until = NULL, next_attempt_at = CASE WHEN d.next_attempt_at IS NOT NULL THEN least(d.next_attempt_at, now()) END
    FROM mine
   WHERE d.id = mine.id AND d.leased_until IS NOT NULL`;

/**
 * The results of a batch of attempts, in ONE statement (so one round trip,
 * and atomic without BEGIN/COMMIT):
 * 1. `endpoints`: health, 20 failures in a row switch an endpoint off. The
 *    rows are locked in id order before they are read, so two workers writing
 *    the same endpoint add up rather than overwrite; a PUT switching an
 *    endpoint on or off locks it first too. NO KEY UPDATE, not UPDATE: writes
 *    that insert deliveries hold KEY SHARE locks on their endpoints (the
 *    foreign key) until they commit, and FOR UPDATE would queue behind them.
 *    The last delivery's time and status move forward only: another worker
 *    may have written a later attempt first (then a success of this batch
 *    does not reset the failures counted after it).
 * 2. `results`: each delivery, read through `endpoints` (so its endpoint is
 *    locked and counted first): its next attempt only if the endpoint is still
 *    on, the lease cleared. `attempts = expect` keeps a result written once
 *    even if its delivery was claimed twice (a lease that ran out while the
 *    first attempt was being written).
 * 3. `unscheduled`: an endpoint this batch switched off gets no further
 *    attempts (contract): its other waiting deliveries lose their next
 *    attempt, as unscheduleAttempts (db/events.ts) does for a pause.
 * Returns the endpoints switched off.
 */
export const RESULTS = `
  WITH h AS (
    SELECT * FROM unnest($1::text[], $2::int[], $3::bool[], $4::timestamptz[], $5::text[]) AS h(id, fails, reset, at, status)
  ), n AS (
    SELECT e.id,
           CASE WHEN NOT h.reset THEN e.consecutive_failures + h.fails
                WHEN e.last_delivery_at > h.at THEN e.consecutive_failures
                ELSE h.fails END AS failures,
           e.active AS was_active
      FROM webhook_endpoints e JOIN h ON h.id = e.id
     ORDER BY e.id
       FOR NO KEY UPDATE OF e
  ), endpoints AS (
    UPDATE webhook_endpoints e SET
      consecutive_failures = n.failures,
      last_delivery_at = greatest(e.last_delivery_at, h.at),
      last_delivery_status = CASE WHEN e.last_delivery_at > h.at THEN e.last_delivery_status ELSE h.status END,
      active = e.active AND n.failures < ${SHUT_OFF_AFTER},
      disabled_at = CASE WHEN e.active AND n.failures >= ${SHUT_OFF_AFTER} THEN now() ELSE e.disabled_at END,
      disabled_reason = CASE WHEN e.active AND n.failures >= ${SHUT_OFF_AFTER} THEN $7 ELSE e.disabled_reason END,
      -- A change of configuration (the shut-off switches it off), not an attempt's health: docs/webhooks.md.
      updated_at = CASE WHEN e.active AND n.failures >= ${SHUT_OFF_AFTER} THEN now() ELSE e.updated_at END
      FROM n JOIN h ON h.id = n.id
     WHERE e.id = n.id
    RETURNING e.id, e.active, (n.was_active AND NOT e.active) AS shut_off
  ), v AS (
    SELECT * FROM json_to_recordset($6::json)
      AS v(id text, endpoint_id text, attempts int, status text, retry_at timestamptz, delivered timestamptz, code int, body text, error text)
  ), results AS (
    UPDATE webhook_deliveries d SET
      attempts = v.attempts, status = v.status, next_attempt_at = CASE WHEN ep.active THEN v.retry_at END, leased_until = NULL,
      delivered_at = coalesce(v.delivered, d.delivered_at),
      response_status = v.code, response_body = v.body, error_message = v.error, updated_at = now()
      FROM v JOIN endpoints ep ON ep.id = v.endpoint_id
     WHERE d.id = v.id AND d.attempts = v.attempts - 1 AND d.status NOT IN ('succeeded', 'exhausted')
    RETURNING d.id
  ), unscheduled AS (
    UPDATE webhook_deliveries d SET ${unscheduleSet('$8')}
      FROM endpoints ep
     WHERE ep.shut_off AND d.endpoint_id = ep.id AND d.id NOT IN (SELECT id FROM v) AND ${WAITING}
    RETURNING d.id
  )
  SELECT id FROM endpoints WHERE shut_off`;
