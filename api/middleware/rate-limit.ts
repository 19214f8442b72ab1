// 600 requests per minute per API key (contract, Limits), shared by every web
// process, without a database write per request.
//
// Why not rate-limiter-flexible: its stores count fixed windows (2x the limit
// passes around a window edge) and write to the store on every request. Here
// the window is sliding (61 one-second buckets, see db/migrations/002) and a
// process *leases* a few tokens at a time from PostgreSQL for the current
// database second, admitting locally until they run out. The lease size
// adapts to the key's traffic (1 for a quiet key, up to 64 for a busy one), so
// a busy key costs one round trip per ~64 requests and a quiet one per
// request, and the shared total is never exceeded: leased tokens are counted
// before they are used, and unused ones are given back afterwards.
//
// If PostgreSQL does not answer within LEASE_TIMEOUT_MS the limiter degrades
// to a per-process sliding window of the same size instead of failing the
// request; it returns to the shared window as soon as the database answers.
import type { Next } from 'koa';
import type { Pool } from '../../db/pool.ts';
import { logError } from '../../lib/log.ts';
import { ApiError } from '../errors.ts';
import type { ApiContext } from '../types.ts';

const LEASE_TIMEOUT_MS = 250;
const MAX_LEASE = 64;
const WINDOW_BUCKETS = 61;

export type Decision = { allowed: boolean; limit: number; remaining: number; resetSeconds: number };

type KeyState = {
  second: number;
  expiresAt: number;
  granted: number;
  used: number;
  total: number;
  resetAfter: number;
  blockedUntil: number;
  nextWant: number;
  pending: Promise<void> | null;
  lastSeen: number;
};

/** In-memory sliding window: the fallback when the database is unreachable. */
export class LocalWindow {
  #keys = new Map<string, { base: number; counts: Int32Array }>();

  consume(key: string, limit: number, nowMs = Date.now()): Decision {
    const second = Math.floor(nowMs / 1000);
    let w = this.#keys.get(key);
    if (!w) {
      w = { base: second - (WINDOW_BUCKETS - 1), counts: new Int32Array(WINDOW_BUCKETS) };
      this.#keys.set(key, w);
    }
    const shift = second - (WINDOW_BUCKETS - 1) - w.base;
    if (shift >= WINDOW_BUCKETS) w.counts.fill(0);
    else if (shift > 0) {
      w.counts.copyWithin(0, shift);
      w.counts.fill(0, WINDOW_BUCKETS - shift);
    }
    if (shift > 0) w.base = second - (WINDOW_BUCKETS - 1);
    let total = 0;
    let oldest = -1;
    for (let i = 0; i < WINDOW_BUCKETS; i++) {
      total += w.counts[i];
      if (oldest < 0 && w.counts[i] > 0) oldest = i;
    }
    const allowed = total < limit;
    if (allowed) {
      w.counts[WINDOW_BUCKETS - 1]++;
      total++;
      if (oldest < 0) oldest = WINDOW_BUCKETS - 1;
    }
    return { allowed, limit, remaining: Math.max(0, limit - total), resetSeconds: oldest + 1 };
  }
}

export class RateLimiter {
  #pool: Pool;
  #keys = new Map<string, KeyState>();
  #local = new LocalWindow();
  #timer: NodeJS.Timeout;
  #degraded = false;
  /** After a failed lease, skip the database for a second instead of paying the timeout per request. */
  #retryDatabaseAt = 0;

  constructor(pool: Pool) {
    this.#pool = pool;
    // Give back unused tokens of expired leases and forget idle keys.
    this.#timer = setInterval(() => this.#sweep(), 1000);
    this.#timer.unref();
  }

  get degraded(): boolean {
    return this.#degraded;
  }

  async consume(key: string, limit: number): Promise<Decision> {
    for (;;) {
      const now = performance.now();
      if (this.#retryDatabaseAt > now) return this.#local.consume(key, limit);
      let s = this.#keys.get(key);
      if (!s) {
        s = { second: 0, expiresAt: 0, granted: 0, used: 0, total: 0, resetAfter: 1, blockedUntil: 0, nextWant: 1, pending: null, lastSeen: now };
        this.#keys.set(key, s);
      }
      s.lastSeen = now;
      if (s.blockedUntil > now) {
        return { allowed: false, limit, remaining: 0, resetSeconds: Math.max(1, Math.ceil((s.blockedUntil - now) / 1000)) };
      }
      if (s.expiresAt > now && s.used < s.granted) {
        s.used++;
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
        this.#retryDatabaseAt = performance.now() + 1000;
        fallback = this.#local.consume(key, limit);
      });
      await state.pending;
      state.pending = null;
      if (fallback) return fallback;
    }
  }

  async #lease(key: string, s: KeyState, limit: number): Promise<void> {
    const exhausted = s.expiresAt > performance.now() && s.used >= s.granted && s.granted > 0;
    const want = Math.max(1, Math.min(MAX_LEASE, Math.ceil(limit / 10), exhausted ? s.nextWant * 2 : Math.max(1, s.used)));
    const giveBack = s.granted - s.used;
    const row = await this.#call(key, want, limit, giveBack, s.second);
    this.#degraded = false;
    const now = performance.now();
    s.second = Number(row.now_second);
    s.expiresAt = now + row.ms_left;
    s.granted = row.granted;
    s.used = 0;
    s.total = row.used;
    s.resetAfter = row.reset_after;
    s.nextWant = want;
    s.blockedUntil = row.granted === 0 ? now + row.ms_left + (row.reset_after - 1) * 1000 : 0;
  }

  async #call(key: string, want: number, limit: number, giveBack: number, giveBackSecond: number) {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('rate limit lease timed out')), LEASE_TIMEOUT_MS);
    });
    try {
      const query = this.#pool.query<{ granted: number; used: number; reset_after: number; now_second: number; ms_left: number }>(
        'SELECT * FROM rate_limit_lease($1, $2, $3, $4, $5)',
        [key, want, limit, Math.max(0, giveBack), giveBackSecond],
      );
      query.catch(() => {});
      const { rows } = await Promise.race([query, timeout]);
      return rows[0];
    } finally {
      clearTimeout(timer);
    }
  }

  async #sweep(): Promise<void> {
    const now = performance.now();
    for (const [key, s] of this.#keys) {
      if (s.pending) continue;
      if (now - s.lastSeen > 120_000) {
        this.#keys.delete(key);
        continue;
      }
      const unused = s.granted - s.used;
      if (s.expiresAt <= now && unused > 0) {
        s.granted = s.used;
        await this.#call(key, 0, 1, unused, s.second).catch(() => {});
      }
    }
  }

  close(): void {
    clearInterval(this.#timer);
  }
}

export function rateLimit(defaultLimit: number) {
  return async function limitRequests(ctx: ApiContext, next: Next) {
    const auth = ctx.state.auth!;
    const limit = auth.rateLimitPerMinute ?? defaultLimit;
    const decision = await ctx.deps.rateLimiter.consume(`key:${auth.keyId}`, limit);
    ctx.set('RateLimit-Limit', String(decision.limit));
    ctx.set('RateLimit-Remaining', String(decision.remaining));
    ctx.set('RateLimit-Reset', String(decision.resetSeconds));
    if (!decision.allowed) {
      ctx.set('Retry-After', String(decision.resetSeconds));
      throw new ApiError('rate_limited');
    }
    await next();
  };
}
