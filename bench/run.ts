// `npm run bench [-- <scenario>...] [options]`: starts the bench database,
// runs the scenarios (all by default), prints a table and writes
// bench/results/latest.json. See docs/bench.md.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { openBenchDatabase, type BenchDatabase } from './lib/database.ts';
import { ROOT, stopAllChildren } from './lib/process.ts';
import { environment, formatResults, writeLatest } from './lib/report.ts';
import type { BenchContext, BenchOptions, ScenarioResult } from './lib/scenario.ts';
import { wrkVersion } from './lib/wrk.ts';
import { scenarios } from './scenarios/index.ts';

const HELP = `Usage: npm run bench -- [scenario...] [options]

Scenarios: ${scenarios.map((s) => s.name).join(', ')} (default: all)

Options (environment variable in brackets):
  --duration <s>      seconds per measured run [BENCH_DURATION] (10)
  --warmup <s>        warm-up seconds per case and server [BENCH_WARMUP] (3)
  --rounds <n>        measured runs per case and server, alternating order; best kept [BENCH_ROUNDS] (2)
  --connections <n>   wrk connections [BENCH_CONNECTIONS] (50)
  --threads <n>       wrk threads [BENCH_THREADS] (2)
  --pool <n>          PostgreSQL connections per server process [PG_POOL_MAX] (10)
  --profile           CPU-profile our web process (--cpu-prof) and print its hot spots [BENCH_PROFILE=1]
  --strict            exit 1 when a target is missed
  --list              list the scenarios

DATABASE_URL set: bench against that server; unset: embedded PostgreSQL under DATA_DIR/bench.
Needs wrk (apt-get install -y wrk).`;

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    duration: { type: 'string' },
    warmup: { type: 'string' },
    rounds: { type: 'string' },
    connections: { type: 'string' },
    threads: { type: 'string' },
    pool: { type: 'string' },
    profile: { type: 'boolean' },
    strict: { type: 'boolean' },
    list: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
});

if (values.help) {
  console.log(HELP);
  process.exit(0);
}
if (values.list) {
  for (const s of scenarios) console.log(`${s.name.padEnd(12)} ${s.description}`);
  process.exit(0);
}

function number(name: string, flag: string | undefined, env: string | undefined, fallback: number, min: number): number {
  const raw = flag ?? env;
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) {
    console.error(`--${name} must be a number >= ${min} (got "${raw}")`);
    process.exit(2);
  }
  return n;
}

const options: BenchOptions = {
  durationSec: number('duration', values.duration, process.env.BENCH_DURATION, 10, 1),
  warmupSec: number('warmup', values.warmup, process.env.BENCH_WARMUP, 3, 0),
  rounds: number('rounds', values.rounds, process.env.BENCH_ROUNDS, 2, 1),
  connections: number('connections', values.connections, process.env.BENCH_CONNECTIONS, 50, 1),
  threads: number('threads', values.threads, process.env.BENCH_THREADS, 2, 1),
  poolMax: number('pool', values.pool, process.env.PG_POOL_MAX, 10, 1),
  profile: values.profile ?? process.env.BENCH_PROFILE === '1',
  resultsDir: path.join(ROOT, 'bench', 'results'),
};

const unknown = positionals.filter((name) => !scenarios.some((s) => s.name === name));
if (unknown.length) {
  console.error(`Unknown scenario: ${unknown.join(', ')}. Known: ${scenarios.map((s) => s.name).join(', ')}`);
  process.exit(2);
}
const selected = positionals.length ? scenarios.filter((s) => positionals.includes(s.name)) : scenarios;

const log = (line: string) => console.log(`[bench] ${line}`);
const wrk = await wrkVersion().catch((error: Error) => {
  console.error(error.message);
  process.exit(1);
});

let db: BenchDatabase | null = null;
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    log(`${signal}: stopping`);
    void stopAllChildren()
      .then(() => db?.close())
      .finally(() => process.exit(130));
  });
}

const startedAt = new Date().toISOString();
const results: ScenarioResult[] = [];
let failed = false;
try {
  db = await openBenchDatabase(log);
  const ctx: BenchContext = { options, db, log };
  const env = environment(wrk, db.version, db.embedded);
  log(`${env.node}, ${env.wrk}, ${env.postgres}, ${env.cpus} CPUs (${env.cpuModel}), load average ${env.loadavg.join(' ')}`);
  for (const scenario of selected) {
    if (interrupted) break;
    log(`scenario ${scenario.name}: ${scenario.description}`);
    results.push(await scenario.run(ctx));
  }
  console.log(`\n${formatResults(results, options)}\n`);
  const file = await writeLatest(options.resultsDir, {
    startedAt,
    finishedAt: new Date().toISOString(),
    options,
    environment: env,
    results,
  });
  log(`results written to ${path.relative(process.cwd(), file)}`);
  failed = results.some((r) => r.checks.some((c) => !c.pass));
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await stopAllChildren();
  await db?.close();
}
if (failed && values.strict) process.exitCode = 1;
