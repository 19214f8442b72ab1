// The outbound half of the Google Calendar sync, as the writes see it: an
// event of a host with an active connection gets a calendar-push job in the
// same transaction as its write (transactional outbox). An event that says
// `sync_to_google: false` is kept out of Google: if an earlier push put it
// there, it is deleted there. The worker (worker/jobs/calendar-push.ts) makes the
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
  // Events imported from Google are Google's.
  if (event.source === 'google') return;
  // Kept out of Google: one that already reached it leaves it (updates and deletion alike); one that
  // never did has nothing there. A push queued before the switch reads the event and sends nothing.
  if (event.sync_to_google === false) {
    if (!event.google_event_id) return;
    action = 'delete';
  }
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
