// MCP plans and quota (contract: Limits, "MCP quota"; DESIGN.md: plans).
// `free`: no MCP; `starter`: 500 tool calls per billing cycle; `enterprise`:
// the operator's `--mcp-quota`. A cycle is a calendar month from the
// company's anchor (its creation), so the counter resets every month on that
// day. Every tools/call counts, failed ones included.
//
// The count lives in one row per company and cycle. `consumeCall` is the exact
// form: one statement that increments only while below the limit, so
// concurrent calls in any number of processes never pass it. Doing that on
// every call put all of a company's calls in a queue on that row's lock, one
// commit each, and halved MCP's throughput (docs/bench.md, "MCP vs REST"), so
// `McpQuota` uses it only where it matters:
//
// - far from the limit (more than MARGIN calls left, in a view of the row
//   synced within SYNC_MS), a call is admitted in memory and counted in the
//   row by a batched increment within FLUSH_MS (and on a graceful stop);
// - within MARGIN of the limit, or with no fresh view, every call takes the
//   exact statement.
//
// So one web process is exact to the call. Several can pass the limit only if
// the others serve more than MARGIN calls within about a second while this
// one's view says more than MARGIN are left. A kill -9 loses the increments
// of the last FLUSH_MS (calls served, not counted: in the customer's favour).
// Far from the limit the plan comes from a per-company cache cleared with the
// key cache (every company change notifies it, milliseconds after its commit);
// every exact call reads it afresh, so raising an exhausted quota applies to
// the very next call.
import type { Pool, Queryable } from '../../db/pool.ts';
import type { KeyCache } from '../auth/key-cache.ts';
import { logError } from '../../lib/log.ts';
import { ApiError } from '../errors.ts';

export const STARTER_QUOTA = 500;

export type QuotaState = { limit: number; used: number; available: boolean; resets_at: string };
export type QuotaDecision = { ok: true } | { ok: false; data: QuotaState };

type CompanyPlan = { plan: string; mcp_quota: number | null; mcp_cycle_anchor: Date };

/**
 * The cycle containing `now`: whole months from the anchor, as a billing anchor works (Stripe's):
 * a month without the anchor's day starts its cycle on its last day (anchored on the 31st: Jan 31,
 * Feb 28, Mar 31), rather than rolling into the next month (Mar 3) and skewing every later cycle.
 */
export function cycleOf(anchor: Date, now = new Date()): { start: Date; end: Date } {
  const at = (n: number) => {
    const month = anchor.getUTCMonth() + n;
    const lastDay = new Date(Date.UTC(anchor.getUTCFullYear(), month + 1, 0)).getUTCDate();
    return new Date(
      Date.UTC(anchor.getUTCFullYear(), month, Math.min(anchor.getUTCDate(), lastDay), anchor.getUTCHours(), anchor.getUTCMinutes(), anchor.getUTCSeconds(), anchor.getUTCMilliseconds()),
    );
  };
  let n = (now.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + (now.getUTCMonth() - anchor.getUTCMonth());
  while (n > 0 && at(n) > now) n--;
  while (at(n + 1) <= now) n++;
  return { start: at(n), end: at(n + 1) };
}

function limitOf(company: CompanyPlan): number {
  if (company.plan === 'starter') return STARTER_QUOTA;
  if (company.plan === 'enterprise') return company.mcp_quota ?? 0;
  return 0;
}

async function readPlan(db: Queryable, companyId: string): Promise<CompanyPlan> {
  const { rows } = await db.query<CompanyPlan>('SELECT plan, mcp_quota, mcp_cycle_anchor FROM companies WHERE id = $1', [companyId]);
  return rows[0];
}

/** Counts one tools/call exactly, or says why it cannot run (-32004 with this data). */
export async function consumeCall(db: Queryable, companyId: string): Promise<QuotaDecision & { used?: number }> {
  const company = await readPlan(db, companyId);
  const { start, end } = cycleOf(company.mcp_cycle_anchor);
  const limit = limitOf(company);
  const available = company.plan !== 'free';
  const { rows: counted } = await db.query<{ used: number }>(
    `INSERT INTO mcp_usage (company_id, cycle_start, used) SELECT $1, $2, 1 WHERE $3::int > 0
     ON CONFLICT (company_id, cycle_start) DO UPDATE SET used = mcp_usage.used + 1 WHERE mcp_usage.used < $3
     RETURNING used`,
    [companyId, start, limit],
  );
  if (available && counted[0]) return { ok: true, used: counted[0].used };
  const { rows: usage } = await db.query<{ used: number }>('SELECT used FROM mcp_usage WHERE company_id = $1 AND cycle_start = $2', [companyId, start]);
  return { ok: false, data: { limit, used: usage[0]?.used ?? 0, available, resets_at: end.toISOString() } };
}

const MARGIN = 50;
const SYNC_MS = 1000;
const FLUSH_MS = 200;

/**
 * What this process knows of a company's row: `used` as last read from it,
 * plus the calls it admitted that the row does not hold yet (`pending` in
 * memory, `writing` in a flush under way). Exact calls in flight are counted
 * apart (`McpQuota.#exact`) until their answer brings a fresher `used`.
 */
type CompanyCounter = { cycleStart: number; used: number; syncedAt: number; pending: number; writing: number };

/** The quota of this process: exact near the limit, batched far from it (see the top of this file). */
export class McpQuota {
  #plans = new Map<string, { plan: CompanyPlan; generation: number }>();
  #counters = new Map<string, CompanyCounter>();
  #exact = new Map<string, number>();
  #timer: NodeJS.Timeout | null = null;
  #flushing: Promise<void> = Promise.resolve();
  readonly #pool: Pool;
  readonly #keyCache: KeyCache;

  constructor(pool: Pool, keyCache: KeyCache) {
    this.#pool = pool;
    this.#keyCache = keyCache;
  }

  async consume(companyId: string): Promise<QuotaDecision> {
    const plan = await this.#plan(companyId);
    const limit = limitOf(plan);
    const cycleStart = cycleOf(plan.mcp_cycle_anchor).start.getTime();
    const counter = this.#counters.get(companyId);
    const exactInFlight = this.#exact.get(companyId) ?? 0;
    if (
      counter &&
      plan.plan !== 'free' &&
      counter.cycleStart === cycleStart &&
      Date.now() - counter.syncedAt < SYNC_MS &&
      limit - (counter.used + counter.pending + counter.writing + exactInFlight) > MARGIN
    ) {
      counter.pending++;
      this.#schedule();
      return { ok: true };
    }
    // Near the limit, stale or new: what is pending goes in first, then this call exactly.
    this.#exact.set(companyId, exactInFlight + 1);
    let decision: Awaited<ReturnType<typeof consumeCall>>;
    try {
      await this.flush();
      // Calls admitted in memory that the flush could not write (the database is failing): the row
      // is short of them, so the exact statement could admit past the limit. Refuse until it is written.
      const behind = this.#counters.get(companyId);
      if (behind && behind.cycleStart === cycleStart && behind.pending + behind.writing > 0) {
        throw new ApiError('service_unavailable', 'No se pudo registrar el uso de MCP; reintenta en unos segundos.');
      }
      // The plan read afresh here: a change reaches the cache by a notification, a few milliseconds
      // after its commit, and near the limit (an operator raising an exhausted quota) that matters.
      decision = await consumeCall(this.#pool, companyId);
    } finally {
      const left = (this.#exact.get(companyId) ?? 1) - 1;
      if (left > 0) this.#exact.set(companyId, left);
      else this.#exact.delete(companyId);
    }
    if (decision.ok && decision.used !== undefined) {
      const current = this.#counters.get(companyId);
      if (current && current.cycleStart === cycleStart) {
        current.used = Math.max(current.used, decision.used);
        current.syncedAt = Date.now();
      } else if (!current || current.pending + current.writing === 0) {
        this.#counters.set(companyId, { cycleStart, used: decision.used, syncedAt: Date.now(), pending: 0, writing: 0 });
      }
    }
    return decision.ok ? { ok: true } : { ok: false, data: decision.data };
  }

  async #plan(companyId: string): Promise<CompanyPlan> {
    const generation = this.#keyCache.generation;
    const hit = this.#plans.get(companyId);
    if (hit && hit.generation === generation && this.#keyCache.listening) return hit.plan;
    const plan = await readPlan(this.#pool, companyId);
    if (this.#keyCache.listening && generation === this.#keyCache.generation) {
      if (this.#plans.size >= 10_000) this.#plans.clear();
      this.#plans.set(companyId, { plan, generation });
    }
    return plan;
  }

  #schedule(): void {
    // unref: a retry loop against a database that is gone must not keep a stopping process alive.
    if (!this.#timer && !this.#closed) this.#timer = setTimeout(() => void this.flush(), FLUSH_MS).unref();
  }

  #closed = false;

  /** A stopping process: one last flush, then no retries (the pool is ended next; what could not be written is logged). */
  async close(): Promise<void> {
    await this.flush();
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** Adds every pending count to its row; resolves once they are all written (or the write failed and was kept for later). */
  flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const write = () => this.#write();
    this.#flushing = this.#flushing.then(write, write);
    return this.#flushing;
  }

  /** Companies this process holds a view of (tests; bounded by the pruning in #write). */
  get trackedCompanies(): number {
    return this.#counters.size;
  }

  /**
   * One statement for every company with calls pending; companies deleted
   * meanwhile are dropped. Every flush first forgets the views no call can
   * use any more (stale, nothing pending or being written: the next call of
   * that company takes the exact path and makes a new one), so the map holds
   * the companies calling in about the last second, not every company since start.
   */
  async #write(): Promise<void> {
    const staleBefore = Date.now() - SYNC_MS;
    for (const [companyId, c] of this.#counters) {
      if (c.pending === 0 && c.writing === 0 && c.syncedAt < staleBefore) this.#counters.delete(companyId);
    }
    const batch = [...this.#counters].filter(([, c]) => c.pending > 0).map(([companyId, c]) => ({ companyId, counter: c, n: c.pending }));
    if (batch.length === 0) return;
    for (const { counter, n } of batch) {
      counter.pending -= n;
      counter.writing += n;
    }
    try {
      // Calls already served: added whatever the limit (only admitted with more than MARGIN left).
      const { rows } = await this.#pool.query<{ company_id: string; used: number }>(
        `INSERT INTO mcp_usage (company_id, cycle_start, used)
         SELECT u.company_id, u.cycle_start, u.n
           FROM unnest($1::text[], $2::timestamptz[], $3::int[]) AS u (company_id, cycle_start, n)
           JOIN companies c ON c.id = u.company_id
         ON CONFLICT (company_id, cycle_start) DO UPDATE SET used = mcp_usage.used + EXCLUDED.used
         RETURNING company_id, used`,
        [batch.map((b) => b.companyId), batch.map((b) => new Date(b.counter.cycleStart)), batch.map((b) => b.n)],
      );
      const used = new Map(rows.map((r) => [r.company_id, r.used]));
      for (const { companyId, counter } of batch) {
        counter.used = Math.max(counter.used, used.get(companyId) ?? counter.used);
        counter.syncedAt = Date.now();
      }
    } catch (error) {
      for (const { counter, n } of batch) {
        counter.pending += n; // kept for the next flush
        counter.syncedAt = 0; // and no more calls admitted on a view that cannot be refreshed
      }
      logError('mcp.quota_flush_failed', error, { companies: batch.length, calls: batch.reduce((sum, b) => sum + b.n, 0) });
      this.#schedule();
    } finally {
      for (const { counter, n } of batch) counter.writing -= n;
    }
  }
}
