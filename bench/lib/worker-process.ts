// The worker process as the benches run it (webhooks, catalog): what worker/main.ts does
// (own pool of PG_POOL_MAX, startWorker: pg-boss with supervision and cron,
// every job handler, the webhook dispatcher), plus two things the bench needs:
// - BENCH_WORKER_OPTIONS (JSON `{ dispatcher?, boss? }`) passed to
//   startWorker, to measure alternatives to DEFAULT_DISPATCHER_OPTIONS and the
//   pg-boss pool without editing the product;
// - a control server on PORT: /healthz answers 200 once startWorker has
//   resolved, and /started gives that moment (epoch ms), the start of a drain,
//   and the process's CPU time before startWorker was called.
// SIGTERM stops it as main.ts does (in-flight attempts finish and are written).
import http from 'node:http';
import { createPool } from '../../db/pool.ts';
import { loadConfig } from '../../lib/config.ts';
import { startWorker, type WorkerOptions } from '../../worker/worker.ts';

const config = loadConfig();
const databaseUrl = config.databaseUrl;
if (!databaseUrl) throw new Error('worker-process: DATABASE_URL is required');
const options = JSON.parse(process.env.BENCH_WORKER_OPTIONS || '{}') as WorkerOptions;

const pool = createPool(databaseUrl, config.pgMaxConnections);
// This process's CPU before the worker starts (Node's start-up and the imports), so a bench can count the worker's work alone.
const cpu = process.cpuUsage();
const cpuBeforeStartMs = (cpu.user + cpu.system) / 1000;
const worker = await startWorker(config, pool, databaseUrl, options);
const startedAt = performance.timeOrigin + performance.now();

const control = http.createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(req.url === '/started' ? { startedAt, cpuBeforeStartMs } : { ok: true }));
});
control.listen(Number(process.env.PORT), '127.0.0.1');

process.once('SIGTERM', async () => {
  control.close();
  await worker.stop();
  await pool.end();
  process.exit(0);
});
