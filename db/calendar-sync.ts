// The outbound half of the Google Calendar sync, as the writes see it: an
// event of a host with an active connection gets a calendar-push job in the
// same transaction as its write (transactional outbox), unless the event says
// `sync_to_google: false`. The worker (worker/jobs/calendar-push.ts) makes the
// call; the API write never waits for Google and never fails because of it.
import type { JobSender } from './job-sender.ts';
import type { Queryable } from './pool.ts';
import { CALENDAR_PUSH } from './queues.ts';

export async function enqueueCalendarPush(
  db: Queryable,
  jobs: JobSender,
  event: { company_id: string; id: string; user_id: string; source: string; sync_to_google: boolean | null; google_event_id: string | null },
  action: 'upsert' | 'delete',
): Promise<void> {
  // Events imported from Google are Google's; an event never synced has nothing to delete there.
  if (event.source === 'google' || event.sync_to_google === false) return;
  const { rowCount } = await db.query(`SELECT 1 FROM calendar_connections WHERE user_id = $1 AND status = 'active'`, [event.user_id]);
  if (!rowCount) return;
  await jobs.send(db, CALENDAR_PUSH, {
    company_id: event.company_id,
    event_id: event.id,
    user_id: event.user_id,
    action,
    // Events we create in Google carry our id as theirs (a valid Google id:
    // hex is base32hex), so a delete can name it even before the push that
    // created it stored it; Google answers 404 if it never got there.
    google_event_id: event.google_event_id ?? event.id,
  });
}
