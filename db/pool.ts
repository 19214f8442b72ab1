// PostgreSQL connections. Every query function in the project takes a
// `Queryable` (the pool or a transaction client) as its first argument so
// callers can compose transactions.
import pg from 'pg';

// count(*) and bigint columns arrive as strings by default; our counts fit
// comfortably in a double.
pg.types.setTypeParser(20, (value) => Number.parseInt(value, 10));

export type Pool = pg.Pool;
export type Queryable = pg.Pool | pg.PoolClient;
export type Client = pg.PoolClient;

export function createPool(connectionString: string, max = Number(process.env.PG_POOL_MAX || 10)): Pool {
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis: 5000, idleTimeoutMillis: 30_000 });
  // An idle client losing its connection (database restart) must not crash the process.
  pool.on('error', () => {});
  return pool;
}

/** Runs `fn` in a transaction; rolls back on any throw. */
export async function transaction<T>(pool: Pool, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
