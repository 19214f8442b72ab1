// The per-process key cache against a revocation that races a lookup: a
// lookup that read the key before the revocation committed must not store it
// after the NOTIFY cleared the cache, or the revoked key keeps working on this
// process for up to a minute. The race is made deterministic by holding the
// lookup's answer until the revocation's notification has been processed.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { revokeKey } from '../api/admin/keys.ts';
import type { Queryable } from '../db/pool.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { waitFor } from './helpers/wait.ts';

/** The pool, except that a query's answer is held until `release()` (the query itself has run). */
function gated(pool: Queryable) {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let answered!: () => void;
  const read = new Promise<void>((resolve) => (answered = resolve));
  const db = {
    query: async (...args: Parameters<Queryable['query']>) => {
      const result = await (pool.query as (...a: unknown[]) => Promise<unknown>)(...args);
      answered();
      await gate;
      return result;
    },
  } as unknown as Queryable;
  return { db, release, read };
}

describe('key cache: a revocation racing a lookup', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  test('a key read before its revocation committed is not cached after the notification', async () => {
    const tenant = await seedTenant(app.pool);
    const cache = app.deps.keyCache;
    const secret = tenant.key;
    const { db, release, read } = gated(app.pool);

    const inFlight = cache.lookup(db, secret);
    await read; // the key row has been read as valid
    const before = cache.generation;
    await revokeKey(app.pool, tenant.keyId);
    await waitFor(() => cache.generation > before, 10_000, 'the revocation notification to reach the cache');
    release();
    const stale = await inFlight;
    assert.equal(stale?.keyId, tenant.keyId, 'the in-flight lookup answers with what it read');

    assert.equal(await cache.lookup(app.pool, secret), null, 'the next lookup must not find the revoked key in the cache');
    assert.equal((await client(app.baseUrl, tenant.key).get('/customers')).status, 401);
  });

  test('without a clear in between, a lookup is cached (the next one does not read the database)', async () => {
    const tenant = await seedTenant(app.pool);
    const secret = tenant.key;
    await waitFor(async () => (await app.deps.keyCache.lookup(app.pool, secret)) !== null, 10_000, 'the key to be found');
    let reads = 0;
    const counting = { query: (...args: unknown[]) => (reads++, (app.pool.query as (...a: unknown[]) => Promise<unknown>)(...args)) } as unknown as Queryable;
    assert.equal((await app.deps.keyCache.lookup(counting, secret))?.keyId, tenant.keyId);
    assert.equal(reads, 0);
  });
});
