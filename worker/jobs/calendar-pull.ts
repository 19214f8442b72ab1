// Inbound Google Calendar sync of one member (queue calendar-pull): Google's
// events become `source: google` calendar events of that host, in every
// company the person works for, so they block booking slots like any busy
// event. Incremental with Google's sync token; without one (a new or renewed
// connection, or a dead token: 410 Gone) a full list from 30 days back, after
// which imported events Google no longer holds are dropped and our upcoming
// events are pushed again. Events the service itself put in Google (marked
// with our id, or with an id that is one of our events') are skipped, and one
// of ours deleted here while the connection was down is deleted there;
// cancelled ones are deleted; events marked "free" (transparent) and
// invitations the member declined are not imported, since they block nothing
// (Google's own free/busy ignores both).
import type { Job } from 'pg-boss';
import { objectId } from '../../lib/objectid.ts';
import { isTimeZone, startOfLocalDate } from '../../lib/local-dates.ts';
import { endConnectionOfLeaver } from '../../db/calendar-sync.ts';
import { DEFAULT_COMPANY_ZONE } from '../../db/companies.ts';
import { transaction, type Queryable } from '../../db/pool.ts';
import { CALENDAR_PULL, CALENDAR_PULL_SCHEDULE, CALENDAR_PUSH, type CalendarPullJob, type HousekeepingJob } from '../../db/queues.ts';
import { OUR_EVENT_PROPERTY, OUR_HOST_PROPERTY } from './calendar-push.ts';
import { GoogleApiError, type GoogleCalendarClient, type GoogleEvent } from '../../lib/google-calendar.ts';
import { activeConnection, googleClient, recordError, recordSuccess, withToken, type Connection } from '../calendar/google-access.ts';
import type { JobDefinition, WorkerDeps } from './types.ts';
import { toStorableText, toStorableTextOrNull } from '../../lib/storable-text.ts';

const FULL_SYNC_DAYS = 30;
/** Pages of one pull (Google's default page holds up to 250 events): beyond it, the pull stops and says so. */
export const MAX_PULL_PAGES = 1000;

/**
 * An event's zone, one for both its ends: the one its start names, else its end's, else the calendar's
 * (Google sends it with every list page), else the company's. A name that is no IANA zone here (a typo, a zone this runtime
 * does not know) is passed over, as the API refuses it on every write.
 */
function zoneOf(item: GoogleEvent, calendarZone: string | undefined, companyZone: string): string {
  return [item.start?.timeZone, item.end?.timeZone, calendarZone].find((zone): zone is string => !!zone && isTimeZone(zone)) ?? companyZone;
}

/**
 * An event's start or end; null when it has none or it cannot be read (an impossible date, a year past
 * what a date holds): that event is not imported, and the rest of the list is. An all-day event's
 * date carries no zone: it is the day in the event's zone (zoneOf), so an all-day event imported here
 * runs midnight to midnight there, as the API requires of its own.
 */
function instantOf(point: GoogleEvent['start'], zone: string): { at: Date; allDay: boolean } | null {
  if (!point) return null;
  let at: Date;
  try {
    if (point.dateTime) at = new Date(point.dateTime);
    else if (point.date) at = new Date(startOfLocalDate(point.date, zone));
    else return null;
  } catch {
    return null; // Temporal refuses a date that does not exist (2026-02-30)
  }
  return Number.isNaN(at.getTime()) ? null : { at, allDay: !point.dateTime };
}

/** Imports (or drops) one Google event as busy time in each of the member's `companies`, each with its zone. */
async function apply(deps: WorkerDeps, connection: Connection, companies: Array<{ id: string; timezone: string }>, calendarZone: string | undefined, item: GoogleEvent): Promise<void> {
  const { pool: db } = deps;
  const ourId = item.extendedProperties?.private?.[OUR_EVENT_PROPERTY];
  if (ourId) {
    // One of ours (whoever's: a calendar may be shared by several members), never imported. If it is
    // this member's and gone here (deleted while the connection was down, so its delete never reached
    // Google), it leaves Google now rather than come back as the member's busy time.
    const { rowCount } = await db.query(`SELECT 1 FROM calendar_events WHERE id = $1 AND source <> 'google'`, [ourId]);
    const mine = item.extendedProperties?.private?.[OUR_HOST_PROPERTY] === connection.user_id;
    if (!rowCount && mine && item.status !== 'cancelled') {
      await deps.jobs.send(db, CALENDAR_PUSH, { company_id: companies[0]?.id ?? '', event_id: ourId, user_id: connection.user_id, action: 'delete', google_event_id: item.id });
    }
    return;
  }
  const ours = await db.query(
    `SELECT 1 FROM calendar_events WHERE user_id = $1 AND source <> 'google' AND (id = $2 OR google_event_id = $2) LIMIT 1`,
    [connection.user_id, item.id],
  );
  if (ours.rowCount) return;
  // Whether it is kept does not depend on the company: read in the first one's zone (or the default).
  const zone = zoneOf(item, calendarZone, companies[0]?.timezone ?? DEFAULT_COMPANY_ZONE);
  const start = instantOf(item.start, zone);
  const end = instantOf(item.end, zone);
  const declined = item.attendees?.some((a) => a.self && a.responseStatus === 'declined') ?? false;
  if (item.status === 'cancelled' || item.transparency === 'transparent' || declined || !start || !end || end.at <= start.at) {
    await db.query(`DELETE FROM calendar_events WHERE user_id = $1 AND source = 'google' AND google_event_id = $2`, [connection.user_id, item.id]);
    return;
  }
  for (const { id: companyId, timezone } of companies) {
    // With no zone of its own or its calendar's, an event is read in each company's zone.
    const companyZone = zoneOf(item, calendarZone, timezone);
    const from = instantOf(item.start, companyZone);
    const to = instantOf(item.end, companyZone);
    if (!from || !to || to.at <= from.at) continue;
    await db.query(
      // Only while the person still works there: a removal committed after this pull read the memberships
      // deleted their busy time in that company, and nothing may bring it back. Nor after a disconnect:
      // the connection this pull runs for is locked (KEY SHARE) until the row is in, and `disconnect`
      // deletes the connection before the events, so it either waits for this row and deletes it, or has
      // gone first and nothing is inserted. A reconnect with another token (an update, which KEY SHARE does
      // not hold off) only stops what this pull inserts next: the new connection's full list reconciles.
      `INSERT INTO calendar_events (id, company_id, user_id, title, description, location, starts_at, ends_at, all_day, timezone, source, google_event_id, attendees)
       SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'google', $11, $12
        WHERE EXISTS (SELECT 1 FROM memberships WHERE company_id = $2 AND user_id = $3)
          AND EXISTS (SELECT 1 FROM calendar_connections WHERE user_id = $3 AND refresh_token_enc = $13 FOR KEY SHARE)
       ON CONFLICT (company_id, user_id, google_event_id) WHERE source = 'google' DO UPDATE
          SET title = EXCLUDED.title, description = EXCLUDED.description, location = EXCLUDED.location, starts_at = EXCLUDED.starts_at,
              ends_at = EXCLUDED.ends_at, all_day = EXCLUDED.all_day, timezone = EXCLUDED.timezone, attendees = EXCLUDED.attendees, updated_at = now()`,
      [
        objectId(),
        companyId,
        connection.user_id,
        // Google's text as a column can hold it (no U+0000; a cut made no lone surrogate).
        toStorableText((item.summary ?? 'Ocupado').slice(0, 300)),
        toStorableTextOrNull(item.description?.slice(0, 10_000)),
        toStorableTextOrNull(item.location?.slice(0, 500)),
        from.at,
        to.at,
        from.allDay,
        companyZone,
        item.id,
        // An attendee Google gives no email for (a room or resource may have none) is left out: an
        // attendee is a name and an email in the API, never a null email.
        JSON.stringify(
          (item.attendees ?? [])
            .map((a) => ({ name: toStorableTextOrNull(a.displayName), email: toStorableTextOrNull(a.email) }))
            .filter((a): a is { name: string | null; email: string } => !!a.email)
            .slice(0, 100),
        ),
        connection.refresh_token_enc,
      ],
    );
  }
}

/**
 * The end of a full list: imported events Google no longer holds (from timeMin
 * on) are dropped, and every upcoming event of ours is pushed again, so what
 * was written or changed while the connection was down (needs_reauthorization)
 * reaches Google once it is connected again. Pushes are upserts: an event
 * already there is patched to the same state.
 */
async function afterFullList(deps: WorkerDeps, connection: Connection, seen: string[], timeMin: string): Promise<void> {
  const { pool: db } = deps;
  await db.query(
    `DELETE FROM calendar_events WHERE user_id = $1 AND source = 'google' AND ends_at >= $2 AND NOT (google_event_id = ANY($3::text[]))`,
    [connection.user_id, timeMin, seen],
  );
  // Upcoming events to send, and events switched to sync_to_google: false meanwhile that are still there;
  // only in the companies the person still works for: the events left behind in a company that removed
  // them are the company's, and what it writes in them no longer reaches the person's calendar.
  const { rows } = await db.query<{ company_id: string; id: string; google_event_id: string | null; off: boolean }>(
    `SELECT e.company_id, e.id, e.google_event_id, e.sync_to_google = false AS off FROM calendar_events e
      WHERE e.user_id = $1 AND e.source <> 'google' AND e.ends_at > now() AND (e.sync_to_google IS NOT FALSE OR e.google_event_id IS NOT NULL)
        AND EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = $1 AND m.company_id = e.company_id)`,
    [connection.user_id],
  );
  for (const event of rows) {
    const action = event.off ? 'delete' : 'upsert';
    // Not deduplicated: a time-window singleton would drop the push of a change made since the last
    // full list (a reconnect within the window). A push is an upsert or a delete, so twice is harmless.
    await deps.jobs.send(db, CALENDAR_PUSH, { company_id: event.company_id, event_id: event.id, user_id: connection.user_id, action, google_event_id: event.google_event_id ?? event.id });
  }
}

/** How long a pull's lease lasts without renewal (renewed with every page; a killed worker's runs out). */
const PULL_LEASE_SECONDS = 120;

/** A pull's hold on its connection's lease; the value it holds tells it from a later pull's. */
type PullLease = {
  /** Extends it; false when it is no longer this pull's (run out and taken, or the connection gone: disconnected, or connected again with another token, a new connection whose own pull lists it). */
  renew(): Promise<boolean>;
  /** Gives it back, if it is still this pull's. */
  release(): Promise<void>;
};

/** Takes the connection's pull lease; null while another pull holds it (or the connection read is gone). */
async function takeLease(db: Queryable, connection: Connection): Promise<PullLease | null> {
  const key = [connection.user_id, connection.refresh_token_enc];
  // Held as text: timestamptz keeps microseconds, which a JavaScript Date would round away.
  const set = async (condition: string, values: unknown[]) =>
    (
      await db.query<{ until: string }>(
        `UPDATE calendar_connections SET pull_lease_until = now() + make_interval(secs => ${PULL_LEASE_SECONDS})
          WHERE user_id = $1 AND refresh_token_enc = $2 AND ${condition} RETURNING pull_lease_until::text AS until`,
        [...key, ...values],
      )
    ).rows[0]?.until ?? null;
  let held = await set('(pull_lease_until IS NULL OR pull_lease_until < now())', []);
  if (!held) return null;
  return {
    async renew() {
      held = held && (await set('pull_lease_until = $3::timestamptz', [held]));
      return held !== null;
    },
    async release() {
      if (held) await db.query('UPDATE calendar_connections SET pull_lease_until = NULL WHERE user_id = $1 AND refresh_token_enc = $2 AND pull_lease_until = $3::timestamptz', [...key, held]);
    },
  };
}

/** One pull of a member's calendar. */
async function pull(deps: WorkerDeps, userId: string): Promise<void> {
  const { pool: db, config } = deps;
  const client = googleClient(config);
  if (!client) return;
  const connection = await activeConnection(db, userId);
  if (!connection) return;
  // One pull of a member at a time, in any worker process: a full list's clean-up beside an incremental
  // pull would drop what the other just imported. Held by another, this pull waits its turn in the queue.
  const lease = await takeLease(db, connection);
  if (!lease) {
    await deps.jobs.send(db, CALENDAR_PULL, { user_id: userId }, { startAfter: 2, singletonKey: `${userId}:leased`, singletonSeconds: 2 });
    return;
  }
  try {
    await listAndApply(deps, client, connection, lease);
  } finally {
    await lease.release().catch(() => {}); // a failure here: the lease runs out by itself
  }
}

/** The pull itself, under the connection's lease. */
async function listAndApply(deps: WorkerDeps, client: GoogleCalendarClient, connection: Connection, lease: PullLease): Promise<void> {
  const { pool: db, config } = deps;
  const userId = connection.user_id;
  const { rows } = await db.query<{ company_id: string; timezone: string }>(
    'SELECT m.company_id, c.timezone FROM memberships m JOIN companies c ON c.id = m.company_id WHERE m.user_id = $1 ORDER BY m.company_id',
    [userId],
  );
  const companies = rows.map((r) => ({ id: r.company_id, timezone: r.timezone }));
  let syncToken = connection.sync_token ?? undefined;
  let pageToken: string | undefined;
  // A full list (first pull after a connection, or after 410) is the whole truth from timeMin on:
  // imported events it no longer holds were deleted in Google meanwhile. Their ids are collected.
  let seen: Set<string> | null = syncToken ? null : new Set();
  const timeMin = new Date(Date.now() - FULL_SYNC_DAYS * 86_400_000).toISOString();
  try {
    for (let pages = 0; pages < MAX_PULL_PAGES; pages++) {
      // Disconnected (or connected again with another token) since this pull began: it stops here; what it
      // would import is refused anyway (apply), and the reading is not worth Google's quota.
      if (pages > 0 && !(await lease.renew())) return;
      let page;
      try {
        page = await withToken(db, config, client, connection, (token) => client.listEvents(token, connection.calendar_id, { syncToken, pageToken, timeMin }));
      } catch (error) {
        if (error instanceof GoogleApiError && error.status === 410 && syncToken) {
          // The sync token expired: start over with a full list (reconciled at its end, so the
          // member's busy time never disappears in between).
          await db.query('UPDATE calendar_connections SET sync_token = NULL WHERE user_id = $1 AND refresh_token_enc = $2', [userId, connection.refresh_token_enc]);
          syncToken = undefined;
          pageToken = undefined;
          seen = new Set();
          continue;
        }
        throw error;
      }
      if (!page) return; // the connection needs re-authorization
      for (const item of page.value.items ?? []) {
        seen?.add(item.id);
        await apply(deps, connection, companies, page.value.timeZone, item);
      }
      if (page.value.nextPageToken) {
        pageToken = page.value.nextPageToken;
        continue;
      }
      // Disconnected during a one-page list: nothing to reconcile, nothing to push.
      if (seen && (await lease.renew())) await afterFullList(deps, connection, [...seen], timeMin);
      await recordSuccess(db, connection, page.value.nextSyncToken ?? null);
      return;
    }
    // Never at its end: said on the connection (`wsctl calendar status`) rather than left silent. What
    // was read is kept; with no sync token stored, the next pull lists again.
    await recordError(db, connection, new Error(`La lista de Google no terminó en ${MAX_PULL_PAGES} páginas; se reintentará en la siguiente sincronización`));
  } catch (error) {
    await recordError(db, connection, error);
    if (error instanceof GoogleApiError && !error.retryable) return;
    throw error;
  }
}

export const calendarPull: JobDefinition<CalendarPullJob> = {
  queue: CALENDAR_PULL,
  work: { batchSize: 1 },
  async handler(deps, jobs: Job<CalendarPullJob>[]) {
    for (const job of jobs) await pull(deps, job.data.user_id);
  },
};

/**
 * Every 5 minutes: one pull per active connection (a member's pull already waiting is not queued twice).
 * A connection of a person who has left the service (one a release before endConnectionOfLeaver left
 * behind) is ended first, its token revoked at Google, never pulled.
 */
export const calendarPullSchedule: JobDefinition<HousekeepingJob> = {
  queue: CALENDAR_PULL_SCHEDULE,
  cron: '*/5 * * * *',
  async handler(deps) {
    const { rows: leavers } = await deps.pool.query<{ user_id: string }>(
      'SELECT c.user_id FROM calendar_connections c JOIN users u ON u.id = c.user_id WHERE u.deleted_at IS NOT NULL',
    );
    for (const { user_id } of leavers) await transaction(deps.pool, (db) => endConnectionOfLeaver(db, deps.jobs, user_id));
    if (!deps.config.google) return;
    const { rows } = await deps.pool.query<{ user_id: string }>(
      `SELECT c.user_id FROM calendar_connections c JOIN users u ON u.id = c.user_id AND u.deleted_at IS NULL WHERE c.status = 'active'`,
    );
    for (const { user_id } of rows) await deps.jobs.send(deps.pool, CALENDAR_PULL, { user_id }, { singletonKey: user_id, singletonSeconds: 240 });
  },
};
