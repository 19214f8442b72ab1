// Starts pg-boss, creates the queues, registers every handler and schedule.
import type { Pool } from '../db/pool.ts';
import type { Config } from '../lib/config.ts';
import { log } from '../lib/log.ts';
import { createBoss, type PgBoss } from './boss.ts';
import { jobs } from './jobs/index.ts';

export type Worker = { boss: PgBoss; stop: () => Promise<void> };

export async function startWorker(config: Config, pool: Pool, databaseUrl: string): Promise<Worker> {
  const boss = createBoss(databaseUrl);
  await boss.start();
  for (const job of jobs) {
    await boss.createQueue(job.name, job.queue);
    await boss.work(job.name, job.work ?? {}, (batch) => job.handler({ pool, boss, config }, batch as never));
    if (job.cron) await boss.schedule(job.name, job.cron);
  }
  log('worker.started', { queues: jobs.map((j) => j.name) });
  return { boss, stop: () => boss.stop({ graceful: true, timeout: 10_000 }) };
}
