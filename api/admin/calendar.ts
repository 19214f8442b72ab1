// Operators connect a member's Google Calendar (`wsctl calendar connect |
// status | disconnect`, DESIGN.md CLI contract): without a refresh token the
// answer is Google's consent URL (scope calendar.events, offline access, a
// signed state naming the member) and the callback
// (api/integrations/google.ts) stores the token (db/calendar-sync.ts); with `--refresh-token` the
// token is checked against Google's token endpoint and stored at once.
// Refresh tokens are sealed with ENCRYPTION_KEY and never shown again.
import { randomBytes } from 'node:crypto';
import { TRPCError } from '@trpc/server';
import type { JobSender } from '../../db/job-sender.ts';
import { transaction, type Pool, type Queryable } from '../../db/pool.ts';
import type { Config } from '../../lib/config.ts';
import { coversEvents, GoogleApiError, GoogleCalendarClient, GOOGLE_EVENTS_SCOPE } from '../../lib/google-calendar.ts';
import { requireUser } from './exists.ts';
import { signState } from '../../lib/signed-state.ts';
import { log } from '../../lib/log.ts';
import { open } from '../../lib/secret-box.ts';
import { readConnection, serializeConnection, storeConnection } from '../../db/calendar-sync.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { callbackUrl } from '../integrations/google.ts';

const STATE_TTL_SECONDS = 3600;

function requireGoogle(config: Config) {
  // The deployment's configuration, not the operator's input: PRECONDITION_FAILED (wsctl: "not available on …").
  if (!config.google) throw new TRPCError({ code: 'PRECONDITION_FAILED', message: 'Google Calendar no está configurado: define GOOGLE_CLIENT_ID y GOOGLE_CLIENT_SECRET' });
  return config.google;
}

export async function calendarStatus(pool: Queryable, userId: string) {
  await requireUser(pool, userId);
  return readConnection(pool, userId);
}

export async function connectCalendar(pool: Pool, jobs: JobSender, config: Config, input: { userId: string; refreshToken?: string; calendarId?: string }) {
  await requireUser(pool, input.userId);
  const google = requireGoogle(config);
  if (!input.refreshToken) {
    const url = new URL(google.authUrl);
    url.search = new URLSearchParams({
      client_id: google.clientId,
      redirect_uri: callbackUrl(config),
      response_type: 'code',
      scope: GOOGLE_EVENTS_SCOPE,
      access_type: 'offline',
      prompt: 'consent',
      include_granted_scopes: 'true',
      // The nonce makes the link single-use (api/integrations/google.ts, table used_consent_states).
      state: signState(config.encryptionKey, { user: input.userId, calendar: input.calendarId ?? 'primary', nonce: randomBytes(16).toString('base64url') }, STATE_TTL_SECONDS),
    }).toString();
    return { user_id: input.userId, consent_url: url.toString(), expires_in: STATE_TTL_SECONDS };
  }
  let granted: string[] | null;
  try {
    granted = (await new GoogleCalendarClient(google).refreshAccessToken(input.refreshToken)).scopes;
  } catch (error) {
    if (error instanceof GoogleApiError && !error.retryable) throw validationFailed({ refresh_token: [`Google lo rechazó (${error.reason ?? error.status})`] });
    throw new ApiError('service_unavailable', 'Google no respondió; intenta de nuevo.');
  }
  if (!coversEvents(granted)) {
    throw validationFailed({ refresh_token: [`su permiso no cubre los eventos del calendario (${GOOGLE_EVENTS_SCOPE}); tiene: ${granted!.join(' ') || 'ninguno'}`] });
  }
  return storeConnection(pool, jobs, config.encryptionKey, input.userId, input.refreshToken, input.calendarId);
}

/** Forgets the token and the events imported from Google (they would no longer stay in sync). */
/**
 * Forgets the connection and its imported busy time, then revokes the refresh token at Google, so the
 * grant ends there too (Google's account page no longer lists the service). The revocation is best
 * effort: Google out of reach leaves the token to expire unused, logged as `calendar.revoke_failed`.
 */
export async function disconnectCalendar(pool: Pool, config: Config, userId: string) {
  await requireUser(pool, userId);
  // Both or neither: a failure between them would leave a retry nothing to revoke, or busy time behind.
  // The connection first: a pull importing at this moment holds it (KEY SHARE, worker/jobs/calendar-pull.ts)
  // until its row is in, so the events deleted next include that row, and no later import finds the connection.
  const rows = await transaction(pool, async (client) => {
    const deleted = (await client.query<{ refresh_token_enc: string }>('DELETE FROM calendar_connections WHERE user_id = $1 RETURNING refresh_token_enc', [userId])).rows;
    await client.query(`DELETE FROM calendar_events WHERE user_id = $1 AND source = 'google'`, [userId]);
    return deleted;
  });
  const refreshToken = rows[0] ? open(config.encryptionKey, rows[0].refresh_token_enc) : null;
  if (refreshToken && config.google) {
    await new GoogleCalendarClient(config.google, { timeoutMs: 10_000 }).revokeToken(refreshToken).catch((error: Error) => {
      log('calendar.revoke_failed', { user_id: userId, error: error.message });
    });
  }
  return serializeConnection(undefined, userId);
}
