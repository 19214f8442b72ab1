// `npm run worker`: the worker process of the Procfile.
import { connectDatabaseOrExit } from '../db/connect.ts';
import { exitUnlessMigrated } from '../db/migrate.ts';
import { createPool } from '../db/pool.ts';
import { loadConfigOrExit } from '../lib/config.ts';
import { applicationName, budgetFields, processName, splitConnectionsOrExit } from '../lib/connection-budget.ts';
import { log, logProblem } from '../lib/log.ts';
import { startWorker } from './worker.ts';

const config = loadConfigOrExit();
// PG_MAX_CONNECTIONS bounds every connection this process opens (README, Configuration).
const budget = splitConnectionsOrExit(config, 'worker');
const name = (part: string) => applicationName(processName('worker', config.dyno), part);
const database = await connectDatabaseOrExit(config);
const pool = createPool(database.url, budget.pool, name('jobs'));
await exitUnlessMigrated(pool, 'worker');
const worker = await startWorker(config, pool, database.url, { boss: { max: budget.boss, application_name: name('pg-boss') } });
log('db.connections', budgetFields(budget));

/**
 * A stop's own parts are bounded (attempts 15 s, pg-boss's handlers 10 s), but a database that hangs
 * rather than refuses holds them: past STOP_BOUND_MS the process exits 1, before the platform's SIGKILL
 * at 30 s. Nothing acknowledged is lost: a job cut off is retried from its expiry.
 */
const STOP_BOUND_MS = 28_000;
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // `on`, not `once`: the process group's signal and npm's forwarded copy arrive together (api/server.ts).
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    log('worker.stopping', { signal });
    setTimeout(() => {
      // On stderr (LOG_LEVEL=silent keeps it): the reason an exit 1 had.
      logProblem('worker.stop_forced', { reason: `the stop did not end within ${STOP_BOUND_MS / 1000} s` });
      process.exit(1);
    }, STOP_BOUND_MS).unref();
    await worker.stop();
    await pool.end();
    await database.stop();
    log('worker.stopped', { signal });
    process.exit(0);
  });
}
