// Queues the web process sends to, with the options both processes create
// them with (pg-boss keeps one definition per queue name).
import type { Queryable } from '../db/pool.ts';
import { createBoss, type PgBoss } from './boss.ts';

export const FORM_POST_ACTIONS = {
  name: 'form-post-actions',
  // Transient failures (SMTP down, a lost connection) retry with exponential
  // backoff: about 15 s, 30 s, 1 min … capped at 1 h, 8 retries in all. The
  // handler itself gives up on an action after MAX_ACTION_ATTEMPTS.
  options: { retryLimit: 8, retryDelay: 15, retryBackoff: true, retryDelayMax: 3600 },
} as const;

export type FormPostActionsJob = { submissionId: string; companyId: string };

/**
 * Enqueues jobs from the web process. pg-boss starts on first use (most
 * requests never enqueue) without supervision or cron, which belong to the
 * worker. `db` is the caller's transaction: the job exists exactly when the
 * write that asked for it commits (transactional outbox, DESIGN.md).
 */
export class JobQueue {
  readonly #databaseUrl: string;
  #boss: Promise<PgBoss> | null = null;

  constructor(databaseUrl: string) {
    this.#databaseUrl = databaseUrl;
  }

  #start(): Promise<PgBoss> {
    this.#boss ??= (async () => {
      const boss = createBoss(this.#databaseUrl, { supervise: false, schedule: false, max: 2 });
      await boss.start();
      await boss.createQueue(FORM_POST_ACTIONS.name, FORM_POST_ACTIONS.options);
      return boss;
    })().catch((error) => {
      this.#boss = null;
      throw error;
    });
    return this.#boss;
  }

  async send(name: string, data: object, db: Queryable): Promise<void> {
    const boss = await this.#start();
    await boss.send(name, data, { db: { executeSql: (text: string, values?: unknown[]) => db.query(text, values as unknown[]) } });
  }

  async close(): Promise<void> {
    if (!this.#boss) return;
    const boss = await this.#boss.catch(() => null);
    this.#boss = null;
    await boss?.stop({ graceful: false, close: true });
  }
}
