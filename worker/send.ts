// Enqueuing jobs from the web process. pg-boss runs over our own pool (no
// second pool, no supervision or cron here: that is the worker's job), and
// `send` takes the caller's transaction client, so a job exists exactly when
// the write that needs it commits (DESIGN.md, transactional outbox).
import { PgBoss, type SendOptions } from 'pg-boss';
import type { Pool, Queryable } from '../db/pool.ts';
import { jobs } from './jobs/index.ts';

export type JobSender = {
  send: (db: Queryable, name: string, data: object, options?: SendOptions) => Promise<string | null>;
  stop: () => Promise<void>;
};

export async function createJobSender(pool: Pool): Promise<JobSender> {
  const boss = new PgBoss({
    db: { executeSql: (text: string, values?: unknown[]) => pool.query(text, values as unknown[]) },
    supervise: false,
    schedule: false,
  });
  boss.on('error', (error) => process.stderr.write(`pg-boss (web): ${error instanceof Error ? error.message : String(error)}\n`));
  await boss.start();
  // The web may start before any worker ever ran: queues must exist to accept jobs.
  for (const job of jobs) if (!job.cron) await boss.createQueue(job.name, job.queue);
  return {
    send: (db, name, data, options = {}) =>
      boss.send(name, data, { ...options, db: { executeSql: (text: string, values?: unknown[]) => db.query(text, values as unknown[]) } }),
    stop: () => boss.stop({ graceful: false }),
  };
}
