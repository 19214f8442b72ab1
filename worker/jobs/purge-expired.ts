// Hourly housekeeping: idempotency keys live 24 h (DESIGN.md); rate-limit
// windows untouched for 2 minutes are empty by definition and can go; blobs
// whose upload never completed (a crash mid-stream) are dropped after an hour.
import { PURGE_EXPIRED } from '../../db/queues.ts';
import type { JobDefinition } from './types.ts';

export const purgeExpired: JobDefinition = {
  queue: PURGE_EXPIRED,
  cron: '17 * * * *',
  handler: async ({ pool }) => {
    await pool.query(`DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours'`);
    await pool.query(`DELETE FROM rate_limit_windows WHERE base_second < extract(epoch FROM now())::bigint - 180`);
    await pool.query(`DELETE FROM blobs WHERE NOT complete AND created_at < now() - interval '1 hour'`);
  },
};
