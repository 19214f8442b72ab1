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
const MAX_ENTRIES = 5_000;

export class ResponseCache {
  #entries = new Map<string, { body: string; expires: number }>();

  get(key: string): string | undefined {
    const hit = this.#entries.get(key);
    if (!hit) return undefined;
    if (hit.expires <= Date.now()) {
      this.#entries.delete(key);
      return undefined;
    }
    return hit.body;
  }

  set(key: string, body: string): void {
    if (this.#entries.size >= MAX_ENTRIES) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(key, { body, expires: Date.now() + CACHE_TTL_MS });
  }
}

function canonicalQuery(query: Record<string, unknown>): string {
  return Object.keys(query)
    .sort()
    .map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(String(query[k]))}`)
    .join('&');
}

export function responseCache(collection: string) {
  return async function cached(ctx: ApiContext, next: Next) {
    const auth = ctx.state.auth!;
    if (!auth.responseCache) return next();
    const { rows } = await ctx.deps.pool.query(
      'SELECT version FROM collection_versions WHERE company_id = $1 AND collection = $2',
      [auth.companyId, collection],
    );
    const version = rows[0]?.version ?? 0;
    const key = `${auth.companyId}|${collection}|${version}|${ctx.path}?${canonicalQuery(ctx.query)}`;
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
