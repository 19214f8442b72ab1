// `npm run web`: the web process of the Procfile.
import { connectDatabaseOrExit } from '../db/connect.ts';
import { exitUnlessMigrated } from '../db/migrate.ts';
import { createPool } from '../db/pool.ts';
import { loadConfigOrExit } from '../lib/config.ts';
import { applicationName, budgetFields, processName, splitConnectionsOrExit } from '../lib/connection-budget.ts';
import { log, logProblem } from '../lib/log.ts';
import { closeDeps, createApp, createDeps } from './app.ts';

const config = loadConfigOrExit();
// PG_MAX_CONNECTIONS bounds every connection this process opens (README, Configuration).
const budget = splitConnectionsOrExit(config, 'web');
const name = (part: string) => applicationName(processName('web', config.dyno), part);
const database = await connectDatabaseOrExit(config);
const pool = createPool(database.url, budget.pool, name('request'));
await exitUnlessMigrated(pool, 'web');
const rateLimitPool = createPool(database.url, budget.rateLimit, name('rate-limit'));
const deps = await createDeps({ config, pool, databaseUrl: database.url, rateLimitPool, jobSenderConnections: budget.jobSender, applicationName: name });
log('db.connections', budgetFields(budget));
const server = createApp(deps).listen(config.port, () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  log('web.listening', { port, base_url: config.baseUrl });
  // PORT=0 asks the OS for a free port: say which one even with LOG_LEVEL=silent,
  // so whoever started the process (tests running several web processes) can reach it.
  if (config.port === 0 && config.logLevel === 'silent') process.stdout.write(`${JSON.stringify({ event: 'web.listening', port })}\n`);
});
server.keepAliveTimeout = 65_000; // longer than the platform router's idle timeout
// A port already taken (another process, an earlier start still running): one line and exit 1.
const listenFailed = (error: NodeJS.ErrnoException) => {
  process.stderr.write(`error: cannot listen on port ${config.port}: ${error.code === 'EADDRINUSE' ? 'it is already in use' : error.message}\n`);
  process.exit(1);
};
server.once('error', listenFailed);
server.once('listening', () => server.off('error', listenFailed));

/**
 * Graceful stop (SIGTERM from the platform, Ctrl-C): stop accepting, let the
 * requests in flight finish (uploads included), closing idle keep-alive
 * connections at once, and cut whatever is left after SHUTDOWN_GRACE_MS
 * (25 s: under Heroku's 30 s before SIGKILL); then close the pools, within
 * CLOSE_BOUND_MS: a database that hangs rather than refuses would hold their
 * end forever, so the process exits 1 instead of waiting for the SIGKILL.
 */
const SHUTDOWN_GRACE_MS = 25_000;
const CLOSE_BOUND_MS = 3_000;
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // `on`, not `once`: the platform signals the whole process group and `npm run` forwards the
  // signal too, so a second one arrives at once and must not kill the drain (Node's default).
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    log('web.stopping', { signal, grace_ms: SHUTDOWN_GRACE_MS });
    deps.lifecycle.draining = true;
    const cut = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    cut.unref();
    server.close(async () => {
      clearTimeout(cut);
      setTimeout(() => {
        // On stderr (LOG_LEVEL=silent keeps it): the reason an exit 1 had.
        logProblem('web.stop_forced', { reason: `the database connections did not close within ${CLOSE_BOUND_MS / 1000} s` });
        process.exit(1);
      }, CLOSE_BOUND_MS).unref();
      await closeDeps(deps);
      await pool.end();
      await rateLimitPool.end();
      await database.stop();
      log('web.stopped', { signal });
      process.exit(0);
    });
    server.closeIdleConnections();
  });
}
