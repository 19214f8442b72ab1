// Per-process cache of authenticated keys, so the hot path does not pay a
// database round trip per request for the key lookup. It stays correct across
// processes: every change to a key or its company (revoke, scopes, modules)
// sends NOTIFY on AUTH_CHANNEL in the same transaction, and each process
// LISTENs and drops its whole cache. The notification reaches the writer's own
// process asynchronously too, so the writer also calls invalidate() once its
// transaction has committed: the client's next request to that process, sent
// after the answer, can never be served from the old entry. While the LISTEN
// connection is down the cache is bypassed, so a missed notification can never
// keep a revoked key alive. Entries also expire after TTL_MS as a last line of
// defence.
//
// A lookup that read a key before a revocation committed must not put it in
// the cache after the notification cleared it (it would then live for up to
// TTL_MS): every clear bumps a generation, and a lookup stores its result only
// if the generation it started under is still current.
import { hash } from 'node:crypto';
import pg from 'pg';
import type { Queryable } from '../../db/pool.ts';
import { findKeyByDigest, type AuthKey } from './keys.ts';

export const AUTH_CHANNEL = 'workspace_auth';
const TTL_MS = 60_000;
const MAX_ENTRIES = 10_000;

export async function notifyAuthChange(db: Queryable): Promise<void> {
  await db.query(`SELECT pg_notify('${AUTH_CHANNEL}', '')`);
}

export class KeyCache {
  #entries = new Map<string, { key: AuthKey | null; expires: number }>();
  #generation = 0;
  #listener: pg.Client | null = null;
  #listening = false;
  #closed = false;
  #connectionString: string;
  #applicationName: string | undefined;

  /** One connection (the LISTEN client), counted in the web's connection budget. */
  constructor(connectionString: string, applicationName?: string) {
    this.#connectionString = connectionString;
    this.#applicationName = applicationName;
  }

  async start(): Promise<void> {
    await this.#connect().catch(() => this.#scheduleReconnect());
  }

  async #connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.#connectionString, application_name: this.#applicationName });
    client.on('error', () => this.#lost(client));
    client.on('end', () => this.#lost(client));
    client.on('notification', () => this.#clear());
    await client.connect();
    await client.query(`LISTEN ${AUTH_CHANNEL}`);
    this.#clear();
    this.#listener = client;
    this.#listening = true;
  }

  #lost(client: pg.Client): void {
    if (this.#listener !== client) return;
    this.#listening = false;
    this.#listener = null;
    this.#clear();
    this.#scheduleReconnect();
  }

  #scheduleReconnect(): void {
    if (this.#closed) return;
    setTimeout(() => {
      if (!this.#closed) this.#connect().catch(() => this.#scheduleReconnect());
    }, 1000).unref();
  }

  /** Drops every entry now; for the process that just committed an auth change (see the top). */
  invalidate(): void {
    this.#clear();
  }

  #clear(): void {
    this.#generation++;
    this.#entries.clear();
  }

  /** Bumped by every clear (a notification, a lost or new LISTEN connection). */
  get generation(): number {
    return this.#generation;
  }

  /** Whether notifications arrive: what is cached may only be trusted while true. */
  get listening(): boolean {
    return this.#listening;
  }

  /**
   * The key whose secret this is. The cache is keyed by the secret's SHA-256
   * (what the database stores), never by the secret itself; `hash()` straight
   * to base64 is a fifth of `createHash` + `digest` + `toString` per request.
   */
  async lookup(db: Queryable, secret: string): Promise<AuthKey | null> {
    const cacheKey = hash('sha256', secret, 'base64');
    if (this.#listening) {
      const hit = this.#entries.get(cacheKey);
      if (hit && hit.expires > Date.now()) return hit.key;
    }
    const generation = this.#generation;
    const key = await findKeyByDigest(db, Buffer.from(cacheKey, 'base64'));
    // Only valid keys are cached: caching misses would let a flood of random
    // secrets evict the useful entries. A clear while the read was in flight
    // means the row may already be revoked: answer this request with what was
    // read, but do not keep it.
    if (this.#listening && key && generation === this.#generation) {
      if (this.#entries.size >= MAX_ENTRIES) this.#entries.clear();
      this.#entries.set(cacheKey, { key, expires: Date.now() + TTL_MS });
    }
    return key;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#listener;
    this.#listener = null;
    this.#listening = false;
    await client?.end().catch(() => {});
  }
}
