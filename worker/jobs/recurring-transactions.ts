// Occurrences of recurring transactions (queue recurring-transactions):
// every 15 minutes, each recurring transaction with an occurrence due today
// or earlier (company zone) gets them all, in transactions of at most
// OCCURRENCES_PER_TRANSACTION; a job naming one (sent when it is created) does just that
// one. db/money/recurring.ts makes each occurrence exactly once.
import type { Job } from 'pg-boss';
import { generateDue } from '../../db/money/recurring.ts';
import { transaction } from '../../db/pool.ts';
import { RECURRING, type RecurringJob } from '../../db/queues.ts';
import type { JobDefinition, WorkerDeps } from './types.ts';

/** How often a series another transaction holds is asked again before it is left to the next run. */
const BUSY_TRIES = 50;
const BUSY_WAIT_MS = 100;

/**
 * Every due occurrence of these series, in short transactions (OCCURRENCES_PER_TRANSACTION each, the
 * series' lock released between them) and in turns: one batch of each series per pass, so a series
 * years behind does not hold back the others' occurrences due today. A series another transaction
 * holds (a PATCH between two batches) is asked again after the others, or after a short wait.
 */
export async function catchUp(deps: Pick<WorkerDeps, 'pool' | 'jobs'>, ids: string[], options: { onBusy?: (id: string) => void } = {}): Promise<void> {
  const busy = new Map<string, number>();
  let pending = ids;
  while (pending.length) {
    const next: string[] = [];
    let progressed = false;
    for (const id of pending) {
      const result = await transaction(deps.pool, (client) => generateDue(client, deps.jobs, id));
      if (result.busy) {
        options.onBusy?.(id);
        const tries = (busy.get(id) ?? 0) + 1;
        busy.set(id, tries);
        if (tries < BUSY_TRIES) next.push(id);
        continue;
      }
      progressed = true;
      if (result.more) next.push(id);
    }
    if (!progressed && next.length) await new Promise((r) => setTimeout(r, BUSY_WAIT_MS));
    pending = next;
  }
}

export const recurringTransactions: JobDefinition<RecurringJob> = {
  queue: RECURRING,
  cron: '*/15 * * * *',
  work: { batchSize: 1, pollingIntervalSeconds: 0.5 },
  async handler(deps, jobs: Job<RecurringJob>[]) {
    for (const job of jobs) {
      const ids = job.data?.recurring_id
        ? [job.data.recurring_id]
        : (
            await deps.pool.query<{ id: string }>(
              `SELECT r.id FROM recurring_transactions r JOIN companies c ON c.id = r.company_id
                WHERE r.active AND r.next_occurrence_on <= (now() AT TIME ZONE c.timezone)::date ORDER BY r.next_occurrence_on LIMIT 10000`,
            )
          ).rows.map((r) => r.id);
      await catchUp(deps, ids);
    }
  },
};
