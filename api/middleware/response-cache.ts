// Opt-in response cache for list pages (contract, Pagination: `X-Cache: HIT`).
//
// Entries are keyed by the collection's version, which a trigger bumps in the
// same transaction as every write (db/migrations/001). A read first fetches
// the version (one primary-key lookup), so a page cached before a write is
// never served after it, on any process. The cache itself is per process and
// bounded; its lifetime is CACHE_TTL_MS.
import type { Next } from 'koa';
import type { z } from 'zod';
import { parseQuery } from '../validation.ts';
import type { ApiContext } from '../types.ts';

export const CACHE_TTL_MS = 30_000;
/**
 * Bounds of one process's cache, in characters of the cached JSON (about bytes): a page larger than
 * MAX_ENTRY_CHARS is not kept (a list of 100 records with large custom properties runs to megabytes),
 * and the whole cache holds at most MAX_TOTAL_CHARS, the oldest entries leaving first. Counted in size
 * as well as in entries: a bound of 5,000 entries alone let pages of 19 MB exhaust the heap (a
 * hostile-input review).
 */
export const MAX_ENTRY_CHARS = 1_000_000;
export const MAX_TOTAL_CHARS = 64_000_000;
/** And at most this many entries; each counts its key and this much for the Map's and the entry's own cost. */
const MAX_ENTRIES = 5_000;
const ENTRY_OVERHEAD_CHARS = 200;

export class ResponseCache {
  /** In insertion order, which with one TTL is expiry order: the first entry is the oldest. */
  #entries = new Map<string, { body: string; expires: number; cost: number }>();
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
    const cost = body.length + key.length + ENTRY_OVERHEAD_CHARS;
    const now = Date.now();
    for (const [oldest, entry] of this.#entries) {
      if (entry.expires > now && this.#chars + cost <= MAX_TOTAL_CHARS && this.#entries.size < MAX_ENTRIES) break;
      this.#delete(oldest);
    }
    this.#entries.set(key, { body, expires: now + CACHE_TTL_MS, cost });
    this.#chars += cost;
  }

  /** What the cache holds: entries, and their cost in characters (pages, keys and overhead; tests and metrics). */
  get size(): { entries: number; chars: number } {
    return { entries: this.#entries.size, chars: this.#chars };
  }

  #delete(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#chars -= entry.cost;
    this.#entries.delete(key);
  }
}

/**
 * The key of a page: the list's parameters as its query schema reads them (parsed here, so a request
 * the list would refuse is refused before any cached page could answer it, and one with parameters the
 * list ignores, `&x=1`, is the same page), in a canonical order.
 */
function canonicalQuery(parsed: unknown): string {
  const entries = Object.entries((parsed ?? {}) as Record<string, unknown>).filter(([, v]) => v !== undefined);
  return JSON.stringify(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** `query`: the route's query schema (the key is what it parses; without one, every parameter as sent). */
export function responseCache(collection: string, query?: z.ZodType) {
  return async function cached(ctx: ApiContext, next: Next) {
    const auth = ctx.state.auth!;
    if (!auth.responseCache) return next();
    const { rows } = await ctx.deps.pool.query(
      'SELECT version FROM collection_versions WHERE company_id = $1 AND collection = $2',
      [auth.companyId, collection],
    );
    const version = rows[0]?.version ?? 0;
    const key = `${auth.companyId}|${collection}|${version}|${ctx.path}?${canonicalQuery(query ? parseQuery(query, ctx.query, ctx.querystring) : ctx.query)}`;
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
