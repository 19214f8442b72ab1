// A local stand-in for the part of Google's APIs the calendar sync uses,
// over real HTTP: the OAuth token endpoint (refresh-token and
// authorization-code grants, `invalid_grant`), Calendar API v3 events
// insert / get / patch (Google's merge semantics, and its refusal of a start
// or end with both a date and a dateTime) / delete on one calendar, events list with paging and
// sync tokens (410 when a token is no longer valid), Meet conferences that
// stay `pending` for a few reads and then succeed, and injectable failures
// (401, 403 rateLimitExceeded, 410, 429, 500) with Google's error bodies.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Event = Record<string, any> & { id: string; status: string; updated: string };
/** An injected failure; `refreshToken` narrows a /token one to the exchanges of that refresh token (other refreshes run meanwhile). */
type Failure = { method?: string; path?: RegExp; refreshToken?: string; status: number; reason?: string; times: number };

export type GoogleStandIn = Awaited<ReturnType<typeof startGoogleStandIn>>;

const isObject = (value: unknown): value is Record<string, any> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Google's patch semantics ("Performance tips", Patch): the fields sent replace those stored, objects
 * are merged field by field, arrays are replaced whole, and `null` clears a field. So an event's `start`
 * patched with `{dateTime}` keeps a stored `date` unless the patch clears it with `date: null`.
 */
function mergePatch(target: Record<string, any>, patch: Record<string, any>): void {
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete target[key];
    else if (isObject(value) && isObject(target[key])) mergePatch(target[key], value);
    else target[key] = isObject(value) ? withoutNulls(value) : value;
  }
}

/** An insert's body as Google keeps it: a `null` field is no field. */
function withoutNulls(value: Record<string, any>): Record<string, any> {
  const kept: Record<string, any> = {};
  mergePatch(kept, value);
  return kept;
}

/** Google refuses an event whose start or end has both a date and a dateTime, or neither. */
function invalidTimes(event: Record<string, any>): string | null {
  for (const side of ['start', 'end']) {
    const when = event[side];
    if (!isObject(when) || ('date' in when) === ('dateTime' in when)) return `Invalid ${side} time.`;
  }
  return null;
}

export async function startGoogleStandIn(options: { meetPendingReads?: number; pageSize?: number; timeZone?: string } = {}) {
  const refreshTokens = new Set<string>();
  /** What each refresh token's grant covers, as Google's token answers say in `scope` (granular consent: a person may untick a scope). */
  const grantedScopes = new Map<string, string>();
  const scopeOf = (refreshToken: string) => grantedScopes.get(refreshToken) ?? 'https://www.googleapis.com/auth/calendar.events';
  const revoked: string[] = [];
  const codes = new Map<string, string>();
  const accessTokens = new Set<string>();
  /** The refresh token each access token was minted from. */
  const mintedFrom = new Map<string, string>();
  const events = new Map<string, Event>();
  /** Every change, in order; a sync token is a position in it. */
  const changes: string[] = [];
  const validSyncTokens = new Set<string>();
  const failures: Failure[] = [];
  const requests: Array<{ method: string; path: string; query: URLSearchParams; body: any; auth: string | undefined }> = [];
  const pendingReads = new Map<string, number>();
  const holds: Array<{ method: string; path: RegExp; refreshToken?: string; arrived: () => void; released: Promise<void> }> = [];
  let issued = 0;
  let calendarZone: string | undefined = options.timeZone ?? 'America/Mexico_City';
  /** Every list page names a next page, past the end too (a list that never ends). */
  let endlessLists = false;

  const googleError = (status: number, reason: string, message: string) => ({ error: { code: status, message, errors: [{ domain: 'global', reason, message }], status: reason } });
  const send = (res: ServerResponse, status: number, body?: unknown) => {
    res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json; charset=UTF-8' });
    res.end(body === undefined ? undefined : JSON.stringify(body));
  };
  const touch = (event: Event) => {
    event.updated = new Date().toISOString();
    changes.push(event.id);
  };
  const withConference = (event: Event) => {
    const request = event.conferenceData?.createRequest;
    if (!request || request.status?.statusCode === 'success') return event;
    const left = pendingReads.get(event.id) ?? options.meetPendingReads ?? 2;
    if (left > 0) {
      pendingReads.set(event.id, left - 1);
      event.conferenceData = { createRequest: { ...request, status: { statusCode: 'pending' } } };
    } else {
      const uri = `https://meet.google.com/${event.id.slice(0, 3)}-${event.id.slice(3, 7)}-${event.id.slice(7, 10)}`;
      event.conferenceData = { createRequest: { ...request, status: { statusCode: 'success' } }, entryPoints: [{ entryPointType: 'video', uri }] };
      event.hangoutLink = uri;
    }
    return event;
  };

  async function readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const text = await readBody(req);
    const isForm = (req.headers['content-type'] ?? '').includes('x-www-form-urlencoded');
    const body = text ? (isForm ? Object.fromEntries(new URLSearchParams(text)) : JSON.parse(text)) : null;
    requests.push({ method: req.method!, path: url.pathname, query: url.searchParams, body, auth: req.headers.authorization });
    const hold = holds.findIndex(
      (h) => h.method === req.method && h.path.test(url.pathname) && (!h.refreshToken || mintedFrom.get(req.headers.authorization?.replace(/^Bearer /, '') ?? '') === h.refreshToken),
    );
    if (hold >= 0) {
      const [held] = holds.splice(hold, 1);
      held!.arrived();
      await held!.released;
    }
    const failure = failures.find(
      (f) => f.times > 0 && (!f.method || f.method === req.method) && (!f.path || f.path.test(url.pathname)) && (!f.refreshToken || body?.refresh_token === f.refreshToken),
    );
    if (failure) {
      failure.times--;
      if (url.pathname === '/token') return send(res, failure.status, { error: failure.reason ?? 'server_error', error_description: 'injected' });
      return send(res, failure.status, googleError(failure.status, failure.reason ?? 'backendError', 'injected failure'));
    }

    // Google's revocation endpoint: a refresh token (or an access token) in a form; the tokens minted from it die too.
    if (url.pathname === '/revoke' && req.method === 'POST') {
      const token = body.token;
      if (!refreshTokens.has(token) && !accessTokens.has(token)) return send(res, 400, { error: 'invalid_token', error_description: 'Token expired or revoked' });
      revoked.push(token);
      refreshTokens.delete(token);
      accessTokens.delete(token);
      for (const [access, from] of mintedFrom) if (from === token) accessTokens.delete(access);
      return send(res, 200, {});
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      if (body.client_id !== 'stand-in-client' || body.client_secret !== 'stand-in-secret') return send(res, 401, { error: 'invalid_client', error_description: 'Unauthorized' });
      if (body.grant_type === 'refresh_token') {
        if (!refreshTokens.has(body.refresh_token)) return send(res, 400, { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' });
      } else if (body.grant_type === 'authorization_code') {
        const refresh = codes.get(body.code);
        if (!refresh) return send(res, 400, { error: 'invalid_grant', error_description: 'Bad Request' });
        codes.delete(body.code);
        refreshTokens.add(refresh);
        const access = `ya29.stand-in-${++issued}`;
        accessTokens.add(access);
        mintedFrom.set(access, refresh);
        return send(res, 200, { access_token: access, expires_in: 3599, refresh_token: refresh, scope: scopeOf(refresh), token_type: 'Bearer' });
      } else return send(res, 400, { error: 'unsupported_grant_type' });
      const access = `ya29.stand-in-${++issued}`;
      accessTokens.add(access);
      mintedFrom.set(access, body.refresh_token);
      return send(res, 200, { access_token: access, expires_in: 3599, scope: scopeOf(body.refresh_token), token_type: 'Bearer' });
    }

    const match = /^\/calendar\/v3\/calendars\/([^/]+)\/events(?:\/([^/]+))?$/.exec(url.pathname);
    if (!match) return send(res, 404, googleError(404, 'notFound', 'Not Found'));
    const token = req.headers.authorization?.replace(/^Bearer /, '');
    if (!token || !accessTokens.has(token)) return send(res, 401, googleError(401, 'authError', 'Invalid Credentials'));
    const id = match[2] ? decodeURIComponent(match[2]) : undefined;

    if (!id && req.method === 'POST') {
      const eventId = body.id ?? `g${Math.random().toString(36).slice(2, 12)}`;
      if (events.has(eventId)) return send(res, 409, googleError(409, 'duplicate', 'The requested identifier already exists.'));
      const event: Event = { ...withoutNulls(body), id: eventId, status: 'confirmed', updated: '' };
      const invalid = invalidTimes(event);
      if (invalid) return send(res, 400, googleError(400, 'invalid', invalid));
      if (event.conferenceData?.createRequest && url.searchParams.get('conferenceDataVersion') === '1') {
        event.conferenceData.createRequest.status = { statusCode: 'pending' };
      } else delete event.conferenceData;
      events.set(eventId, event);
      touch(event);
      return send(res, 200, withConference(event));
    }
    if (!id && req.method === 'GET') {
      const syncToken = url.searchParams.get('syncToken');
      if (syncToken && !validSyncTokens.has(syncToken)) return send(res, 410, googleError(410, 'fullSyncRequired', 'Sync token is no longer valid, a full sync is required.'));
      const start = Number(url.searchParams.get('pageToken') ?? 0);
      let ids: string[];
      if (syncToken) {
        const from = Number(syncToken.replace('sync-', ''));
        ids = [...new Set(changes.slice(from))];
      } else {
        // A full list from timeMin: events ending after it (Google's lower bound on an event's end).
        const timeMin = url.searchParams.get('timeMin');
        const endsAfter = (e: any) => !timeMin || Date.parse(e.end?.dateTime ?? `${e.end?.date}T00:00:00Z`) > Date.parse(timeMin);
        ids = [...events.keys()].filter((k) => events.get(k)!.status !== 'cancelled' && endsAfter(events.get(k)!));
      }
      const size = options.pageSize ?? 2;
      const page = ids.slice(start, start + size).map((k) => events.get(k)!);
      const more = start + size < ids.length || endlessLists;
      // Every page names the calendar's time zone, as Google's does.
      const timeZone = calendarZone;
      if (more) return send(res, 200, { kind: 'calendar#events', timeZone, items: page, nextPageToken: String(start + size) });
      const next = `sync-${changes.length}`;
      validSyncTokens.add(next);
      return send(res, 200, { kind: 'calendar#events', timeZone, items: page, nextSyncToken: next });
    }
    const event = id ? events.get(id) : undefined;
    if (!event || event.status === 'cancelled') {
      const gone = event?.status === 'cancelled';
      return send(res, gone ? 410 : 404, googleError(gone ? 410 : 404, gone ? 'deleted' : 'notFound', gone ? 'Resource has been deleted' : 'Not Found'));
    }
    if (req.method === 'GET') return send(res, 200, withConference(event));
    if (req.method === 'PATCH') {
      const { conferenceData, ...rest } = body;
      const patched = structuredClone(event);
      mergePatch(patched, rest);
      const invalid = invalidTimes(patched);
      if (invalid) return send(res, 400, googleError(400, 'invalid', invalid));
      for (const key of Object.keys(event)) if (!(key in patched)) delete event[key];
      Object.assign(event, patched);
      if (conferenceData?.createRequest && !event.conferenceData) event.conferenceData = { createRequest: { ...conferenceData.createRequest, status: { statusCode: 'pending' } } };
      touch(event);
      return send(res, 200, withConference(event));
    }
    if (req.method === 'DELETE') {
      event.status = 'cancelled';
      touch(event);
      return send(res, 204);
    }
    return send(res, 405, googleError(405, 'methodNotAllowed', 'Method Not Allowed'));
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error) => send(res, 500, googleError(500, 'backendError', String(error))));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    /** Environment for the service: point the client here. */
    env: {
      GOOGLE_CLIENT_ID: 'stand-in-client',
      GOOGLE_CLIENT_SECRET: 'stand-in-secret',
      GOOGLE_API_URL: `${base}/calendar/v3`,
      GOOGLE_TOKEN_URL: `${base}/token`,
      GOOGLE_AUTH_URL: `${base}/auth`,
      GOOGLE_REVOKE_URL: `${base}/revoke`,
    },
    /** Tokens revoked through POST /revoke, in order. */
    revoked,
    events,
    requests,
    /** The refresh token an access token (as sent in `Authorization`) was minted from. */
    refreshTokenOf(authorization: string | undefined) {
      return mintedFrom.get(authorization?.replace(/^Bearer /, '') ?? '');
    },
    /** A refresh token Google accepts; `scope` is what its grant covers (calendar.events unless said). */
    addRefreshToken(token: string, scope?: string) {
      refreshTokens.add(token);
      if (scope !== undefined) grantedScopes.set(token, scope);
    },
    /** Google revokes it, and the access tokens minted from it (as Google's revocation does): refreshes answer invalid_grant, calls 401. */
    revokeRefreshToken(token: string) {
      refreshTokens.delete(token);
      for (const [access, from] of mintedFrom) if (from === token) accessTokens.delete(access);
    },
    /** Every access token issued so far stops working (the next call gets 401). */
    expireAccessTokens() {
      accessTokens.clear();
    },
    /** An authorization code the consent screen would hand out, exchanging for `refreshToken`. */
    addCode(code: string, refreshToken: string, scope?: string) {
      codes.set(code, refreshToken);
      if (scope !== undefined) grantedScopes.set(refreshToken, scope);
    },
    /** The next `times` matching requests fail with `status` (and Google's `reason`). */
    /**
     * The next matching request is held (read, not yet answered) until
     * `release()`: a call caught in flight. `arrived` resolves when it comes.
     * With `refreshToken`, only a call made with an access token minted from it (one member's).
     */
    hold(method: string, path: RegExp, refreshToken?: string) {
      let arrived!: () => void;
      let release!: () => void;
      const came = new Promise<void>((resolve) => (arrived = resolve));
      holds.push({ method, path, refreshToken, arrived, released: new Promise<void>((resolve) => (release = resolve)) });
      return { arrived: came, release };
    },
    fail(failure: Omit<Failure, 'times'> & { times?: number }) {
      failures.push({ times: 1, ...failure });
    },
    /** Sync tokens issued so far stop being valid (410 on the next incremental list). */
    invalidateSyncTokens() {
      validSyncTokens.clear();
    },
    /** Lists never end: every page names a next one (empty ones past the last event). */
    setEndlessLists(on: boolean) {
      endlessLists = on;
    },
    /** The calendar's time zone, named on every list page. */
    setTimeZone(zone: string | undefined) {
      calendarZone = zone;
    },
    /** An event created in Google by the member (not by us). */
    createExternal(event: Omit<Event, 'status' | 'updated'> & { status?: string }) {
      const stored = { status: 'confirmed', updated: '', ...event } as Event;
      events.set(stored.id, stored);
      touch(stored);
      return stored;
    },
    updateExternal(id: string, patch: Record<string, unknown>) {
      const event = events.get(id)!;
      Object.assign(event, patch);
      touch(event);
    },
    deleteExternal(id: string) {
      const event = events.get(id)!;
      event.status = 'cancelled';
      touch(event);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
