// What a scenario is, and the measurement loop every scenario shares: for each
// case (a URL), each target server is warmed up, then measured `rounds` times,
// alternating the order of the targets between rounds so that neither one
// always runs on a machine warmed (or disturbed) by the other. The summary of
// a case and target is the best of its runs: the highest req/s and the lowest
// p99 (the other runs are kept in latest.json).
import type { BenchDatabase } from './database.ts';
import { cpuTimeMs } from './process.ts';
import { errorCount, runWrk, type WrkResult } from './wrk.ts';

export type BenchOptions = {
  /** Seconds per measured run. */
  durationSec: number;
  /** Seconds of warm-up per case and target (discarded). */
  warmupSec: number;
  /** Measured runs per case and target (best is kept). */
  rounds: number;
  connections: number;
  threads: number;
  /** Connections per server process (PG_POOL_MAX of both ours and the floor). */
  poolMax: number;
  /** Write a V8 CPU profile of our web process and print its hot spots. */
  profile: boolean;
  /** Where profiles and results go. */
  resultsDir: string;
};

export type BenchContext = {
  options: BenchOptions;
  db: BenchDatabase;
  log: (line: string) => void;
};

/** A server under test; with its pid, the bench also reports its CPU time per request. */
export type Target = { name: string; url: string; headers?: Record<string, string>; pid?: number };

/** A wrk run plus the CPU time the target process and the PostgreSQL cluster used during it (null when unknown). */
export type Run = WrkResult & { cpuMs: number | null; dbCpuMs?: number | null };

/** One URL measured on every target. */
/** One measured request; `connections` overrides the run's (a latency case at low concurrency). */
export type Case = { name: string; path: string; connections?: number; method?: string; body?: string; headers?: Record<string, string> };

export type Summary = {
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  errors: number;
  /** CPU time of the server process per request, microseconds, over all measured runs. */
  cpuUsPerRequest: number | null;
  /** CPU time of the whole PostgreSQL cluster per request, microseconds (embedded database only). */
  dbCpuUsPerRequest: number | null;
};

export type Measurement = { case: string; target: string; path: string; warmup: Run | null; runs: Run[]; best: Summary };

export type Ratio = { label: string; value: number };

export type Check = { label: string; target: string; actual: string; pass: boolean };

export type ScenarioResult = {
  name: string;
  description: string;
  notes: string[];
  measurements: Measurement[];
  ratios: Ratio[];
  checks: Check[];
  profile?: unknown;
};

export type Scenario = {
  name: string;
  description: string;
  run: (ctx: BenchContext) => Promise<ScenarioResult>;
};

function summarize(runs: Run[]): Summary {
  const cpu = runs.every((r) => r.cpuMs !== null) ? runs.reduce((n, r) => n + r.cpuMs!, 0) : null;
  const db = runs.every((r) => r.dbCpuMs != null) ? runs.reduce((n, r) => n + r.dbCpuMs!, 0) : null;
  const requests = runs.reduce((n, r) => n + r.requests, 0);
  return {
    cpuUsPerRequest: cpu === null || requests === 0 ? null : Math.round((cpu * 1000) / requests),
    dbCpuUsPerRequest: db === null || requests === 0 ? null : Math.round((db * 1000) / requests),
    rps: Math.max(...runs.map((r) => r.rps)),
    p50: Math.min(...runs.map((r) => r.latency.p50)),
    p90: Math.min(...runs.map((r) => r.latency.p90)),
    p99: Math.min(...runs.map((r) => r.latency.p99)),
    max: Math.min(...runs.map((r) => r.latency.max)),
    errors: runs.reduce((n, r) => n + errorCount(r), 0),
  };
}

/** Warm-up, then `rounds` alternating runs of every target, for every case. */
export async function measureCases(ctx: BenchContext, targets: Target[], cases: Case[]): Promise<Measurement[]> {
  const { options, log } = ctx;
  const out: Measurement[] = [];
  for (const c of cases) {
    const runs = new Map<string, Run[]>(targets.map((t) => [t.name, []]));
    const wrk = async (t: Target, durationSec: number): Promise<Run> => {
      const before = cpuTimeMs(t.pid);
      const dbBefore = ctx.db.cpuMs();
      const result = await runWrk({ url: t.url + c.path, headers: { ...t.headers, ...c.headers }, method: c.method, body: c.body, connections: c.connections ?? options.connections, threads: Math.min(options.threads, c.connections ?? options.threads), durationSec });
      const after = cpuTimeMs(t.pid);
      const dbAfter = ctx.db.cpuMs();
      return { ...result, cpuMs: before === null || after === null ? null : after - before, dbCpuMs: dbBefore === null || dbAfter === null ? null : dbAfter - dbBefore };
    };
    const warmups = new Map<string, Run>();
    if (options.warmupSec > 0) {
      for (const t of targets) {
        log(`  ${c.name} / ${t.name}: warm-up ${options.warmupSec}s`);
        warmups.set(t.name, await wrk(t, options.warmupSec));
      }
    }
    for (let round = 0; round < options.rounds; round++) {
      const order = round % 2 === 0 ? targets : [...targets].reverse();
      for (const t of order) {
        const result = await wrk(t, options.durationSec);
        runs.get(t.name)!.push(result);
        const errors = errorCount(result);
        log(
          `  ${c.name} / ${t.name}: run ${round + 1}/${options.rounds}: ${result.rps.toFixed(0)} req/s, ` +
            `p50 ${result.latency.p50.toFixed(2)} ms, p99 ${result.latency.p99.toFixed(2)} ms` +
            `${result.cpuMs !== null ? `, ${Math.round((result.cpuMs * 1000) / result.requests)} µs CPU/req` : ''}${errors ? `, ${errors} ERRORS` : ''}`,
        );
      }
    }
    for (const t of targets) {
      const r = runs.get(t.name)!;
      out.push({ case: c.name, target: t.name, path: c.path, warmup: warmups.get(t.name) ?? null, runs: r, best: summarize(r) });
    }
  }
  return out;
}

export function find(measurements: Measurement[], caseName: string, target: string): Measurement {
  const m = measurements.find((x) => x.case === caseName && x.target === target);
  if (!m) throw new Error(`no measurement for ${caseName} / ${target}`);
  return m;
}
