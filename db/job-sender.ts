// Enqueuing jobs inside the caller's transaction (DESIGN.md, transactional
// outbox): `send`/`insert` take the caller's client, so a job exists exactly
// when the write that needs it commits. The web process runs a pg-boss of its
// own only for this (no supervision, no cron, no handlers loaded); the worker
// wraps the instance it works with. Queues and payload types come from the
// registry (db/queues.ts), so a payload that does not fit its queue is a type
// error at the caller.
import { PgBoss, type JobInsert, type SendOptions } from 'pg-boss';
import { prepared, type Queryable } from './pool.ts';
import { ALL_QUEUES, type Queue } from './queues.ts';

export type JobSender = {
  send: <Data extends object>(db: Queryable, queue: Queue<Data>, data: Data, options?: SendOptions) => Promise<string | null>;
  /** Many jobs of one queue in one statement (webhook fan-out). */
  insert: <Data extends object>(db: Queryable, queue: Queue<Data>, jobs: Array<JobInsert<Data>>) => Promise<void>;
  /**
   * The statement `insert` runs for `queue`, for a caller that feeds it from
   * its own statement (the webhook fan-out inserts its deliveries and their
   * jobs in one). Its one parameter, `$1::text::json`, is the jobs as a JSON
   * array of pg-boss's insert objects (`data`, `groupId`, `startAfter`, …).
   * Null when that statement cannot be nested in a caller's WITH (a queue
   * with pg-boss's `notify` on, or a text this code does not recognise): the
   * caller then uses `insert`. Read once per process: a queue moved to another
   * table or switched to `notify` while it runs applies at its next start.
   */
  insertStatement: (queue: Queue) => Promise<string | null>;
  stop: () => Promise<void>;
};

/**
 * pg-boss's statements run on our client (the caller's transaction), as
 * prepared statements: pg-boss builds the same text for every insert into a
 * queue, and planning it cost as much as running it.
 */
export function executor(db: Queryable) {
  return { executeSql: (text: string, values?: unknown[]) => db.query(prepared(text, values)) };
}

/** The placeholder of `insertStatement`'s text, which a caller replaces with its own JSON. */
export const JOBS_PARAMETER = '$1::text::json';

/**
 * pg-boss's insert statement for a queue, as its public `insert()` builds it
 * (the queue's table, policy and defaults, in the pinned version): captured
 * by an executor that records the text instead of running it.
 */
async function captureInsertStatement(boss: PgBoss, queue: Queue): Promise<string | null> {
  let text = '';
  const recorder = { executeSql: async (sql: string) => ((text = sql), { rows: [] }) };
  await boss.insert(queue.name, [{ data: {} }], { db: recorder, returnId: false });
  // Only a plain INSERT with the one JSON parameter can be nested in a
  // caller's WITH; a notify-enabled queue's statement is itself a WITH.
  return /^\s*INSERT INTO /.test(text) && text.split('$').length === 2 && text.includes(JOBS_PARAMETER) ? text : null;
}

/** A JobSender over a started pg-boss instance; `stop` is left to its owner. */
export function senderFor(boss: PgBoss): JobSender {
  const statements = new Map<string, Promise<string | null>>();
  return {
    send: (db, queue, data, options = {}) => boss.send(queue.name, data, { ...options, db: executor(db) }),
    insert: async (db, queue, list) => {
      if (list.length > 0) await boss.insert(queue.name, list, { db: executor(db), returnId: false });
    },
    insertStatement: (queue) => {
      let statement = statements.get(queue.name);
      if (!statement) {
        statement = captureInsertStatement(boss, queue);
        statement.catch(() => statements.delete(queue.name));
        statements.set(queue.name, statement);
      }
      return statement;
    },
    stop: async () => {},
  };
}

/** Every queue of the registry, with its options (both processes call this at start). */
export async function createQueues(boss: PgBoss): Promise<void> {
  for (const queue of ALL_QUEUES) await boss.createQueue(queue.name, queue.options);
}

/**
 * The web process's sender. pg-boss gets a tiny pool of its own (`max`, 1-2
 * connections from the web's budget) for its own lookups: an insert inside a request's transaction
 * may need the queue's definition (first use after start, or after
 * createQueue evicted it), and fetching it through the request pool while
 * every connection of that pool is held by a waiting transaction deadlocks
 * until the connect timeout (seen in the webhooks bench: 41 of 50 concurrent
 * first writes failed after 5 s). The inserts themselves still go through the
 * caller's transaction.
 */
export async function createJobSender(databaseUrl: string, options: { max?: number; applicationName?: string } = {}): Promise<JobSender> {
  const boss = new PgBoss({
    connectionString: databaseUrl,
    max: options.max ?? 2,
    application_name: options.applicationName,
    supervise: false,
    schedule: false,
    useListenNotify: false,
  });
  boss.on('error', (error) => process.stderr.write(`pg-boss (web): ${error instanceof Error ? error.message : String(error)}\n`));
  await boss.start();
  // The web may start before any worker ever ran: queues must exist to accept jobs.
  await createQueues(boss);
  return { ...senderFor(boss), stop: () => boss.stop({ graceful: false }) };
}
