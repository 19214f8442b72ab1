import type { Job, WorkOptions } from 'pg-boss';
import type { Pool } from '../../db/pool.ts';
import type { Config } from '../../lib/config.ts';
import type { PgBoss } from '../boss.ts';
import type { JobSender } from '../send.ts';

/** `jobs` enqueues inside a caller's transaction (events recorded by handlers fan out to webhooks). */
export type WorkerDeps = { pool: Pool; boss: PgBoss; config: Config; jobs: JobSender };

/** One job kind: its queue name is its file name (worker/jobs/<name>.ts). */
export type JobDefinition<Data extends object = object> = {
  name: string;
  /** Cron expression (UTC) for scheduled housekeeping jobs. */
  cron?: string;
  queue?: Parameters<PgBoss['createQueue']>[1];
  work?: WorkOptions;
  /** Resolves with per-job results (`JobResult[]`) when `work.perJobResults` is set. */
  handler: (deps: WorkerDeps, jobs: Job<Data>[]) => Promise<unknown>;
};
