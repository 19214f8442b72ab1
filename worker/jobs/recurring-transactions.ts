// Occurrences of recurring transactions (queue recurring-transactions):
// every 15 minutes, each recurring transaction with an occurrence due today
// or earlier (company zone) gets them all, in transactions of at most
// OCCURRENCES_PER_TRANSACTION; a job naming one (sent when it is created) does just that
// one. db/money/recurring.ts makes each occurrence exactly once.
import type { Job } from 'pg-boss';
import { generateDue } from '../../db/money/recurring.ts';
import { transaction } from '../../db/pool.ts';
import { RECURRING, type RecurringJob } from '../../db/queues.ts';
import type { JobDefinition } from './types.ts';

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
      // A long backfill goes in short transactions (OCCURRENCES_PER_TRANSACTION each), the series' lock released between them.
      for (const id of ids) while ((await transaction(deps.pool, (client) => generateDue(client, deps.jobs, id))).more);
    }
  },
};
