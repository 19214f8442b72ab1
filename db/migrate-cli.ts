// `npm run migrate` (the Procfile's release phase): our migrations, then
// pg-boss's own schema, so web and worker never race to create either.
import { loadConfigOrExit } from '../lib/config.ts';
import { createBoss } from './boss.ts';
import { connectDatabaseOrExit } from './connect.ts';
import { migrate, MigrationError } from './migrate.ts';
import { createPool } from './pool.ts';
import { rebaseMediaUrls } from './media-owners.ts';

const config = loadConfigOrExit();
const database = await connectDatabaseOrExit(config);
// The release phase runs beside the old dynos: 3 connections at most (one for
// the migrator, two for pg-boss's schema), counted in the README's budget.
const pool = createPool(database.url, 1, 'workspace:release:migrate');
try {
  const applied = await migrate(pool);
  const boss = createBoss(database.url, { supervise: false, schedule: false, max: 2, application_name: 'workspace:release:pg-boss' });
  await boss.start();
  await boss.stop({ graceful: false });
  console.log(applied.length ? `Applied: ${applied.join(', ')}` : 'Database is up to date.');
  // SITE_URL changed since the images were uploaded: their stored URLs follow it (docs/operations.md).
  // Only to a SITE_URL given (production requires one): the development default, localhost and this
  // process's PORT, names no server a release run by hand was pointed at, and `npm start` moves the
  // URLs to its own root itself.
  if (config.siteUrlGiven) {
    const moved = await rebaseMediaUrls(pool, config.siteUrl);
    if (moved) console.log(`Image URLs moved to ${config.siteUrl}: ${moved}.`);
  }
} catch (error) {
  // One line for the deploy log, as every process that cannot start writes (docs/operations.md, Logs),
  // with PostgreSQL's reason and code (55P03, a lock not had in time: run it again). A migration that
  // failed is named, and was rolled back whole.
  const withCode = (e: { message?: string; code?: unknown }) => `${e.message}${typeof e.code === 'string' ? ` (${e.code})` : ''}`;
  const line =
    error instanceof MigrationError
      ? `${error.message}: ${withCode(error.cause as { message?: string; code?: unknown })}; nothing of it was applied, and the migrations before it stay`
      : `the release phase failed: ${withCode(error as Error & { code?: unknown })}`;
  process.stderr.write(`error: ${line}\n`);
  process.exitCode = 1;
} finally {
  await pool.end();
  await database.stop();
}
