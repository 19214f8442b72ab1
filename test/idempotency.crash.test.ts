// Exactly-once writes under Idempotency-Key (DESIGN.md; issue "Hardening"):
// a committed write always has its stored answer. Two ways to lose the answer
// are tried for real: the web process is SIGKILLed right after PostgreSQL
// acknowledged the write's COMMIT (before a byte of the answer), and storing
// the answer fails. Either way a retry with the same key must not write twice.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ADMIN_TOKEN, client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';

const ROOT = path.resolve(import.meta.dirname, '..');

/** `npm run web` over the test database, with the crash preload armed for `statement`. */
async function startCrashingWeb(databaseUrl: string, statement: string) {
  const child = spawn(process.execPath, ['--import', './test/helpers/crash-after-commit.ts', 'api/server.ts'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, PORT: '0', LOG_LEVEL: 'silent', NODE_ENV: 'test', ADMIN_TOKEN, CRASH_AFTER_COMMIT_OF: statement },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const m = /"event":"web.listening","port":(\d+)/.exec(output);
      if (m) resolve(Number(m[1]));
    });
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('exit', () => reject(new Error(`web exited before listening:\n${output}`)));
  });
  return { baseUrl: `http://127.0.0.1:${port}/api/v1`, exited, kill: () => child.kill('SIGKILL') };
}

describe('Idempotency-Key: a committed write always has its stored answer', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  const count = async (companyId: string, table: string) =>
    (await app.pool.query(`SELECT count(*)::int AS n FROM ${table} WHERE company_id = $1`, [companyId])).rows[0].n as number;

  test('the process dies between the COMMIT and the answer: the retry replays it, one customer and one event exist', async () => {
    const t = await seedTenant(app.pool);
    const web = await startCrashingWeb(app.databaseUrl, '^INSERT INTO customers');
    const headers = { 'Idempotency-Key': 'crash-after-commit' };
    const body = { data: { name: 'Superviviente', email: 'sobrevive@example.com' } };
    try {
      await assert.rejects(client(web.baseUrl, t.key).post('/customers', body, headers), 'the connection dies with the process');
      assert.equal(await web.exited, 'SIGKILL');
    } finally {
      web.kill();
    }
    assert.equal(await count(t.companyId, 'customers'), 1, 'the write was committed before the crash');
    // However long the client waits before retrying (past the 15 s takeover window too).
    await app.pool.query(`UPDATE idempotency_keys SET locked_at = now() - interval '61 seconds' WHERE company_id = $1`, [t.companyId]);

    const retry = await client(app.baseUrl, t.key).post('/customers', body, headers);
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true', 'the retry is answered from the stored response');
    const { rows } = await app.pool.query('SELECT id FROM customers WHERE company_id = $1', [t.companyId]);
    assert.equal(retry.body.data.id, rows[0].id);
    assert.equal(await count(t.companyId, 'customers'), 1);
    assert.equal(await count(t.companyId, 'events'), 1, 'one customer.created');
  });

  test('storing the answer fails: the request fails with 500 and writes nothing; the retry writes once', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const headers = { 'Idempotency-Key': 'save-fails' };
    const body = { data: { name: 'Sin respuesta' } };
    await app.pool.query(`
      CREATE OR REPLACE FUNCTION fail_idempotency_save() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.state = 'done' AND NEW.key = 'save-fails' THEN RAISE EXCEPTION 'storage of the answer failed'; END IF;
        RETURN NEW;
      END $$;
      CREATE TRIGGER fail_idempotency_save BEFORE UPDATE ON idempotency_keys FOR EACH ROW EXECUTE FUNCTION fail_idempotency_save();`);
    try {
      const failed = await api.post('/customers', body, headers);
      assert.equal(failed.status, 500);
      assert.equal(failed.body.error, 'internal_error');
      assert.equal(await count(t.companyId, 'customers'), 0, 'a write without its stored answer is not committed');
      assert.equal(await count(t.companyId, 'events'), 0);
    } finally {
      await app.pool.query('DROP TRIGGER fail_idempotency_save ON idempotency_keys; DROP FUNCTION fail_idempotency_save();');
    }
    const retry = await api.post('/customers', body, headers);
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), null, 'the claim was released, so the retry runs the write');
    assert.equal((await api.post('/customers', body, headers)).headers.get('idempotent-replayed'), 'true');
    assert.equal(await count(t.companyId, 'customers'), 1);
    assert.equal(await count(t.companyId, 'events'), 1);
  });
});
