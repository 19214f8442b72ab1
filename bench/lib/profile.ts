// Reads a V8 CPU profile (`node --cpu-prof`) and says where the time went:
// self time per function, time per area (our files, each npm package, Node
// internals, GC, idle), and inclusive time per function of our code (each
// sample counted once per function on its stack). Inclusive time of an async
// function covers its synchronous slices only (what runs before and between
// its awaits), which is what costs CPU.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ROOT } from './process.ts';

type CallFrame = { functionName: string; url: string; lineNumber: number };
type ProfileNode = { id: number; callFrame: CallFrame; hitCount?: number; children?: number[] };
type CpuProfile = { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] };

export type ProfileEntry = { name: string; where: string; ms: number; percent: number };
export type ProfileSummary = {
  file: string;
  totalMs: number;
  busyMs: number;
  areas: ProfileEntry[];
  self: ProfileEntry[];
  inclusive: ProfileEntry[];
};

function area(url: string, name: string): string {
  if (!url) return name.startsWith('(') ? name : '(native)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1];
  if (url.startsWith('node:')) return 'node internals';
  const file = url.replace(/^file:\/\//, '');
  if (file.startsWith(ROOT)) return path.relative(ROOT, file);
  return url;
}

function where(frame: CallFrame): string {
  const url = frame.url.replace(/^file:\/\//, '');
  const short = url.startsWith(ROOT) ? path.relative(ROOT, url) : url.replace(/^.*node_modules\//, '');
  return short ? `${short}:${frame.lineNumber + 1}` : '';
}

export function summarizeProfile(profile: CpuProfile, file = ''): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  // Sample time per node, from the sample deltas (more exact than hitCount x interval).
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + delta);
  }
  const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0);
  let idleUs = 0;
  const selfFn = new Map<string, { name: string; where: string; us: number }>();
  const areas = new Map<string, number>();
  const inclusive = new Map<string, { name: string; where: string; us: number }>();

  const root = profile.nodes[0];
  const walk = (node: ProfileNode, stack: string[]) => {
    const frame = node.callFrame;
    const name = frame.functionName || '(anonymous)';
    const key = `${name}@${where(frame)}`;
    const us = selfUs.get(node.id) ?? 0;
    if (name === '(idle)') idleUs += us;
    if (us > 0) {
      const s = selfFn.get(key) ?? { name, where: where(frame), us: 0 };
      s.us += us;
      selfFn.set(key, s);
      const a = area(frame.url, name);
      areas.set(a, (areas.get(a) ?? 0) + us);
    }
    const ours = frame.url.startsWith(`file://${ROOT}/`) && !frame.url.includes('/node_modules/');
    const onStack = ours && !stack.includes(key) ? [...stack, key] : stack;
    if (ours && !inclusive.has(key)) inclusive.set(key, { name, where: where(frame), us: 0 });
    if (us > 0) for (const k of new Set(onStack)) inclusive.get(k)!.us += us;
    for (const child of node.children ?? []) walk(byId.get(child)!, onStack);
  };
  walk(root, []);

  const busyUs = totalUs - idleUs;
  const entry = (x: { name: string; where: string; us: number }): ProfileEntry => ({
    name: x.name,
    where: x.where,
    ms: Math.round(x.us / 100) / 10,
    percent: Math.round((x.us / busyUs) * 1000) / 10,
  });
  return {
    file,
    totalMs: Math.round(totalUs / 1000),
    busyMs: Math.round(busyUs / 1000),
    areas: [...areas.entries()]
      .filter(([a]) => a !== '(idle)')
      .map(([a, us]) => entry({ name: a, where: '', us }))
      .sort((a, b) => b.ms - a.ms),
    self: [...selfFn.values()].filter((x) => x.name !== '(idle)').map(entry).sort((a, b) => b.ms - a.ms),
    inclusive: [...inclusive.values()].map(entry).sort((a, b) => b.ms - a.ms),
  };
}

/** The newest .cpuprofile in `dir`, summarized. */
export async function summarizeProfileDir(dir: string): Promise<ProfileSummary | null> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.cpuprofile')).sort();
  const last = files.at(-1);
  if (!last) return null;
  const file = path.join(dir, last);
  return summarizeProfile(JSON.parse(await readFile(file, 'utf8')) as CpuProfile, file);
}

export function formatProfile(p: ProfileSummary, top = 20): string {
  const lines: string[] = [];
  const row = (e: ProfileEntry) => `  ${e.percent.toFixed(1).padStart(5)}%  ${String(e.ms.toFixed(0)).padStart(7)} ms  ${e.name}${e.where ? `  (${e.where})` : ''}`;
  lines.push(`CPU profile ${path.relative(ROOT, p.file)}: ${p.busyMs} ms busy of ${p.totalMs} ms (percentages of busy time)`);
  lines.push('By area (self time):');
  for (const e of p.areas.slice(0, 15)) lines.push(row(e));
  lines.push('Hottest functions (self time):');
  for (const e of p.self.slice(0, top)) lines.push(row(e));
  lines.push('Our code (inclusive synchronous time):');
  for (const e of p.inclusive.slice(0, top)) lines.push(row(e));
  return lines.join('\n');
}

// `node bench/lib/profile.ts <file.cpuprofile | dir>`: summarize a profile by hand.
if (import.meta.main) {
  const target = process.argv[2];
  if (!target) {
    console.error('usage: node bench/lib/profile.ts <file.cpuprofile | directory>');
    process.exit(2);
  }
  const summary = target.endsWith('.cpuprofile')
    ? summarizeProfile(JSON.parse(await readFile(target, 'utf8')) as CpuProfile, path.resolve(target))
    : await summarizeProfileDir(target);
  if (!summary) throw new Error(`no .cpuprofile in ${target}`);
  console.log(formatProfile(summary, Number(process.argv[3] ?? 25)));
}
