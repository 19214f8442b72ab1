// The webhook dispatcher: the worker's loop that turns due webhook deliveries
// into signed POSTs. The deliveries are the queue (no pg-boss job per
// attempt): a delivery is due when its `next_attempt_at` has come.
//
// - A claim is one statement: it picks the due deliveries of endpoints that
//   have room, oldest first, leases them (`leased_until`, LEASE_SECONDS
//   away: a leased delivery is not claimed again until its lease runs out)
//   and returns what the POST needs (URL, secret, payload). Rows another
//   worker is claiming are skipped (SKIP LOCKED). The lease changes no
//   indexed column, so PostgreSQL writes it without index entries (a HOT
//   update, fillfactor 80: migration 042).
// - Each worker sends at most MAX_IN_FLIGHT attempts at once, PER_ENDPOINT to
//   one endpoint, so a slow or dead receiver holds PER_ENDPOINT of its slots
//   and no more. A slot is freed when its POST ends, not when its result is
//   written: the lease keeps the delivery from being claimed again meanwhile.
// - An endpoint not known to be healthy (its last attempt failed, or it has
//   none yet) gets no more attempts at once than the failures it has left
//   before the automatic shut-off (SHUT_OFF_AFTER less its consecutive
//   failures, written or not): a receiver that fails from the start gets
//   exactly 20 attempts from one worker, never a burst past the shut-off.
//   The window is per worker process (the attempts out at other workers are
//   not counted): N workers may send up to N × 20 (docs/webhooks.md).
//   A healthy one (last attempt a success) gets the whole PER_ENDPOINT.
// - Finished attempts are written in batches (every FLUSH_MS or FLUSH_SIZE
//   results): delivery rows (the next attempt's time, the lease cleared),
//   endpoint health and automatic shut-off, in ONE statement. A crash before
//   that commit leaves the deliveries leased; when the lease runs out they are
//   due again and sent again (same event id), never lost.
// - Which endpoints a claim looks at: once per IDLE_POLL_MS every endpoint
//   with a delivery scheduled (new work, retries coming due, leases run out),
//   found by walking the due index from one endpoint to the next, so the cost
//   follows the endpoints with work, not all of them; in between only those
//   whose attempts just ended (their slots are what is free).
// The statements themselves are in dispatcher-queries.ts.
import type { Agent } from 'undici';
import { prepared } from '../../db/pool.ts';
import { log, logError, logRepeatedError } from '../../lib/log.ts';
import { createGuardedAgent } from '../../lib/ssrf.ts';
import { HELD_MESSAGE, MAX_ATTEMPTS, retryDelaySeconds, SHUT_OFF_REASON } from '../../lib/webhook-retry.ts';
import type { WorkerDeps } from '../jobs/types.ts';
import { attemptDelivery, ATTEMPT_DEADLINE_MS, READ_TIMEOUT_MS, type AttemptOutcome } from './attempt.ts';
import { CLAIM_ALL, CLAIM_FOR, GIVE_BACK, RESULTS } from './dispatcher-queries.ts';

export type DispatcherOptions = {
  maxInFlight: number;
  perEndpoint: number;
  /**
   * Deliveries claimed ahead per endpoint, beyond what is in flight: when an
   * attempt ends the next one starts at once, without waiting for a claim's
   * round trip (the cycle of a slot was its POST plus the claim).
   *
   * A delivery claimed ahead is sent with its endpoint's URL and secret as
   * read by the latest claim, and only while that read is at most
   * `aheadFreshMs` old (or, right after the claim that made it, as old as
   * that claim's round trip, as for the deliveries it claimed) and found the
   * endpoint on: every claim re-reads the
   * endpoints that have deliveries waiting ahead (in the same statement),
   * and drops, and gives back, those of an endpoint switched off or deleted.
   */
  prefetch: number;
  /**
   * How long a delivery claimed ahead may wait for a slot (all of the
   * worker's may be taken by slow receivers): past this it is not sent but
   * given back (lease cleared, due again), so an attempt started from it
   * still ends, and is written, well inside its lease.
   */
  aheadMaxMs: number;
  /**
   * How recent the read of an endpoint must be for a delivery claimed ahead
   * to be sent from it when a slot frees (at most this old). Older, the
   * delivery waits for the next claim, which re-reads the endpoint and
   * follows at once when attempts end. Bounds how long after a change to an endpoint (its URL,
   * its secret, a pause, a deletion) an attempt may start with what it was
   * before, as the claim's own round trip does for deliveries not claimed
   * ahead.
   */
  aheadFreshMs: number;
  /** How often every active endpoint is looked at. Bounds commit→send latency of new work. */
  idlePollMs: number;
  /** How long a claim waits for more attempts to end before it claims for their endpoints. */
  claimMs: number;
  flushMs: number;
  flushSize: number;
};

/**
 * Measured with `npm run bench -- webhooks` (50,000 deliveries to 3 local
 * receivers, docs/bench.md). 64 concurrent requests is as much as we ask of
 * one customer's server from one worker process.
 */
export const DEFAULT_DISPATCHER_OPTIONS: DispatcherOptions = { maxInFlight: 512, perEndpoint: 64, prefetch: 16, aheadMaxMs: 20_000, aheadFreshMs: 50, idlePollMs: 100, claimMs: 1, flushMs: 5, flushSize: 256 };

/**
 * How long a claimed delivery stays claimed: an attempt's hard deadline
 * (15 s) plus time to write its result. A worker that dies leaves its
 * deliveries due again this long after it claimed them.
 */
export const LEASE_SECONDS = 40;
if (DEFAULT_DISPATCHER_OPTIONS.aheadMaxMs + ATTEMPT_DEADLINE_MS + 5_000 > LEASE_SECONDS * 1000) throw new Error('LEASE_SECONDS must outlast the wait ahead, an attempt and its write');

type Claimed = {
  id: string;
  endpoint_id: string;
  event_id: string;
  event: string;
  /** Attempts made before this one. */
  attempts: number;
  url: string;
  secret: string;
  payload: string;
  /** The lease this claim set (`leased_until` as text, exact): a delivery is given back only while the lease is still this one. */
  lease: string;
  /** When this worker claimed it (performance.now(): a clock that never steps back): a delivery claimed ahead is sent, or given back, within `aheadMaxMs`. */
  claimedAt: number;
};

/** The deliveries claimed ahead for one endpoint, oldest first, and the endpoint as the latest claim read it. */
type Ahead = { items: Claimed[]; url: string; secret: string; readAt: number };

/** A row of the claim that is not a delivery: an endpoint with deliveries waiting ahead, read again (absent: off or deleted). */
type EndpointRead = { id: null; endpoint_id: string; url: string; secret: string };

/** An attempt's result: `startedAt` when it was sent (the endpoint's last_delivery_at, as the signature's t), `at` when it ended. */
type Finished = { delivery: Claimed; outcome: AttemptOutcome; startedAt: Date; at: Date };

export class WebhookDispatcher {
  readonly #deps: Pick<WorkerDeps, 'pool' | 'config'>;
  readonly #options: DispatcherOptions;
  readonly #agent: Agent;
  /** Attempts in flight (POST not ended), in all and per endpoint. */
  #inFlight = 0;
  readonly #perEndpoint = new Map<string, number>();
  /** Claimed ahead (prefetch), not sent yet, per endpoint. */
  readonly #ahead = new Map<string, Ahead>();
  #aheadCount = 0;
  /** Endpoints whose attempts ended since the last claim: where slots are free. */
  readonly #freed = new Set<string>();
  #finished: Finished[] = [];
  /** Claims failed in a row (the database away): said once it claims again. */
  #claimFailures = 0;
  /** Failed attempts per endpoint whose results are not written yet: busy for the claim (WINDOW, dispatcher-queries.ts). */
  readonly #failuresUnwritten = new Map<string, number>();
  #flushTimer: NodeJS.Timeout | null = null;
  #flushing: Promise<void> = Promise.resolve();
  /**
   * A batch of results the database refused is waiting to be written again.
   * Nothing is claimed meanwhile: once the outage outlasts the leases, a
   * claim would take the very deliveries whose results this worker holds and
   * send them again.
   */
  #unwritten = false;
  #stopped = false;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  #lastFullClaim = -Infinity;
  /** Deliveries being given back (an endpoint switched off): a stop waits for them. */
  readonly #givingBack = new Set<Promise<void>>();

  constructor(deps: Pick<WorkerDeps, 'pool' | 'config'>, options: Partial<DispatcherOptions> = {}) {
    this.#deps = deps;
    this.#options = { ...DEFAULT_DISPATCHER_OPTIONS, ...options };
    this.#agent = createGuardedAgent({
      guard: deps.config.ssrfGuard,
      // Connections per origin: as many as can be in flight. Endpoints of
      // different companies often share a host (an integration platform), so
      // a per-origin cap would let one stalled endpoint starve its neighbours;
      // the per-endpoint bound is the dispatcher's own.
      agent: { connections: this.#options.maxInFlight, connect: { timeout: READ_TIMEOUT_MS }, keepAliveTimeout: 10_000 },
    });
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  /**
   * Stops claiming, gives back what was claimed ahead (due again at once for
   * the next worker), waits for the attempts in flight (15 s at most each)
   * and writes them.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
    await this.#giveBackStale(Infinity);
    await Promise.all(this.#givingBack);
    while (this.#inFlight > 0) await new Promise((r) => setTimeout(r, 50));
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    this.#flushTimer = null;
    await this.#flushing;
    await this.#flush();
    await this.#agent.close();
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const now = performance.now();
      const full = now - this.#lastFullClaim >= this.#options.idlePollMs;
      // Before the room is counted: what it gives back is room again.
      await this.#giveBackStale(now);
      const room = this.#room();
      if (this.#unwritten) {
        // Woken when the results are written.
        await this.#sleep(this.#options.idlePollMs);
        continue;
      }
      // With no room, a claim still re-reads the endpoints of deliveries
      // waiting ahead once attempts end (their slots are what is free), or
      // when one could be sent but its endpoint's read is too old (nothing
      // else would read it again: no attempt of its is in flight here).
      if ((room <= 0 || !full) && this.#freed.size === 0 && !this.#aheadNeedsRead(now)) {
        // Woken when an attempt ends, or at the next full claim.
        await this.#sleep(room <= 0 ? this.#options.idlePollMs : this.#lastFullClaim + this.#options.idlePollMs - now);
        continue;
      }
      // A moment for more attempts to end, so one claim serves them together.
      if (!full && this.#options.claimMs > 0) await new Promise((r) => setTimeout(r, this.#options.claimMs));
      if (full) this.#lastFullClaim = now;
      const targets = full ? null : [...this.#freed];
      this.#freed.clear();
      try {
        await this.#claim(targets, this.#room());
        if (this.#claimFailures) {
          // The line that says the database is back (the failures were written once a minute).
          log('webhook.claim_recovered', { failures: this.#claimFailures });
          this.#claimFailures = 0;
        }
      } catch (error) {
        this.#claimFailures++;
        logRepeatedError('webhook.claim_failed', error);
        if (targets) for (const id of targets) this.#freed.add(id);
        await this.#sleep(1000);
      }
    }
  }

  /**
   * How many more deliveries this worker may claim: in flight and claimed
   * ahead together stay within maxInFlight. So a worker whose slots are all
   * taken (by slow receivers) claims nothing that another worker could send,
   * and what a claim takes ahead is only for endpoints at their own bound
   * here (PER_ENDPOINT in flight): the rest of what it takes starts at once.
   */
  #room(): number {
    return this.#options.maxInFlight - this.#inFlight - this.#aheadCount;
  }

  /** Whether a delivery waiting ahead has a free slot and only an old read of its endpoint in the way. */
  #aheadNeedsRead(now: number): boolean {
    if (this.#aheadCount === 0) return false;
    for (const [id, ahead] of this.#ahead) if (now - ahead.readAt > this.#options.aheadFreshMs && this.#canSend(id)) return true;
    return false;
  }

  #canSend(endpointId: string): boolean {
    return !this.#stopped && !this.#unwritten && this.#inFlight < this.#options.maxInFlight && (this.#perEndpoint.get(endpointId) ?? 0) < this.#options.perEndpoint;
  }

  /**
   * Claims, and sends what it can: the deliveries claimed ahead first (older),
   * then the new ones; what has no slot waits ahead. The endpoints of the
   * deliveries waiting ahead are read again by the same statement: their URL
   * and secret now, and those no longer on (switched off, by a pause or by
   * another worker's shut-off, or deleted) lose what waits for them.
   */
  async #claim(targets: string[] | null, room: number): Promise<void> {
    if (room <= 0 && this.#ahead.size === 0) return;
    const busy = new Map(this.#perEndpoint);
    for (const [id, ahead] of this.#ahead) busy.set(id, (busy.get(id) ?? 0) + ahead.items.length);
    for (const [id, n] of this.#failuresUnwritten) busy.set(id, (busy.get(id) ?? 0) + n);
    const readAt = performance.now();
    const reread = [...this.#ahead.keys()];
    const { rows } = await this.#deps.pool.query<Claimed | EndpointRead>(prepared(targets ? CLAIM_FOR : CLAIM_ALL, [
      [...busy.keys()],
      [...busy.values()],
      targets,
      Math.max(room, 0),
      LEASE_SECONDS,
      this.#options.perEndpoint + this.#options.prefetch,
      reread,
    ]));
    const on = new Set<string>();
    const claimed: Claimed[] = [];
    for (const row of rows) {
      if (row.id === null) {
        on.add(row.endpoint_id);
        const ahead = this.#ahead.get(row.endpoint_id);
        if (ahead) Object.assign(ahead, { url: row.url, secret: row.secret, readAt });
      } else {
        (row as Claimed).claimedAt = readAt;
        claimed.push(row as Claimed);
      }
    }
    for (const id of reread) if (!on.has(id)) this.#dropAhead(id);
    this.#drainAhead(readAt);
    for (const delivery of claimed) {
      const ahead = this.#ahead.get(delivery.endpoint_id);
      if (!ahead && this.#canSend(delivery.endpoint_id)) this.#send(delivery);
      else this.#keep(delivery, ahead, readAt);
    }
  }

  #keep(delivery: Claimed, ahead: Ahead | undefined, readAt: number): void {
    if (ahead) ahead.items.push(delivery);
    else this.#ahead.set(delivery.endpoint_id, { items: [delivery], url: delivery.url, secret: delivery.secret, readAt });
    this.#aheadCount++;
  }

  /**
   * Sends, from the deliveries claimed ahead, the one claimed longest ago
   * among the endpoints with a free slot and read since `readSince` (oldest
   * first across endpoints, so one whose slots are all taken by the
   * worker-wide bound is not passed over by endpoints whose own attempts
   * keep ending), with the endpoint's URL and secret as last read. One that
   * has waited past `aheadMaxMs` is not sent: the claim loop gives it back.
   * Returns whether it sent one.
   */
  #sendAhead(readSince = performance.now() - this.#options.aheadFreshMs): boolean {
    if (this.#aheadCount === 0) return false;
    const now = performance.now();
    let oldest: [string, Ahead] | null = null;
    for (const entry of this.#ahead) {
      const [id, ahead] = entry;
      if (oldest && ahead.items[0].claimedAt >= oldest[1].items[0].claimedAt) continue;
      if (ahead.readAt >= readSince && now - ahead.items[0].claimedAt <= this.#options.aheadMaxMs && this.#canSend(id)) oldest = entry;
    }
    if (!oldest) return false;
    const [id, ahead] = oldest;
    const next = ahead.items.shift()!;
    if (ahead.items.length === 0) this.#ahead.delete(id);
    this.#aheadCount--;
    this.#send({ ...next, url: ahead.url, secret: ahead.secret });
    return true;
  }

  /** Sends what waits ahead for the endpoints read since `readSince`, while slots are free. */
  #drainAhead(readSince: number): void {
    while (this.#sendAhead(readSince));
  }

  /** Gives back (lease cleared, due again) what waited ahead longer than `aheadMaxMs`, or everything when `now` is Infinity. */
  async #giveBackStale(now: number): Promise<void> {
    if (this.#aheadCount === 0) return;
    const stale: Claimed[] = [];
    for (const [id, ahead] of this.#ahead) {
      // Oldest first: a list whose first has not waited too long has nothing to give back.
      if (now - ahead.items[0].claimedAt <= this.#options.aheadMaxMs) continue;
      const keep = ahead.items.filter((d) => now - d.claimedAt <= this.#options.aheadMaxMs);
      for (const d of ahead.items) if (now - d.claimedAt > this.#options.aheadMaxMs) stale.push(d);
      if (keep.length) ahead.items = keep;
      else this.#ahead.delete(id);
    }
    this.#aheadCount -= stale.length;
    await this.#giveBack(stale);
  }

  /** An endpoint no longer on (or deleted): what was claimed ahead for it is not sent, and given back. */
  #dropAhead(endpointId: string): void {
    const ahead = this.#ahead.get(endpointId);
    if (!ahead) return;
    this.#ahead.delete(endpointId);
    this.#aheadCount -= ahead.items.length;
    const giving = this.#giveBack(ahead.items);
    this.#givingBack.add(giving);
    void giving.finally(() => this.#givingBack.delete(giving));
  }

  async #giveBack(deliveries: Claimed[]): Promise<void> {
    if (!deliveries.length) return;
    await this.#deps.pool
      .query(prepared(GIVE_BACK, [deliveries.map((d) => d.id), deliveries.map((d) => d.lease)]))
      .catch((error) => logError('webhook.release_failed', error, { deliveries: deliveries.length }));
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, Math.max(1, ms));
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  #send(delivery: Claimed): void {
    this.#inFlight++;
    this.#perEndpoint.set(delivery.endpoint_id, (this.#perEndpoint.get(delivery.endpoint_id) ?? 0) + 1);
    const startedAt = new Date();
    void attemptDelivery(this.#agent, {
      url: delivery.url,
      secret: delivery.secret,
      payload: delivery.payload,
      event: delivery.event,
      eventId: delivery.event_id,
      deliveryId: delivery.id,
      attempt: delivery.attempts + 1,
    }).then((outcome) => {
      this.#inFlight--;
      const left = this.#perEndpoint.get(delivery.endpoint_id)! - 1;
      if (left === 0) this.#perEndpoint.delete(delivery.endpoint_id);
      else this.#perEndpoint.set(delivery.endpoint_id, left);
      this.#sendAhead();
      this.#freed.add(delivery.endpoint_id);
      this.#wake?.();
      this.#finish({ delivery, outcome, startedAt, at: new Date() });
    });
  }

  #finish(result: Finished): void {
    this.#finished.push(result);
    if (!result.outcome.ok) this.#countUnwritten(result.delivery.endpoint_id, 1);
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

  #countUnwritten(endpointId: string, by: number): void {
    const n = (this.#failuresUnwritten.get(endpointId) ?? 0) + by;
    if (n > 0) this.#failuresUnwritten.set(endpointId, n);
    else this.#failuresUnwritten.delete(endpointId);
  }

  /** The batch's failures are written (or given up on): the endpoint's row counts them now. */
  #written(batch: Finished[]): void {
    for (const r of batch) if (!r.outcome.ok) this.#countUnwritten(r.delivery.endpoint_id, -1);
  }

  async #flush(): Promise<void> {
    const batch = this.#finished;
    if (batch.length === 0) return;
    this.#finished = [];
    try {
      await this.#write(batch);
      this.#written(batch);
      if (this.#unwritten) {
        this.#unwritten = false;
        this.#wake?.();
      }
    } catch (error) {
      // A value the database refuses (SQLSTATE class 22, data exception) is one result's, and would
      // fail every batch it is in, for every company, on every retry: write the results one by one,
      // and leave out only what still fails (its lease runs out and it is attempted again).
      if ((error as { code?: string }).code?.startsWith('22')) {
        logError('webhook.flush_isolating', error, { results: batch.length });
        for (const result of batch) {
          try {
            await this.#write([result]);
          } catch (alone) {
            logError('webhook.result_unwritable', alone, { delivery_id: result.delivery.id });
          }
        }
        this.#written(batch);
        this.#unwritten = false;
        this.#wake?.();
        return;
      }
      // Kept for the next flush, and no claims until it is written. If the
      // database stays away past the leases, another worker may claim and send
      // these deliveries again (a duplicate with the same event id).
      logError('webhook.flush_failed', error, { results: batch.length });
      if (this.#stopped) return;
      this.#unwritten = true;
      this.#finished.unshift(...batch);
      this.#scheduleFlush(1000);
    }
  }

  /** Writes a batch of finished attempts in one statement (RESULTS): endpoint health, then the deliveries. */
  async #write(batch: Finished[]): Promise<void> {
    // Endpoint health, in the order the attempts finished: a success resets
    // the run of failures, failures extend it. `trailing`: failures after the
    // last success of the batch (0: the last attempt succeeded); `reset`: the
    // batch had a success; `at`: the latest time one of them was sent (the contract's "time of the last
    // attempt": when it was sent, the time its signature carries, not when its answer or timeout came).
    const health = new Map<string, { trailing: number; reset: boolean; at: Date }>();
    for (const r of batch) {
      const h = health.get(r.delivery.endpoint_id) ?? { trailing: 0, reset: false, at: r.startedAt };
      if (r.outcome.ok) Object.assign(h, { trailing: 0, reset: true });
      else h.trailing++;
      if (r.startedAt > h.at) h.at = r.startedAt;
      health.set(r.delivery.endpoint_id, h);
    }
    const endpoints = [...health];
    // A failure is retried on the contract's schedule while attempts remain
    // (`retry_at`) and the endpoint is still on once this batch is counted;
    // `exhausted` after the sixth.
    // The next attempt is counted from when this one was sent, so attempts on time keep the contract's
    // offsets from the first (lib/webhook-retry.ts), however long this one's answer took.
    const results = batch.map(({ delivery, outcome, startedAt, at }) => {
      const attempts = delivery.attempts + 1;
      const retryAt = !outcome.ok && attempts < MAX_ATTEMPTS ? new Date(startedAt.getTime() + retryDelaySeconds(attempts) * 1000) : null;
      const status = outcome.ok ? 'succeeded' : attempts >= MAX_ATTEMPTS ? 'exhausted' : 'failed';
      return { delivery, attempts, status, retryAt, delivered: outcome.ok ? at : null, outcome };
    });
    const { rows } = await this.#deps.pool.query<{ id: string }>(prepared(RESULTS, [
      endpoints.map(([id]) => id),
      endpoints.map(([, h]) => h.trailing),
      endpoints.map(([, h]) => h.reset),
      endpoints.map(([, h]) => h.at),
      endpoints.map(([, h]) => (h.trailing === 0 ? 'succeeded' : 'failed')),
      // One JSON text rather than nine arrays: JSON.stringify is native, where pg quotes and escapes
      // every element of an array parameter in JavaScript (the worker's CPU is what the drain spends).
      JSON.stringify(results.map((r) => ({
        id: r.delivery.id,
        endpoint_id: r.delivery.endpoint_id,
        attempts: r.attempts,
        status: r.status,
        retry_at: r.retryAt,
        delivered: r.delivered,
        code: r.outcome.status,
        body: r.outcome.body,
        error: r.outcome.error,
      }))),
      SHUT_OFF_REASON,
      HELD_MESSAGE,
    ]));
    for (const row of rows) {
      log('webhook.endpoint_shut_off', { endpoint_id: row.id });
      this.#dropAhead(row.id);
    }
  }
}
