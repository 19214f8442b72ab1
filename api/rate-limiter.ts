// 600 requests per minute per API key (contract, Limits), shared by every web
// process, without a database write per request.
//
// Why not rate-limiter-flexible: its stores count fixed windows (2x the limit
// passes around a window edge) and write to the store on every request. Here
// the window is sliding (61 one-second buckets, see db/migrations/002) and a
// process *leases* a few tokens at a time from PostgreSQL for the current
// database second, admitting locally until they run out. The lease size
// adapts to the key's traffic (1 for a quiet key, up to a tenth of the limit
// and at most 64 for a busy one), so a busy key costs one round trip per ~60
// requests and a quiet one per request, and the shared total is never
// exceeded: leased tokens are counted before they are used, and unused ones
// are given back afterwards (on the next lease, or by a sweep every second).
// A lease is used only until the database second it was counted in ends,
// measured from when the lease was *asked*, so the process never uses a token
// outside the bucket that counts it.
//
// Headers: RateLimit-Limit is the key's limit; RateLimit-Remaining is what is
// left in the current window (exact with one process; across processes it
// does not see tokens other processes took since this one last asked);
// RateLimit-Reset is the number of seconds until the oldest request counted in
// the window leaves it, i.e. until capacity starts coming back; on a 429 it
// equals Retry-After.
//
// If PostgreSQL does not answer within LEASE_TIMEOUT_MS the limiter degrades
// to a per-process sliding window instead of failing the request, and asks
// the database again after a second. That window also counts the requests this
// process admitted through the database in the last minute, and the requests
// it admits while degraded are added to the shared window once the database
// answers again, so one process never exceeds the limit across an outage.
// Its size is this process's share: the limit divided by the web processes
// alive (each says so every HEARTBEAT_MS in rate_limit_processes), and no more
// than what the others had left at this process's last lease. So processes cut
// off from the database together admit about the limit between them, not N
// times it: at most it when the key's traffic was spread evenly (a share is
// rounded down, and at least 1); a process that had taken more than its share
// before admits nothing more, and the excess it took stays the only overshoot.
// A process counts only itself until its first heartbeat answers.
//
// A lease counts as timed out only once the event loop has also read what
// arrived meanwhile: under a burst the loop can be busy past the timeout with
// the answer already in the socket.
import { randomUUID } from 'node:crypto';
import type { QueryConfig } from 'pg';
import type { Pool } from '../db/pool.ts';
import { logError } from '../lib/log.ts';

/** Default of RATE_LIMIT_LEASE_TIMEOUT_MS (lib/config.ts). */
export const LEASE_TIMEOUT_MS = 1000;
/** How often a process tells the others it is alive, and how long one unheard of still counts. */
const HEARTBEAT_MS = 5000;
const ALIVE_SECONDS = 15;
const RETRY_DATABASE_MS = 1000;
const MAX_LEASE = 64;
const WINDOW_BUCKETS = 61;
const IDLE_KEY_MS = 120_000;

export type Decision = { allowed: boolean; limit: number; remaining: number; resetSeconds: number };

type LeaseRow = { granted: number; used: number; reset_after: number; now_second: number; ms_left: number };

type KeyState = {
  /** Database second the current lease is counted in. */
  second: number;
  /** performance.now() after which the current lease must not be used. */
  expiresAt: number;
  granted: number;
  used: number;
  /** The window's count right after the current lease was granted. */
  total: number;
  resetAfter: number;
  /** Refused by the database: answer 429 locally until then, then ask again. */
  recheckAt: number;
  /** Refused: when capacity comes back (Retry-After). */
  retryAt: number;
  nextWant: number;
  pending: Promise<void> | null;
  lastSeen: number;
  /** What the other processes held of the window at this process's last lease, and when (performance.now()). */
  others: number;
  othersAt: number;
};

type Window = { base: number; counts: Int32Array; total: number };

/**
 * In-memory sliding window of 61 one-second buckets (the database's algorithm
 * in one process): the fallback when the database is unreachable.
 */
export class LocalWindow {
  #keys = new Map<string, Window>();

  #window(key: string, second: number): Window {
    let w = this.#keys.get(key);
    if (!w) {
      w = { base: second - (WINDOW_BUCKETS - 1), counts: new Int32Array(WINDOW_BUCKETS), total: 0 };
      this.#keys.set(key, w);
      return w;
    }
    const shift = second - (WINDOW_BUCKETS - 1) - w.base;
    if (shift >= WINDOW_BUCKETS) {
      w.counts.fill(0);
      w.total = 0;
    } else if (shift > 0) {
      for (let i = 0; i < shift; i++) w.total -= w.counts[i];
      w.counts.copyWithin(0, shift);
      w.counts.fill(0, WINDOW_BUCKETS - shift);
    }
    if (shift > 0) w.base = second - (WINDOW_BUCKETS - 1);
    return w;
  }

  /** What this process admitted for the key in the current window. */
  count(key: string, nowMs = Date.now()): number {
    return this.#keys.has(key) ? this.#window(key, Math.floor(nowMs / 1000)).total : 0;
  }

  /** Counts a request admitted by the shared limiter, so a later fallback knows about it. */
  record(key: string, nowMs = Date.now()): void {
    const w = this.#window(key, Math.floor(nowMs / 1000));
    w.counts[WINDOW_BUCKETS - 1]++;
    w.total++;
  }

  consume(key: string, limit: number, nowMs = Date.now()): Decision {
    const w = this.#window(key, Math.floor(nowMs / 1000));
    const allowed = w.total < limit;
    if (allowed) {
      w.counts[WINDOW_BUCKETS - 1]++;
      w.total++;
    }
    // Bucket i leaves the window i + 1 seconds after the current second began.
    const oldest = w.counts.findIndex((n) => n > 0);
    return { allowed, limit, remaining: Math.max(0, limit - w.total), resetSeconds: oldest < 0 ? 1 : oldest + 1 };
  }

  /** Forgets keys with nothing left in their window. */
  prune(nowMs = Date.now()): void {
    const second = Math.floor(nowMs / 1000);
    for (const [key, w] of this.#keys) {
      if (w.base + 2 * (WINDOW_BUCKETS - 1) < second) this.#keys.delete(key);
    }
  }

  get size(): number {
    return this.#keys.size;
  }
}

export class RateLimiter {
  #pool: Pool;
  #keys = new Map<string, KeyState>();
  #local = new LocalWindow();
  #timer: NodeJS.Timeout;
  #degraded = false;
  #fallbacks = 0;
  /** After a failed lease, skip the database for a second instead of paying the timeout per request. */
  #retryDatabaseAt = 0;
  /** Requests admitted locally while degraded, to be counted in the shared window once it answers. */
  #debt = new Map<string, { count: number; last: number }>();
  #sweeping = false;
  readonly #leaseTimeoutMs: number;
  readonly #processId = randomUUID();
  /** Web processes sharing the limits, this one included, as last counted in the database. */
  #processes = 1;
  #heartbeatAt = 0;

  constructor(pool: Pool, options: { leaseTimeoutMs?: number } = {}) {
    this.#pool = pool;
    this.#leaseTimeoutMs = options.leaseTimeoutMs ?? LEASE_TIMEOUT_MS;
    // Give back unused tokens of expired leases and forget idle keys.
    this.#timer = setInterval(() => void this.#sweep(), 1000);
    this.#timer.unref();
    void this.#heartbeat().catch(() => {});
  }

  /** True while the last attempt to reach the database failed (per-process limit in force). */
  get degraded(): boolean {
    return this.#degraded;
  }

  /** The web processes this one last counted (itself included): a degraded window is the limit divided by it. */
  get processes(): number {
    return this.#processes;
  }

  /** How many times a lease failed or timed out and the per-process window answered instead. */
  get fallbacks(): number {
    return this.#fallbacks;
  }

  async consume(key: string, limit: number): Promise<Decision> {
    for (;;) {
      const now = performance.now();
      if (this.#retryDatabaseAt > now) return this.#degradedConsume(key, limit);
      let s = this.#keys.get(key);
      if (!s) {
        s = { second: 0, expiresAt: 0, granted: 0, used: 0, total: 0, resetAfter: 1, recheckAt: 0, retryAt: 0, nextWant: 1, pending: null, lastSeen: now, others: 0, othersAt: 0 };
        this.#keys.set(key, s);
      }
      s.lastSeen = now;
      if (s.recheckAt > now) return this.#refused(s, limit, now);
      if (s.expiresAt > now && s.used < s.granted) {
        s.used++;
        this.#local.record(key);
        return { allowed: true, limit, remaining: Math.max(0, limit - s.total + (s.granted - s.used)), resetSeconds: s.resetAfter };
      }
      if (s.pending) {
        await s.pending;
        continue;
      }
      const state = s;
      let fallback: Decision | null = null;
      state.pending = this.#lease(key, state, limit).catch((error) => {
        if (!this.#degraded) logError('rate_limit.degraded', error);
        this.#degraded = true;
        this.#fallbacks++;
        this.#retryDatabaseAt = performance.now() + RETRY_DATABASE_MS;
        fallback = this.#degradedConsume(key, limit);
      });
      await state.pending;
      state.pending = null;
      if (fallback) return fallback;
      // Refused: answer now (the lease may have ended already; do not ask again in a loop).
      if (state.granted === 0 && state.retryAt > 0) return this.#refused(state, limit, performance.now());
    }
  }

  #degradedConsume(key: string, limit: number): Decision {
    // The other processes' share at the last lease still counts for the minute it stays in the window.
    const s = this.#keys.get(key);
    const others = s && performance.now() - s.othersAt < WINDOW_BUCKETS * 1000 ? s.others : 0;
    // At least 1: a key whose limit is below the number of processes is not refused outright.
    const share = Math.min(limit - others, Math.max(1, Math.floor(limit / this.#processes)));
    const decision = this.#local.consume(key, Math.max(0, share));
    if (decision.allowed) this.#addDebt(key, 1);
    return { ...decision, limit };
  }

  #addDebt(key: string, count: number): void {
    const now = performance.now();
    const debt = this.#debt.get(key);
    // A debt whose last request has left the window no longer counts.
    const carried = debt && now - debt.last < WINDOW_BUCKETS * 1000 ? debt.count : 0;
    this.#debt.set(key, { count: carried + count, last: now });
  }

  #takeDebt(key: string): number {
    const debt = this.#debt.get(key);
    if (!debt) return 0;
    this.#debt.delete(key);
    return performance.now() - debt.last < WINDOW_BUCKETS * 1000 ? debt.count : 0;
  }

  #refused(s: KeyState, limit: number, now: number): Decision {
    return { allowed: false, limit, remaining: 0, resetSeconds: Math.max(1, Math.ceil((s.retryAt - now) / 1000)) };
  }

  async #lease(key: string, s: KeyState, limit: number): Promise<void> {
    const started = performance.now();
    const exhausted = s.expiresAt > started && s.used >= s.granted && s.granted > 0;
    const want = Math.max(1, Math.min(MAX_LEASE, Math.ceil(limit / 10), exhausted ? s.nextWant * 2 : Math.max(1, s.used)));
    // Unused tokens are given back at most once: if this call fails they stay
    // counted (the safe direction), never subtracted twice.
    const giveBack = s.granted - s.used;
    s.granted = s.used;
    // Requests admitted while degraded are counted now (in the current second:
    // later than they happened, which only keeps them in the window longer).
    const debt = this.#takeDebt(key);
    let row: LeaseRow;
    try {
      row = await this.#call(key, want + debt, limit, giveBack, s.second);
    } catch (error) {
      if (debt > 0) this.#addDebt(key, debt);
      throw error;
    }
    this.#degraded = false;
    // From `started`, not from now: the database second ends at least as late
    // as started + ms_left, so the lease never outlives the bucket counting it.
    s.second = Number(row.now_second);
    s.expiresAt = started + row.ms_left;
    s.granted = row.granted;
    s.used = Math.min(row.granted, debt);
    s.total = row.used;
    // Of the window's count, what is not this process's: what it admitted in the window (the debt paid
    // now among it, and counted in this grant too), and the tokens it holds (this lease's, counted there
    // before they are used).
    s.others = Math.max(0, row.used - row.granted - (this.#local.count(key) - s.used));
    s.othersAt = performance.now();
    s.resetAfter = row.reset_after;
    s.nextWant = want;
    if (row.granted === 0) {
      s.retryAt = started + row.ms_left + (row.reset_after - 1) * 1000;
      // Tokens other processes hold may come back before then: ask again when this second ends.
      s.recheckAt = started + row.ms_left;
    } else {
      s.retryAt = 0;
      s.recheckAt = 0;
    }
  }

  async #call(key: string, want: number, limit: number, giveBack: number, giveBackSecond: number): Promise<LeaseRow> {
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    let answered = false;
    const timeout = new Promise<never>((_, reject) => {
      // Past the timeout, the loop's next poll phase runs before setImmediate's callback: an answer
      // already in the socket (a loop busy with a burst) is read and wins the race.
      timer = setTimeout(() => {
        setImmediate(() => {
          if (answered) return;
          timedOut = true;
          reject(new Error('rate limit lease timed out'));
        });
      }, this.#leaseTimeoutMs);
    });
    const query = this.#pool.query<LeaseRow>('SELECT * FROM rate_limit_lease($1, $2, $3, $4, $5)', [
      key,
      want,
      limit,
      Math.max(0, giveBack),
      giveBackSecond,
    ]);
    // A lease that answers after we gave up still took tokens: give them back.
    query.then(
      ({ rows }) => {
        answered = true;
        const late = rows[0];
        if (timedOut && late && late.granted > 0) {
          this.#pool.query('SELECT * FROM rate_limit_lease($1, 0, 1, $2, $3)', [key, late.granted, late.now_second]).catch(() => {});
        }
      },
      () => {},
    );
    try {
      const { rows } = await Promise.race([query, timeout]);
      return rows[0];
    } finally {
      clearTimeout(timer);
    }
  }

  async #sweep(): Promise<void> {
    // One sweep at a time: with a slow database a sweep can outlast the interval.
    if (this.#sweeping) return;
    this.#sweeping = true;
    try {
      await this.#sweepOnce();
    } finally {
      this.#sweeping = false;
    }
  }

  /** Says this process is alive and counts those that are (one round trip every HEARTBEAT_MS). */
  async #heartbeat(): Promise<void> {
    this.#heartbeatAt = performance.now();
    // Bounded: a connection that stopped answering must not hold the sweep (give-backs, pruning) behind it.
    const { rows } = await this.#pool.query<{ n: number }>({
      text: `WITH beat AS (INSERT INTO rate_limit_processes (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET seen_at = now()),
                  gone AS (DELETE FROM rate_limit_processes WHERE seen_at < now() - interval '1 hour')
             SELECT 1 + count(*)::int AS n FROM rate_limit_processes WHERE id <> $1 AND seen_at > now() - make_interval(secs => $2)`,
      values: [this.#processId, ALIVE_SECONDS],
      query_timeout: HEARTBEAT_MS,
    } as QueryConfig);
    this.#processes = rows[0].n;
  }

  async #sweepOnce(): Promise<void> {
    const now = performance.now();
    // Counted while the database answers; while it does not, the last count stands.
    if (now - this.#heartbeatAt >= HEARTBEAT_MS && this.#retryDatabaseAt <= now) await this.#heartbeat().catch(() => {});
    this.#local.prune();
    for (const [key, debt] of this.#debt) if (now - debt.last >= WINDOW_BUCKETS * 1000) this.#debt.delete(key);
    const databaseAway = this.#retryDatabaseAt > now;
    for (const [key, s] of this.#keys) {
      if (s.pending) continue;
      if (now - s.lastSeen > IDLE_KEY_MS) {
        this.#keys.delete(key);
        continue;
      }
      const unused = s.granted - s.used;
      if (s.expiresAt <= now && unused > 0 && !databaseAway) {
        s.granted = s.used;
        await this.#call(key, 0, 1, unused, s.second).catch(() => {});
      }
    }
  }

  /** Stops the sweep and leaves the count of live processes. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#pool.query({ text: 'DELETE FROM rate_limit_processes WHERE id = $1', values: [this.#processId], query_timeout: HEARTBEAT_MS } as QueryConfig).catch(() => {});
  }
}
