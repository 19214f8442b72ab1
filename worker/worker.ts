// Starts pg-boss, creates the queues, registers every handler and schedule,
// and starts the webhook dispatcher (worker/webhooks/dispatcher.ts).
import type { Pool } from '../db/pool.ts';
import type { Config } from '../lib/config.ts';
import { log } from '../lib/log.ts';
import { createBoss, type BossOptions, type PgBoss } from '../db/boss.ts';
import { jobs } from './jobs/index.ts';
import { ALL_QUEUES } from '../db/queues.ts';
import { createQueues, senderFor } from '../db/job-sender.ts';
import { loadDatabaseTimeZones } from '../db/time-zones.ts';
import { BlobStore } from '../storage/blobs.ts';
import { WebhookDispatcher, type DispatcherOptions } from './webhooks/dispatcher.ts';

export type Worker = { boss: PgBoss; dispatcher: WebhookDispatcher; stop: () => Promise<void> };

export type WorkerOptions = { boss?: BossOptions; dispatcher?: Partial<DispatcherOptions> };

export async function startWorker(config: Config, pool: Pool, databaseUrl: string, options: WorkerOptions = {}): Promise<Worker> {
  await loadDatabaseTimeZones(pool);
  const boss = createBoss(databaseUrl, options.boss);
  await boss.start();
  await createQueues(boss);
  const deps = { pool, boss, config, jobs: senderFor(boss), blobs: new BlobStore(config.s3) };
  for (const job of jobs) {
    await boss.work<object>(job.queue.name, job.work ?? {}, (batch) => job.handler(deps, batch));
    if (job.cron) await boss.schedule(job.queue.name, job.cron);
  }
  const dispatcher = new WebhookDispatcher(deps, options.dispatcher);
  dispatcher.start();
  log('worker.started', { queues: ALL_QUEUES.map((q) => q.name) });
  return {
    boss,
    dispatcher,
    stop: async () => {
      await dispatcher.stop();
      await boss.stop({ graceful: true, timeout: 10_000 });
      await deps.blobs.close();
    },
  };
}
