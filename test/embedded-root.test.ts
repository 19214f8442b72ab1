// `npm start` and `npm test` as root from a checkout the `postgres` user
// cannot enter (a checkout in /root, mode 700: the default in containers).
// Done for real: a copy of this checkout (node_modules hard-linked) in a
// fresh 0700 directory under /root, whose DATA_DIR and PostgreSQL binaries
// are both out of the postgres user's reach. Needs root; skipped otherwise.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { startEmbedded } from '../db/embedded.ts';
import { startReceiver } from './helpers/receiver.ts';
import { freePort } from './helpers/app.ts';

const run = promisify(execFile);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const isRoot = process.getuid?.() === 0;
const skip = !isRoot
  ? 'needs root: the case is root running the embedded PostgreSQL as the postgres user'
  : !existsSync('/root')
    ? 'needs /root'
    : false;

/** uid of the postgres user. */
async function postgresUid(): Promise<number> {
  return Number((await run('id', ['-u', 'postgres'])).stdout.trim());
}

/** A relocated cluster named by DATA_DIR/pg-location: outside the checkout, postgres's, mode 700. */
async function assertRelocated(dataDir: string, home: string): Promise<string> {
  const location = (await readFile(path.join(dataDir, 'pg-location'), 'utf8')).trim();
  assert.ok(!location.startsWith(home), `${location} is outside ${home}`);
  const info = await stat(location);
  assert.equal(info.uid, await postgresUid(), 'owned by postgres');
  assert.equal(info.mode & 0o777, 0o700);
  assert.ok(existsSync(path.join(location, 'PG_VERSION')), 'a cluster is there');
  assert.ok(!existsSync(path.join(dataDir, 'pg')), 'nothing of the cluster under DATA_DIR');
  return location;
}

describe('the embedded PostgreSQL as root from a directory postgres cannot enter', { skip }, () => {
  let home: string;
  let checkout: string;
  const clusters: string[] = [];

  before(async () => {
    home = await mkdtemp('/root/ws-embedded-'); // mkdtemp: mode 700
    await chmod(home, 0o700);
    checkout = path.join(home, 'checkout');
    await mkdir(checkout);
    for (const entry of await readdir(ROOT)) {
      if (entry === 'node_modules' || entry === '.data' || entry === '.git') continue;
      await cp(path.join(ROOT, entry), path.join(checkout, entry), { recursive: true });
    }
    // Hard links: a copy in seconds, and the binaries' path is under /root like a real checkout's.
    await run('cp', ['-al', path.join(ROOT, 'node_modules'), path.join(checkout, 'node_modules')]).catch(() =>
      run('cp', ['-a', path.join(ROOT, 'node_modules'), path.join(checkout, 'node_modules')]),
    );
  });
  after(async () => {
    if (home) await rm(home, { recursive: true, force: true });
    for (const dir of clusters) await rm(dir, { recursive: true, force: true });
  });

  test('startEmbedded with DATA_DIR under /root starts the cluster elsewhere and answers SELECT 1', async () => {
    const dataDir = path.join(home, 'data');
    const db = await startEmbedded(dataDir, { database: 'postgres', fast: true });
    try {
      clusters.push(await assertRelocated(dataDir, home));
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      assert.deepEqual((await client.query('SELECT 1 AS one')).rows, [{ one: 1 }]);
      await client.end();
    } finally {
      await db.stop();
    }
    // A second start finds the same cluster.
    const again = await startEmbedded(dataDir, { database: 'postgres', fast: true });
    await again.stop();
  });

  test('npm start from the /root checkout: ready, healthy, the demo key works, local webhooks allowed; Ctrl-C stops it', async () => {
    const port = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), LOG_LEVEL: 'silent', NODE_ENV: 'development' };
    for (const name of ['DATABASE_URL', 'ADMIN_TOKEN', 'DATA_DIR', 'ALLOW_PRIVATE_WEBHOOK_TARGETS', 'TEST_SERVER_URL', 'TEST_TEMPLATE_DB']) delete env[name];
    const child = spawn(process.execPath, ['scripts/dev.ts'], { cwd: checkout, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const receiver = await startReceiver();
    try {
      const deadline = Date.now() + 120_000;
      while (!/Demo API key:\s+service_sk_/.test(output)) {
        assert.ok(Date.now() < deadline, `npm start did not become ready:\n${output}`);
        assert.equal(child.exitCode, null, `npm start exited:\n${output}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.match(output, /binaries copied to \/\S+workspace-pg-bin-/, 'the binaries under /root were out of reach too');
      assert.match(output, /the cluster lives in \/\S+workspace-pg-[0-9a-f]{16}/);
      clusters.push(await assertRelocated(path.join(checkout, '.data'), home));
      // /healthz runs SELECT 1 on the embedded database.
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      assert.deepEqual([health.status, await health.json()], [200, { status: 'ok' }]);
      const key = /Demo API key:\s+(service_sk_\S+)/.exec(output)![1];
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      assert.equal((await fetch(`http://127.0.0.1:${port}/api/v1/customers`, { headers })).status, 200);
      // npm start opts out of the SSRF guard so a local receiver can be tried.
      const hook = await fetch(`http://127.0.0.1:${port}/api/v1/webhook-endpoints`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ data: { url: receiver.url('/hook'), enabled_events: ['*'] } }),
      });
      assert.equal(hook.status, 201, await hook.text());
      child.kill('SIGINT');
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      assert.equal(code, 0, output);
    } finally {
      child.kill('SIGKILL');
      await receiver.close();
    }
  });

  test('npm test from the /root checkout: the runner starts its embedded cluster and a test file passes', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const name of ['DATABASE_URL', 'DATA_DIR', 'TEST_SERVER_URL', 'TEST_TEMPLATE_DB', 'NODE_TEST_CONTEXT']) delete env[name];
    const { stdout, stderr } = await run(process.execPath, ['scripts/test.ts', 'test/health.test.ts'], { cwd: checkout, env, timeout: 180_000 });
    const output = stdout + stderr;
    assert.match(output, /the cluster lives in /, output);
    assert.match(output, /ℹ pass [1-9]/, output);
    assert.match(output, /ℹ fail 0/, output);
    clusters.push(await assertRelocated(path.join(checkout, '.data', 'test'), home));
  });
});
