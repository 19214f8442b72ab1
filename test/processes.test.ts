// The processes as operators and newcomers run them: `npm start` on an empty
// data directory, the release-phase migrator against DATABASE_URL, and the
// worker running a real pg-boss job.
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import pg from 'pg';
import sharp from 'sharp';
import { loadConfig } from '../lib/config.ts';
import { startWorker } from '../worker/worker.ts';
import { client, freePort, seedTenant, startTestApp, uploadFile } from './helpers/app.ts';

const run = promisify(execFile);

describe('npm start on a fresh machine', () => {
  const cleanup: Array<() => Promise<void>> = [];
  after(async () => {
    for (const fn of cleanup) await fn();
  });

  /**
   * `npm start` in a process group of its own, as a terminal runs it; resolves once the demo key is
   * printed. `port: 0` lets it take a free port, read back from its banner.
   */
  async function startDev(dataDir: string, options: { port?: number } = {}) {
    let port = options.port ?? (await freePort());
    const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'silent', NODE_ENV: 'development' };
    delete env.DATABASE_URL;
    delete env.ADMIN_TOKEN;
    const child = spawn(process.execPath, ['scripts/dev.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const started = { child, port, output: '' };
    child.stdout.on('data', (d) => (started.output += d));
    child.stderr.on('data', (d) => (started.output += d));
    const deadline = Date.now() + 90_000;
    while (!/Demo API key:\s+service_sk_/.test(started.output)) {
      assert.ok(Date.now() < deadline, `npm start did not become ready:\n${started.output}`);
      assert.equal(child.exitCode, null, `npm start exited:\n${started.output}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    if (port === 0) started.port = port = Number(/Base URL:\s+http:\/\/localhost:(\d+)\/api\/v1/.exec(started.output)![1]);
    return started;
  }
  const postgresOf = async (dataDir: string) => (await run('pgrep', ['-f', `${dataDir}/pg`]).catch(() => ({ stdout: '' }))).stdout.trim();
  async function freshDataDir() {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'ws-start-'));
    await chmod(dataDir, 0o755); // as root, the embedded cluster runs as `postgres`, which must enter it
    cleanup.push(async () => {
      // The database has a process group of its own (so Ctrl-C does not stop it under the service): stopped here if a failure left it.
      for (const pid of (await postgresOf(dataDir)).split('\n').filter(Boolean)) process.kill(Number(pid), 'SIGINT');
      await rm(dataDir, { recursive: true, force: true });
    });
    return dataDir;
  }

  test('starts the embedded database, prints the base URL and a working demo key, and Ctrl-C stops everything', async () => {
    const dataDir = await freshDataDir();
    const { child, port, output: ready } = await startDev(dataDir);
    cleanup.unshift(async () => void (child.exitCode === null && process.kill(-child.pid!, 'SIGKILL')));
    assert.match(ready, new RegExp(`Base URL:\\s+http://localhost:${port}/api/v1`));
    const key = /Demo API key:\s+(service_sk_\S+)/.exec(ready)![1];
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/customers`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { data: unknown[] };
    assert.ok(body.data.length > 0, 'demo data is there');
    // A second start on the same DATA_DIR is refused in one line, not a stack trace, and leaves the first alone.
    const second = await run(process.execPath, ['scripts/dev.ts'], { env: { ...process.env, DATA_DIR: dataDir, PORT: '0', NODE_ENV: 'development', DATABASE_URL: '' }, timeout: 60_000 }).then(
      () => ({ code: 0, stderr: '' }),
      (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr ?? '' }),
    );
    assert.equal(second.code, 1);
    assert.match(second.stderr, /^error: PostgreSQL on \S+ belongs to a running process \(pid \d+\): one start per DATA_DIR/);
    assert.doesNotMatch(second.stderr, /\n\s+at /, 'no stack trace');
    assert.equal((await fetch(`http://127.0.0.1:${port}/api/v1/customers`, { headers: { authorization: `Bearer ${key}` } })).status, 200);

    let after = '';
    child.stdout.on('data', (d) => (after += d));
    child.stderr.on('data', (d) => (after += d));
    process.kill(-child.pid!, 'SIGINT'); // Ctrl-C: the terminal signals the foreground process group
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 0, after);
    assert.match(after, /Stopping \.\.\.\nStopped: web, worker and the embedded PostgreSQL\.\n/, 'it says it stopped, and what');
    // The database outlives the service's connections: nothing logs its loss while stopping.
    assert.doesNotMatch(after, /terminating connection|ECONNREFUSED|pg-boss/, after);
    // The embedded PostgreSQL is gone with it.
    assert.equal(await postgresOf(dataDir), '', 'no postgres process left for this data directory');
  });

  test('killed with SIGKILL, npm start leaves its database running; the next start stops that one and starts', async () => {
    const dataDir = await freshDataDir();
    const first = await startDev(dataDir);
    process.kill(-first.child.pid!, 'SIGKILL'); // an IDE's stop button: no handler runs
    await new Promise((resolve) => (first.child.exitCode === null ? first.child.once('exit', resolve) : resolve(null)));
    assert.notEqual(await postgresOf(dataDir), '', 'the server outlived its process (its own process group)');
    // PORT=0 this time: the banner names the port it took, and that is where it answers.
    const second = await startDev(dataDir, { port: 0 });
    cleanup.unshift(async () => void (second.child.exitCode === null && process.kill(-second.child.pid!, 'SIGKILL')));
    assert.notEqual(second.port, 0);
    assert.match(second.output, /stopping the server an earlier start left running/);
    const key = /Demo API key:\s+(service_sk_\S+)/.exec(second.output)![1];
    assert.equal((await fetch(`http://127.0.0.1:${second.port}/api/v1/customers`, { headers: { authorization: `Bearer ${key}` } })).status, 200, 'the same database, the same demo key');
    process.kill(-second.child.pid!, 'SIGINT');
    assert.equal(await new Promise((resolve) => second.child.once('exit', resolve)), 0);
    assert.equal(await postgresOf(dataDir), '');
  });
});

describe('release phase and worker against DATABASE_URL', () => {
  test('npm run migrate applies nothing twice and exits 0', async () => {
    const app = await startTestApp();
    try {
      const { stdout } = await run(process.execPath, ['db/migrate-cli.ts'], {
        env: { ...process.env, DATABASE_URL: app.databaseUrl, NODE_ENV: 'production', SITE_URL: 'https://api.example', ADMIN_TOKEN: 'x'.repeat(20), BOOKING_TOKEN_KEY: 'k'.repeat(32) },
      });
      assert.match(stdout, /up to date/);
    } finally {
      await app.close();
    }
  });

  test('the release phase moves stored image URLs to a new SITE_URL; a client\'s own image URL stays', async () => {
    const app = await startTestApp();
    try {
      const t = await seedTenant(app.pool);
      const api = client(app.baseUrl, t.key);
      const made = async (data: Record<string, unknown>) => (await api.post('/products', { data: { prices_cents: { mxn: 100 }, ...data } })).body.data;
      const ours = await made({ name: 'Con foto' });
      const bytes = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#c00' } }).png().toBuffer();
      const uploaded = await uploadFile(app.baseUrl, t.key, `/products/${ours.id}/image`, { bytes, filename: 'roja.png' });
      assert.equal(uploaded.status, 200);
      const before = (await api.get(`/products/${ours.id}`)).body.data.image_url as string;
      assert.ok(before.startsWith(`${app.config.siteUrl}/media/`), before);
      // A client's CDN URL shaped like ours, with a token no media row has: not the service's, never moved.
      const theirs = await made({ name: 'De su CDN', image_url: `https://cdn.example.com/media/${'ab'.repeat(16)}/x.png` });

      // Run by hand in development with no SITE_URL given: the default root (localhost:3000) is no server
      // it was pointed at, so nothing moves.
      const { SITE_URL: _site, PORT: _port, ...unset } = process.env;
      const handDir = await mkdtemp(`${os.tmpdir()}/release-by-hand-`);
      const byHand = await run(process.execPath, ['db/migrate-cli.ts'], { env: { ...unset, DATABASE_URL: app.databaseUrl, NODE_ENV: 'development', DATA_DIR: handDir } });
      await rm(handDir, { recursive: true, force: true });
      assert.doesNotMatch(byHand.stdout, /Image URLs moved/);
      assert.equal((await api.get(`/products/${ours.id}`)).body.data.image_url, before);

      const release = () => run(process.execPath, ['db/migrate-cli.ts'], {
        env: { ...process.env, DATABASE_URL: app.databaseUrl, NODE_ENV: 'production', SITE_URL: 'https://shop.example', ADMIN_TOKEN: 'x'.repeat(20), BOOKING_TOKEN_KEY: 'k'.repeat(32) },
      });
      assert.match((await release()).stdout, /Image URLs moved to https:\/\/shop\.example: 1\./);
      const path = before.slice(app.config.siteUrl.length);
      assert.equal((await api.get(`/products/${ours.id}`)).body.data.image_url, `https://shop.example${path}`);
      assert.equal((await api.get(`/products/${theirs.id}`)).body.data.image_url, theirs.image_url);
      assert.equal((await fetch(app.url + path)).status, 200, 'the file is the same, only the root moved');
      assert.doesNotMatch((await release()).stdout, /moved/, 'a second release has nothing to move');
    } finally {
      await app.close();
    }
  });

  test('a migration that fails stops the release phase with one line naming it and PostgreSQL\'s reason, exit 1, the migrations before it kept', async () => {
    const admin = new pg.Client({ connectionString: process.env.TEST_SERVER_URL });
    await admin.connect();
    const name = `ws_failing_${process.pid}_${Date.now()}`;
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(process.env.TEST_SERVER_URL!);
    url.pathname = `/${name}`;
    const db = new pg.Client({ connectionString: url.toString() });
    await db.connect();
    try {
      // A table the first migration creates is already there: that migration fails.
      await db.query('CREATE TABLE companies (id text)');
      const result = await run(process.execPath, ['db/migrate-cli.ts'], { env: { ...process.env, NODE_ENV: 'test', DATABASE_URL: url.toString(), LOG_LEVEL: 'silent' }, timeout: 60_000 }).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr ?? '' }),
      );
      assert.equal(result.code, 1);
      assert.match(result.stderr, /^error: migration 001_foundation\.sql failed: relation "companies" already exists \(42P07\); nothing of it was applied, and the migrations before it stay\n$/);
      assert.equal((await db.query('SELECT count(*)::int AS n FROM schema_migrations')).rows[0].n, 0, 'rolled back');
      // A failure that is no migration's (here the runner's own table in another shape) is said as what it is, with its code.
      await db.query('DROP TABLE schema_migrations; CREATE TABLE schema_migrations (x int)');
      const other = await run(process.execPath, ['db/migrate-cli.ts'], { env: { ...process.env, NODE_ENV: 'test', DATABASE_URL: url.toString(), LOG_LEVEL: 'silent' }, timeout: 60_000 }).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr ?? '' }),
      );
      assert.equal(other.code, 1);
      assert.match(other.stderr, /^error: the release phase failed: column "id" does not exist \(42703\)\n$/);
    } finally {
      await db.end();
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });

  test('web and worker refuse to start on a database that was never migrated, and say to run the release phase', async () => {
    const admin = new pg.Client({ connectionString: process.env.TEST_SERVER_URL });
    await admin.connect();
    const name = `ws_unmigrated_${process.pid}_${Date.now()}`;
    await admin.query(`CREATE DATABASE ${name}`);
    try {
      const url = new URL(process.env.TEST_SERVER_URL!);
      url.pathname = `/${name}`;
      for (const entry of ['api/server.ts', 'worker/main.ts']) {
        const result = await run(process.execPath, [entry], {
          env: { ...process.env, NODE_ENV: 'test', DATABASE_URL: url.toString(), PORT: '0', LOG_LEVEL: 'silent', ADMIN_TOKEN: 'x'.repeat(20) },
          timeout: 60_000,
        }).then(
          () => ({ code: 0, stderr: '' }),
          (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr ?? '' }),
        );
        assert.equal(result.code, 1, `${entry} must not start: ${result.stderr}`);
        assert.match(result.stderr, /lacks \d+ migration\(s\).*npm run migrate/, entry);
      }
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    }
  });

  test('a bad setting, a taken port or an unreachable database stops web, worker and migrate with one line on stderr, exit 1, no stack trace', async () => {
    const failed = (entry: string, env: NodeJS.ProcessEnv) =>
      run(process.execPath, [entry], { env: { ...process.env, ...env }, timeout: 60_000 }).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code?: number; stderr?: string }) => ({ code: error.code, stderr: error.stderr ?? '' }),
      );
    for (const entry of ['api/server.ts', 'worker/main.ts', 'db/migrate-cli.ts']) {
      const result = await failed(entry, { PORT: 'abc', NODE_ENV: 'test' });
      assert.equal(result.code, 1, entry);
      assert.equal(result.stderr, 'error: Configuración inválida: PORT debe ser un entero >= 0 (recibido "abc")\n', entry);
    }
    // A connection budget too small for the process: the same, naming the least it needs.
    for (const [entry, least] of [['api/server.ts', 5], ['worker/main.ts', 4]] as const) {
      const result = await failed(entry, { PG_MAX_CONNECTIONS: '2', NODE_ENV: 'test', DATABASE_URL: 'postgres://127.0.0.1:1/none' });
      assert.equal(result.code, 1, entry);
      assert.match(result.stderr, new RegExp(`^error: PG_MAX_CONNECTIONS=2 is too small for the \\w+ process: it needs at least ${least} .*\\n$`), entry);
    }
    const app = await startTestApp();
    const taken = net.createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (taken.address() as net.AddressInfo).port;
      const result = await failed('api/server.ts', { NODE_ENV: 'test', DATABASE_URL: app.databaseUrl, PORT: String(port), LOG_LEVEL: 'silent', ADMIN_TOKEN: 'x'.repeat(20) });
      assert.equal(result.code, 1);
      assert.equal(result.stderr, `error: cannot listen on port ${port}: it is already in use\n`);
      // `npm start` finds the taken port before it reaches for the database (here one that does not answer).
      const dev = await failed('scripts/dev.ts', { DATABASE_URL: `postgres://127.0.0.1:${await freePort()}/none`, PORT: String(port), LOG_LEVEL: 'silent', ADMIN_TOKEN: 'x'.repeat(20) });
      assert.equal(dev.code, 1);
      assert.match(dev.stderr, new RegExp(`^error: cannot listen on port ${port}: it is already in use \\(PORT=… npm start for another\\)\n$`));
      // A database that cannot be reached: the closed port just freed, and a database name that does not exist.
      const closed = `postgres://nobody:secret-password@127.0.0.1:${await freePort()}/none`;
      const missing = app.databaseUrl.replace(/\/[^/?]+(\?|$)/, '/no_such_database$1');
      for (const entry of ['api/server.ts', 'worker/main.ts', 'db/migrate-cli.ts']) {
        for (const url of [closed, missing]) {
          const unreachable = await failed(entry, { NODE_ENV: 'test', DATABASE_URL: url, PORT: '0', LOG_LEVEL: 'silent', ADMIN_TOKEN: 'x'.repeat(20) });
          assert.equal(unreachable.code, 1, `${entry} ${url}`);
          assert.match(unreachable.stderr, /^error: cannot reach the database \(DATABASE_URL\): .+\n$/, `${entry}: ${unreachable.stderr}`);
          assert.doesNotMatch(unreachable.stderr, /secret-password/);
        }
      }
    } finally {
      taken.close();
      await app.close();
    }
  });

  test('the worker runs the housekeeping job: expired idempotency keys are purged, and OAuth clients unused for 30 days with no live connection', async () => {
    const app = await startTestApp();
    const worker = await startWorker(loadConfig({ NODE_ENV: 'test', DATABASE_URL: app.databaseUrl, LOG_LEVEL: 'silent' }), app.pool, app.databaseUrl);
    try {
      const t = await seedTenant(app.pool);
      await app.pool.query(
        `INSERT INTO idempotency_keys (company_id, key, method, path, fingerprint, state, created_at)
         VALUES ($1, 'old', 'POST', '/x', 'f', 'done', now() - interval '25 hours'), ($1, 'new', 'POST', '/x', 'f', 'done', now())`,
        [t.companyId],
      );
      // Three clients last used 31 days ago: one whose only connection was approved but never exchanged
      // (its code expired), one whose tokens all expired, and one with a refresh token still valid.
      for (const [client, state] of [['client_abandoned', 'code'], ['client_lapsed', 'expired'], ['client_live', 'live']] as const) {
        await app.pool.query(`INSERT INTO oauth_clients (id, client_name, redirect_uris, last_used_at) VALUES ($1, $1, '{http://127.0.0.1/cb}', now() - interval '31 days')`, [client]);
        await app.pool.query(`INSERT INTO oauth_grants (id, client_id, user_id, company_id, scopes) VALUES ($1, $1, $2, $3, '{read-customers}')`, [client, t.ownerId, t.companyId]);
        if (state === 'code') {
          await app.pool.query(`INSERT INTO oauth_codes (digest, grant_id, redirect_uri, code_challenge, expires_at) VALUES (sha256(convert_to($1, 'UTF8')), $1, 'http://127.0.0.1/cb', 'x', now() - interval '30 days')`, [client]);
        } else {
          await app.pool.query(`INSERT INTO oauth_tokens (digest, grant_id, kind, expires_at) VALUES (sha256(convert_to($1, 'UTF8')), $1, 'refresh', now() + $2::interval)`, [client, state === 'live' ? '1 day' : '-1 day']);
        }
      }
      await worker.boss.send('purge-expired', {});
      const deadline = Date.now() + 20_000;
      let keys: string[] = [];
      let clients: string[] = [];
      do {
        await new Promise((r) => setTimeout(r, 250));
        keys = (await app.pool.query('SELECT key FROM idempotency_keys ORDER BY key')).rows.map((r) => r.key);
        clients = (await app.pool.query(`SELECT id FROM oauth_clients WHERE id LIKE 'client\\_%' ORDER BY id`)).rows.map((r) => r.id);
      } while ((keys.includes('old') || clients.length > 1) && Date.now() < deadline);
      assert.deepEqual(keys, ['new']);
      assert.deepEqual(clients, ['client_live']);
    } finally {
      await worker.stop();
      await app.close();
    }
  });
});
