// A scenario that is its own program (bench/scenarios/<name>.ts, runnable
// alone with `node`): `npm run bench` runs it as a child against the bench
// database (DATABASE_URL), streams its output, and keeps its report lines.
// Used by benchmarks that are not "one URL under wrk" (uploads, workers,
// webhook delivery), which measure their own floor in the same run.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { ROOT } from './process.ts';
import type { Scenario } from './scenario.ts';

export function standaloneScenario(name: string, description: string): Scenario {
  const file = path.join(ROOT, 'bench', 'scenarios', `${name}.ts`);
  return {
    name,
    description,
    run: async (ctx) => {
      const lines: string[] = [];
      const child = spawn(process.execPath, [file], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: ctx.db.url, LOG_LEVEL: 'silent' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const collect = (chunk: Buffer) => {
        for (const line of chunk.toString('utf8').split('\n')) {
          if (!line.trim()) continue;
          lines.push(line);
          ctx.log(`  ${name}: ${line}`);
        }
      };
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      return {
        name,
        description,
        notes: lines,
        measurements: [],
        ratios: [],
        checks: [{ label: `${name} bench exited cleanly`, target: 'exit 0', actual: `exit ${code}`, pass: code === 0 }],
      };
    },
  };
}
