// Revokes at Google the refresh token of a person who left the service
// (queue calendar-revoke, enqueued by the removal that deleted their
// connection: api/routes/user-queries.ts removeMember). Their Google account
// then no longer lists the service, and nothing can use the token again.
// Google answering `invalid_token` means it is revoked already (by the
// person, or by an earlier run of this job); out of reach, it is retried.
import type { Job } from 'pg-boss';
import { CALENDAR_REVOKE, type CalendarRevokeJob } from '../../db/queues.ts';
import { GoogleApiError } from '../../lib/google-calendar.ts';
import { log } from '../../lib/log.ts';
import { open } from '../../lib/secret-box.ts';
import { googleClient } from '../calendar/google-access.ts';
import type { JobDefinition, WorkerDeps } from './types.ts';

async function revoke(deps: WorkerDeps, job: CalendarRevokeJob): Promise<void> {
  const client = googleClient(deps.config);
  const refreshToken = open(deps.config.encryptionKey, job.refresh_token_enc);
  if (!client || refreshToken === null) {
    // Google no longer configured, or ENCRYPTION_KEY rotated since: the token cannot be named to Google.
    log('calendar.revoke_skipped', { user_id: job.user_id, reason: client ? 'token_unreadable' : 'google_not_configured' });
    return;
  }
  try {
    await client.revokeToken(refreshToken);
  } catch (error) {
    if (error instanceof GoogleApiError && error.reason === 'invalid_token') {
      log('calendar.revoked', { user_id: job.user_id, already: true });
      return;
    }
    if (error instanceof GoogleApiError && !error.retryable) {
      log('calendar.revoke_refused', { user_id: job.user_id, error: error.message });
      return;
    }
    throw error;
  }
  log('calendar.revoked', { user_id: job.user_id });
}

export const calendarRevoke: JobDefinition<CalendarRevokeJob> = {
  queue: CALENDAR_REVOKE,
  work: { batchSize: 1 },
  async handler(deps, jobs: Job<CalendarRevokeJob>[]) {
    for (const job of jobs) await revoke(deps, job.data);
  },
};
