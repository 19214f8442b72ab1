// Migrations are applied once each, in order, even when two processes start
// migrating the same empty database at the same moment.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { describe, test } from 'node:test';
import pg from 'pg';
import { migrate } from '../db/migrate.ts';
import { createPool } from '../db/pool.ts';

describe('migration runner', () => {
  test('two concurrent migrators on an empty database apply every migration exactly once', async () => {
    const server = process.env.TEST_SERVER_URL!;
    const name = `ws_test_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: server });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(server);
    url.pathname = `/${name}`;
    const a = createPool(url.toString(), 2);
    const b = createPool(url.toString(), 2);
    try {
      const [first, second] = await Promise.all([migrate(a), migrate(b)]);
      const files = (await readdir(new URL('../db/migrations/', import.meta.url))).filter((f) => f.endsWith('.sql')).sort();
      assert.deepEqual([...first, ...second].sort(), files, 'each file applied by exactly one of them');
      const { rows } = await a.query('SELECT name FROM schema_migrations ORDER BY id');
      assert.deepEqual(rows.map((r) => r.name), files);
      assert.deepEqual(await migrate(a), [], 'a third run has nothing to do');
    } finally {
      await a.end();
      await b.end();
      await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await admin.end();
    }
  });
});
