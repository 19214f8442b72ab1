// PostgreSQL connections. Every query function in the project takes a
// `Queryable` (the pool or a transaction client) as its first argument so
// callers can compose transactions.
import { createHash } from 'node:crypto';
import pg from 'pg';

// count(*) and bigint columns arrive as strings by default; our counts fit
// comfortably in a double.
pg.types.setTypeParser(20, (value) => Number.parseInt(value, 10));

export type Pool = pg.Pool;
export type Queryable = pg.Pool | pg.PoolClient;
export type Client = pg.PoolClient;

/**
 * Runs independent reads together on a pool (each on its own connection), or
 * one after the other on a client (a connection runs one query at a time;
 * pg 9 refuses overlapping ones).
 */
export async function readAll<T extends readonly unknown[]>(db: Queryable, reads: { [K in keyof T]: () => Promise<T[K]> }): Promise<T> {
  if (db instanceof pg.Pool) return (await Promise.all(reads.map((read) => read()))) as unknown as T;
  const out: unknown[] = [];
  for (const read of reads) out.push(await read());
  return out as unknown as T;
}

/**
 * A pool of at most `max` connections. The processes size theirs from the
 * connection budget (lib/connection-budget.ts); `applicationName` names them
 * in pg_stat_activity.
 */
export function createPool(connectionString: string, max = 10, applicationName?: string): Pool {
  const pool = new pg.Pool({ connectionString, max, connectionTimeoutMillis: 5000, idleTimeoutMillis: 30_000, application_name: applicationName });
  // An idle client losing its connection (database restart) must not crash the process.
  pool.on('error', () => {});
  // Nor one checked out (a transaction, a blob read): pg-pool listens for errors on idle clients only, and
  // a client whose connection drops emits 'error' beside failing its queries. The query's failure is the
  // one handled; the client, no longer queryable, is dropped by the pool when released.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/** Clients inside a transaction opened by `transaction` or `openTransaction`. */
const inTransaction = new WeakSet<Client>();

/**
 * Runs `fn` in a transaction; rolls back on any throw. Given a client that is
 * already inside one (an Idempotency-Key request runs its whole handler in
 * one, api/middleware/idempotency.ts), it joins it under a savepoint: `fn`'s
 * writes commit with the caller's, and a throw undoes only `fn`'s.
 */
export async function transaction<T>(db: Queryable, fn: (client: Client) => Promise<T>): Promise<T> {
  if (!(db instanceof pg.Pool) && inTransaction.has(db)) return nested(db, fn);
  const tx = await openTransaction(db);
  try {
    const result = await fn(tx.client);
    await tx.commit();
    return result;
  } catch (error) {
    await tx.rollback();
    throw error;
  }
}

/**
 * `transaction`, with what the answer shows read back (`read`) before COMMIT, on the same connection.
 * Once a write has committed nothing may fail and answer as if it had not: a read through the pool
 * after it could wait for a connection, time out and answer 503 "retry", and the retry would write
 * twice.
 */
export async function transactionRead<T, R>(db: Queryable, write: (client: Client) => Promise<T>, read: (db: Queryable, row: T) => Promise<R>): Promise<R> {
  return transaction(db, async (client) => read(client, await write(client)));
}

let savepoints = 0;

async function nested<T>(client: Client, fn: (client: Client) => Promise<T>): Promise<T> {
  const name = `sp_${++savepoints}`;
  await client.query(`SAVEPOINT ${name}`);
  try {
    const result = await fn(client);
    await client.query(`RELEASE SAVEPOINT ${name}`);
    return result;
  } catch (error) {
    await client.query(`ROLLBACK TO SAVEPOINT ${name}`).catch(() => {});
    throw error;
  }
}

/**
 * COMMIT was sent and the connection failed before it was confirmed (PostgreSQL shutting down or
 * restarting, the network dropping): the transaction may have committed or not. Still an outage to
 * retry (503, api/middleware/request.ts), whose message says the write may have been saved; an
 * Idempotency-Key's claim is kept (api/middleware/idempotency.ts), so a retry with it replays the answer
 * if it committed. Its `cause` is the failure.
 */
export class CommitOutcomeUnknown extends Error {
  constructor(cause: unknown) {
    super('COMMIT was sent and the connection failed before it was confirmed: the transaction may have committed', { cause });
    this.name = 'CommitOutcomeUnknown';
  }
}

/**
 * The connection failed rather than the statement: no SQLSTATE (the socket closed), or class 08
 * (connection exception) or 57P (a shutdown: its FATAL may come after the commit record is written).
 * A statement's own error in answer to the COMMIT (40001, a deferred constraint's 23505) says it did not commit.
 */
function connectionFailed(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code) || /^(08|57P)/.test(code);
}

export type OpenTransaction = {
  client: Client;
  /** COMMIT and give the connection back; CommitOutcomeUnknown when the connection failed before it was confirmed. */
  commit: () => Promise<void>;
  /** ROLLBACK and give the connection back; one whose ROLLBACK failed is closed, not given back. */
  rollback: () => Promise<void>;
};

/** BEGIN on a connection of the pool (or on a client of the caller's); the caller ends it with commit or rollback. */
export async function openTransaction(db: Queryable): Promise<OpenTransaction> {
  const owned = db instanceof pg.Pool;
  const client = owned ? await db.connect() : db;
  let ended = false;
  /** `broken`: the connection is closed, not given back (pg-pool drops a client released with an error). */
  const end = (broken?: Error) => {
    ended = true;
    inTransaction.delete(client);
    if (owned) client.release(broken);
  };
  try {
    await client.query('BEGIN');
  } catch (error) {
    end();
    throw error;
  }
  inTransaction.add(client);
  return {
    client,
    commit: async () => {
      if (ended) return;
      try {
        await client.query('COMMIT');
      } catch (error) {
        end(error as Error);
        throw connectionFailed(error) ? new CommitOutcomeUnknown(error) : error;
      }
      end();
    },
    rollback: async () => {
      if (ended) return;
      let broken: Error | undefined;
      await client.query('ROLLBACK').catch((error: Error) => (broken = error));
      end(broken);
    },
  };
}

/**
 * Runs `fn` on one connection holding a session-level advisory lock on (`space`, `key`), waiting for it:
 * for rare operator work that waits on another service (the tax profile's Facturapi calls) and so holds
 * no transaction open meanwhile. It pins a connection for its whole run, and needs session pooling
 * (PgBouncer in transaction mode does not keep a session's advisory locks): not for jobs. The
 * connection sits idle while `fn` waits: an error on it meanwhile (the database restarted) is caught
 * here rather than crash the process, and ends the lock with the session; the unlock's own failure
 * never hides `fn`'s error.
 */
export async function withSessionLock<T>(pool: Pool, space: string, key: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken = error;
  };
  client.on('error', onError);
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1), hashtext($2))', [space, key]);
    try {
      return await fn(client);
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1), hashtext($2))', [space, key]).catch((error: Error) => {
        broken ??= error;
      });
    }
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

const statementNames = new Map<string, string>();
const MAX_STATEMENT_NAMES = 256;

/**
 * The query as a named prepared statement: each connection parses and plans
 * its text once and then only binds and executes it. For the hot statements
 * whose planning costs as much as their execution (the webhook fan-out and
 * pg-boss's job insert and delete: measured with pg_stat_statements,
 * 0.15 ms to plan a 0.17 ms insert). The name is derived from the text, so
 * one text is one statement on every connection; texts beyond the first 256
 * (a caller inlining values into its SQL) run unnamed rather than fill every
 * connection with statements.
 */
export function prepared(text: string, values?: unknown[]): pg.QueryConfig {
  let name = statementNames.get(text);
  if (name === undefined) {
    if (statementNames.size >= MAX_STATEMENT_NAMES) return { text, values };
    name = `s_${createHash('sha256').update(text).digest('base64url').slice(0, 22)}`;
    statementNames.set(text, name);
  }
  return { name, text, values };
}
