// Outbound Google Calendar sync of one event (queue calendar-push, enqueued
// in the event's transaction by db/calendar-sync.ts). The job reads the
// event as it is now, so retries and late runs send the latest state:
// - upsert: insert with our event id as Google's (a retry after a crash gets
//   409 and patches instead: never two copies), or patch a known one; with
//   `create_meet` it asks for a Meet conference (a stable requestId, the event
//   id) and polls while Google says `pending`, then stores `meet_url` on the
//   event and its booking;
// - delete: 404 and 410 mean it is already gone.
// Rate limits (429, 403 rateLimitExceeded) and 5xx are thrown, so pg-boss
// retries with backoff (db/queues.ts); a 401 refreshes the token once; a dead
// refresh token marks the connection and ends the job. Other refusals are
// recorded on the connection (`wsctl calendar status`) and not retried.
import { createHash } from 'node:crypto';
import type { Job } from 'pg-boss';
import type { Queryable } from '../../db/pool.ts';
import { CALENDAR_PUSH, type CalendarPushJob } from '../../db/queues.ts';
import { conferencePending, GoogleApiError, meetUrlOf, type GoogleEvent } from '../../lib/google-calendar.ts';
import { localDate } from '../../lib/local-dates.ts';
import { activeConnection, googleClient, recordError, recordSuccess, withToken } from '../calendar/google-access.ts';
import type { JobDefinition, WorkerDeps } from './types.ts';

type EventRow = {
  id: string;
  user_id: string;
  title: string;
  description: string | null;
  location: string | null;
  starts_at: Date;
  ends_at: Date;
  all_day: boolean;
  timezone: string;
  create_meet: boolean;
  meet_url: string | null;
  kind: string;
  attendees: Array<{ name?: string | null; email: string }>;
  reminders_minutes: number[];
  sync_to_google: boolean | null;
  google_event_id: string | null;
};

/** Google keeps at most 5 reminder overrides per event: the 5 nearest the start are sent. */
export const GOOGLE_MAX_REMINDERS = 5;
/** The private extended properties that mark an event in Google as one of ours: our event id, and its host. */
export const OUR_EVENT_PROPERTY = 'workspace_event_id';
export const OUR_HOST_PROPERTY = 'workspace_user_id';

/** How often the job looks again while Google prepares the conference, and how long it waits between looks. */
export const MEET_POLLS = 5;
export const MEET_POLL_MS = 1000;

/**
 * The conference request's id: stable across retries of one push (Google answers a repeated id with the
 * conference it made), and new for a copy inserted again (sync switched off, then on), whose old link
 * belonged to the deleted copy: derived from that link.
 */
export function meetRequestId(event: Pick<EventRow, 'id' | 'meet_url' | 'google_event_id'>): string {
  if (event.meet_url && !event.google_event_id) return `meet-${event.id}-${createHash('sha256').update(event.meet_url).digest('hex').slice(0, 12)}`;
  return `meet-${event.id}`;
}

export function toGoogle(event: EventRow): GoogleEvent {
  // The other kind of time is cleared (null): Google merges a patch's `start` into the stored one, and
  // refuses an event whose start has a `date` beside a `dateTime` (an event switched to or from all-day).
  const when = (at: Date) =>
    event.all_day
      ? { date: localDate(at.getTime(), event.timezone), dateTime: null, timeZone: null }
      : { dateTime: at.toISOString(), timeZone: event.timezone, date: null };
  return {
    id: event.google_event_id ?? event.id,
    summary: event.title,
    // null, not absent: a PATCH clears in Google what was cleared here.
    description: event.description ?? null,
    location: event.location ?? null,
    start: when(event.starts_at),
    end: when(event.ends_at),
    attendees: event.attendees.map((a) => ({ email: a.email, ...(a.name ? { displayName: a.name } : {}) })),
    reminders: {
      useDefault: false,
      overrides: [...new Set(event.reminders_minutes)].sort((a, b) => a - b).slice(0, GOOGLE_MAX_REMINDERS).map((minutes) => ({ method: 'popup' as const, minutes })),
    },
    extendedProperties: { private: { [OUR_EVENT_PROPERTY]: event.id, [OUR_HOST_PROPERTY]: event.user_id } },
    // Restores a copy deleted earlier (sync switched off, then on): Google keeps deleted events, cancelled.
    status: 'confirmed',
    // Asked for while the event has no conference, and on every insert: a copy inserted again (sync
    // switched off, then on) is a new Google event whose conference the old meet_url is not.
    ...(event.create_meet && event.kind !== 'task' && (!event.meet_url || !event.google_event_id)
      ? { conferenceData: { createRequest: { requestId: meetRequestId(event), conferenceSolutionKey: { type: 'hangoutsMeet' } } } }
      : {}),
  };
}

/** What a push sends that comes from the event (not from Google: its id, the conference), to tell whether a state was sent. */
function sentState(body: GoogleEvent): string {
  const { id: _id, conferenceData: _conference, ...rest } = body;
  return JSON.stringify(rest);
}

/** Whether the event, read again, is no longer the state `body` sent (and still goes to Google). */
async function changedSince(db: Queryable, companyId: string, event: EventRow, body: GoogleEvent): Promise<boolean> {
  const { rows } = await db.query<EventRow>('SELECT * FROM calendar_events WHERE company_id = $1 AND id = $2', [companyId, event.id]);
  const now = rows[0];
  return !!now && now.sync_to_google !== false && sentState(toGoogle(now)) !== sentState(body);
}

/** Sends one event's change. */
async function push(deps: WorkerDeps, job: CalendarPushJob): Promise<void> {
  const { pool: db, config } = deps;
  const client = googleClient(config);
  if (!client) return; // Google not configured here: nothing to sync
  const connection = await activeConnection(db, job.user_id);
  if (!connection) return;
  const calendar = connection.calendar_id;
  try {
    if (job.action === 'delete') {
      // Switched off, then on again before this ran: the copy it names is the live one again (the
      // upsert queued by the switch back keeps it up to date), so it is not deleted.
      const googleId = job.google_event_id ?? job.event_id;
      const { rows: live } = await db.query(
        'SELECT 1 FROM calendar_events WHERE company_id = $1 AND id = $2 AND sync_to_google IS DISTINCT FROM false AND google_event_id = $3',
        [job.company_id, job.event_id, googleId],
      );
      if (live.length) return;
      const deleted = await withToken(db, config, client, connection, (token) =>
        client.deleteEvent(token, calendar, job.google_event_id ?? job.event_id).catch((error) => {
          if (error instanceof GoogleApiError && (error.status === 404 || error.status === 410)) return;
          throw error;
        }),
      );
      // An event switched to sync_to_google: false is no longer in Google: a later switch back inserts it anew.
      if (deleted) {
        await recordSuccess(db, connection);
        await db.query('UPDATE calendar_events SET google_event_id = NULL WHERE company_id = $1 AND id = $2 AND sync_to_google = false AND google_event_id = $3', [
          job.company_id,
          job.event_id,
          job.google_event_id ?? job.event_id,
        ]);
      }
      return;
    }
    // Read as it is now, while its host still works for its company: a push queued before the host was
    // removed would otherwise send what the company wrote in the event afterwards.
    const { rows } = await db.query<EventRow>(
      `SELECT e.* FROM calendar_events e
        WHERE e.company_id = $1 AND e.id = $2 AND e.user_id = $3 AND EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = $3 AND m.company_id = $1)`,
      [job.company_id, job.event_id, job.user_id],
    );
    const event = rows[0];
    if (!event) return; // deleted since (its delete job removes it from Google), or its host removed from the company
    if (event.sync_to_google === false) return; // switched off since; that write queued the delete
    const body = toGoogle(event);
    const sent = await withToken(db, config, client, connection, async (token) => {
      // Inserted under our id. Taken (409): inserted by an earlier run that died before storing it, so
      // patched. If that copy was deleted since (in Google, or sync switched off and on again), Google
      // keeps the id taken: a new event under Google's id.
      const insert = (): Promise<GoogleEvent> =>
        client.insertEvent(token, calendar, body).catch((error) => {
          if (!(error instanceof GoogleApiError && error.status === 409)) throw error;
          return client.patchEvent(token, calendar, body.id, body).catch((patchError) => {
            if (!(patchError instanceof GoogleApiError && (patchError.status === 404 || patchError.status === 410))) throw patchError;
            // A new Google event: its own Meet conference too (the old meet_url was the deleted copy's),
            // asked for as a copy inserted again after a switch-off asks (meetRequestId).
            const { id: _taken, ...rest } = toGoogle({ ...event, google_event_id: null });
            return client.insertEvent(token, calendar, rest as GoogleEvent);
          });
        });
      // A copy deleted in Google (404/410) is inserted again, as a new event.
      let result = event.google_event_id
        ? await client.patchEvent(token, calendar, body.id, body).catch((error) => {
            if (error instanceof GoogleApiError && (error.status === 404 || error.status === 410)) return insert();
            throw error;
          })
        : await insert();
      for (let i = 0; i < MEET_POLLS && conferencePending(result); i++) {
        await new Promise((resolve) => setTimeout(resolve, MEET_POLL_MS));
        result = await client.getEvent(token, calendar, result.id ?? body.id);
      }
      return result;
    });
    if (!sent) return;
    const meetUrl = meetUrlOf(sent.value);
    const googleId = sent.value.id ?? body.id;
    // A copy under a new Google id (the one it had was deleted there) is stored only over the id this push
    // read: two pushes at once (two workers) may each have made one, and the one stored first wins.
    const newCopy = googleId !== (event.google_event_id ?? event.id);
    // Written (and `updated_at` moved) only when Google gave a new id or Meet link: a push that
    // changed nothing here (every upcoming event is pushed again after a reconnect) leaves the row as it was.
    const { rows: stored } = await db.query<{ sync_to_google: boolean | null; ours: boolean | null }>(
      `WITH changed AS (
         UPDATE calendar_events SET google_event_id = $3, meet_url = coalesce($4, meet_url), updated_at = now()
          WHERE company_id = $1 AND id = $2 AND (google_event_id IS DISTINCT FROM $3 OR meet_url IS DISTINCT FROM coalesce($4, meet_url))
            AND (NOT $5 OR google_event_id IS NOT DISTINCT FROM $6)
          RETURNING sync_to_google, true AS ours
       )
       SELECT sync_to_google, ours FROM changed
       UNION ALL
       SELECT sync_to_google, google_event_id = $3 AS ours FROM calendar_events WHERE company_id = $1 AND id = $2 AND NOT EXISTS (SELECT 1 FROM changed)`,
      [job.company_id, event.id, googleId, meetUrl, newCopy, event.google_event_id],
    );
    if (!stored[0] || stored[0].sync_to_google === false) {
      // Switched off (or deleted) while this push was in Google: that write saw no copy there to
      // delete, so the copy this push made is deleted now (the row lock orders the two writes).
      await deps.jobs.send(db, CALENDAR_PUSH, { ...job, action: 'delete', google_event_id: googleId });
      return;
    }
    if (newCopy && !stored[0].ours) {
      // Another push stored a copy of its own first: this one's is deleted (never two copies in Google),
      // and one more push brings the stored copy to the event as it is now.
      await deps.jobs.send(db, CALENDAR_PUSH, { ...job, action: 'delete', google_event_id: googleId });
      await deps.jobs.send(db, CALENDAR_PUSH, { ...job, action: 'upsert' });
      return;
    }
    if (meetUrl) {
      await db.query('UPDATE bookings SET meet_url = $3, updated_at = now() WHERE company_id = $1 AND calendar_event_id = $2 AND meet_url IS DISTINCT FROM $3', [
        job.company_id,
        event.id,
        meetUrl,
      ]);
    }
    if (event.create_meet && !meetUrl && conferencePending(sent.value)) {
      // Still being prepared: look again later (the same requestId asks for the same conference).
      await deps.jobs.send(db, CALENDAR_PUSH, job, { startAfter: 15 });
    } else if (await changedSince(db, job.company_id, event, body)) {
      // Written again while this push was in Google: that write's own push may have landed first (two
      // workers), and this older state last. One more push sends the event as it is now, so the last
      // push to land always carries the latest state (no lock held across Google's answer).
      await deps.jobs.send(db, CALENDAR_PUSH, { ...job, action: 'upsert' });
    }
    await recordSuccess(db, connection);
  } catch (error) {
    if (error instanceof GoogleApiError && !error.retryable) {
      await recordError(db, connection, error);
      return;
    }
    await recordError(db, connection, error);
    throw error;
  }
}

export const calendarPush: JobDefinition<CalendarPushJob> = {
  queue: CALENDAR_PUSH,
  work: { batchSize: 1, pollingIntervalSeconds: 0.5 },
  async handler(deps, jobs: Job<CalendarPushJob>[]) {
    for (const job of jobs) await push(deps, job.data);
  },
};
