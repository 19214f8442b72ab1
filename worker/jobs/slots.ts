// A queue worked by independent slots, for jobs that keep a core busy (the
// thumbnails): each slot fetches one job, runs it, settles it and fetches the
// next at once, so a slot never waits for the others.
//
// Why not `boss.work()`: its batches run to their slowest job before the next
// fetch (a batch of four thumbnails left the cores about 10% idle between
// batches, docs/bench.md), and with a batch of one it waits its polling
// interval after every job (pg-boss bursts only on batches larger than one).
// Settling is fenced to the attempt fetched (`retryCount`): a job that
// expired meanwhile and was fetched again elsewhere is not settled twice.
import type { Job } from 'pg-boss';
import type { PgBoss } from '../../db/boss.ts';
import { logError } from '../../lib/log.ts';

export type SlotOptions = {
  /** Jobs in flight in this process. */
  slots: number;
  /** Wait of an idle slot before it asks again. */
  pollingIntervalSeconds: number;
};

/** How a job came out: completed, or failed (retried on the queue's backoff while retries remain). */
export type SlotResult = { status: 'completed' | 'failed'; output?: object };

export class SlotRunner<Data extends object> {
  readonly #boss: PgBoss;
  readonly #queue: string;
  readonly #options: SlotOptions;
  readonly #run: (job: Job<Data>) => Promise<SlotResult>;
  readonly #wakers = new Set<() => void>();
  #loops: Promise<void>[] = [];
  #stopped = false;

  constructor(boss: PgBoss, queue: string, options: SlotOptions, run: (job: Job<Data>) => Promise<SlotResult>) {
    this.#boss = boss;
    this.#queue = queue;
    this.#options = options;
    this.#run = run;
  }

  start(): void {
    if (this.#loops.length) return;
    this.#loops = Array.from({ length: this.#options.slots }, () => this.#slot());
  }

  /** Stops fetching and waits for the jobs in flight to be run and settled. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const wake of this.#wakers) wake();
    await Promise.all(this.#loops);
  }

  async #slot(): Promise<void> {
    while (!this.#stopped) {
      let job: Job<Data> | undefined;
      try {
        [job] = await this.#boss.fetch<Data>(this.#queue, { batchSize: 1 });
      } catch (error) {
        logError('job.fetch_failed', error, { queue: this.#queue });
        await this.#sleep(1000);
        continue;
      }
      if (!job) {
        await this.#sleep(this.#options.pollingIntervalSeconds * 1000);
        continue;
      }
      let result: SlotResult;
      try {
        result = await this.#run(job);
      } catch (error) {
        result = { status: 'failed', output: { message: (error as Error).message } };
      }
      await this.#settle(job, result);
    }
  }

  /**
   * Completes or fails the job (pg-boss retries a failed one on the queue's
   * backoff). If the database is away, the job stays active, expires and is
   * run again: its handler must be safe to run twice, as every job's is.
   */
  async #settle(job: Job<Data>, result: SlotResult): Promise<void> {
    const attempt = { id: job.id, retryCount: job.retryCount };
    try {
      if (result.status === 'completed') await this.#boss.complete(this.#queue, attempt, result.output ?? null);
      else await this.#boss.fail(this.#queue, attempt, result.output ?? null);
    } catch (error) {
      logError('job.settle_failed', error, { queue: this.#queue, job_id: job.id });
    }
  }

  #sleep(ms: number): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#wakers.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#wakers.add(wake);
    });
  }
}
