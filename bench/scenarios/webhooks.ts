// Scenario `webhooks`: delivery throughput and latency, end to end, against
// floors measured in the same run (docs/bench.md).
//
// Processes, as in production (Procfile: separate web and worker), all
// children of the bench: the web (`node api/server.ts`), the worker
// (bench/lib/worker-process.ts: what worker/main.ts runs, options passable),
// three receivers in one process of their own (bench/lib/webhook-receivers.ts)
// and the floors (bench/floor/webhooks-floor.ts). The bench process itself is
// the API client (undici, `--connections` sockets). A fresh database on the
// bench server, dropped at the end, so the pg-boss tables hold only this run.
//
// 0. cold web: the first `connections` writes to a fresh web process, as a
//    check (pg-boss's first queue lookup needs a second connection of the
//    pool the write's transaction holds; see the check's label).
// 1. e2e: EVENTS customers created through the API (each event, its three
//    deliveries in the write's transaction) with the worker
//    running; deliveries/s from the first request to the last receipt.
// 3. latency: events at half the event rate of (1) for LATENCY_SECONDS, open
//    loop; commit→receipt = receipt time − the envelope's created_at (taken
//    just before the INSERT, so it also counts the rest of the transaction).
// 2. drain: BACKLOG deliveries created with the worker stopped (3,000 events
//    through the API, timed, the rest through the product's recordEvent
//    without HTTP: see recordEvents), then a worker started; deliveries/s
//    from startWorker resolving to the last one recorded `succeeded`. Twice
//    (the second backlog all through recordEvent), the faster kept, as the
//    floors are the best of two.
// 4. floors: (a) bare pg-boss send(), one job per event, 1 loop and
//    `connections` loops; (b) undici POSTs with the same signing, headers,
//    agent and concurrency (16 per endpoint), no queue; and the same through
//    the product's attemptDelivery.
//
// Env: BENCH_WEBHOOK_EVENTS (10000), BENCH_WEBHOOK_BACKLOG (50000),
// BENCH_WEBHOOK_LATENCY_SECONDS (20), BENCH_WEBHOOK_FLOOR_DELIVERIES (30000),
// `--profile`: CPU profile of each drain's worker, summarized in the notes;
// BENCH_WEBHOOK_VARIANTS: JSON list of {label, dispatcher?, boss?} (startWorker
// options), each drained from a fresh backlog after the default;
// BENCH_WEBHOOK_DEFER_VERSION=1
// ends the run with an A/B of API events/s (worker stopped) with
// customers_version as a plain AFTER row trigger and as a deferred constraint
// trigger (migration 041: the collection_versions row lock taken at COMMIT
// instead of at the INSERT), in the bench's own database;
// BENCH_WEBHOOK_SQL: SQL run on the bench's own database after the migrations and pg-boss's schema,
// for schema experiments (noted in the output); BENCH_WEBHOOK_DIAG=1
// logs what the database's sessions wait on, every 250 ms; BENCH_WEBHOOK_NO_VACUUM=1
// drains without vacuuming the tables the earlier phases churned (see drain()).
// 5. fan-out cost: API writes (worker stopped) of the company with three
//    endpoints against the same writes of a company with none, alternating,
//    BENCH_WEBHOOK_FANOUT_EVENTS (3000) each, best of two (issue 20: ≥ 0.7).
//    BENCH_WEBHOOK_ONLY=fanout runs the cold burst and this phase alone.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { Pool as HttpPool } from 'undici';
import { createCompany } from '../../api/admin/companies.ts';
import { issueKey } from '../../api/admin/keys.ts';
import { ALL_SCOPES } from '../../api/auth/scopes.ts';
import { recordEvent } from '../../db/events.ts';
import { migrate } from '../../db/migrate.ts';
import { createPool, transaction, type Pool } from '../../db/pool.ts';
import { createBoss } from '../../db/boss.ts';
import { createQueues } from '../../db/job-sender.ts';
import { DEFAULT_DISPATCHER_OPTIONS } from '../../worker/webhooks/dispatcher.ts';
import type { WorkerOptions } from '../../worker/worker.ts';
import { BENCH_RATE_LIMIT, profileFlags } from '../lib/app.ts';
import { clusterCpuMs, cpuBetween, parentPid, sampleCpu, type CpuSample, type CpuSources } from '../lib/cpu.ts';
import { cpuTimeMs, ROOT, spawnNodeServer, type NodeChild } from '../lib/process.ts';
import { formatProfile, summarizeProfileDir } from '../lib/profile.ts';
import { procfileNodeArgs } from '../../scripts/procfile.ts';
import type { BenchContext, Check, Measurement, Ratio, Scenario, ScenarioResult } from '../lib/scenario.ts';

const env = (name: string, fallback: number) => Number(process.env[name] || fallback);
const EVENTS = env('BENCH_WEBHOOK_EVENTS', 10_000);
const BACKLOG = env('BENCH_WEBHOOK_BACKLOG', 50_000);
const LATENCY_SECONDS = env('BENCH_WEBHOOK_LATENCY_SECONDS', 20);
const FLOOR_DELIVERIES = env('BENCH_WEBHOOK_FLOOR_DELIVERIES', 30_000);
const VARIANTS = JSON.parse(process.env.BENCH_WEBHOOK_VARIANTS || '[]') as Array<WorkerOptions & { label: string }>;
const DIAG = process.env.BENCH_WEBHOOK_DIAG === '1';
const DEFER_VERSION = process.env.BENCH_WEBHOOK_DEFER_VERSION === '1';
const EXPERIMENT_SQL = process.env.BENCH_WEBHOOK_SQL || '';
const NO_VACUUM = process.env.BENCH_WEBHOOK_NO_VACUUM === '1';
const FANOUT_EVENTS = env('BENCH_WEBHOOK_FANOUT_EVENTS', 3000);
const ONLY_FANOUT = process.env.BENCH_WEBHOOK_ONLY === 'fanout';
const RECEIVERS = 3;
const TARGET_DRAIN = 4000;
const TARGET_P99_MS = 500;
const TARGET_ENQUEUE_RATIO = 0.7;
const TARGET_FANOUT_RATIO = 0.7;
const TARGET_DRAIN_RATIO = 0.6;

const epoch = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] : Number.NaN;
}
function latencyOf(values: number[]) {
  const s = Float64Array.from(values).sort();
  const a = Array.from(s);
  return { p50: percentile(a, 0.5), p90: percentile(a, 0.9), p99: percentile(a, 0.99), max: a.length ? a[a.length - 1] : Number.NaN };
}

async function waitFor<T>(what: string, timeoutMs: number, pollMs: number, check: () => Promise<T | false>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== false) return value;
    if (Date.now() > deadline) throw new Error(`webhooks bench: timed out waiting for ${what}`);
    await sleep(pollMs);
  }
}

// --- the API client ----------------------------------------------------------

type Client = { http: HttpPool; key: string };
type Sent = { ok: number; errors: number; firstError: string | null; firstSent: number; lastAnswered: number; latencies: number[] };

const sent = (): Sent => ({ ok: 0, errors: 0, firstError: null, firstSent: epoch(), lastAnswered: 0, latencies: [] });

/** One event: a customer created through the API. A non-201 is counted (and its first body kept), not thrown. */
async function createCustomer(c: Client, n: number, out: Sent): Promise<void> {
  const t = performance.now();
  const res = await c.http.request({
    method: 'POST',
    path: '/api/v1/customers',
    headers: { authorization: `Bearer ${c.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ data: { name: `Bench Cliente ${n}` } }),
  });
  const text = await res.body.text();
  out.lastAnswered = epoch();
  out.latencies.push(performance.now() - t);
  if (res.statusCode === 201) out.ok++;
  else if (out.errors++ === 0) out.firstError = `${res.statusCode} ${text.slice(0, 200)}`;
}

/** `count` events, closed loop over `concurrency` requests in flight. */
/** A company of the bench's own database and an API key with every scope (never rate limited). */
async function benchCompany(pool: Pool, name: string): Promise<{ companyId: string; key: string }> {
  const { company } = await createCompany(pool, { name });
  const key = await issueKey(pool, { companyId: company.id, scopes: [...ALL_SCOPES], name: 'bench', rateLimitPerMinute: BENCH_RATE_LIMIT });
  return { companyId: company.id, key: key.secret };
}

/** POST /webhook-endpoints for every event, through the API as a customer would. */
async function createEndpoint(c: Client, url: string): Promise<{ id: string; url: string; secret: string }> {
  const res = await c.http.request({
    method: 'POST', path: '/api/v1/webhook-endpoints',
    headers: { authorization: `Bearer ${c.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ data: { url, enabled_events: ['*'] } }),
  });
  const body = (await res.body.json()) as { data: { id: string; secret: string } };
  if (res.statusCode !== 201) throw new Error(`POST /webhook-endpoints: ${res.statusCode} ${JSON.stringify(body)}`);
  return { id: body.data.id, url, secret: body.data.secret };
}

async function createEvents(c: Client, count: number, concurrency: number): Promise<Sent> {
  const out = sent();
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < count) await createCustomer(c, next++, out);
  }));
  return out;
}

/** Open loop: `rate` events/s for `seconds`, at most `cap` in flight (a miss is counted, not hidden). */
async function pacedEvents(c: Client, rate: number, seconds: number, cap: number): Promise<Sent & { capped: number }> {
  const out = { ...sent(), capped: 0 };
  const total = Math.round(rate * seconds);
  const t0 = performance.now();
  const pending = new Set<Promise<void>>();
  let fired = 0;
  while (fired < total) {
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * rate) + 1);
    while (fired < due) {
      if (pending.size >= cap) {
        out.capped++;
        break;
      }
      const p: Promise<void> = createCustomer(c, fired++, out).finally(() => pending.delete(p));
      pending.add(p);
    }
    await sleep(1);
  }
  await Promise.all(pending);
  return out;
}

/**
 * Backlog events without HTTP: the product's recordEvent (event row, one
 * delivery per endpoint) in a transaction per event, as the API
 * does it minus the customer row. The API alone would take over a minute for
 * 16,667 events (every write of a company waits on one collection_versions
 * row, see the e2e figures), and the drain does not care how its rows came.
 */
async function recordEvents(pool: Pool, companyId: string, count: number, loops: number): Promise<{ ok: number; seconds: number }> {
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: loops }, async () => {
    while (next < count) {
      const n = next++;
      await transaction(pool, (db) => recordEvent(db, companyId, 'customer.created', { object: 'customer', id: `bench${String(n).padStart(20, '0')}`, name: `Bench Cliente ${n}`, email: null }));
    }
  }));
  return { ok: count, seconds: (performance.now() - started) / 1000 };
}

// --- children ----------------------------------------------------------------

type Receivers = NodeChild & { urls: string[] };
type RxStats = { arrivals: number; retries: number; distinct: number; perReceiver: number[]; first: number; last: number; latencies?: number[]; times?: number[] };

async function rx<T>(r: Receivers, what: string, method = 'GET'): Promise<T> {
  const res = await fetch(`${r.url}${what}`, { method });
  return (await res.json()) as T;
}
const resetReceivers = (r: Receivers) => rx(r, '/reset', 'POST');
const receiverStats = (r: Receivers, latencies = false, times = false) =>
  rx<RxStats>(r, `/stats?${latencies ? 'latencies&' : ''}${times ? 'times' : ''}`);

async function waitArrivals(r: Receivers, expected: number, timeoutMs: number): Promise<RxStats> {
  return waitFor(`${expected} arrivals at the receivers`, timeoutMs, 20, async () => {
    const s = await receiverStats(r);
    return s.distinct >= expected ? s : false;
  });
}

/** Polls until every delivery of the company is `succeeded`; returns when that was seen (epoch ms). */
async function waitRecorded(pool: Pool, companyId: string, timeoutMs: number): Promise<{ at: number; total: number; notSucceeded: number }> {
  return waitFor('every delivery to be recorded succeeded', timeoutMs, 25, async () => {
    const { rows } = await pool.query<{ total: number; open: number }>(
      `SELECT count(*)::int AS total, count(*) FILTER (WHERE status <> 'succeeded')::int AS open FROM webhook_deliveries WHERE company_id = $1`,
      [companyId],
    );
    return rows[0].open === 0 ? { at: epoch(), total: rows[0].total, notSucceeded: 0 } : false;
  });
}

async function startWorkerProcess(ctx: BenchContext, databaseUrl: string, options: WorkerOptions, label: string) {
  const { nodeArgs, profileDir } = await profileFlags(ctx, label);
  const child = await spawnNodeServer({
    name: `worker (${label})`,
    script: 'bench/lib/worker-process.ts',
    // As the Procfile runs the worker (package.json's `worker` script).
    nodeArgs: [...procfileNodeArgs('worker'), ...nodeArgs],
    readyTimeoutMs: 60_000,
    env: { DATABASE_URL: databaseUrl, NODE_ENV: 'development', ALLOW_PRIVATE_WEBHOOK_TARGETS: '1', LOG_LEVEL: 'silent', PG_POOL_MAX: String(ctx.options.poolMax), BENCH_WORKER_OPTIONS: JSON.stringify(options) },
  });
  const { startedAt } = (await (await fetch(`${child.url}/started`)).json()) as { startedAt: number };
  return Object.assign(child, { startedAt, profileDir });
}

type FloorResult = { count: number; seconds: number; rate: number; cpuUsPerItem: number; latency: ReturnType<typeof latencyOf> };

async function runFloor(config: Record<string, unknown>): Promise<FloorResult> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bench/floor/webhooks-floor.ts')], {
    cwd: ROOT,
    env: { ...process.env, BENCH_FLOOR: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  const line = output.split('\n').find((l) => l.startsWith('BENCH_FLOOR_JSON '));
  if (code !== 0 || !line) throw new Error(`floor ${config.mode} failed (exit ${code}):\n${output.slice(-2000)}`);
  return JSON.parse(line.slice('BENCH_FLOOR_JSON '.length)) as FloorResult;
}

/**
 * BENCH_WEBHOOK_DIAG=1: what the sessions of the database wait on, the oldest
 * open transaction, and for lock waits the statement of the session blocking
 * them. Logged only when a session waits on a lock or a transaction is open
 * for over a second.
 */
function watchSessions(pool: Pool, log: (line: string) => void): () => void {
  const timer = setInterval(() => {
    pool
      .query<{ w: string | null; n: number; oldest: number; blockers: string[] | null }>(
        `SELECT coalesce(a.wait_event_type || ':' || a.wait_event, a.state, a.backend_type) AS w, count(*)::int AS n,
                round(max(extract(epoch FROM now() - a.xact_start)) * 1000)::int AS oldest,
                array_agg(DISTINCT left(regexp_replace(b.query, '\\s+', ' ', 'g'), 90)) FILTER (WHERE b.pid IS NOT NULL) AS blockers
           FROM pg_stat_activity a
           LEFT JOIN LATERAL unnest(pg_blocking_pids(a.pid)) AS bp(pid) ON a.wait_event_type = 'Lock'
           LEFT JOIN pg_stat_activity b ON b.pid = bp.pid
          WHERE a.datname = current_database() AND a.pid <> pg_backend_pid()
          GROUP BY 1 ORDER BY 2 DESC`,
      )
      .then(({ rows }) => {
        if (!rows.some((r) => r.w?.startsWith('Lock:') || r.oldest > 1000)) return;
        log(`  sessions: ${rows.map((r) => `${r.w}×${r.n}${r.oldest ? ` (${r.oldest} ms)` : ''}${r.blockers ? ` blocked by [${r.blockers.join(' | ')}]` : ''}`).join(', ')}`);
      }, () => {});
  }, 250);
  return () => clearInterval(timer);
}

/** The distinct errors a child logged (logError JSON lines) in the last 8 KB of its output, with counts. */
function loggedErrors(child: NodeChild): string {
  const counts = new Map<string, number>();
  for (const line of child.output().split('\n')) {
    if (!line.includes('"error"')) continue;
    try {
      const { event, error } = JSON.parse(line) as { event?: string; error?: string };
      const key = `${event}: ${error}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    } catch {
      // a line cut by the 8 KB window
    }
  }
  return counts.size ? [...counts].map(([error, n]) => `${n}× ${error}`).join('; ') : 'nothing';
}

/**
 * BENCH_WEBHOOK_DIAG=1 with pg_stat_statements preloaded on the bench server
 * (ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements', restart):
 * the statements of this database by total time, per phase.
 */
async function statements(pool: Pool): Promise<{ reset: () => Promise<void>; report: (label: string, log: (line: string) => void) => Promise<void> } | null> {
  const { rows } = await pool.query<{ libs: string }>(`SELECT current_setting('shared_preload_libraries') AS libs`);
  if (!rows[0].libs.includes('pg_stat_statements')) return null;
  await pool.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  // Planning time is only counted with pg_stat_statements.track_planning on (off by default).
  const { rows: [tracking] } = await pool.query<{ on: boolean }>(`SELECT current_setting('pg_stat_statements.track_planning', true) = 'on' AS on`);
  const planning = (ms: number) => (tracking.on ? `+${ms} ms planning` : 'planning not tracked');
  const where = 'dbid = (SELECT oid FROM pg_database WHERE datname = current_database())';
  return {
    reset: async () => {
      await pool.query(`SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database WHERE datname = current_database()), 0)`);
    },
    report: async (label, log) => {
      const { rows: top } = await pool.query<{ calls: number; total: number; mean: number; plan: number; rows: number; query: string }>(
        `SELECT calls::int, round(total_exec_time)::int AS total, round(mean_exec_time::numeric, 3)::float AS mean, round(total_plan_time)::int AS plan, rows::int,
                regexp_replace(query, '\\s+', ' ', 'g') AS query
           FROM pg_stat_statements WHERE ${where} ORDER BY total_exec_time DESC LIMIT 12`,
      );
      for (const r of top) log(`  statements(${label}): ${String(r.total).padStart(6)} ms ${String(r.calls).padStart(7)} calls ${r.mean.toFixed(3)} ms/call (${planning(r.plan)}) ${r.rows} rows: ${r.query.slice(0, 160)}`);
      // Cumulative since the last statistics reset (the bench's database is new): how many delivery updates were HOT (migration 042).
      const { rows: [hot] } = await pool.query<{ upd: number; hot: number }>(
        `SELECT n_tup_upd::int AS upd, n_tup_hot_upd::int AS hot FROM pg_stat_user_tables WHERE relname = 'webhook_deliveries'`,
      );
      if (hot) log(`  statements(${label}): webhook_deliveries updates so far ${hot.upd}, HOT ${hot.hot} (${hot.upd ? Math.round((100 * hot.hot) / hot.upd) : 0}%)`);
    },
  };
}

/**
 * 5. What fanning a write out to three endpoints costs: the same API write
 * (POST /customers, worker stopped) from the company with three endpoints and
 * from one with none, alternating which goes first, best of `rounds` each.
 */
async function fanOutCost(
  api: Client,
  bare: Client,
  sources: CpuSources,
  concurrency: number,
  rounds = 2,
): Promise<{ rate: { three: number; none: number }; cpu: { three: Record<string, number>; none: Record<string, number> } }> {
  const rate = { three: 0, none: 0 };
  const cpu = { three: {} as Record<string, number>, none: {} as Record<string, number> };
  for (let round = 0; round < rounds; round++) {
    for (const which of round % 2 === 0 ? (['three', 'none'] as const) : (['none', 'three'] as const)) {
      const before = sampleCpu(sources);
      const x = await createEvents(which === 'three' ? api : bare, FANOUT_EVENTS, concurrency);
      const after = sampleCpu(sources);
      if (x.errors) throw new Error(`fan-out phase (${which}): ${x.errors} API errors, first: ${x.firstError}`);
      const r = x.ok / ((x.lastAnswered - x.firstSent) / 1000);
      if (r > rate[which]) {
        rate[which] = r;
        cpu[which] = Object.fromEntries(Object.entries(cpuBetween(before, after).ms).map(([k, v]) => [k, perItem(v, x.ok) ?? 0]));
      }
    }
  }
  return { rate, cpu };
}

// --- the scenario ------------------------------------------------------------

type Row = { case: string; target: string; count: number; seconds: number; latency?: ReturnType<typeof latencyOf>; cpuUs: number | null; errors?: number };

function measurement(r: Row): Measurement {
  const rps = r.count / r.seconds;
  const l = r.latency ?? { p50: Number.NaN, p90: Number.NaN, p99: Number.NaN, max: Number.NaN };
  const run = {
    requests: r.count,
    durationSec: r.seconds,
    rps,
    bytes: 0,
    errors: { connect: 0, read: 0, write: 0, status: r.errors ?? 0, timeout: 0 },
    latency: { min: Number.NaN, mean: Number.NaN, stdev: Number.NaN, max: l.max, p50: l.p50, p75: Number.NaN, p90: l.p90, p99: l.p99, p999: Number.NaN },
    cpuMs: r.cpuUs === null ? null : (r.cpuUs * r.count) / 1000,
  };
  return { case: r.case, target: r.target, path: '', warmup: null, runs: [run], best: { rps, p50: l.p50, p90: l.p90, p99: l.p99, max: l.max, errors: r.errors ?? 0, cpuUsPerRequest: r.cpuUs, dbCpuUsPerRequest: null } };
}

const perItem = (ms: number | null | undefined, n: number) => (ms === null || ms === undefined || n === 0 ? null : Math.round((ms * 1000) / n));

function cpuNote(label: string, a: CpuSample, b: CpuSample, items: number, unit: string): string {
  const { ms, machineBusy } = cpuBetween(a, b);
  const parts = Object.entries(ms).map(([name, v]) => `${name} ${perItem(v, items) ?? '-'}`);
  return `${label}: CPU µs per ${unit}: ${parts.join(', ')}; machine busy ${Math.round(machineBusy * 100)}% of ${os.cpus().length} cores`;
}

export const webhooks: Scenario = {
  name: 'webhooks',
  description: `deliveries/s e2e (${EVENTS} events × ${RECEIVERS} endpoints) and backlog drain (${BACKLOG}) vs pg-boss send() and bare undici POST floors; commit→receipt p50/p99`,
  run: async (ctx) => {
    const { log } = ctx;
    const notes: string[] = [];
    const rows: Row[] = [];
    const ratios: Ratio[] = [];
    const checks: Check[] = [];
    const note = (line: string) => {
      notes.push(line);
      log(`  ${line}`);
    };
    /** --profile: the hot spots of a drain's worker process. */
    const profileNotes = async (dir: string | null, label: string) => {
      const summary = dir ? await summarizeProfileDir(dir) : null;
      if (summary) for (const line of formatProfile(summary, 25).split('\n')) note(`profile(${label}) ${line}`);
    };

    // A database of its own; ones left by an interrupted run go first.
    if (ctx.db.embedded) {
      const { rows: old } = await ctx.db.pool.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE 'bench_webhooks_%'`);
      for (const { datname } of old) await ctx.db.pool.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    }
    const dbName = `bench_webhooks_${randomBytes(4).toString('hex')}`;
    await ctx.db.pool.query(`CREATE DATABASE ${dbName}`);
    const dbUrl = new URL(ctx.db.url);
    dbUrl.pathname = `/${dbName}`;
    const databaseUrl = dbUrl.toString();
    const pool = createPool(databaseUrl, 3);
    const children: NodeChild[] = [];
    let http: HttpPool | null = null;
    let unwatch = () => {};
    const cleanups: Array<() => Promise<unknown>> = [];
    try {
      await migrate(pool);
      const boss = createBoss(databaseUrl, { supervise: false, schedule: false });
      await boss.start();
      if (EXPERIMENT_SQL) await pool.query(EXPERIMENT_SQL);
      await createQueues(boss);
      await boss.stop({ graceful: false });
      const { companyId, key } = await benchCompany(pool, 'Bench webhooks');

      const receivers = Object.assign(
        await spawnNodeServer({ name: 'receivers', script: 'bench/lib/webhook-receivers.ts', env: { RECEIVERS: String(RECEIVERS) } }),
        { urls: [] as string[] },
      );
      children.push(receivers);
      receivers.urls = await rx<string[]>(receivers, '/urls');
      const web = await spawnNodeServer({
        name: 'web (api/server.ts)',
        script: 'api/server.ts',
        nodeArgs: procfileNodeArgs('web'),
        env: {
          DATABASE_URL: databaseUrl, NODE_ENV: 'development', ALLOW_PRIVATE_WEBHOOK_TARGETS: '1', LOG_LEVEL: 'silent', ADMIN_TOKEN: randomBytes(24).toString('hex'),
          PG_POOL_MAX: String(ctx.options.poolMax), DATA_DIR: path.join(ctx.options.resultsDir, 'data'), SITE_URL: undefined, BOOKING_URL: undefined,
        },
      });
      children.push(web);
      const concurrency = ctx.options.connections;
      http = new HttpPool(web.url, { connections: concurrency });
      const api: Client = { http, key };

      const endpoints: Array<{ id: string; url: string; secret: string }> = [];
      for (const url of receivers.urls) endpoints.push(await createEndpoint(api, url));

      // A cold web process (nothing enqueued yet) under a burst of writes from
      // more clients than PG_POOL_MAX: pg-boss looks the queue up through the
      // web's pool on its first insert, while the transaction that asked holds a
      // connection of that same pool. Counted here, before anything warms it up.
      const cold = await createEvents(api, concurrency, concurrency);
      const coldLat = latencyOf(cold.latencies);
      rows.push({ case: `cold web: first ${concurrency} events`, target: 'ours', count: cold.ok + cold.errors, seconds: (cold.lastAnswered - cold.firstSent) / 1000, latency: coldLat, cpuUs: null, errors: cold.errors });
      if (cold.errors) note(`cold web: ${cold.errors} API errors; the web logged (last 8 KB): ${loggedErrors(web)}`);
      checks.push({ label: `cold web process, first burst of ${concurrency} concurrent writes`, target: 'no 5xx', actual: cold.errors ? `${cold.errors} errors (${cold.firstError?.slice(0, 60)}…), max ${coldLat.max.toFixed(0)} ms` : `ok, max ${coldLat.max.toFixed(0)} ms`, pass: cold.errors === 0 });

      const { rows: [backend] } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const postmaster = parentPid(backend.pid)!;
      let worker: (NodeChild & { startedAt: number; profileDir: string | null }) | null = null;
      const sources: CpuSources = {
        web: () => cpuTimeMs(web.child.pid),
        worker: () => (worker ? cpuTimeMs(worker.child.pid) : 0),
        postgres: () => clusterCpuMs(postmaster),
        receivers: () => cpuTimeMs(receivers.child.pid),
        client: () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; },
      };
      log(`  web ${web.url}, receivers ${receivers.urls.join(' ')}, database ${dbName}, ${concurrency} API connections, PG_POOL_MAX ${ctx.options.poolMax}`);
      note(`processes: web = node api/server.ts, worker = bench/lib/worker-process.ts (worker/main.ts + options), ${RECEIVERS} receivers in one process, floors in their own; the bench process is the API client (${concurrency} connections)`);
      note(`dispatcher options: ${JSON.stringify(DEFAULT_DISPATCHER_OPTIONS)}`);
      if (EXPERIMENT_SQL) note(`EXPERIMENT, schema changed in this run's database: ${EXPERIMENT_SQL}`);

      // 5. (run last, or alone with BENCH_WEBHOOK_ONLY=fanout) Two new companies for the A/B, one with
      //    three endpoints (the same receivers) and one with none, so that the endpoints are the only
      //    difference: the first company holds the earlier phases' customers and deliveries by then.
      const fanOut = async () => {
        const three: Client = { http: http!, key: (await benchCompany(pool, 'Bench webhooks, fan-out to 3 endpoints')).key };
        const none: Client = { http: http!, key: (await benchCompany(pool, 'Bench webhooks, no endpoints')).key };
        for (const url of receivers.urls) await createEndpoint(three, url);
        for (const client of [three, none]) await createEvents(client, concurrency, concurrency); // both companies' caches warm
        const f = await fanOutCost(three, none, sources, concurrency);
        const diag = DIAG ? await statements(pool) : null;
        if (diag) {
          for (const [label, client] of [['fan-out, 3 endpoints', three], ['fan-out, none', none]] as const) {
            await diag.reset();
            await createEvents(client, FANOUT_EVENTS, concurrency);
            await diag.report(label, log);
          }
        }
        const ratio = f.rate.three / f.rate.none;
        const fmt = (c: Record<string, number>) => `web ${c.web}, postgres ${c.postgres}`;
        note(`fan-out: API writes with the worker stopped, ${FANOUT_EVENTS} per run, best of 2 alternating: ${RECEIVERS} endpoints ${f.rate.three.toFixed(0)}/s, none ${f.rate.none.toFixed(0)}/s (${ratio.toFixed(2)}); CPU µs per write ${fmt(f.cpu.three)} against ${fmt(f.cpu.none)}`);
        rows.push({ case: `fan-out: API writes, ${RECEIVERS} endpoints`, target: 'ours', count: Math.round(f.rate.three), seconds: 1, cpuUs: f.cpu.three.web ?? null });
        rows.push({ case: 'fan-out: API writes, no endpoint', target: 'floor', count: Math.round(f.rate.none), seconds: 1, cpuUs: f.cpu.none.web ?? null });
        ratios.push({ label: `API writes/s with ${RECEIVERS} endpoints ÷ with none`, value: ratio });
        checks.push({ label: `a write fanning out to ${RECEIVERS} endpoints ÷ the same write with none`, target: `≥ ${TARGET_FANOUT_RATIO}`, actual: ratio.toFixed(2), pass: ratio >= TARGET_FANOUT_RATIO });
      };
      if (ONLY_FANOUT) {
        await fanOut();
        return { name: 'webhooks', description: webhooks.description, notes, measurements: rows.map(measurement), ratios, checks };
      }

      // 4a. Enqueue floors, before any worker exists.
      const groups = endpoints.map((e) => e.id);
      const seq = await runFloor({ mode: 'enqueue', databaseUrl, count: 3000, concurrency: 1, poolMax: ctx.options.poolMax, groups });
      log(`  floor: pg-boss send(), 1 loop: ${seq.rate.toFixed(0)} jobs/s, ${seq.cpuUsPerItem} µs CPU/job`);
      const par = await runFloor({ mode: 'enqueue', databaseUrl, count: 10_000, concurrency, poolMax: ctx.options.poolMax, groups });
      log(`  floor: pg-boss send(), ${concurrency} loops: ${par.rate.toFixed(0)} jobs/s, ${par.cpuUsPerItem} µs CPU/job`);
      rows.push({ case: 'enqueue: send() 1 job/event, 1 loop', target: 'floor', count: seq.count, seconds: seq.seconds, latency: seq.latency, cpuUs: seq.cpuUsPerItem });
      rows.push({ case: `enqueue: send() 1 job/event, ${concurrency} loops`, target: 'floor', count: par.count, seconds: par.seconds, latency: par.latency, cpuUs: par.cpuUsPerItem });

      if (DIAG) unwatch = watchSessions(pool, log);
      const stmts = DIAG ? await statements(pool) : null;
      // 1. End to end, worker running.
      worker = await startWorkerProcess(ctx, databaseUrl, {}, 'webhooks-worker-e2e');
      children.push(worker);
      await createEvents(api, 300, concurrency);
      await waitRecorded(pool, companyId, 60_000);
      await resetReceivers(receivers);
      await stmts?.reset();
      let before = sampleCpu(sources);
      const e2eStart = epoch();
      const e2eSent = await createEvents(api, EVENTS, concurrency);
      const e2eRx = await waitArrivals(receivers, e2eSent.ok * RECEIVERS, 300_000);
      const e2eRecorded = await waitRecorded(pool, companyId, 120_000);
      let after = sampleCpu(sources);
      await stmts?.report('e2e', log);
      const e2eDeliveries = e2eSent.ok * RECEIVERS;
      const e2eSeconds = (e2eRx.last - e2eStart) / 1000;
      const eventRate = e2eSent.ok / ((e2eSent.lastAnswered - e2eStart) / 1000);
      const e2eLat = await receiverStats(receivers, true);
      const e2eCpu = cpuBetween(before, after).ms;
      if (e2eSent.errors) note(`e2e: ${e2eSent.errors} API errors; the web logged (last 8 KB): ${loggedErrors(web)}; the worker: ${loggedErrors(worker)}`);
      rows.push({ case: `e2e: API events (worker running)`, target: 'ours', count: e2eSent.ok, seconds: (e2eSent.lastAnswered - e2eStart) / 1000, latency: latencyOf(e2eSent.latencies), cpuUs: perItem(e2eCpu.web, e2eSent.ok), errors: e2eSent.errors });
      rows.push({ case: `e2e: deliveries, first event→last receipt`, target: 'ours', count: e2eDeliveries, seconds: e2eSeconds, latency: latencyOf(e2eLat.latencies!), cpuUs: perItem(e2eCpu.worker, e2eDeliveries) });
      note(`e2e: ${e2eSent.ok} events in ${((e2eSent.lastAnswered - e2eStart) / 1000).toFixed(1)} s (${eventRate.toFixed(0)} events/s), ${e2eDeliveries} deliveries by ${((e2eRx.last - e2eStart) / 1000).toFixed(1)} s (${(e2eDeliveries / e2eSeconds).toFixed(0)}/s), all recorded by ${((e2eRecorded.at - e2eStart) / 1000).toFixed(1)} s; duplicates ${e2eRx.arrivals - e2eRx.distinct}, retries ${e2eRx.retries}`);
      note(cpuNote('e2e', before, after, e2eDeliveries, 'delivery'));

      // 3. Latency at half the event rate of (1), same worker.
      await resetReceivers(receivers);
      const rate = eventRate / 2;
      before = sampleCpu(sources);
      const paced = await pacedEvents(api, rate, LATENCY_SECONDS, concurrency);
      const latRx = await waitArrivals(receivers, paced.ok * RECEIVERS, 120_000);
      after = sampleCpu(sources);
      await waitRecorded(pool, companyId, 60_000);
      const latStats = await receiverStats(receivers, true);
      if (paced.errors) note(`latency: ${paced.errors} API errors; the web logged (last 8 KB): ${loggedErrors(web)}; the worker: ${loggedErrors(worker)}`);
      const lat = latencyOf(latStats.latencies!);
      const latSeconds = (latRx.last - paced.firstSent) / 1000;
      rows.push({ case: `latency: commit→receipt at ${rate.toFixed(0)} events/s`, target: 'ours', count: paced.ok * RECEIVERS, seconds: latSeconds, latency: lat, cpuUs: perItem(cpuBetween(before, after).ms.worker, paced.ok * RECEIVERS), errors: paced.errors });
      note(`latency: ${paced.ok} events at ${rate.toFixed(0)}/s (half of ${eventRate.toFixed(0)}) for ${LATENCY_SECONDS} s, commit→receipt p50 ${lat.p50.toFixed(1)} ms, p90 ${lat.p90.toFixed(1)} ms, p99 ${lat.p99.toFixed(1)} ms, max ${lat.max.toFixed(0)} ms; API p99 ${latencyOf(paced.latencies).p99.toFixed(1)} ms; pacing held back ${paced.capped} times`);
      note(cpuNote('latency', before, after, paced.ok * RECEIVERS, 'delivery'));
      await worker.stop();
      worker = null;

      // 2. Backlog drain: the default options, then each variant, each from a fresh backlog.
      const directPool = createPool(databaseUrl, 8);
      cleanups.push(() => directPool.end());
      const drain = async (options: WorkerOptions, label: string, apiEvents: number) => {
        const events = Math.ceil(BACKLOG / RECEIVERS);
        await stmts?.reset();
        const fillStart = sampleCpu(sources);
        const fill = await createEvents(api, Math.min(apiEvents, events), concurrency);
        const fillEnd = sampleCpu(sources);
        if (fill.errors) note(`backlog fill (${label}): ${fill.errors} API errors, first: ${fill.firstError}`);
        const rest = await recordEvents(directPool, companyId, events - fill.ok, 8);
        log(`  backlog ${label}: ${fill.ok} events through the API, ${rest.ok} through recordEvent in ${rest.seconds.toFixed(1)} s`);
        const expected = (fill.ok + rest.ok) * RECEIVERS;
        const { rows: [pending] } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE company_id = $1 AND status = 'pending'`, [companyId]);
        if (pending.n !== expected) throw new Error(`backlog: ${pending.n} pending deliveries, expected ${expected}`);
        await stmts?.report(`fill ${label}`, log);
        await stmts?.reset();
        // The state a real backlog builds up in (minutes of a receiver being down, autovacuum running
        // every minute): the dead rows the earlier phases left vacuumed, the fill's dirty pages written. Straight after the end-to-end phase's churn, before autovacuum
        // has caught up, the first drain ran at 1.6-3.0k/s against 4.0k for the same options later in
        // the same run (fetches twice as slow); BENCH_WEBHOOK_NO_VACUUM=1 measures that state.
        if (!NO_VACUUM) await pool.query('VACUUM ANALYZE webhook_deliveries, events, webhook_endpoints');
        await pool.query('CHECKPOINT').catch(() => {});
        await resetReceivers(receivers);
        const b = sampleCpu(sources);
        worker = await startWorkerProcess(ctx, databaseUrl, options, `webhooks-worker-${label}`);
        children.push(worker);
        const got = await waitArrivals(receivers, expected, 600_000);
        const recorded = await waitRecorded(pool, companyId, 120_000);
        const a = sampleCpu(sources);
        await stmts?.report(`drain ${label}`, log);
        const seconds = (recorded.at - worker.startedAt) / 1000;
        const stats = await receiverStats(receivers, false, true);
        const { startedAt, profileDir } = worker;
        await worker.stop();
        worker = null;
        // "Latency" of a backlog: from the worker's start to each receipt (p50 ≈ half the drain when it is steady).
        const sinceStart = latencyOf(stats.times!.map((t) => t - startedAt));
        return { fill, fillCpu: cpuBetween(fillStart, fillEnd).ms, fillSample: [fillStart, fillEnd] as const, expected, seconds, got, stats, sinceStart, startedAt, sample: [b, a] as const, recordedAt: recorded.at, profileDir };
      };
      // Twice, each from a fresh backlog, the faster kept: the floors below are the best of two runs
      // too (the machine is shared, and one drain moved 4.5k-5.5k/s between runs of the same code).
      // The backlog-fill figures are the first's, whose backlog is partly made through the API.
      const filled = await drain({}, 'drain', 3000);
      const again = await drain({}, 'drain-2', 0);
      const rateOf = (d: typeof filled) => d.expected / d.seconds;
      const main = rateOf(again) > rateOf(filled) ? again : filled;
      const drainRate = rateOf(main);
      const drainCpu = cpuBetween(main.sample[0], main.sample[1]).ms;
      rows.push({ case: `backlog: API events (worker stopped)`, target: 'ours', count: filled.fill.ok, seconds: (filled.fill.lastAnswered - filled.fill.firstSent) / 1000, latency: latencyOf(filled.fill.latencies), cpuUs: perItem(filled.fillCpu.web, filled.fill.ok), errors: filled.fill.errors });
      rows.push({ case: `drain: ${main.expected} deliveries, start→all succeeded`, target: 'ours', count: main.expected, seconds: main.seconds, latency: main.sinceStart, cpuUs: perItem(drainCpu.worker, main.expected) });
      note(`drain, best of 2 (${rateOf(filled).toFixed(0)}/s, then ${rateOf(again).toFixed(0)}/s): ${main.expected} deliveries in ${main.seconds.toFixed(1)} s (${drainRate.toFixed(0)}/s); first receipt ${((main.got.first - main.startedAt) / 1000).toFixed(2)} s after startWorker resolved, last receipt→all recorded ${((main.recordedAt - main.got.last) / 1000).toFixed(2)} s; duplicates ${main.stats.arrivals - main.stats.distinct}; per receiver ${main.stats.perReceiver.join('/')}`);
      note(cpuNote('backlog fill', filled.fillSample[0], filled.fillSample[1], filled.fill.ok, 'event'));
      note(cpuNote('drain', main.sample[0], main.sample[1], main.expected, 'delivery'));
      await profileNotes(main.profileDir, 'worker, drain');

      // 4b. Delivery floors to the same receivers.
      const floorConfig = { databaseUrl, companyId, count: FLOOR_DELIVERIES, perEndpoint: DEFAULT_DISPATCHER_OPTIONS.perEndpoint, maxInFlight: DEFAULT_DISPATCHER_OPTIONS.maxInFlight, endpoints };
      await resetReceivers(receivers);
      before = sampleCpu(sources);
      // Best of two alternating runs each, as measureCases does: the machine is shared.
      const best = (a: FloorResult | null, b: FloorResult) => (a && a.rate >= b.rate ? a : b);
      let bare: FloorResult | null = null;
      let viaAttempt: FloorResult | null = null;
      for (let round = 0; round < 2; round++) {
        bare = best(bare, await runFloor({ mode: 'deliver', ...floorConfig }));
        viaAttempt = best(viaAttempt, await runFloor({ mode: 'attempt', ...floorConfig }));
        log(`  delivery floors, round ${round + 1}: undici ${bare.rate.toFixed(0)}/s, attemptDelivery ${viaAttempt.rate.toFixed(0)}/s (best so far)`);
      }
      after = sampleCpu(sources);
      note(cpuNote('delivery floors (4 runs, warm-ups included)', before, after, 4 * (floorConfig.count + Math.min(1500, floorConfig.count)), 'delivery'));
      if (!bare || !viaAttempt) throw new Error('unreachable');
      rows.push({ case: `deliver: undici POST + signature, ${floorConfig.perEndpoint}/endpoint`, target: 'floor', count: bare.count, seconds: bare.seconds, latency: bare.latency, cpuUs: bare.cpuUsPerItem });
      rows.push({ case: `deliver: attemptDelivery(), ${floorConfig.perEndpoint}/endpoint`, target: 'floor', count: viaAttempt.count, seconds: viaAttempt.seconds, latency: viaAttempt.latency, cpuUs: viaAttempt.cpuUsPerItem });

      // Variants (tuning): same backlog, other startWorker options.
      for (const variant of VARIANTS) {
        const { label, ...options } = variant;
        const v = await drain(options, label.replace(/\W+/g, '-'), 0);
        const vCpu = cpuBetween(v.sample[0], v.sample[1]).ms;
        rows.push({ case: `drain variant ${label}`, target: 'ours', count: v.expected, seconds: v.seconds, latency: v.sinceStart, cpuUs: perItem(vCpu.worker, v.expected) });
        note(`variant ${label} ${JSON.stringify(options)}: ${(v.expected / v.seconds).toFixed(0)}/s (${((v.expected / v.seconds) / drainRate).toFixed(2)}× the default drain of this run); duplicates ${v.stats.arrivals - v.stats.distinct}`);
        note(cpuNote(`variant ${label}`, v.sample[0], v.sample[1], v.expected, 'delivery'));
        await profileNotes(v.profileDir, `worker, ${label}`);
      }

      // Experiment: what the per-company collection_versions row lock costs API writes
      // (migration 041 made the version triggers deferred; this puts a plain one back for the A/B).
      if (DEFER_VERSION) {
        const { rows: [current] } = await pool.query<{ deferred: boolean }>(
          `SELECT tgdeferrable AS deferred FROM pg_trigger WHERE tgname = 'customers_version' AND tgrelid = 'customers'::regclass`,
        );
        const trigger = (deferred: boolean) =>
          pool.query(`DROP TRIGGER customers_version ON customers;
            CREATE ${deferred ? 'CONSTRAINT ' : ''}TRIGGER customers_version AFTER INSERT OR UPDATE OR DELETE ON customers
              ${deferred ? 'DEFERRABLE INITIALLY DEFERRED ' : ''}FOR EACH ROW EXECUTE FUNCTION bump_collection_version()`);
        const rates: Record<string, number[]> = { plain: [], deferred: [] };
        for (let round = 0; round < 2; round++) {
          for (const deferred of round === 0 ? [false, true] : [true, false]) {
            await trigger(deferred);
            const x = await createEvents(api, 2000, concurrency);
            rates[deferred ? 'deferred' : 'plain'].push(x.ok / ((x.lastAnswered - x.firstSent) / 1000));
          }
        }
        await trigger(current.deferred);
        const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(' / ');
        note(`experiment customers_version, API events/s with the worker stopped (2,000 each, alternating): plain AFTER row trigger ${fmt(rates.plain)}, deferred constraint trigger ${fmt(rates.deferred)} (the schema has ${current.deferred ? 'the deferred one' : 'the plain one'})`);
        ratios.push({ label: 'API events/s, deferred version trigger ÷ plain (best of 2)', value: Math.max(...rates.deferred) / Math.max(...rates.plain) });
      }

      await fanOut();

      const e2eEventsRatio = eventRate / seq.rate;
      const e2eDeliveryRatio = e2eDeliveries / e2eSeconds / seq.rate;
      ratios.push({ label: 'e2e deliveries/s ÷ send() floor (1 loop)', value: e2eDeliveryRatio });
      ratios.push({ label: 'e2e events/s ÷ send() floor (1 loop)', value: e2eEventsRatio });
      ratios.push({ label: `e2e events/s ÷ send() floor (${concurrency} loops)`, value: eventRate / par.rate });
      ratios.push({ label: 'backlog-fill events/s (no worker) ÷ send() floor (1 loop)', value: filled.fill.ok / ((filled.fill.lastAnswered - filled.fill.firstSent) / 1000) / seq.rate });
      ratios.push({ label: 'drain ÷ delivery floor (undici)', value: drainRate / bare.rate });
      ratios.push({ label: 'drain ÷ attemptDelivery floor', value: drainRate / viaAttempt.rate });
      ratios.push({ label: 'attemptDelivery floor ÷ undici floor', value: viaAttempt.rate / bare.rate });
      const allDelivered = e2eRx.arrivals === e2eRx.distinct && [filled, again].every((d) => d.stats.arrivals === d.stats.distinct);
      // The issue's figure is deliveries per second; its target, 0.7 × what per-event enqueue allows
      // (bare send(), one job per event). Each event here also carries its three deliveries and jobs,
      // so events/s against the same floor (above, in the ratios) is the stricter reading; the README gives both.
      checks.push({ label: 'e2e deliveries/s ≥ 0.7 × send() floor (1 loop)', target: `≥ ${TARGET_ENQUEUE_RATIO}`, actual: e2eDeliveryRatio.toFixed(2), pass: e2eDeliveryRatio >= TARGET_ENQUEUE_RATIO });
      checks.push({ label: 'backlog drain deliveries/s', target: `≥ ${TARGET_DRAIN}`, actual: drainRate.toFixed(0), pass: drainRate >= TARGET_DRAIN });
      checks.push({ label: 'backlog drain ÷ bare undici POSTs with the same signing', target: `≥ ${TARGET_DRAIN_RATIO}`, actual: (drainRate / bare.rate).toFixed(2), pass: drainRate / bare.rate >= TARGET_DRAIN_RATIO });
      checks.push({ label: `commit→receipt p99 at ${rate.toFixed(0)} events/s`, target: `< ${TARGET_P99_MS} ms`, actual: `${lat.p99.toFixed(1)} ms`, pass: lat.p99 < TARGET_P99_MS });
      checks.push({ label: 'every delivery received once and recorded succeeded', target: 'no duplicates, none open', actual: allDelivered ? 'yes' : 'duplicates seen', pass: allDelivered });
      const result: ScenarioResult = { name: 'webhooks', description: webhooks.description, notes, measurements: rows.map(measurement), ratios, checks };
      return result;
    } catch (error) {
      for (const c of children) if (c.output().trim()) log(`  output of ${c.name}:\n${c.output().slice(-3000)}`);
      throw error;
    } finally {
      unwatch();
      for (const cleanup of cleanups) await cleanup().catch(() => {});
      await http?.close().catch(() => {});
      for (const c of children.reverse()) await c.stop().catch(() => {});
      await pool.end().catch(() => {});
      await ctx.db.pool.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
    }
  },
};
