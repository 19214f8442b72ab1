// The bench's PostgreSQL: the server of DATABASE_URL when set, else an
// embedded cluster of its own under DATA_DIR/bench (fsync off: the data is
// recreated at will), separate from the development database. Migrations run
// on every start (a no-op when up to date).
import path from 'node:path';
import { startEmbedded } from '../../db/embedded.ts';
import { clusterCpuMs, parentPid } from './cpu.ts';
import { migrate } from '../../db/migrate.ts';
import { createPool, type Client, type Pool } from '../../db/pool.ts';

export type BenchDatabase = {
  url: string;
  embedded: boolean;
  /** Small pool for seeding and checks (not used by the servers under test). */
  pool: Pool;
  /** `PostgreSQL 18.x` */
  version: string;
  superuser: boolean;
  /**
   * CPU ms the PostgreSQL cluster has used so far (all its processes), for the embedded one
   * (on this machine); null for DATABASE_URL, which may be on another.
   */
  cpuMs: () => number | null;
  close: () => Promise<void>;
};

export async function openBenchDatabase(log: (line: string) => void): Promise<BenchDatabase> {
  let url = process.env.DATABASE_URL;
  let stopEmbedded: (() => Promise<void>) | null = null;
  if (!url) {
    const dir = path.join(path.resolve(process.env.DATA_DIR || '.data'), 'bench');
    log(`starting embedded PostgreSQL under ${dir}`);
    const embedded = await startEmbedded(dir, { database: 'bench', fast: true });
    url = embedded.url;
    stopEmbedded = embedded.stop;
  } else {
    log('using DATABASE_URL');
  }
  const pool = createPool(url, 2);
  try {
    const applied = await migrate(pool);
    if (applied.length) log(`migrations applied: ${applied.join(', ')}`);
    const { rows } = await pool.query<{ version: string; superuser: boolean; pid: number }>(
      `SELECT split_part(version(), ' ', 2) AS version,
              (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS superuser, pg_backend_pid() AS pid`,
    );
    const postmaster = stopEmbedded ? parentPid(rows[0].pid) : null;
    return {
      url,
      embedded: stopEmbedded !== null,
      pool,
      version: `PostgreSQL ${rows[0].version}`,
      superuser: rows[0].superuser,
      cpuMs: () => (postmaster === null ? null : clusterCpuMs(postmaster)),
      close: async () => {
        await pool.end();
        await stopEmbedded?.();
      },
    };
  } catch (error) {
    await pool.end().catch(() => {});
    await stopEmbedded?.().catch(() => {});
    throw error;
  }
}

/**
 * Runs `fn` on one connection with triggers off (session_replication_role =
 * replica) when the role may do so, for bulk loads and bulk deletes that would
 * otherwise fire a row trigger per row. Without superuser it runs with
 * triggers on (slower, same result). Foreign keys are triggers too: only for
 * statements that cannot break one (inserts of valid rows, deletes of rows
 * nothing references).
 */
export async function withoutTriggers<T>(db: BenchDatabase, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = await db.pool.connect();
  try {
    if (db.superuser) await client.query("SET session_replication_role = 'replica'");
    return await fn(client);
  } finally {
    if (db.superuser) await client.query('RESET session_replication_role').catch(() => {});
    client.release();
  }
}
