// A client for the part of Google Calendar API v3 the service uses, on
// undici: the OAuth token endpoint (authorization code and refresh-token
// grants), events insert / get / patch / delete (Meet links through
// conferenceData with conferenceDataVersion=1), and events list with paging
// and incremental sync tokens. Base URLs come from the configuration, so tests
// point the client at a local stand-in that speaks the same API
// (test/helpers/google-stand-in.ts).
import { request } from 'undici';

export type GoogleConfig = { apiUrl: string; tokenUrl: string; clientId: string; clientSecret: string; revokeUrl?: string };

export type GoogleEvent = {
  id: string;
  status?: 'confirmed' | 'tentative' | 'cancelled';
  summary?: string;
  /** null clears it (a PATCH); absent leaves it. */
  description?: string | null;
  location?: string | null;
  reminders?: { useDefault: boolean; overrides?: Array<{ method: 'popup' | 'email'; minutes: number }> };
  /** Ours carry `private.workspace_event_id`: how a pull tells our events from the member's. */
  extendedProperties?: { private?: Record<string, string>; shared?: Record<string, string> };
  /** One of `date` (all-day) and `dateTime`; null clears the other in a PATCH. */
  start?: { dateTime?: string | null; date?: string | null; timeZone?: string | null };
  end?: { dateTime?: string | null; date?: string | null; timeZone?: string | null };
  /** `self`: the calendar's owner among them, whose `responseStatus` says whether they go. */
  attendees?: Array<{ email: string; displayName?: string; self?: boolean; responseStatus?: 'needsAction' | 'declined' | 'tentative' | 'accepted' }>;
  transparency?: 'opaque' | 'transparent';
  hangoutLink?: string;
  conferenceData?: {
    createRequest?: { requestId: string; conferenceSolutionKey?: { type: string }; status?: { statusCode: 'pending' | 'success' | 'failure' } };
    entryPoints?: Array<{ entryPointType: string; uri: string }>;
  };
};

/** A page of events.list: `timeZone` is the calendar's, in which an all-day event's `date` is read. */
export type EventList = { items: GoogleEvent[]; nextPageToken?: string; nextSyncToken?: string; timeZone?: string };

/**
 * A failed call: `retryable` for rate limits and usage limits (429; 403
 * rateLimitExceeded, userRateLimitExceeded, quotaExceeded, dailyLimitExceeded:
 * they lift with time), server errors, and the token endpoint's
 * `invalid_client` (our client credentials refused: an operator's to fix,
 * not the event's fault); `reason` is Google's (`invalid_grant` from the
 * token endpoint: the refresh token is dead).
 */
export class GoogleApiError extends Error {
  readonly status: number;
  readonly reason: string | null;
  readonly retryable: boolean;
  constructor(status: number, reason: string | null, message: string) {
    super(`Google Calendar ${status}${reason ? ` ${reason}` : ''}: ${message}`);
    this.name = 'GoogleApiError';
    this.status = status;
    this.reason = reason;
    this.retryable = status === 429 || status >= 500 || (status === 403 && RATE_REASONS.has(reason ?? '')) || reason === 'invalid_client';
  }
}

const RATE_REASONS = new Set(['rateLimitExceeded', 'userRateLimitExceeded', 'quotaExceeded', 'dailyLimitExceeded']);

/** Google's error bodies: `{error: {code, message, errors: [{reason}]}}` from the API, `{error, error_description}` from the token endpoint. */
function errorOf(status: number, body: any): GoogleApiError {
  if (body && typeof body.error === 'string') return new GoogleApiError(status, body.error, body.error_description ?? body.error);
  const reasons: string[] = (body?.error?.errors ?? []).map((e: { reason?: string }) => e.reason).filter(Boolean);
  const reason = reasons.find((r) => RATE_REASONS.has(r)) ?? reasons[0] ?? body?.error?.status ?? null;
  return new GoogleApiError(status, reason, body?.error?.message ?? `HTTP ${status}`);
}

/** The scope a connection needs: the events of the member's calendars (asked for by `wsctl calendar connect`). */
export const GOOGLE_EVENTS_SCOPE = 'https://www.googleapis.com/auth/calendar.events';
/** Scopes that cover it: itself, or the whole calendar. */
const COVERING_SCOPES = new Set([GOOGLE_EVENTS_SCOPE, 'https://www.googleapis.com/auth/calendar']);

function scopesOf(scope: unknown): string[] | null {
  return typeof scope === 'string' ? scope.split(' ').filter(Boolean) : null;
}

/**
 * Whether a grant lets the sync read and write events. Google's consent screen lets a person untick a
 * scope (granular consent), and an app must check what was granted: a grant without it connects, then
 * every call is 403. An answer that says nothing of its scopes is taken as covering (the calls will tell).
 */
export function coversEvents(scopes: string[] | null): boolean {
  return scopes === null || scopes.some((s) => COVERING_SCOPES.has(s));
}

export class GoogleCalendarClient {
  private readonly config: GoogleConfig;
  private readonly timeoutMs: number;

  constructor(config: GoogleConfig, options: { timeoutMs?: number } = {}) {
    this.config = config;
    this.timeoutMs = options.timeoutMs ?? 15_000;
  }

  private async call<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, options: { token?: string; json?: unknown; form?: Record<string, string> }): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    let body: string | undefined;
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    }
    if (options.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(options.form).toString();
    }
    let res;
    try {
      res = await request(url, { method, headers, body, headersTimeout: this.timeoutMs, bodyTimeout: this.timeoutMs });
    } catch (error) {
      // Connection refused, reset, timeout: worth another try later.
      throw new GoogleApiError(503, 'network', (error as Error).message);
    }
    const text = await res.body.text();
    const parsed = text ? (() => { try { return JSON.parse(text); } catch { return null; } })() : null;
    if (res.statusCode >= 400) throw errorOf(res.statusCode, parsed);
    return parsed as T;
  }

  private eventsUrl(calendarId: string, path = '', query: Record<string, string | undefined> = {}): string {
    const url = new URL(`${this.config.apiUrl}/calendars/${encodeURIComponent(calendarId)}/events${path}`);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, v);
    return url.toString();
  }

  /**
   * An access token from a refresh token (refresh-token grant), and the scopes its grant covers (Google's
   * `scope`, space-separated; null when an answer leaves it out).
   */
  async refreshAccessToken(refreshToken: string): Promise<{ accessToken: string; expiresIn: number; scopes: string[] | null }> {
    const body = await this.call<{ access_token: string; expires_in: number; scope?: string }>('POST', this.config.tokenUrl, {
      form: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: this.config.clientId, client_secret: this.config.clientSecret },
    });
    return { accessToken: body.access_token, expiresIn: body.expires_in ?? 3600, scopes: scopesOf(body.scope) };
  }

  /** The refresh token from an authorization code (the consent callback), and the scopes the person granted. */
  async exchangeCode(code: string, redirectUri: string): Promise<{ refreshToken: string | null; accessToken: string; scopes: string[] | null }> {
    const body = await this.call<{ access_token: string; refresh_token?: string; scope?: string }>('POST', this.config.tokenUrl, {
      form: { grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: this.config.clientId, client_secret: this.config.clientSecret },
    });
    return { refreshToken: body.refresh_token ?? null, accessToken: body.access_token, scopes: scopesOf(body.scope) };
  }

  /** Revokes a refresh token at Google (and the access tokens minted from it): a disconnect ends the grant there too. */
  async revokeToken(refreshToken: string): Promise<void> {
    await this.call('POST', this.config.revokeUrl ?? 'https://oauth2.googleapis.com/revoke', { form: { token: refreshToken } });
  }

  insertEvent(token: string, calendarId: string, event: GoogleEvent): Promise<GoogleEvent> {
    return this.call('POST', this.eventsUrl(calendarId, '', { conferenceDataVersion: '1', sendUpdates: 'none' }), { token, json: event });
  }

  patchEvent(token: string, calendarId: string, eventId: string, patch: Partial<GoogleEvent>): Promise<GoogleEvent> {
    return this.call('PATCH', this.eventsUrl(calendarId, `/${encodeURIComponent(eventId)}`, { conferenceDataVersion: '1', sendUpdates: 'none' }), { token, json: patch });
  }

  getEvent(token: string, calendarId: string, eventId: string): Promise<GoogleEvent> {
    return this.call('GET', this.eventsUrl(calendarId, `/${encodeURIComponent(eventId)}`), { token });
  }

  async deleteEvent(token: string, calendarId: string, eventId: string): Promise<void> {
    await this.call('DELETE', this.eventsUrl(calendarId, `/${encodeURIComponent(eventId)}`, { sendUpdates: 'none' }), { token });
  }

  /**
   * One page of events: incremental from `syncToken`, or a full list from `timeMin`. A dead sync token
   * is 410. An incremental request repeats the full list's parameters but `timeMin` (Google refuses it
   * with a sync token); deleted events come with a sync token without `showDeleted`.
   */
  listEvents(token: string, calendarId: string, options: { syncToken?: string; pageToken?: string; timeMin?: string }): Promise<EventList> {
    return this.call('GET', this.eventsUrl(calendarId, '', {
      syncToken: options.syncToken,
      pageToken: options.pageToken,
      timeMin: options.syncToken ? undefined : options.timeMin,
      singleEvents: 'true',
      maxResults: '250',
    }), { token });
  }
}

/** The Meet link of an event once its conference exists; null while pending or without one. */
export function meetUrlOf(event: GoogleEvent): string | null {
  const video = event.conferenceData?.entryPoints?.find((e) => e.entryPointType === 'video');
  return video?.uri ?? event.hangoutLink ?? null;
}

export function conferencePending(event: GoogleEvent): boolean {
  return event.conferenceData?.createRequest?.status?.statusCode === 'pending';
}
