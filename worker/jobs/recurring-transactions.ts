// Occurrences of recurring transactions (queue recurring-transactions):
// every 15 minutes, each recurring transaction with an occurrence due today
// or earlier (company zone) gets them all, in transactions of at most
// OCCURRENCES_PER_TRANSACTION; a job naming one (sent when it is created) does just that
// one. db/money/recurring.ts makes each occurrence exactly once.
import type { Job } from 'pg-boss';
import { generateDue } from '../../db/money/recurring.ts';
import { transaction } from '../../db/pool.ts';
import { RECURRING, type RecurringJob } from '../../db/queues.ts';
import { logError } from '../../lib/log.ts';
import type { JobDefinition, WorkerDeps } from './types.ts';

/**
 * A failure that is the series' own data, not the moment (SQLSTATE class 22, data exception: its
 * occurrence would take a day's total past what a column holds; 23, a constraint): trying again
 * changes nothing until the series or its account changes.
 */
const isDataError = (error: unknown) => /^2[23]/.test((error as { code?: string })?.code ?? '');

/** How often a series another transaction holds is asked again before it is left to the next run. */
const BUSY_TRIES = 50;
const BUSY_WAIT_MS = 100;

/**
 * Every due occurrence of these series, in short transactions (OCCURRENCES_PER_TRANSACTION each, the
 * series' lock released between them) and in turns: one batch of each series per pass, so a series
 * years behind does not hold back the others' occurrences due today. A series another transaction
 * holds (a PATCH between two batches) is asked again after the others, or after a short wait.
 */
export async function catchUp(
  deps: Pick<WorkerDeps, 'pool' | 'jobs'>,
  ids: string[],
  options: { onBusy?: (id: string) => void } = {},
): Promise<{ failed: Array<{ id: string; error: unknown }> }> {
  const busy = new Map<string, number>();
  const failed: Array<{ id: string; error: unknown }> = [];
  let pending = ids;
  while (pending.length) {
    const next: string[] = [];
    let progressed = false;
    for (const id of pending) {
      let result;
      try {
        result = await transaction(deps.pool, (client) => generateDue(client, id));
      } catch (error) {
        // One series that cannot be written is left for the next pass, logged; it never holds back
        // the series after it (of this company or any other).
        logError('recurring.occurrence_failed', error, { recurring_id: id });
        failed.push({ id, error });
        continue;
      }
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
  return { failed };
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
      const { failed } = await catchUp(deps, ids);
      // Anything but a series' own data (the database away, say) fails the pass, so pg-boss tries it
      // again soon; what each series committed stays, and nothing is made twice. A series' own data
      // error is only logged, at every pass, until the series or its account is changed.
      const transient = failed.find((f) => !isDataError(f.error));
      if (transient) throw transient.error;
    }
  },
};
