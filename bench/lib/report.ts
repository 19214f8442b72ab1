// The table printed at the end of `npm run bench`, and latest.json.
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { BenchOptions, ScenarioResult } from './scenario.ts';

function table(header: string[], rows: string[][], alignRight: boolean[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (alignRight[i] ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function formatResults(results: ScenarioResult[], options: BenchOptions): string {
  const out: string[] = [];
  out.push(
    `wrk: ${options.threads} threads, ${options.connections} connections, ${options.durationSec} s per run, ` +
      `${options.warmupSec} s warm-up, best of ${options.rounds} alternating runs (highest req/s, lowest p99); ` +
      'CPU µs/req = CPU time of the server process (not PostgreSQL, not wrk) per request over all runs; ' +
      'PG µs/req = CPU time of the whole PostgreSQL cluster per request (embedded database only)',
  );
  for (const r of results) {
    out.push('', `== ${r.name}: ${r.description}`);
    for (const note of r.notes) out.push(`   ${note}`);
    out.push(
      '',
      table(
        ['case', 'server', 'req/s', 'p50 ms', 'p90 ms', 'p99 ms', 'CPU µs/req', 'PG µs/req', 'errors', 'runs (req/s)'],
        r.measurements.map((m) => [
          m.case,
          m.target,
          m.best.rps.toFixed(0),
          m.best.p50.toFixed(2),
          m.best.p90.toFixed(2),
          m.best.p99.toFixed(2),
          m.best.cpuUsPerRequest === null ? '-' : String(m.best.cpuUsPerRequest),
          m.best.dbCpuUsPerRequest == null ? '-' : String(m.best.dbCpuUsPerRequest),
          String(m.best.errors),
          m.runs.map((x) => x.rps.toFixed(0)).join(' / '),
        ]),
        [false, false, true, true, true, true, true, true, true, false],
      ),
      '',
    );
    for (const ratio of r.ratios) out.push(`   ${ratio.label}: ${ratio.value.toFixed(2)}`);
    out.push('');
    for (const c of r.checks) out.push(`   [${c.pass ? 'PASS' : 'MISS'}] ${c.label}: ${c.actual} (target ${c.target})`);
  }
  return out.join('\n');
}

export type Environment = { node: string; wrk: string; postgres: string; database: string; cpus: number; cpuModel: string; loadavg: number[] };

export function environment(wrk: string, postgres: string, embedded: boolean): Environment {
  const cpus = os.cpus();
  return {
    node: process.version,
    wrk,
    postgres,
    database: embedded ? 'embedded (DATA_DIR/bench, fsync off)' : 'DATABASE_URL',
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    loadavg: os.loadavg().map((x) => Math.round(x * 100) / 100),
  };
}

export async function writeLatest(
  dir: string,
  data: { startedAt: string; finishedAt: string; options: BenchOptions; environment: Environment; results: ScenarioResult[] },
): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, 'latest.json');
  await writeFile(file, `${JSON.stringify(data, null, 2)}\n`);
  return file;
}
