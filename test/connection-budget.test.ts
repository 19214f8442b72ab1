// One setting bounds a process's PostgreSQL connections (PG_MAX_CONNECTIONS,
// lib/connection-budget.ts). The split is checked as arithmetic, and the
// bound as it happens: the real web and worker processes (api/server.ts,
// worker/main.ts) run with small budgets under 50 concurrent requests while
// pg_stat_activity is sampled, every connection counted by the
// application_name its process gave it.
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { createPool, type Pool } from '../db/pool.ts';
import { DEFAULT_PG_MAX_CONNECTIONS, loadConfig } from '../lib/config.ts';
import { applicationName, MIN_CONNECTIONS, splitConnections, type ProcessRole } from '../lib/connection-budget.ts';
import { createTestDatabase } from './helpers/db.ts';
import { client, seedTenant } from './helpers/app.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { waitFor } from './helpers/wait.ts';

describe('the split of PG_MAX_CONNECTIONS', () => {
  test('every role spends exactly its budget, with at least one connection per part and two for the main pool', () => {
    for (const role of ['web', 'worker', 'dev'] as ProcessRole[]) {
      for (let total = MIN_CONNECTIONS[role]; total <= 200; total++) {
        const b = splitConnections(total, role);
        assert.equal(b.pool + b.rateLimit + b.listen + b.jobSender + b.boss, total, `${role} ${total}`);
        assert.ok(b.pool >= 2, `${role} ${total}: pool ${b.pool}`);
        if (role === 'web') assert.ok(b.rateLimit >= 1 && b.listen === 1 && b.jobSender >= 1 && b.boss === 0);
        if (role === 'worker') assert.ok(b.boss >= 2 && b.rateLimit + b.listen + b.jobSender === 0);
        if (role === 'dev') assert.ok(b.boss >= 2 && b.listen === 1 && b.jobSender >= 1);
      }
    }
  });

  test('a budget below what a role needs stops it with a message naming the setting and the minimum', () => {
    assert.throws(() => splitConnections(4, 'web'), /PG_MAX_CONNECTIONS=4 is too small for the web process: it needs at least 5/);
    assert.throws(() => splitConnections(3, 'worker'), /at least 4/);
    assert.throws(() => splitConnections(5, 'dev'), /at least 6/);
  });

  test('the default fits web + worker + release in 20 connections', () => {
    assert.ok(2 * DEFAULT_PG_MAX_CONNECTIONS + 3 <= 20);
    assert.equal(loadConfig({ NODE_ENV: 'test' }).pgMaxConnections, DEFAULT_PG_MAX_CONNECTIONS);
  });

  test('PG_MAX_CONNECTIONS is read by the config module; PG_POOL_MAX is a deprecated alias it overrides', () => {
    assert.equal(loadConfig({ NODE_ENV: 'test', PG_MAX_CONNECTIONS: '12' }).pgMaxConnections, 12);
    assert.equal(loadConfig({ NODE_ENV: 'test', PG_POOL_MAX: '9' }).pgMaxConnections, 9);
    assert.equal(loadConfig({ NODE_ENV: 'test', PG_POOL_MAX: '9', PG_MAX_CONNECTIONS: '14' }).pgMaxConnections, 14);
    assert.throws(() => loadConfig({ NODE_ENV: 'test', PG_MAX_CONNECTIONS: 'many' }), /PG_MAX_CONNECTIONS debe ser un entero >= 1/);
    assert.throws(() => loadConfig({ NODE_ENV: 'test', PG_MAX_CONNECTIONS: '0' }), /PG_MAX_CONNECTIONS/);
  });

  test('application names fit PostgreSQL’s 63 bytes', () => {
    assert.equal(applicationName('web.1', 'request'), 'workspace:web.1:request');
    assert.ok(applicationName('x'.repeat(100), 'request').length <= 63);
  });
});

type Child = { child: ChildProcessWithoutNullStreams; output: () => string; stop: () => Promise<void> };

function startProcess(script: string, env: Record<string, string>): Child {
  const child = spawn(process.execPath, [script], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  return {
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The first JSON log line of `event` a process printed. */
async function logLine(p: Child, event: string): Promise<Record<string, unknown>> {
  return waitFor(() => {
    assert.equal(p.child.exitCode, null, `the process exited:\n${p.output()}`);
    for (const line of p.output().split('\n')) {
      if (!line.startsWith('{')) continue;
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (parsed.event === event) return parsed;
    }
    return null;
  }, 60_000, `${event} in the output`);
}

describe('web and worker processes stay within PG_MAX_CONNECTIONS under 50 concurrent requests', () => {
  const WEB_BUDGET = 5;
  const WORKER_BUDGET = 4;
  let db: { url: string; drop: () => Promise<void> };
  let observer: Pool;
  let web: Child;
  let worker: Child;
  let receiver: Receiver;

  before(async () => {
    db = await createTestDatabase();
    observer = createPool(db.url, 2, 'budget-test-observer');
    receiver = await startReceiver();
    const env = {
      DATABASE_URL: db.url,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      ALLOW_PRIVATE_WEBHOOK_TARGETS: '1',
      PG_POOL_MAX: '50', // the deprecated alias, overridden below
    };
    web = startProcess('api/server.ts', { ...env, PORT: '0', DYNO: 'budget-web', PG_MAX_CONNECTIONS: String(WEB_BUDGET) });
    worker = startProcess('worker/main.ts', { ...env, DYNO: 'budget-worker', PG_MAX_CONNECTIONS: String(WORKER_BUDGET) });
  });
  after(async () => {
    await web?.stop();
    await worker?.stop();
    await receiver?.close();
    await observer?.end();
    await db?.drop();
  });

  test('each process prints its budget, and pg_stat_activity never shows more than it', async () => {
    const webBudget = await logLine(web, 'db.connections');
    assert.deepEqual(webBudget, { ...webBudget, role: 'web', total: 5, pool: 2, rate_limit: 1, key_cache_listen: 1, job_sender: 1 });
    const workerBudget = await logLine(worker, 'db.connections');
    assert.deepEqual(workerBudget, { ...workerBudget, role: 'worker', total: 4, pool: 2, pg_boss: 2 });
    await logLine(worker, 'worker.started');
    const { port } = (await logLine(web, 'web.listening')) as { port: number };
    const baseUrl = `http://127.0.0.1:${port}/api/v1`;

    const tenant = await seedTenant(observer);
    const api = client(baseUrl, tenant.key);
    const endpoint = await api.post('/webhook-endpoints', { data: { url: receiver.url('/hook'), enabled_events: ['customer.created'] } });
    assert.equal(endpoint.status, 201, endpoint.text);

    // Sample every backend of this test's database by application_name.
    const peak = new Map<string, number>();
    let peakAll = 0;
    let peakSample = '';
    const strangers = new Set<string>();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await observer.query<{ name: string; n: number }>(
          // Client backends only: an autovacuum worker on this database is
          // PostgreSQL's own backend, not a connection either process opened.
          `SELECT application_name AS name, count(*) AS n FROM pg_stat_activity
            WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid() GROUP BY 1`,
        );
        const perProcess = new Map<string, number>();
        let all = 0;
        for (const { name, n } of rows) {
          if (name === 'budget-test-observer') continue;
          all += n;
          const owner = /^workspace:(budget-web|budget-worker):/.exec(name)?.[1];
          if (!owner) strangers.add(name || '(no application_name)');
          else perProcess.set(owner, (perProcess.get(owner) ?? 0) + n);
        }
        for (const [owner, n] of perProcess) peak.set(owner, Math.max(peak.get(owner) ?? 0, n));
        if (all > peakAll) {
          peakAll = all;
          peakSample = rows.map(({ name, n }) => `${name || '(none)'}=${n}`).join(', ');
        }
        await new Promise((r) => setTimeout(r, 5));
      }
    })();

    try {
      let created = 0;
      for (let round = 0; round < 3; round++) {
        const answers = await Promise.all(
          Array.from({ length: 50 }, (_, i) => (i % 2 === 0 ? api.post('/customers', { data: { name: `Cliente ${round}-${i}` } }) : api.get('/customers?limit=5'))),
        );
        for (const res of answers) assert.ok(res.status === 200 || res.status === 201, `${res.status} ${res.text}`);
        created += answers.filter((r) => r.status === 201).length;
      }
      // The worker delivers every customer.created within its budget too.
      await waitFor(() => receiver.at('/hook').length >= created || null, 60_000, `${created} deliveries`);
    } finally {
      sampling = false;
      await sampler;
    }
    // Whatever the names say, the two processes together hold no more than their two budgets.
    assert.ok(peakAll <= WEB_BUDGET + WORKER_BUDGET, `web and worker peaked at ${peakAll} connections together (${peakSample})`);
    assert.deepEqual([...strangers], [], 'every connection names its process');
    assert.ok((peak.get('budget-web') ?? 0) <= WEB_BUDGET, `web peaked at ${peak.get('budget-web')} connections`);
    assert.ok((peak.get('budget-worker') ?? 0) <= WORKER_BUDGET, `worker peaked at ${peak.get('budget-worker')} connections`);
    // The sampler saw the processes at work (the bound is not met by counting nothing).
    assert.ok((peak.get('budget-web') ?? 0) >= 3, `web peak ${peak.get('budget-web')}`);
    assert.ok((peak.get('budget-worker') ?? 0) >= 2, `worker peak ${peak.get('budget-worker')}`);
  });
});
