// Child processes of the bench: the servers under test run as real processes
// (`node api/server.ts`, the floor), started with this Node (process.execPath,
// Node 24) so TypeScript runs by type stripping, and stopped with SIGTERM so
// they shut down as in production (and `--cpu-prof` gets written).
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (bench/lib/../..). */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export type NodeChild = {
  name: string;
  child: ChildProcess;
  port: number;
  url: string;
  /** Last output (stdout and stderr), for error messages. */
  output: () => string;
  stop: () => Promise<void>;
};

const running = new Set<NodeChild>();

export type SpawnOptions = {
  /** Shown in messages. */
  name: string;
  /** Script path relative to the repository root. */
  script: string;
  env: Record<string, string | undefined>;
  /** Node flags, e.g. --cpu-prof. */
  nodeArgs?: string[];
  /** Path answering 200 once the server is ready. */
  readyPath?: string;
  readyTimeoutMs?: number;
};

/** Spawns `node <script>` with PORT set to a free port and waits until readyPath answers 200. */
export async function spawnNodeServer(options: SpawnOptions): Promise<NodeChild> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, ...options.env, PORT: String(port) };
  for (const [k, v] of Object.entries(options.env)) if (v === undefined) delete env[k];
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), options.script], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-8000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const handle: NodeChild = {
    name: options.name,
    child,
    port,
    url,
    output: () => output,
    stop: async () => {
      running.delete(handle);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
  running.add(handle);

  const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000);
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${options.name} exited with ${child.exitCode} before it was ready:\n${output}`);
    try {
      const res = await fetch(`${url}${options.readyPath ?? '/healthz'}`);
      await res.arrayBuffer();
      if (res.status === 200) return handle;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await handle.stop();
      throw new Error(`${options.name} did not become ready in time:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Stops every child still running (Ctrl-C, a failed scenario). */
export async function stopAllChildren(): Promise<void> {
  await Promise.all([...running].map((c) => c.stop()));
}

/**
 * CPU time (user + system, ms) a process has used so far, from /proc (Linux);
 * null elsewhere. Sampled around a run, it gives the server's CPU cost per
 * request, which other load on the machine disturbs much less than req/s.
 * `withExitedChildren` adds what its children that have exited used (the
 * postmaster keeps the CPU of PostgreSQL backends that have ended).
 */
export function cpuTimeMs(pid: number | undefined, options: { withExitedChildren?: boolean } = {}): number | null {
  if (!pid) return null;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start at field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const [utime, stime, cutime, cstime] = [11, 12, 13, 14].map((i) => Number(fields[i]));
    return ((utime + stime + (options.withExitedChildren ? cutime + cstime : 0)) * 1000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

/** Resident memory of a process now and at its peak, in bytes, from /proc/<pid>/status (Linux; throws elsewhere). */
export async function memoryOf(pid: number): Promise<{ rss: number; hwm: number }> {
  const text = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(text)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** USER_HZ: 100 on every mainstream Linux build. */
const CLOCK_TICKS = 100;
