// Enqueuing jobs inside the caller's transaction (DESIGN.md, transactional
// outbox): `send` takes the caller's client, so a job exists exactly
// when the write that needs it commits. The web process runs a pg-boss of its
// own only for this (no supervision, no cron, no handlers loaded); the worker
// wraps the instance it works with. Queues and payload types come from the
// registry (db/queues.ts), so a payload that does not fit its queue is a type
// error at the caller.
import { PgBoss, type SendOptions } from 'pg-boss';
import { logBossError } from './boss.ts';
import { prepared, type Queryable } from './pool.ts';
import { ALL_QUEUES, RETIRED_QUEUES, type Queue } from './queues.ts';

export type JobSender = {
  send: <Data extends object>(db: Queryable, queue: Queue<Data>, data: Data, options?: SendOptions) => Promise<string | null>;
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

/** A JobSender over a started pg-boss instance; `stop` is left to its owner. */
export function senderFor(boss: PgBoss): JobSender {
  return {
    send: (db, queue, data, options = {}) => boss.send(queue.name, data, { ...options, db: executor(db) }),
    stop: async () => {},
  };
}

/**
 * Every queue of the registry, with its options (both processes call this at
 * start), and the retired ones deleted with whatever they still hold. A queue
 * that exists already gets the registry's options too: pg-boss's createQueue
 * leaves an existing queue as it was, and a job takes its retry policy from
 * its queue's row, so a release that changes a queue's options would
 * otherwise never apply them to a database made before it.
 */
export async function createQueues(boss: PgBoss): Promise<void> {
  for (const queue of ALL_QUEUES) {
    await boss.createQueue(queue.name, queue.options);
    // What a queue's row may change after its creation (its policy and partitioning are fixed then).
    const { policy: _policy, partition: _partition, ...changeable } = queue.options;
    await boss.updateQueue(queue.name, changeable);
  }
  for (const name of RETIRED_QUEUES) await boss.deleteQueue(name); // a no-op once gone
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
  // One JSON line, as every log line (docs/operations.md, Logs); the worker's pg-boss logs the same event.
  boss.on('error', (error) => logBossError(error, { process: 'web' }));
  await boss.start();
  // The web may start before any worker ever ran: queues must exist to accept jobs.
  await createQueues(boss);
  return { ...senderFor(boss), stop: () => boss.stop({ graceful: false }) };
}
