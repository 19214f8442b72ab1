// CPU accounting for benches that span several processes (web, worker,
// receivers, PostgreSQL): per-process CPU time from /proc (Linux), the
// PostgreSQL cluster's as the sum of its postmaster's children, and how busy
// the whole machine was. On a 2-core machine shared by every process of a
// scenario, "which process spent the CPU" is what tells the bottleneck apart
// from the cost of the code under test.
import { readdirSync, readFileSync } from 'node:fs';

const CLOCK_TICKS = 100;

function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

export function parentPid(pid: number): number | null {
  const f = statFields(pid);
  return f ? Number(f[1]) : null;
}

/**
 * CPU ms of a PostgreSQL cluster: its postmaster, the children it has reaped
 * (cutime + cstime: backends whose connection closed) and its live children
 * (backends, checkpointer, WAL writer...).
 */
export function clusterCpuMs(postmaster: number): number {
  const own = statFields(postmaster);
  if (!own) return 0;
  let total = ((Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14])) * 1000) / CLOCK_TICKS;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (f && Number(f[1]) === postmaster) total += ((Number(f[11]) + Number(f[12])) * 1000) / CLOCK_TICKS;
  }
  return total;
}

/** Machine-wide CPU: busy and total jiffies of all cores (/proc/stat). */
export function machineTicks(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  const total = user + nice + system + idle + iowait + irq + softirq + (steal || 0);
  return { busy: total - idle - iowait, total };
}

export type CpuSources = Record<string, () => number | null>;
export type CpuSample = { at: number; values: Record<string, number | null>; machine: { busy: number; total: number } };

export function sampleCpu(sources: CpuSources): CpuSample {
  return {
    at: performance.now(),
    values: Object.fromEntries(Object.entries(sources).map(([name, read]) => [name, read()])),
    machine: machineTicks(),
  };
}

/** CPU ms per source between two samples, and the machine's busy share (0..1 of all cores). */
export function cpuBetween(a: CpuSample, b: CpuSample): { ms: Record<string, number | null>; machineBusy: number } {
  const ms: Record<string, number | null> = {};
  for (const name of Object.keys(a.values)) {
    const x = a.values[name];
    const y = b.values[name];
    ms[name] = x === null || y === null || y === undefined ? null : Math.round(y - x);
  }
  const total = b.machine.total - a.machine.total;
  return { ms, machineBusy: total > 0 ? (b.machine.busy - a.machine.busy) / total : 0 };
}
