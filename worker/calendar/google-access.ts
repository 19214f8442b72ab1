// Access to a member's Google Calendar from the worker: the client for the
// configured endpoints, and an access token from the member's sealed refresh
// token (cached per process until shortly before it expires, or until the
// connection is stored again). A dead refresh
// token (`invalid_grant`) marks the connection `needs_reauthorization`, and
// the caller gets null: nothing is retried until an operator reconnects.
import type { Queryable } from '../../db/pool.ts';
import type { Config } from '../../lib/config.ts';
import { GoogleApiError, GoogleCalendarClient } from '../../lib/google-calendar.ts';
import { log, logError } from '../../lib/log.ts';
import { open } from '../../lib/secret-box.ts';

export type Connection = { user_id: string; calendar_id: string; refresh_token_enc: string; status: string; sync_token: string | null };

const clients = new Map<string, GoogleCalendarClient>();
/**
 * Access tokens by member, each with the sealed refresh token it was minted from: a connection stored
 * again (an operator's reconnect, another Google account) has another sealed token, so the cached
 * access token of the old one is never used for it, in this worker or in any other.
 */
const tokens = new Map<string, { token: string; until: number; from: string }>();

export function googleClient(config: Config): GoogleCalendarClient | null {
  if (!config.google) return null;
  const key = JSON.stringify(config.google);
  let client = clients.get(key);
  if (!client) clients.set(key, (client = new GoogleCalendarClient(config.google)));
  return client;
}

export async function activeConnection(db: Queryable, userId: string): Promise<Connection | null> {
  const { rows } = await db.query<Connection>(`SELECT * FROM calendar_connections WHERE user_id = $1 AND status = 'active'`, [userId]);
  return rows[0] ?? null;
}

/**
 * The updates below touch the connection a job ran with (its sealed refresh token): one replaced
 * meanwhile (`wsctl calendar connect` again, another token) or removed is another connection, which an
 * old job's outcome does not describe (its sync token, its error, a refused token).
 */
const SAME_CONNECTION = 'user_id = $1 AND refresh_token_enc = $2';

export async function recordError(db: Queryable, connection: Connection, error: unknown): Promise<void> {
  log('calendar.sync_failed', { user_id: connection.user_id, error: String((error as Error)?.message ?? error) });
  await db.query(`UPDATE calendar_connections SET last_error = $3, last_error_at = now(), updated_at = now() WHERE ${SAME_CONNECTION}`, [
    connection.user_id,
    connection.refresh_token_enc,
    String((error as Error)?.message ?? error).slice(0, 500),
  ]);
}

/**
 * A push or a pull went through: the connection is healthy, so the error of an earlier attempt (a
 * retried 429 or 5xx, or a refusal of another event, which the log keeps) no longer describes it.
 * A pull that listed to the end also stores its sync token. Only an active connection: one marked
 * needs_reauthorization meanwhile keeps the reason it was marked.
 */
export async function recordSuccess(db: Queryable, connection: Connection, syncToken?: string | null): Promise<void> {
  await db.query(
    `UPDATE calendar_connections SET last_synced_at = now(), last_error = NULL, last_error_at = NULL, updated_at = now(),
            sync_token = CASE WHEN $3 THEN $4 ELSE sync_token END
      WHERE ${SAME_CONNECTION} AND status = 'active'`,
    [connection.user_id, connection.refresh_token_enc, syncToken !== undefined, syncToken ?? null],
  );
}

/** An access token for the connection; null (and the connection marked) when Google refuses the refresh token for good. */
export async function accessToken(db: Queryable, config: Config, client: GoogleCalendarClient, connection: Connection, fresh = false): Promise<string | null> {
  const cached = tokens.get(connection.user_id);
  if (!fresh && cached && cached.from === connection.refresh_token_enc && cached.until > Date.now()) return cached.token;
  const refreshToken = open(config.encryptionKey, connection.refresh_token_enc);
  if (refreshToken === null) {
    await markNeedsReauthorization(db, connection, 'el token guardado no se puede descifrar con ENCRYPTION_KEY');
    return null;
  }
  try {
    const { accessToken: token, expiresIn } = await client.refreshAccessToken(refreshToken);
    tokens.set(connection.user_id, { token, until: Date.now() + Math.max(0, expiresIn - 60) * 1000, from: connection.refresh_token_enc });
    return token;
  } catch (error) {
    if (error instanceof GoogleApiError && (error.reason === 'invalid_grant' || error.reason === 'unauthorized_client')) {
      await markNeedsReauthorization(db, connection, error.message);
      return null;
    }
    throw error;
  }
}

async function markNeedsReauthorization(db: Queryable, connection: Connection, why: string): Promise<void> {
  tokens.delete(connection.user_id);
  const { rowCount } = await db.query(
    `UPDATE calendar_connections SET status = 'needs_reauthorization', last_error = $3, last_error_at = now(), updated_at = now() WHERE ${SAME_CONNECTION}`,
    [connection.user_id, connection.refresh_token_enc, why.slice(0, 500)],
  );
  // A member disconnected meanwhile (the operator revoked the token, which is why Google refused it), or
  // connected again with another token, needs nothing: the refused token is no longer theirs.
  if (rowCount) logError('calendar.needs_reauthorization', new Error(why), { user_id: connection.user_id });
}

/**
 * Runs a call with a token, refreshing once on 401 (a token revoked or expired
 * early). Null when the connection cannot get a token.
 */
export async function withToken<T>(db: Queryable, config: Config, client: GoogleCalendarClient, connection: Connection, call: (token: string) => Promise<T>): Promise<{ value: T } | null> {
  const token = await accessToken(db, config, client, connection);
  if (!token) return null;
  try {
    return { value: await call(token) };
  } catch (error) {
    if (!(error instanceof GoogleApiError) || error.status !== 401) throw error;
    const again = await accessToken(db, config, client, connection, true);
    if (!again) return null;
    return { value: await call(again) };
  }
}
