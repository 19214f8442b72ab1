// What the route table (api/routes/index.ts) relies on beyond itself, checked
// for every route so a new resource cannot be half wired ("Adding a resource"
// in the README): its scope is one keys can hold, and a collection it caches
// has the trigger that bumps its version on every write (else a list cached
// before a write is served after it).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { ALL_SCOPES } from '../api/auth/scopes.ts';
import { apiRoutes } from '../api/routes/index.ts';
import { createTestDatabase } from './helpers/db.ts';

describe('the route table is wired to the rest', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let client: pg.Client;
  before(async () => {
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
  });
  after(async () => {
    await client.end();
    await db.drop();
  });

  test('every route\'s scope is one a key can be given (api/auth/scopes.ts)', () => {
    const unknown = apiRoutes.filter((r) => !r.session && r.scope && !ALL_SCOPES.includes(r.scope)).map((r) => `${r.method} ${r.path}: ${r.scope}`);
    assert.deepEqual(unknown, []);
  });

  test('every collection a list caches has a trigger on its table that bumps the collection\'s version', async () => {
    const collections = [...new Set(apiRoutes.flatMap((r) => (r.cache ? [r.cache] : [])))].sort();
    assert.ok(collections.length >= 5, `cached collections: ${collections}`);
    const { rows } = await client.query<{ table: string }>(
      `SELECT DISTINCT c.relname AS table
         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
        WHERE p.proname IN ('bump_collection_version', 'bump_catalog_versions')`,
    );
    const versioned = new Set(rows.map((r) => r.table));
    assert.ok(!versioned.has('webhook_deliveries'), 'only the bump triggers are counted');
    assert.deepEqual(collections.filter((c) => !versioned.has(c)), []);
  });
});
