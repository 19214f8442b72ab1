// `npm start` (development): embedded PostgreSQL unless DATABASE_URL is set,
// migrations, then web and worker in one process. On an empty database it
// creates a demo company and prints an API key with every scope.
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo, type Server } from 'node:net';
import path from 'node:path';

const dataDir = path.resolve(process.env.DATA_DIR || './.data');
// Without ADMIN_TOKEN the config reads (or makes once) DATA_DIR/admin-token, the file wsctl reads too:
// the banner names whichever this process uses.
const adminTokenGiven = !!process.env.ADMIN_TOKEN;

// Local receivers (a webhook to http://localhost:4000) are what development
// tries first, so `npm start` opts out of the SSRF guard unless told
// otherwise (ALLOW_PRIVATE_WEBHOOK_TARGETS=0 keeps it on); production refuses
// the opt-out, so it is not set there.
if (process.env.NODE_ENV !== 'production') process.env.ALLOW_PRIVATE_WEBHOOK_TARGETS ??= '1';

const { loadConfigOrExit } = await import('../lib/config.ts');
const { applicationName, processName, splitConnectionsOrExit } = await import('../lib/connection-budget.ts');
const { connectDatabaseOrExit } = await import('../db/connect.ts');
const { createPool } = await import('../db/pool.ts');
const { rebaseMediaUrls } = await import('../db/media-owners.ts');
const { migrate } = await import('../db/migrate.ts');
const { createApp, createDeps, closeDeps } = await import('../api/app.ts');
const { startWorker } = await import('../worker/worker.ts');
const { seedDemo } = await import('./seed.ts');

let config = loadConfigOrExit();
// After the config, which says in one line when DATA_DIR is a file.
await mkdir(dataDir, { recursive: true });

/** Waits for `server` to listen; a port in use is one line, not a stack trace (the exit stops the embedded database). */
async function listenOrExit<T extends Server>(server: T): Promise<T> {
  await once(server, 'listening').catch((error: NodeJS.ErrnoException) => {
    console.error(`error: cannot listen on port ${config.port}: ${error.code === 'EADDRINUSE' ? 'it is already in use (PORT=… npm start for another)' : error.message}`);
    process.exit(1);
  });
  return server;
}
// A port in use is found before the database starts and the migrations run, not seconds later.
const port = await new Promise<number>((resolve) =>
  listenOrExit(createServer().listen(config.port)).then((probe) => {
    const { port } = probe.address() as AddressInfo;
    probe.close(() => resolve(port));
  }),
);
// PORT=0: the free port the probe was given is this start's, so the banner and the links the service
// builds (image URLs, OpenAPI servers) name it rather than port 0.
if (config.port === 0) {
  process.env.PORT = String(port);
  config = loadConfigOrExit();
}
const budget = splitConnectionsOrExit(config, 'dev');
const name = (part: string) => applicationName(processName('dev', config.dyno), part);
console.log(config.databaseUrl ? 'Using DATABASE_URL.' : `Starting the embedded PostgreSQL under ${dataDir} ...`);
// Out of the terminal's process group: Ctrl-C stops this process, which stops the database last.
// Until everything is up, a signal exits at once (the exit stops the database: db/embedded.ts).
const exitNow = () => process.exit(130);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, exitNow);
const database = await connectDatabaseOrExit(config, { ownProcessGroup: true });
const pool = createPool(database.url, budget.pool, name('pool'));
await migrate(pool);
// Started on another PORT or SITE_URL than before: the stored image URLs follow it (docs/operations.md).
await rebaseMediaUrls(pool, config.siteUrl);
const worker = await startWorker(config, pool, database.url, { boss: { max: budget.boss, application_name: name('pg-boss') } });
const deps = await createDeps({ config, pool, databaseUrl: database.url, jobSenderConnections: budget.jobSender, applicationName: name });
const demo = await seedDemo(pool, config);
// The secret is shown once; keep it for later starts of this development database.
const demoKeyFile = path.join(config.dataDir, 'demo-key');
if (demo) await writeFile(demoKeyFile, demo.secret + '\n', { mode: 0o600 });
const server = await listenOrExit(createApp(deps).listen(config.port));
const demoKey = demo?.secret ?? (existsSync(demoKeyFile) ? (await readFile(demoKeyFile, 'utf8')).trim() : null);

console.log(`
  Workspace API ready.
  Base URL:       ${config.baseUrl}
  API reference:  ${config.baseUrl}/docs   (OpenAPI: ${config.baseUrl}/openapi.json)
  Admin token:    ${adminTokenGiven ? 'ADMIN_TOKEN (set it for wsctl too)' : path.join(config.dataDir, 'admin-token')}
  Database:       ${config.databaseUrl ? 'DATABASE_URL' : `${database.url}   (embedded, a new port each start: DATABASE_URL for a separate npm run web or worker)`}
  PostgreSQL:     ${budget.total} connections at most (PG_MAX_CONNECTIONS): pool ${budget.pool}, pg-boss ${budget.boss}, job sender ${budget.jobSender}, key-cache listener ${budget.listen}
  Webhooks:       ${config.ssrfGuard ? 'private and loopback targets refused (SSRF guard on)' : 'private and loopback targets allowed (ALLOW_PRIVATE_WEBHOOK_TARGETS=1, development only)'}
${demoKey ? `  Demo API key:   ${demoKey}${demo ? '' : '   (created on first start)'}\n\n  curl -H "Authorization: Bearer ${demoKey}" ${config.baseUrl}/customers\n` : ''}
  Ctrl-C stops everything.
`);

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.off(signal, exitNow);
  process.on(signal, async () => {
    // A second Ctrl-C while stopping: out at once (the exit still stops the embedded database).
    if (stopping) process.exit(1);
    stopping = true;
    console.log('\nStopping ...');
    server.closeAllConnections();
    server.close();
    await worker.stop().catch(() => {});
    await closeDeps(deps);
    await pool.end();
    await database.stop();
    console.log(config.databaseUrl ? 'Stopped: web and worker (DATABASE_URL left running).' : 'Stopped: web, worker and the embedded PostgreSQL.');
    process.exit(0);
  });
}
