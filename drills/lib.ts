// What every drill stands on: its own embedded PostgreSQL (durable: fsync on,
// on a fixed port so it can be restarted under the processes), migrated; the
// real web (api/server.ts) and worker (worker/main.ts) as separate OS
// processes; tenants made the way operators make them; and small HTTP
// receivers for webhooks.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createCompany } from '../api/admin/companies.ts';
import { issueKey } from '../api/admin/keys.ts';
import { ALL_SCOPES } from '../api/auth/scopes.ts';
import { startEmbedded } from '../db/embedded.ts';
import { migrate } from '../db/migrate.ts';
import { createPool, type Pool } from '../db/pool.ts';
import { freePort, ROOT, spawnNodeServer, type NodeChild } from '../bench/lib/process.ts';
import { procfileNodeArgs } from '../scripts/procfile.ts';

export type Finding = { check: string; expected: string; actual: string; pass: boolean };
export type DrillResult = { name: string; did: string; findings: Finding[] };
export type Drill = { name: string; summary: string; run: (ctx: DrillContext) => Promise<DrillResult> };

export type DrillContext = {
  databaseUrl: string;
  pool: Pool;
  dataDir: string;
  log: (line: string) => void;
  /** Stops PostgreSQL and starts it again on the same port (the db-restart drill). */
  restartDatabase: (downMs: number) => Promise<{ downAt: number; upAt: number }>;
  stopDatabase: () => Promise<void>;
  startDatabase: () => Promise<void>;
};

export const ADMIN_TOKEN = `drill-${randomBytes(12).toString('hex')}`;

export async function openDrillDatabase(dataDir: string, log: (l: string) => void) {
  const port = await freePort();
  let db = await startEmbedded(path.join(dataDir, 'pg'), { database: 'drills', port });
  const pool = createPool(db.url, 10, 'drills');
  const applied = await migrate(pool);
  if (applied.length) log(`migrations applied: ${applied.length}`);
  return {
    url: db.url,
    pool,
    stop: async () => db.stop(),
    start: async () => {
      db = await startEmbedded(path.join(dataDir, 'pg'), { database: 'drills', port });
    },
  };
}

export async function tenant(pool: Pool, options: { rateLimitPerMinute?: number } = {}) {
  const { company, owner } = await createCompany(pool, { name: `Drill ${randomBytes(3).toString('hex')}`, ownerEmail: `drill-${randomBytes(5).toString('hex')}@drill.example` });
  const key = await issueKey(pool, { companyId: company.id, scopes: [...ALL_SCOPES], rateLimitPerMinute: options.rateLimitPerMinute });
  return { companyId: company.id, ownerId: owner.id, key: key.secret };
}

/** The web process as the Procfile runs it. */
export function startWeb(ctx: DrillContext, env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<NodeChild> {
  return spawnNodeServer({
    name: 'web',
    script: 'api/server.ts',
    nodeArgs: [...procfileNodeArgs('web'), ...nodeArgs],
    env: {
      DATABASE_URL: ctx.databaseUrl,
      NODE_ENV: 'development',
      LOG_LEVEL: 'silent',
      ADMIN_TOKEN,
      DATA_DIR: ctx.dataDir,
      ALLOW_PRIVATE_WEBHOOK_TARGETS: '1',
      SITE_URL: undefined,
      ...env,
    },
  });
}

export type WorkerProcess = {
  child: ChildProcess;
  /** Resolves once the worker has logged `worker.started` (its queues and pollers are up); rejects if it exits first. */
  started: Promise<void>;
  /** Its exit code (or signal) once it has exited; null while it runs. */
  exited: () => string | null;
  /** The last lines it wrote (stdout and stderr), for a report. */
  tail: () => string;
};

/** The worker process as the Procfile runs it (package.json's `worker` script, its Node flags included); its log is read for `worker.started` and kept for the report. */
export function startWorkerProcess(ctx: DrillContext, env: Record<string, string> = {}): WorkerProcess {
  const child = spawn(process.execPath, [...procfileNodeArgs('worker'), 'worker/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: ctx.databaseUrl, NODE_ENV: 'development', LOG_LEVEL: 'info', DATA_DIR: ctx.dataDir, ALLOW_PRIVATE_WEBHOOK_TARGETS: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let exit: string | null = null;
  const keep = (chunk: Buffer) => void (output = (output + chunk.toString('utf8')).slice(-16_384));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const started = new Promise<void>((resolve, reject) => {
    const check = () => output.includes('"event":"worker.started"') && resolve();
    child.stdout!.on('data', check);
    child.once('exit', (code, signal) => {
      exit = signal ?? String(code);
      reject(new Error(`the worker exited (${exit}) before it started: ${output.slice(-2000)}`));
    });
  });
  started.catch(() => {}); // read by those who wait for it
  return { child, started, exited: () => exit, tail: () => output };
}

export function kill9(child: WorkerProcess | NodeChild): void {
  child.child.kill('SIGKILL');
}

export type Receiver = { url: string; received: Array<{ eventId: string; event: string; at: number }>; close: () => Promise<void> };

export async function receiver(): Promise<Receiver> {
  const received: Receiver['received'] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        received.push({ eventId: body.id, event: body.event, at: Date.now() });
      } catch {}
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received, close: () => new Promise((r) => server.close(() => r())) };
}

export async function api(base: string, key: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${base}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
}

export async function until<T>(check: () => Promise<T | null | undefined | false>, timeoutMs: number): Promise<T | null> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) return null;
    await new Promise((r) => setTimeout(r, 200));
  }
}

export const finding = (check: string, expected: string, actual: string | number, pass: boolean): Finding => ({ check, expected, actual: String(actual), pass });
