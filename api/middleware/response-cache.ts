// Opt-in response cache for list pages (contract, Pagination: `X-Cache: HIT`).
//
// Entries are keyed by the collection's version, which a trigger bumps in the
// same transaction as every write (db/migrations/001). A read first fetches
// the version (one primary-key lookup), so a page cached before a write is
// never served after it, on any process. The cache itself is per process and
// bounded; its lifetime is CACHE_TTL_MS.
import type { Next } from 'koa';
import type { ApiContext } from '../types.ts';

export const CACHE_TTL_MS = 30_000;
/**
 * Bounds of one process's cache, in characters of the cached JSON (about bytes): a page larger than
 * MAX_ENTRY_CHARS is not kept (a list of 100 records with large custom properties runs to megabytes),
 * and the whole cache holds at most MAX_TOTAL_CHARS, the oldest entries leaving first. Counted in size,
 * not entries: 5,000 entries of 19 MB pages once exhausted the heap (a hostile-input review).
 */
export const MAX_ENTRY_CHARS = 1_000_000;
export const MAX_TOTAL_CHARS = 64_000_000;

export class ResponseCache {
  /** In insertion order, which with one TTL is expiry order: the first entry is the oldest. */
  #entries = new Map<string, { body: string; expires: number }>();
  #chars = 0;

  get(key: string): string | undefined {
    const hit = this.#entries.get(key);
    if (!hit) return undefined;
    if (hit.expires <= Date.now()) {
      this.#delete(key);
      return undefined;
    }
    return hit.body;
  }

  set(key: string, body: string): void {
    if (body.length > MAX_ENTRY_CHARS) return;
    this.#delete(key);
    const now = Date.now();
    for (const [oldest, entry] of this.#entries) {
      if (entry.expires > now && this.#chars + body.length <= MAX_TOTAL_CHARS) break;
      this.#delete(oldest);
    }
    this.#entries.set(key, { body, expires: now + CACHE_TTL_MS });
    this.#chars += body.length;
  }

  /** What the cache holds, in characters (tests and metrics). */
  get size(): { entries: number; chars: number } {
    return { entries: this.#entries.size, chars: this.#chars };
  }

  #delete(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#chars -= entry.body.length;
    this.#entries.delete(key);
  }
}

/** The parameters the list reads, sorted: one entry per page, whatever else a request adds (`&x=1`). */
function canonicalQuery(query: Record<string, unknown>, known: readonly string[] | null): string {
  return Object.keys(query)
    .filter((k) => known === null || known.includes(k))
    .sort()
    .map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(String(query[k]))}`)
    .join('&');
}

/** `known`: the names of the route's query parameters (null: every parameter is part of the key). */
export function responseCache(collection: string, known: readonly string[] | null = null) {
  return async function cached(ctx: ApiContext, next: Next) {
    const auth = ctx.state.auth!;
    if (!auth.responseCache) return next();
    const { rows } = await ctx.deps.pool.query(
      'SELECT version FROM collection_versions WHERE company_id = $1 AND collection = $2',
      [auth.companyId, collection],
    );
    const version = rows[0]?.version ?? 0;
    const key = `${auth.companyId}|${collection}|${version}|${ctx.path}?${canonicalQuery(ctx.query, known)}`;
    const hit = ctx.deps.responseCache.get(key);
    if (hit !== undefined) {
      ctx.set('X-Cache', 'HIT');
      ctx.type = 'application/json';
      ctx.body = hit;
      return;
    }
    await next();
    ctx.set('X-Cache', 'MISS');
    if (ctx.status === 200 && ctx.body !== undefined) ctx.deps.responseCache.set(key, JSON.stringify(ctx.body));
  };
}
