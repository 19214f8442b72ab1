import type { Job, WorkOptions } from 'pg-boss';
import type { PgBoss } from '../../db/boss.ts';
import type { JobSender } from '../../db/job-sender.ts';
import type { Pool } from '../../db/pool.ts';
import type { Queue } from '../../db/queues.ts';
import type { Config } from '../../lib/config.ts';
import type { BlobStore } from '../../storage/blobs.ts';

/** `jobs` enqueues inside a caller's transaction (a handler that queues a follow-up job, as invoices do). */
export type WorkerDeps = { pool: Pool; boss: PgBoss; config: Config; jobs: JobSender; blobs: BlobStore };

/**
 * One job kind: the handler of one queue of the registry (db/queues.ts); its
 * file is named after the queue (worker/jobs/<queue name>.ts).
 */
export type JobDefinition<Data extends object = object> = {
  queue: Queue<Data>;
  /** Cron expression (UTC) for scheduled housekeeping jobs. */
  cron?: string;
  work?: WorkOptions;
  /**
   * Resolves with per-job results (`JobResult[]`) when `work.perJobResults` is
   * set. Method syntax on purpose: definitions of different payloads then fit
   * one `JobDefinition[]` list (worker/jobs/index.ts).
   */
  handler(deps: WorkerDeps, jobs: Job<Data>[]): Promise<unknown>;
};
