// The load generator: wrk (Debian package `wrk`), closed loop, N connections
// over T threads. It costs far less CPU per request than a Node load generator
// (autocannon takes nearly a core of a 2-core machine), which matters because
// wrk shares the machine with the servers it measures.
//
// Figures come from a Lua `done` hook (wrk-report.lua) that prints one JSON
// line; the human-readable `--latency` output is kept as a fallback parser.
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const REPORT_SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'wrk-report.lua');
const MARKER = 'BENCH_WRK_JSON ';

export type WrkOptions = {
  url: string;
  headers?: Record<string, string>;
  /** Default GET; a POST sends `body` on every request. */
  method?: string;
  body?: string;
  connections: number;
  threads: number;
  durationSec: number;
  /** Socket timeout; requests slower than this count as timeouts. */
  timeoutSec?: number;
};

export type WrkResult = {
  requests: number;
  durationSec: number;
  rps: number;
  bytes: number;
  errors: { connect: number; read: number; write: number; status: number; timeout: number };
  /** Milliseconds. */
  latency: { min: number; mean: number; stdev: number; max: number; p50: number; p75: number; p90: number; p99: number; p999: number };
};

export function wrkBinary(): string {
  return process.env.WRK ?? (existsSync('/usr/bin/wrk') ? '/usr/bin/wrk' : 'wrk');
}

/** Fails early, with the fix, when wrk is missing. */
export async function wrkVersion(): Promise<string> {
  try {
    // `wrk -v` prints the version and the usage, and exits 1.
    const { stdout, stderr } = await promisify(execFile)(wrkBinary(), ['-v']).catch((error: { stdout?: string; stderr?: string; code?: unknown }) => {
      if (error.code === 'ENOENT') throw error;
      return { stdout: error.stdout ?? '', stderr: error.stderr ?? '' };
    });
    const line = `${stdout}${stderr}`.split('\n').find((l) => l.startsWith('wrk')) ?? 'wrk';
    return line.replace(/\s+Copyright.*$/, '').trim();
  } catch {
    throw new Error('wrk is not installed: `apt-get install -y wrk` (or set WRK=/path/to/wrk).');
  }
}

export async function runWrk(options: WrkOptions): Promise<WrkResult> {
  const args = [
    '-t', String(options.threads),
    '-c', String(options.connections),
    '-d', `${options.durationSec}s`,
    '--timeout', `${options.timeoutSec ?? 10}s`,
    '--latency',
    '-s', REPORT_SCRIPT,
  ];
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push('-H', `${name}: ${value}`);
  args.push(options.url);
  const env = { ...process.env, ...(options.method ? { WRK_METHOD: options.method } : {}), ...(options.body !== undefined ? { WRK_BODY: options.body } : {}) };
  const child = spawn(wrkBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`wrk exited with ${code}: ${stderr || stdout}`);
  return parseWrkOutput(stdout);
}

export function parseWrkOutput(output: string): WrkResult {
  const line = output.split('\n').find((l) => l.startsWith(MARKER));
  if (line) {
    const raw = JSON.parse(line.slice(MARKER.length)) as {
      requests: number;
      duration_us: number;
      bytes: number;
      errors: WrkResult['errors'];
      latency_us: Record<keyof WrkResult['latency'], number>;
    };
    const durationSec = raw.duration_us / 1e6;
    const latency = Object.fromEntries(Object.entries(raw.latency_us).map(([k, v]) => [k, v / 1000])) as WrkResult['latency'];
    return { requests: raw.requests, durationSec, rps: raw.requests / durationSec, bytes: raw.bytes, errors: raw.errors, latency };
  }
  return parseLatencyText(output);
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

function toMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (!m) return Number.NaN;
  return Number(m[1]) * UNIT_MS[m[2]];
}

/** Fallback: wrk's own `--latency` text (no p999/min; errors from the summary lines). */
export function parseLatencyText(output: string): WrkResult {
  const percentile = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(output);
    return m ? toMs(m[1]) : Number.NaN;
  };
  const latencyLine = /^\s+Latency\s+(\S+)\s+(\S+)\s+(\S+)/m.exec(output);
  const total = /(\d+) requests in ([\d.]+)(us|ms|s|m),\s+([\d.]+)(\w+) read/.exec(output);
  if (!total) throw new Error(`Cannot parse wrk output:\n${output}`);
  const durationSec = toMs(`${total[2]}${total[3]}`) / 1000;
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(output);
  const requests = Number(total[1]);
  return {
    requests,
    durationSec,
    rps: requests / durationSec,
    bytes: Number.NaN,
    errors: {
      connect: Number(socket?.[1] ?? 0),
      read: Number(socket?.[2] ?? 0),
      write: Number(socket?.[3] ?? 0),
      timeout: Number(socket?.[4] ?? 0),
      status: Number(non2xx?.[1] ?? 0),
    },
    latency: {
      min: Number.NaN,
      mean: latencyLine ? toMs(latencyLine[1]) : Number.NaN,
      stdev: latencyLine ? toMs(latencyLine[2]) : Number.NaN,
      max: latencyLine ? toMs(latencyLine[3]) : Number.NaN,
      p50: percentile('50'),
      p75: percentile('75'),
      p90: percentile('90'),
      p99: percentile('99'),
      p999: Number.NaN,
    },
  };
}

export function errorCount(result: WrkResult): number {
  const e = result.errors;
  return e.connect + e.read + e.write + e.status + e.timeout;
}
