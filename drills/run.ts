// `npm run drills [-- name ...]`: the reliability drills (docs/operations.md).
// Each starts the real processes over its own embedded PostgreSQL (under
// DATA_DIR/drills), breaks something and prints what it did and found; the
// exit code is 1 when a finding misses its expectation. Not part of npm test:
// the drills take minutes (DRILL_RATE_SECONDS shortens the rate-limit one).
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { stopAllChildren } from '../bench/lib/process.ts';
import { createPool } from '../db/pool.ts';
import { openDrillDatabase, type DrillContext, type DrillResult } from './lib.ts';
import { drills } from './scenarios.ts';

const args = process.argv.slice(2);
if (args.some((a) => a === '--help' || a === '-h' || a === '--list')) {
  console.log(`npm run drills [-- <name>...]   (every drill when none is named; docs/operations.md)\nDrills: ${drills.map((d) => d.name).join(', ')}`);
  process.exit(0);
}
const flags = args.filter((a) => a.startsWith('-'));
if (flags.length) {
  console.error(`Unknown option: ${flags.join(', ')}. Use --list to see the drills.`);
  process.exit(2);
}
const wanted = args;
const unknown = wanted.filter((w) => !drills.some((d) => d.name === w));
if (unknown.length) {
  console.error(`Unknown drill: ${unknown.join(', ')}. Known: ${drills.map((d) => d.name).join(', ')}`);
  process.exit(2);
}
const chosen = wanted.length ? drills.filter((d) => wanted.includes(d.name)) : drills;
const dataDir = path.resolve(process.env.DATA_DIR || './.data', 'drills');
await mkdir(dataDir, { recursive: true });
const log = (line: string) => console.log(`[drills] ${line}`);
log(`PostgreSQL under ${dataDir}`);
const db = await openDrillDatabase(dataDir, log);
const results: DrillResult[] = [];
let failed = false;
try {
  for (const drill of chosen) {
    log(`${drill.name}: ${drill.summary}`);
    const ctx: DrillContext = {
      databaseUrl: db.url,
      pool: db.pool,
      dataDir,
      log: (line) => log(`  ${line}`),
      stopDatabase: () => db.stop(),
      startDatabase: () => db.start(),
      restartDatabase: async (downMs) => {
        const downAt = Date.now();
        await db.stop();
        await new Promise((r) => setTimeout(r, downMs));
        await db.start();
        return { downAt, upAt: Date.now() };
      },
    };
    const started = Date.now();
    const result = await drill.run(ctx);
    // The restart drill ends the shared pool; later drills get a new one.
    if ((db.pool as { ended?: boolean }).ended) db.pool = createPool(db.url, 10, 'drills');
    results.push(result);
    log(`  ${result.did} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    for (const f of result.findings) {
      log(`  [${f.pass ? 'PASS' : 'MISS'}] ${f.check}: ${f.actual} (expected ${f.expected})`);
      if (!f.pass) failed = true;
    }
  }
} finally {
  await stopAllChildren();
  await db.pool.end().catch(() => {});
  await db.stop().catch(() => {});
}
console.log('\n| drill | what it did | finding | expected | actual | |\n|---|---|---|---|---|---|');
for (const r of results) for (const [i, f] of r.findings.entries()) console.log(`| ${i ? '' : r.name} | ${i ? '' : r.did} | ${f.check} | ${f.expected} | ${f.actual} | ${f.pass ? 'pass' : '**miss**'} |`);
process.exit(failed ? 1 : 0);
