// `npm test` (after typecheck): one PostgreSQL for the whole run (embedded
// under DATA_DIR/test, or the server of DATABASE_URL), a migrated template
// database, then every test file under node:test. Each file clones the
// template into a database of its own (graphile-worker's pattern), so files
// run in parallel without seeing each other's rows.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { startEmbedded } from '../db/embedded.ts';
import { migrate } from '../db/migrate.ts';
import { createPool } from '../db/pool.ts';
import { createBoss } from '../db/boss.ts';

const dataDir = path.resolve(process.env.DATA_DIR || './.data');
const embedded = process.env.DATABASE_URL ? null : await startEmbedded(path.join(dataDir, 'test'), { database: 'postgres', fast: true });
const serverUrl = new URL(process.env.DATABASE_URL ?? embedded!.url);
const template = `ws_template_${randomBytes(4).toString('hex')}`;

const admin = new pg.Client({ connectionString: serverUrl.toString() });
await admin.connect();
await admin.query(`CREATE DATABASE ${template}`);
const templateUrl = new URL(serverUrl);
templateUrl.pathname = `/${template}`;
const pool = createPool(templateUrl.toString(), 2);
await migrate(pool);
const boss = createBoss(templateUrl.toString(), { supervise: false, schedule: false });
await boss.start();
await boss.stop({ graceful: false });
await pool.end();

// Files, and options for node's runner (`--test-name-pattern=...` runs one test by name), which go before the files.
const options = process.argv.slice(2).filter((arg) => arg.startsWith('--'));
const files = process.argv.slice(2).filter((arg) => !arg.startsWith('--'));
const args = [
  '--test',
  `--test-concurrency=${process.env.TEST_CONCURRENCY ?? 3}`,
  '--test-timeout=120000',
  ...options,
  ...(files.length ? files : ['test/**/*.test.ts']),
];
const code = await new Promise<number>((resolve) => {
  const child = spawn(process.execPath, args, {
    stdio: 'inherit',
    env: { ...process.env, TEST_SERVER_URL: serverUrl.toString(), TEST_TEMPLATE_DB: template, LOG_LEVEL: 'silent', NODE_ENV: 'test' },
  });
  child.on('exit', (exitCode) => resolve(exitCode ?? 1));
  // Stopped from outside: the runner stops, then the cleanup below stops the
  // embedded cluster (left running, the next run would find it locked).
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => child.kill(signal));
});

// Leftover per-file databases (a crashed file) are dropped with the template.
const { rows } = await admin.query(`SELECT datname FROM pg_database WHERE datname LIKE 'ws_test_%' OR datname = $1`, [template]);
for (const row of rows) await admin.query(`DROP DATABASE IF EXISTS ${row.datname} WITH (FORCE)`).catch(() => {});
await admin.end();
await embedded?.stop();
process.exit(code);
