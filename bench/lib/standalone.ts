// A scenario that is its own program (bench/scenarios/<name>.ts, runnable
// alone with `node`): `npm run bench` runs it as a child against the bench
// database (DATABASE_URL), streams its output, and keeps its report lines.
// Used by benchmarks that are not "one URL under wrk" (uploads, workers,
// webhook delivery), which measure their own floor in the same run. A line
// `BENCH_CHECK {"label","target","actual","pass"}` of its output is a check of
// the report, next to its exit status.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from './process.ts';
import type { Check, Scenario } from './scenario.ts';

const CHECK_PREFIX = 'BENCH_CHECK ';

export function standaloneScenario(name: string, description: string): Scenario {
  const file = path.join(ROOT, 'bench', 'scenarios', `${name}.ts`);
  return {
    name,
    description,
    run: async (ctx) => {
      const lines: string[] = [];
      const checks: Check[] = [];
      const child = spawn(process.execPath, [file], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: ctx.db.url, LOG_LEVEL: 'silent' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // Whole lines (a chunk may end mid-line, or mid-character).
      const collect = (line: string) => {
        if (!line.trim()) return;
        if (line.startsWith(CHECK_PREFIX)) {
          try {
            checks.push(JSON.parse(line.slice(CHECK_PREFIX.length)) as Check);
          } catch {
            checks.push({ label: `${name}: unreadable check line`, target: 'JSON', actual: line.slice(0, 80), pass: false });
          }
        }
        lines.push(line);
        ctx.log(`  ${name}: ${line}`);
      };
      createInterface({ input: child.stdout, crlfDelay: Infinity }).on('line', collect);
      createInterface({ input: child.stderr, crlfDelay: Infinity }).on('line', collect);
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      return {
        name,
        description,
        notes: lines,
        measurements: [],
        ratios: [],
        checks: [...checks, { label: `${name} bench exited cleanly`, target: 'exit 0', actual: `exit ${code}`, pass: code === 0 }],
      };
    },
  };
}
