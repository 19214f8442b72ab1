// The outbound half of the Google Calendar sync, as the writes see it: an
// event of a host with an active connection gets a calendar-push job in the
// same transaction as its write (transactional outbox). An event that says
// `sync_to_google: false` is kept out of Google: if an earlier push put it
// there, it is deleted there. The worker (worker/jobs/calendar-push.ts) makes the
// call; the API write never waits for Google and never fails because of it.
// Also a member's connection: its sealed refresh token, stored by the consent
// callback (api/integrations/google.ts) or by `wsctl calendar connect`.
import { seal } from '../lib/secret-box.ts';
import type { JobSender } from './job-sender.ts';
import type { Queryable } from './pool.ts';
import { CALENDAR_PULL, CALENDAR_PUSH, CALENDAR_REVOKE } from './queues.ts';

export type ConnectionRow = {
  user_id: string;
  calendar_id: string;
  status: string;
  last_synced_at: Date | null;
  last_error: string | null;
  last_error_at: Date | null;
  connected_at: Date;
};

export function serializeConnection(row: ConnectionRow | undefined, userId: string) {
  // One shape either way: a script reads the same fields of a member never connected (all null).
  if (!row) {
    return { user_id: userId, connected: false as const, status: null, calendar_id: null, connected_at: null, last_synced_at: null, last_error: null, last_error_at: null };
  }
  return {
    user_id: row.user_id,
    connected: true as const,
    status: row.status as 'active' | 'needs_reauthorization',
    calendar_id: row.calendar_id,
    connected_at: row.connected_at.toISOString(),
    last_synced_at: row.last_synced_at?.toISOString() ?? null,
    last_error: row.last_error,
    last_error_at: row.last_error_at?.toISOString() ?? null,
  };
}

/**
 * Stores a (checked) refresh token, sealed with `encryptionKey`, as the member's active connection,
 * and queues its first pull at once (the full list, then the push of the member's upcoming events),
 * rather than at the next five-minute round; answers its status.
 */
export async function storeConnection(db: Queryable, jobs: JobSender, encryptionKey: string, userId: string, refreshToken: string, calendarId = 'primary') {
  await db.query(
    `INSERT INTO calendar_connections (user_id, calendar_id, refresh_token_enc) VALUES ($1, $2, $3)
     ON CONFLICT (user_id) DO UPDATE SET calendar_id = EXCLUDED.calendar_id, refresh_token_enc = EXCLUDED.refresh_token_enc,
            status = 'active', sync_token = NULL, last_error = NULL, last_error_at = NULL, connected_at = now(), updated_at = now(),
            pull_lease_until = NULL`,
    [userId, calendarId, seal(encryptionKey, refreshToken)],
  );
  await jobs.send(db, CALENDAR_PULL, { user_id: userId });
  return readConnection(db, userId);
}

/**
 * Ends the Google connection of a person who leaves the service (removed from their last company), in
 * the removal's transaction: nothing is pulled or pushed for them from its commit on, and their refresh
 * token is revoked at Google by the worker (worker/jobs/calendar-revoke.ts), which retries while Google
 * is out of reach. A person still working for another company keeps their connection (it is theirs).
 */
export async function endConnectionOfLeaver(db: Queryable, jobs: JobSender, userId: string): Promise<void> {
  const { rows } = await db.query<{ refresh_token_enc: string }>('DELETE FROM calendar_connections WHERE user_id = $1 RETURNING refresh_token_enc', [userId]);
  await db.query(`DELETE FROM calendar_events WHERE user_id = $1 AND source = 'google'`, [userId]);
  if (rows[0]) await jobs.send(db, CALENDAR_REVOKE, { user_id: userId, refresh_token_enc: rows[0].refresh_token_enc });
}

/** A member's connection as operators read it (one shape whether connected or not). */
export async function readConnection(db: Queryable, userId: string) {
  const { rows } = await db.query<ConnectionRow>('SELECT * FROM calendar_connections WHERE user_id = $1', [userId]);
  return serializeConnection(rows[0], userId);
}

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
  // The host's own calendar, while the host is a member of the event's company: a person removed from a
  // company keeps their Google connection (it is theirs, other companies may use it), and what the
  // company edits afterwards in the events left behind no longer reaches it.
  const { rowCount } = await db.query(
    `SELECT 1 FROM calendar_connections c
      WHERE c.user_id = $1 AND c.status = 'active'
        AND EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = $1 AND m.company_id = $2)`,
    [event.user_id, event.company_id],
  );
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
