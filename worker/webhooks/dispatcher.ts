// The webhook dispatcher: the worker's loop that turns queued delivery
// attempts (pg-boss jobs of WEBHOOK_DELIVERY) into signed POSTs.
//
// Why not `boss.work()`: a handler holds its worker slot until every job of
// its batch is done, so one receiver taking 15 s would hold back every other
// endpoint in the batch, and one job per fetch costs four queries a delivery,
// which caps a 2-core machine far below the 4k deliveries/s we want. Instead:
// - fetch as many jobs as there are free slots (MAX_IN_FLIGHT in all), with
//   pg-boss's `groupConcurrency` bounding one endpoint to PER_ENDPOINT
//   attempts in flight across every worker, so a slow or dead receiver can
//   use PER_ENDPOINT slots and no more;
// - start every attempt at once and let each finish on its own;
// - write finished attempts in batches (every FLUSH_MS or FLUSH_SIZE
//   results): delivery rows, endpoint health and automatic shut-off, the next
//   attempt's job, and the deletion of the finished jobs, in ONE transaction.
//   A crash before that commit leaves the jobs active; they expire and are
//   fetched again, so the delivery is resent (same event id), never lost.
import type { Job } from 'pg-boss';
import type { Agent } from 'undici';
import { enqueueAttempts, unscheduleAttempts } from '../../db/events.ts';
import { prepared, transaction, type Client } from '../../db/pool.ts';
import { log, logError } from '../../lib/log.ts';
import { createGuardedAgent } from '../../lib/ssrf.ts';
import { MAX_ATTEMPTS, RETRY_DELAYS_SECONDS, SHUT_OFF_AFTER, SHUT_OFF_REASON } from '../../lib/webhook-retry.ts';
import { WEBHOOK_DELIVERY, type WebhookDeliveryJob } from '../../db/queues.ts';
import { executor } from '../../db/job-sender.ts';
import type { WorkerDeps } from '../jobs/types.ts';
import { attemptDelivery, READ_TIMEOUT_MS, type AttemptOutcome } from './attempt.ts';

export type DispatcherOptions = {
  maxInFlight: number;
  perEndpoint: number;
  /** Idle poll when the queue was empty. Bounds commit→send latency. */
  idlePollMs: number;
  flushMs: number;
  flushSize: number;
};

/**
 * Measured with `npm run bench -- webhooks` (50,000 deliveries to 3 local
 * receivers): 16 per endpoint drained about 0.9k/s, 64 about 2.6k/s; 96 and
 * 128 were no faster than 64 within the run-to-run noise once the batch
 * write was every 5 ms rather than 20 (3.3k -> 3.6-4.3k/s). A slot is held
 * from fetch to the batch write (fetch, read, transport, up to flushMs, the
 * write), so that cycle, not the network, sets the pace; 64 concurrent
 * requests is as much as we ask of one customer's server.
 */
export const DEFAULT_DISPATCHER_OPTIONS: DispatcherOptions = { maxInFlight: 512, perEndpoint: 64, idlePollMs: 100, flushMs: 5, flushSize: 256 };

type DeliveryRow = {
  id: string;
  endpoint_id: string;
  event_id: string;
  event: string;
  status: string;
  attempts: number;
  url: string;
  secret: string;
  active: boolean;
  payload: string;
};

/** What one job came to: an attempt made, or nothing to do. */
type Finished =
  | { job: Job<WebhookDeliveryJob>; kind: 'attempted'; delivery: DeliveryRow; outcome: AttemptOutcome; at: Date }
  | { job: Job<WebhookDeliveryJob>; kind: 'held'; delivery: DeliveryRow; at: Date }
  | { job: Job<WebhookDeliveryJob>; kind: 'stale' };

export class WebhookDispatcher {
  readonly #deps: WorkerDeps;
  readonly #options: DispatcherOptions;
  readonly #agent: Agent;
  #inFlight = 0;
  /** Jobs fetched whose deliveries are being read (not yet in flight). */
  #loading = 0;
  #finished: Finished[] = [];
  #flushTimer: NodeJS.Timeout | null = null;
  #flushing: Promise<void> = Promise.resolve();
  #stopped = false;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  /** The last fetch came back short: see #batchSize. */
  #saturated = false;
  /** Jobs our flushes finished (deleted) since the last fetch: group slots now free. */
  #freed = 0;
  #lastFullFetch = 0;

  constructor(deps: WorkerDeps, options: Partial<DispatcherOptions> = {}) {
    this.#deps = deps;
    this.#options = { ...DEFAULT_DISPATCHER_OPTIONS, ...options };
    this.#agent = createGuardedAgent({
      guard: deps.config.ssrfGuard,
      // Connections per origin: as many as can be in flight. Endpoints of
      // different companies often share a host (an integration platform), so
      // a per-origin cap would let one stalled endpoint starve its neighbours;
      // the per-endpoint bound is pg-boss's groupConcurrency.
      agent: { connections: this.#options.maxInFlight, connect: { timeout: READ_TIMEOUT_MS }, keepAliveTimeout: 10_000 },
    });
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops fetching, waits for the attempts in flight (15 s at most each) and writes them. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
    while (this.#inFlight + this.#loading > 0) await new Promise((r) => setTimeout(r, 50));
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    await this.#flushing;
    await this.#flush();
    await this.#agent.close();
  }

  /**
   * How many jobs to ask pg-boss for. pg-boss's fetch walks the queue in
   * order and skips the jobs of endpoints at their bound; when it cannot fill
   * the batch it walks the whole backlog (a 50,000-job backlog: 15 ms a fetch,
   * measured). So once a fetch came back short (everything fetchable is
   * taken), ask only for the slots our own flushes freed since, and walk the
   * whole queue (new endpoints, retries coming due, slots another worker
   * freed) once per idle poll.
   */
  #batchSize(room: number, now: number): number {
    if (!this.#saturated || now - this.#lastFullFetch >= this.#options.idlePollMs) return room;
    return Math.min(room, this.#freed);
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const room = this.#options.maxInFlight - this.#inFlight - this.#loading;
      if (room <= 0) {
        await this.#sleep(this.#options.flushMs);
        continue;
      }
      const now = Date.now();
      const batchSize = this.#batchSize(room, now);
      if (batchSize === 0) {
        // Woken by the next flush, or at the next full fetch.
        await this.#sleep(Math.max(1, this.#lastFullFetch + this.#options.idlePollMs - now));
        continue;
      }
      const full = batchSize === room;
      if (full) this.#lastFullFetch = now;
      this.#freed = Math.max(0, this.#freed - batchSize);
      let jobs: Job<WebhookDeliveryJob>[];
      try {
        jobs = await this.#deps.boss.fetch<WebhookDeliveryJob>(WEBHOOK_DELIVERY.name, {
          batchSize,
          groupConcurrency: this.#options.perEndpoint,
        });
      } catch (error) {
        logError('webhook.fetch_failed', error);
        await this.#sleep(1000);
        continue;
      }
      // Short: every fetchable job is taken (the queue is empty, or every
      // endpoint with work is at its bound).
      if (jobs.length < batchSize) this.#saturated = true;
      else if (full) this.#saturated = false;
      if (jobs.length === 0) {
        if (full) await this.#sleep(this.#options.idlePollMs);
        continue;
      }
      // Not awaited: the next fetch (slots our flushes freed meanwhile) need
      // not wait for this batch's deliveries to be read.
      this.#loading += jobs.length;
      void this.#begin(jobs)
        .catch((error) => {
          // The jobs stay active and expire; pg-boss hands them out again.
          logError('webhook.load_failed', error);
        })
        .finally(() => {
          this.#loading -= jobs.length;
        });
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Loads the deliveries of fetched jobs in one query and starts their attempts. */
  async #begin(jobs: Job<WebhookDeliveryJob>[]): Promise<void> {
    const { rows } = await this.#deps.pool.query<DeliveryRow>(prepared(
      `SELECT d.id, d.endpoint_id, d.event_id, d.event, d.status, d.attempts, e.url, e.secret, e.active, ev.payload
         FROM webhook_deliveries d
         JOIN webhook_endpoints e ON e.id = d.endpoint_id
         JOIN events ev ON ev.id = d.event_id
        WHERE d.id = ANY($1)`,
      [jobs.map((job) => job.data.delivery_id)],
    ));
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const job of jobs) {
      const delivery = byId.get(job.data.delivery_id);
      // Gone (endpoint deleted, history purged), already settled, or this
      // attempt was already recorded (a job fetched again after its worker
      // died just after writing): nothing to send.
      if (!delivery || delivery.attempts !== job.data.attempt - 1 || delivery.status === 'succeeded' || delivery.status === 'exhausted') {
        this.#finish({ job, kind: 'stale' });
      } else if (!delivery.active) {
        this.#finish({ job, kind: 'held', delivery, at: new Date() });
      } else {
        this.#inFlight++;
        void attemptDelivery(this.#agent, {
          url: delivery.url,
          secret: delivery.secret,
          payload: delivery.payload,
          event: delivery.event,
          eventId: delivery.event_id,
          deliveryId: delivery.id,
          attempt: job.data.attempt,
        }).then((outcome) => {
          this.#inFlight--;
          this.#finish({ job, kind: 'attempted', delivery, outcome, at: new Date() });
        });
      }
    }
  }

  #finish(result: Finished): void {
    this.#finished.push(result);
    if (this.#finished.length >= this.#options.flushSize) this.#scheduleFlush(0);
    else this.#scheduleFlush(this.#options.flushMs);
  }

  #scheduleFlush(ms: number): void {
    if (this.#flushTimer && ms > 0) return;
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = null;
      this.#flushing = this.#flushing.then(() => this.#flush());
    }, ms);
  }

  async #flush(): Promise<void> {
    const batch = this.#finished;
    if (batch.length === 0) return;
    this.#finished = [];
    try {
      await transaction(this.#deps.pool, (db) => this.#write(db, batch));
      this.#freed += batch.length;
      // The completed jobs freed their endpoints' group slots: fetch again now
      // rather than after the idle poll (the loop sleeps when every endpoint
      // with work is at its bound, which is the normal state of a backlog).
      this.#wake?.();
    } catch (error) {
      // A value the database refuses (SQLSTATE class 22, data exception) is one result's, and would
      // fail every batch it is in, for every company, on every retry: write the results one by one,
      // and leave out only what still fails (its job stays active, expires and is attempted again).
      if ((error as { code?: string }).code?.startsWith('22') && !this.#stopped) {
        logError('webhook.flush_isolating', error, { results: batch.length });
        let written = 0;
        for (const result of batch) {
          try {
            await transaction(this.#deps.pool, (db) => this.#write(db, [result]));
            written++;
          } catch (alone) {
            logError('webhook.result_unwritable', alone, { job_id: result.job.id });
          }
        }
        this.#freed += written;
        this.#wake?.();
        return;
      }
      // Kept for the next flush; if the database stays away the jobs expire
      // and are attempted again (a duplicate with the same event id).
      logError('webhook.flush_failed', error, { results: batch.length });
      if (this.#stopped) return;
      this.#finished.unshift(...batch);
      this.#scheduleFlush(1000);
    }
  }

  /** Writes a batch of finished jobs: endpoints, deliveries, next attempts, job completions. */
  async #write(db: Client, batch: Finished[]): Promise<void> {
    const attempted = batch.filter((r) => r.kind === 'attempted');

    // 0. Held results (fetched while their endpoint looked off): their
    //    endpoints are locked too, with every other endpoint of the batch in
    //    one statement in id order (as the health statement below and a PUT
    //    switching an endpoint on lock them: no deadlock). An endpoint found on
    //    once the lock is held was switched on meanwhile, by a PUT that may
    //    have counted on this very job: the attempt is queued again, not held.
    const heldOn = new Set<string>();
    const held = batch.filter((r) => r.kind === 'held');
    if (held.length > 0) {
      const ids = [...new Set([...held, ...attempted].map((r) => r.delivery.endpoint_id))].sort();
      const { rows } = await db.query<{ id: string; active: boolean }>(
        'SELECT id, active FROM webhook_endpoints WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE',
        [ids],
      );
      for (const row of rows) if (row.active) heldOn.add(row.id);
    }

    // 1. Endpoint health, in the order the attempts finished: a success
    //    resets the run of failures, failures extend it, 20 in a row switch
    //    the endpoint off. Rows are locked (in id order) before they are
    //    read, so two workers writing the same endpoint add up rather than
    //    overwrite. NO KEY UPDATE, not UPDATE: writes that insert deliveries
    //    hold KEY SHARE locks on their endpoints (the foreign key) until they
    //    commit, and FOR UPDATE would queue behind them; with pg-boss inserts
    //    in between, that formed deadlocks with concurrent API writes.
    //    `trailing`: failures after the last success of the batch (0: the
    //    last attempt succeeded); `reset`: the batch had a success.
    const health = new Map<string, { trailing: number; reset: boolean; at: Date }>();
    for (const r of attempted) {
      const h = health.get(r.delivery.endpoint_id) ?? { trailing: 0, reset: false, at: r.at };
      if (r.outcome.ok) Object.assign(h, { trailing: 0, reset: true });
      else h.trailing++;
      h.at = r.at;
      health.set(r.delivery.endpoint_id, h);
    }
    const activeAfter = new Map<string, boolean>();
    if (health.size > 0) {
      const ids = [...health.keys()];
      const values = [...health.values()];
      const { rows } = await db.query<{ id: string; active: boolean; shut_off: boolean }>(prepared(
        `WITH v AS (
           SELECT * FROM unnest($1::text[], $2::int[], $3::bool[], $4::timestamptz[], $5::text[]) AS v(id, fails, reset, at, status)
         ), n AS (
           SELECT e.id, CASE WHEN v.reset THEN v.fails ELSE e.consecutive_failures + v.fails END AS failures,
                  e.active AS was_active
             FROM webhook_endpoints e JOIN v ON v.id = e.id
            ORDER BY e.id
            FOR NO KEY UPDATE OF e
         )
         UPDATE webhook_endpoints e SET
           consecutive_failures = n.failures,
           last_delivery_at = v.at,
           last_delivery_status = v.status,
           active = e.active AND n.failures < ${SHUT_OFF_AFTER},
           disabled_at = CASE WHEN e.active AND n.failures >= ${SHUT_OFF_AFTER} THEN now() ELSE e.disabled_at END,
           disabled_reason = CASE WHEN e.active AND n.failures >= ${SHUT_OFF_AFTER} THEN $6 ELSE e.disabled_reason END,
           updated_at = now()
          FROM n JOIN v ON v.id = n.id
         WHERE e.id = n.id
         RETURNING e.id, e.active, (n.was_active AND NOT e.active) AS shut_off`,
        [
          ids,
          values.map((h) => h.trailing),
          values.map((h) => h.reset),
          values.map((h) => h.at),
          values.map((h) => (h.trailing === 0 ? 'succeeded' : 'failed')),
          SHUT_OFF_REASON,
        ],
      ));
      const shutOff: string[] = [];
      for (const row of rows) {
        activeAfter.set(row.id, row.active);
        if (row.shut_off) {
          log('webhook.endpoint_shut_off', { endpoint_id: row.id });
          shutOff.push(row.id);
        }
      }
      // No further attempts (contract): the endpoint's waiting deliveries stop showing one.
      if (shutOff.length) await unscheduleAttempts(db, shutOff);
    }

    // 2. Deliveries. A failure is retried on the contract's schedule while
    //    attempts remain and the endpoint is on; `exhausted` after the sixth.
    //    A delivery whose endpoint is off is held: no next attempt until the
    //    endpoint is switched on again (rescheduleAttempts, db/events.ts).
    const updates: Array<{ id: string; expect: number; attempts: number; status: string; next: Date | null; delivered: Date | null; code: number | null; body: string | null; error: string | null }> = [];
    const retries: Array<{ deliveryId: string; endpointId: string; attempt: number; startAfter: Date }> = [];
    for (const r of batch) {
      if (r.kind === 'stale') continue;
      if (r.kind === 'held') {
        if (heldOn.has(r.delivery.endpoint_id)) {
          // Switched on since it was fetched: the same attempt, queued again at once.
          updates.push({ id: r.delivery.id, expect: r.delivery.attempts, attempts: r.delivery.attempts, status: r.delivery.status, next: r.at, delivered: null, code: null, body: null, error: null });
          retries.push({ deliveryId: r.delivery.id, endpointId: r.delivery.endpoint_id, attempt: r.job.data.attempt, startAfter: r.at });
          continue;
        }
        // Its status is kept (a delivery never attempted stays `pending`); switching the endpoint on schedules it again.
        // One attempted before keeps that attempt's outcome (status code, body, error): nothing was attempted now.
        const error = r.delivery.attempts === 0 ? 'El endpoint está desactivado; la entrega no se intentó' : null;
        updates.push({ id: r.delivery.id, expect: r.delivery.attempts, attempts: r.delivery.attempts, status: r.delivery.status, next: null, delivered: null, code: null, body: null, error });
        continue;
      }
      const attempts = r.job.data.attempt;
      if (r.outcome.ok) {
        updates.push({ id: r.delivery.id, expect: attempts - 1, attempts, status: 'succeeded', next: null, delivered: r.at, code: r.outcome.status, body: r.outcome.body, error: null });
        continue;
      }
      const endpointOn = activeAfter.get(r.delivery.endpoint_id) ?? false;
      const retry = attempts < MAX_ATTEMPTS && endpointOn;
      const next = retry ? new Date(r.at.getTime() + RETRY_DELAYS_SECONDS[attempts - 1] * 1000) : null;
      updates.push({
        id: r.delivery.id,
        expect: attempts - 1,
        attempts,
        status: attempts >= MAX_ATTEMPTS ? 'exhausted' : 'failed',
        next,
        delivered: null,
        code: r.outcome.status,
        body: r.outcome.body,
        error: r.outcome.error,
      });
      if (next) retries.push({ deliveryId: r.delivery.id, endpointId: r.delivery.endpoint_id, attempt: attempts + 1, startAfter: next });
    }
    if (updates.length > 0) {
      // `attempts = v.expect` (the count before this attempt) keeps a result
      // written once even if its job was handed out twice.
      const { rows: written } = await db.query<{ id: string }>(prepared(
        `UPDATE webhook_deliveries d SET
           attempts = v.attempts, status = v.status, next_attempt_at = v.next, delivered_at = coalesce(v.delivered, d.delivered_at),
           response_status = CASE WHEN v.attempts = v.expect THEN d.response_status ELSE v.code END,
           response_body = CASE WHEN v.attempts = v.expect THEN d.response_body ELSE v.body END,
           error_message = CASE WHEN v.attempts = v.expect AND v.error IS NULL THEN d.error_message ELSE v.error END, updated_at = now()
          FROM unnest($1::text[], $2::int[], $3::text[], $4::timestamptz[], $5::timestamptz[], $6::int[], $7::text[], $8::text[], $9::int[])
               AS v(id, attempts, status, next, delivered, code, body, error, expect)
         WHERE d.id = v.id AND d.attempts = v.expect AND d.status NOT IN ('succeeded', 'exhausted')
         RETURNING d.id`,
        [
          updates.map((u) => u.id),
          updates.map((u) => u.attempts),
          updates.map((u) => u.status),
          updates.map((u) => u.next),
          updates.map((u) => u.delivered),
          updates.map((u) => u.code),
          updates.map((u) => u.body),
          updates.map((u) => u.error),
          updates.map((u) => u.expect),
        ],
      ));
      const kept = new Set(written.map((row) => row.id));
      await enqueueAttempts(db, this.#deps.jobs, retries.filter((r) => kept.has(r.deliveryId)));
    }

    // 3. The jobs themselves, fenced to the attempt that was fetched. Deleted
    //    rather than completed: the delivery row is the history (status,
    //    attempts, response), a completed job would only be kept to be purged,
    //    and a delete writes no new row version and no index entries (the
    //    flush's costliest statement when it was a complete).
    await this.#deps.boss.deleteJob(
      WEBHOOK_DELIVERY.name,
      batch.map((r) => ({ id: r.job.id, retryCount: r.job.retryCount })),
      { db: executor(db) },
    );
  }
}
