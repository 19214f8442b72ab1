// Google Calendar sync against a local stand-in that speaks Google's API over
// HTTP (test/helpers/google-stand-in.ts): the client's error handling, the
// operator's connect (consent URL and callback, or a refresh token), events
// and bookings pushed (Meet links through a pending conference, 401 → one
// refresh, rate limits and 5xx retried, a dead refresh token marking the
// connection without failing the API write), and the import of Google's
// events (paging, sync tokens, 410 → full resync) as read-only busy time.
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { after, before, describe, test } from 'node:test';
import { updateCompany } from '../api/admin/companies.ts';
import { CALENDAR_PULL, CALENDAR_PULL_SCHEDULE, CALENDAR_PUSH } from '../db/queues.ts';
import { MAX_PULL_PAGES } from '../worker/jobs/calendar-pull.ts';
import { GoogleApiError, GoogleCalendarClient } from '../lib/google-calendar.ts';
import { open } from '../lib/secret-box.ts';
import { startWorker, type Worker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { wsctl as runCli } from './helpers/cli.ts';
import { startGoogleStandIn, type GoogleStandIn } from './helpers/google-stand-in.ts';
import { waitFor } from './helpers/wait.ts';

describe('Google Calendar client against the stand-in', () => {
  let google: GoogleStandIn;
  let api: GoogleCalendarClient;
  before(async () => {
    google = await startGoogleStandIn({ pageSize: 2 });
    api = new GoogleCalendarClient({ apiUrl: google.env.GOOGLE_API_URL, tokenUrl: google.env.GOOGLE_TOKEN_URL, clientId: 'stand-in-client', clientSecret: 'stand-in-secret' });
  });
  after(() => google.close());

  test('token refresh, and Google refusing a refresh token is invalid_grant (not retryable)', async () => {
    google.addRefreshToken('rt-good');
    const { accessToken, expiresIn } = await api.refreshAccessToken('rt-good');
    assert.match(accessToken, /^ya29\./);
    assert.ok(expiresIn > 0);
    const refused = await api.refreshAccessToken('rt-unknown').catch((e) => e);
    assert.ok(refused instanceof GoogleApiError);
    assert.equal(refused.reason, 'invalid_grant');
    assert.equal(refused.retryable, false);
  });

  test('rate and usage limits and server errors are retryable, other refusals are not; a closed port and refused client credentials are retryable', async () => {
    google.addRefreshToken('rt-errors');
    const { accessToken } = await api.refreshAccessToken('rt-errors');
    for (const [status, reason, retryable] of [[429, 'rateLimitExceeded', true], [403, 'rateLimitExceeded', true], [403, 'userRateLimitExceeded', true], [403, 'quotaExceeded', true], [403, 'dailyLimitExceeded', true], [500, 'backendError', true], [403, 'forbidden', false], [400, 'invalid', false]] as const) {
      google.fail({ method: 'POST', path: /events$/, status, reason });
      const error = await api.insertEvent(accessToken, 'primary', { id: `e${status}${reason.length}`, summary: 'x' }).catch((e) => e);
      assert.ok(error instanceof GoogleApiError, `${status} ${reason}`);
      assert.equal(error.status, status);
      assert.equal(error.reason, reason);
      assert.equal(error.retryable, retryable, `${status} ${reason}`);
    }
    // Our client credentials refused (a rotated secret): the operator's to fix; the event waits.
    const badClient = new GoogleCalendarClient({ ...(api as any).config, clientSecret: 'wrong' });
    const refusedClient = await badClient.refreshAccessToken('rt-errors').catch((e) => e);
    assert.deepEqual([refusedClient.reason, refusedClient.retryable], ['invalid_client', true]);
    const offline = new GoogleCalendarClient({ apiUrl: 'http://127.0.0.1:9/calendar/v3', tokenUrl: 'http://127.0.0.1:9/token', clientId: 'x', clientSecret: 'y' });
    const error = await offline.refreshAccessToken('x').catch((e) => e);
    assert.equal(error.retryable, true);
  });

  test('events list pages, then hands out a sync token; a dead sync token is 410', async () => {
    google.addRefreshToken('rt-list');
    const { accessToken } = await api.refreshAccessToken('rt-list');
    for (let i = 0; i < 3; i++) google.createExternal({ id: `list${i}`, summary: `E${i}`, start: { dateTime: '2058-12-01T10:00:00Z' }, end: { dateTime: '2058-12-01T11:00:00Z' } });
    const first = await api.listEvents(accessToken, 'primary', { timeMin: '2026-01-01T00:00:00Z' });
    assert.ok(first.nextPageToken);
    assert.equal(first.nextSyncToken, undefined);
    let page = first;
    while (page.nextPageToken) page = await api.listEvents(accessToken, 'primary', { pageToken: page.nextPageToken });
    assert.ok(page.nextSyncToken);
    google.invalidateSyncTokens();
    const gone = await api.listEvents(accessToken, 'primary', { syncToken: page.nextSyncToken }).catch((e) => e);
    assert.equal(gone.status, 410);
  });
});

describe('calendar sync end to end', () => {
  let google: GoogleStandIn;
  let app: TestApp;
  let tenant: Tenant;
  let other: Tenant;
  let worker: Worker;
  let api: ReturnType<typeof client>;

  const connect = async (userId: string, token: string) => {
    google.addRefreshToken(token);
    const res = await runCli(app, ['calendar', 'connect', '--user', userId, '--refresh-token', token, '--json']);
    assert.equal(res.code, 0, res.stderr);
    return JSON.parse(res.stdout);
  };
  const eventRow = async (id: string) => (await app.pool.query('SELECT * FROM calendar_events WHERE id = $1', [id])).rows[0];
  const newEvent = async (over: Record<string, unknown> = {}) => {
    const res = await api.post('/calendar/events', { data: { user_id: tenant.ownerId, title: 'Junta', starts_at: '2058-12-03T16:00:00Z', ends_at: '2058-12-03T17:00:00Z', ...over } });
    assert.equal(res.status, 201, res.text);
    return res.body.data;
  };
  const pull = (userId: string) => app.deps.jobs.send(app.pool, CALENDAR_PULL, { user_id: userId });
  /** A member's pull jobs not yet ended (queued, running or waiting to retry). */
  const openPulls = async (userId: string): Promise<number> =>
    (await app.pool.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->>'user_id' = $2 AND state NOT IN ('completed', 'failed', 'cancelled')`, [CALENDAR_PULL.name, userId])).rows[0].n;

  before(async () => {
    google = await startGoogleStandIn({ meetPendingReads: 2, pageSize: 2 });
    app = await startTestApp(google.env);
    tenant = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    other = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    api = client(app.baseUrl, tenant.key);
    worker = await startWorker(app.config, app.pool, app.databaseUrl);
    await connect(tenant.ownerId, 'rt-owner');
  });
  after(async () => {
    await worker.stop();
    await app.close();
    await google.close();
  });

  test('connect without a token prints the consent URL; the callback stores the token; a forged state is refused', async () => {
    const member = await seedTenant(app.pool);
    const res = await runCli(app, ['calendar', 'connect', '--user', member.ownerId, '--json']);
    assert.equal(res.code, 0, res.stderr);
    const { consent_url } = JSON.parse(res.stdout);
    const url = new URL(consent_url);
    assert.equal(url.origin + url.pathname, google.env.GOOGLE_AUTH_URL);
    assert.equal(url.searchParams.get('scope'), 'https://www.googleapis.com/auth/calendar.events');
    assert.equal(url.searchParams.get('access_type'), 'offline');
    assert.equal(url.searchParams.get('redirect_uri'), `${app.url}/integrations/google/callback`);
    const state = url.searchParams.get('state')!;
    google.addCode('code-1', 'rt-from-consent');
    const forged = await fetch(`${app.url}/integrations/google/callback?code=code-1&state=${state.slice(0, -2)}xx`);
    assert.equal(forged.status, 400);
    const done = await fetch(`${app.url}/integrations/google/callback?code=code-1&state=${encodeURIComponent(state)}`);
    assert.equal(done.status, 200, await done.text());
    // The link works once: replayed (with a code of someone else's Google account), it is refused and the connection stays.
    google.addCode('code-2', 'rt-of-someone-else');
    const replayed = await fetch(`${app.url}/integrations/google/callback?code=code-2&state=${encodeURIComponent(state)}`);
    assert.equal(replayed.status, 400);
    assert.match(await replayed.text(), /Liga ya usada/);
    const status = JSON.parse((await runCli(app, ['calendar', 'status', '--user', member.ownerId, '--json'])).stdout);
    assert.equal(status.status, 'active');
    // The stored token is sealed, not readable in the database; it is still the first one.
    const { rows } = await app.pool.query('SELECT refresh_token_enc FROM calendar_connections WHERE user_id = $1', [member.ownerId]);
    assert.ok(!rows[0].refresh_token_enc.includes('rt-from-consent'));
    assert.equal(open(app.config.encryptionKey, rows[0].refresh_token_enc), 'rt-from-consent');
    // A refresh token Google refuses is not stored.
    const refused = await runCli(app, ['calendar', 'connect', '--user', member.ownerId, '--refresh-token', 'rt-nobody-knows', '--json']);
    assert.notEqual(refused.code, 0);
    // Google out of reach is an outage to retry (tRPC SERVICE_UNAVAILABLE, HTTP 503), not a server error of ours.
    google.addRefreshToken('rt-during-outage');
    google.fail({ method: 'POST', path: /\/token$/, refreshToken: 'rt-during-outage', status: 503 });
    const outage = await runCli(app, ['calendar', 'connect', '--user', member.ownerId, '--refresh-token', 'rt-during-outage', '--json']);
    assert.notEqual(outage.code, 0);
    assert.match(outage.stderr, /^error: \S+ is unavailable: Google no respondió; intenta de nuevo\.\n$/);
    const disconnected = JSON.parse((await runCli(app, ['calendar', 'disconnect', '--user', member.ownerId, '--json'])).stdout);
    assert.equal(disconnected.connected, false);
    // The grant ends at Google too: the refresh token is revoked there, and no longer refreshes.
    assert.ok(google.revoked.includes('rt-from-consent'), JSON.stringify(google.revoked));
    const dead = await new GoogleCalendarClient({ ...app.config.google!, revokeUrl: undefined }).refreshAccessToken('rt-from-consent').catch((e) => e);
    assert.equal(dead.reason, 'invalid_grant');
  });

  test('a grant without the calendar permission (unticked on Google\'s consent screen) does not connect: the page or wsctl says so', async () => {
    const member = await seedTenant(app.pool);
    const status = async () => JSON.parse((await runCli(app, ['calendar', 'status', '--user', member.ownerId, '--json'])).stdout);
    const { consent_url } = JSON.parse((await runCli(app, ['calendar', 'connect', '--user', member.ownerId, '--json'])).stdout);
    const state = new URL(consent_url).searchParams.get('state')!;
    google.addCode('code-no-calendar', 'rt-no-calendar', 'openid https://www.googleapis.com/auth/userinfo.email');
    const refused = await fetch(`${app.url}/integrations/google/callback?code=code-no-calendar&state=${encodeURIComponent(state)}`);
    assert.equal(refused.status, 400);
    assert.match(await refused.text(), /deja marcado ese permiso/);
    assert.equal((await status()).connected, false);
    await waitFor(() => google.revoked.includes('rt-no-calendar'), 20_000, 'the useless grant revoked');
    // The same link, opened again and the permission kept, connects.
    google.addCode('code-with-calendar', 'rt-with-calendar');
    assert.equal((await fetch(`${app.url}/integrations/google/callback?code=code-with-calendar&state=${encodeURIComponent(state)}`)).status, 200);
    assert.equal((await status()).status, 'active');
    // An operator's refresh token is checked the same way; the whole-calendar scope covers events.
    google.addRefreshToken('rt-email-only', 'openid https://www.googleapis.com/auth/userinfo.email');
    const cli = await runCli(app, ['calendar', 'connect', '--user', member.ownerId, '--refresh-token', 'rt-email-only', '--json']);
    assert.notEqual(cli.code, 0);
    assert.match(cli.stderr, /calendar\.events/);
    google.addRefreshToken('rt-whole-calendar', 'https://www.googleapis.com/auth/calendar');
    assert.equal((await runCli(app, ['calendar', 'connect', '--user', member.ownerId, '--refresh-token', 'rt-whole-calendar', '--json'])).code, 0);
    // Connected, a new link with the permission unticked is refused but not revoked: Google ends a whole grant
    // on a revoke, and merges the new one into the person's, so the working connection would end with it.
    const again = new URL(JSON.parse((await runCli(app, ['calendar', 'connect', '--user', member.ownerId, '--json'])).stdout).consent_url).searchParams.get('state')!;
    google.addCode('code-unticked-again', 'rt-unticked-again', 'openid https://www.googleapis.com/auth/userinfo.email');
    const refusedAgain = await fetch(`${app.url}/integrations/google/callback?code=code-unticked-again&state=${encodeURIComponent(again)}`);
    assert.equal(refusedAgain.status, 400);
    assert.ok(!google.revoked.includes('rt-unticked-again'), 'the callback answered after any revoke it makes: none was made');
    assert.equal((await status()).status, 'active');
  });

  test('a consent link of a person removed from the service since connects nothing: the page says so and the token Google gave is revoked', async () => {
    const t = await seedTenant(app.pool);
    const own = client(app.baseUrl, t.key);
    const leaver = (await own.post('/users', { data: { first_name: 'Se va', email: `se-va-${Date.now()}@example.com` } })).body.data;
    const { consent_url } = JSON.parse((await runCli(app, ['calendar', 'connect', '--user', leaver.id, '--json'])).stdout);
    assert.equal((await own.delete(`/users/${leaver.id}`)).status, 204, 'in no company now: gone from the service');
    google.addCode('code-of-leaver', 'rt-of-leaver');
    const state = new URL(consent_url).searchParams.get('state')!;
    const back = await fetch(`${app.url}/integrations/google/callback?code=code-of-leaver&state=${encodeURIComponent(state)}`);
    assert.equal(back.status, 400);
    assert.match(await back.text(), /ya no está en el servicio/);
    assert.equal((await app.pool.query('SELECT 1 FROM calendar_connections WHERE user_id = $1', [leaver.id])).rowCount, 0, 'no connection, so no pull of their calendar');
    assert.ok(google.revoked.includes('rt-of-leaver'), JSON.stringify(google.revoked));
  });

  test('a connection syncs at once: its first pull runs without waiting for the five-minute round', async () => {
    const member = await seedTenant(app.pool);
    const connected = await connect(member.ownerId, 'rt-first-pull');
    assert.equal(connected.last_synced_at, null);
    const status = async () => JSON.parse((await runCli(app, ['calendar', 'status', '--user', member.ownerId, '--json'])).stdout);
    await waitFor(async () => (await status()).last_synced_at, 20_000, 'the first pull');
    assert.ok(google.requests.some((r) => r.method === 'GET' && r.path.endsWith('/events')), 'the calendar was listed');
  });

  test('a list that never ends stops after MAX_PULL_PAGES pages and says so on the connection', async () => {
    const member = await seedTenant(app.pool);
    const status = async () => JSON.parse((await runCli(app, ['calendar', 'status', '--user', member.ownerId, '--json'])).stdout);
    google.setEndlessLists(true);
    try {
      await connect(member.ownerId, 'rt-endless');
      const seen = await waitFor(async () => (await status()).last_error, 60_000, 'the pull to give up');
      assert.match(seen, new RegExp(`no terminó en ${MAX_PULL_PAGES} páginas`));
      assert.equal((await status()).last_synced_at, null);
    } finally {
      google.setEndlessLists(false);
    }
  });

  test('an event is pushed with our id as Google’s, updated and deleted there', async () => {
    const e = await newEvent({ attendees: [{ name: 'Ana', email: 'ana@cliente.example' }] });
    const synced = await waitFor(async () => (await eventRow(e.id))?.google_event_id, 20_000, 'google_event_id stored');
    assert.equal(synced, e.id);
    assert.equal(google.events.get(e.id)!.summary, 'Junta');
    assert.deepEqual(google.events.get(e.id)!.attendees, [{ email: 'ana@cliente.example', displayName: 'Ana' }]);
    assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { title: 'Junta movida' } })).status, 200);
    await waitFor(() => google.events.get(e.id)!.summary === 'Junta movida', 20_000, 'the patch in Google');
    assert.equal((await api.delete(`/calendar/events/${e.id}`)).status, 204);
    await waitFor(() => google.events.get(e.id)!.status === 'cancelled', 20_000, 'the delete in Google');
  });

  test('two worker processes pushing one event at once: Google ends with the event as it is now, not the older push landing last', async () => {
    // The owner's first pull over (its full list pushes our events again, which would mend the race by chance).
    await waitFor(async () => (await openPulls(tenant.ownerId)) === 0, 20_000, 'the first pull');
    const e = await newEvent({ title: 'Versión 0' });
    await waitFor(async () => (await eventRow(e.id))?.google_event_id, 20_000, 'the first push');
    const jobs = async () =>
      (await app.pool.query<{ state: string }>(`SELECT state FROM pgboss.job WHERE name = $1 AND data->>'event_id' = $2 AND data->>'action' = 'upsert'`, [CALENDAR_PUSH.name, e.id])).rows.map((r) => r.state);
    const second = await startWorker(app.config, app.pool, app.databaseUrl);
    try {
      const held = google.hold('PATCH', new RegExp(`/events/${e.id}$`));
      assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { title: 'Versión A' } })).status, 200);
      await held.arrived; // one worker read version A and is sending it
      assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { title: 'Versión B' } })).status, 200);
      // The other worker takes B's push (the first is busy with A's) and sends B before A's answer comes.
      await waitFor(() => google.events.get(e.id)!.summary === 'Versión B', 20_000, 'B in Google first');
      held.release(); // A lands last: its push finds the event changed since and pushes once more
      await waitFor(async () => (await jobs()).every((state) => state === 'completed'), 20_000, 'both pushes done');
      assert.equal(google.events.get(e.id)!.summary, 'Versión B');
    } finally {
      await second.stop();
    }
  });

  test('two worker processes each inserting a new copy of an event deleted in Google: one copy stays there, the one stored', async () => {
    await waitFor(async () => (await openPulls(tenant.ownerId)) === 0, 20_000, 'the first pull');
    const e = await newEvent({ title: 'Copia 0' });
    await waitFor(async () => (await eventRow(e.id))?.google_event_id, 20_000, 'the first push');
    google.deleteExternal(e.id); // deleted in Google: the next push inserts a new copy under a new id
    const live = () => [...google.events.values()].filter((g: any) => g.status !== 'cancelled' && g.extendedProperties?.private?.workspace_event_id === e.id);
    const jobs = async () => (await app.pool.query<{ state: string }>(`SELECT state FROM pgboss.job WHERE name = $1 AND data->>'event_id' = $2`, [CALENDAR_PUSH.name, e.id])).rows.map((r) => r.state);
    const second = await startWorker(app.config, app.pool, app.databaseUrl);
    try {
      const held = google.hold('POST', /\/events$/); // A's first try, the insert under our id
      assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { title: 'Copia A' } })).status, 200);
      await held.arrived;
      assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { title: 'Copia B' } })).status, 200);
      // The other worker's push of B makes a new copy and stores it while A's is held.
      await waitFor(async () => ![e.id, null].includes((await eventRow(e.id)).google_event_id), 20_000, 'B stored a new copy');
      held.release(); // A goes on to make a copy of its own
      await waitFor(async () => (await jobs()).every((state) => state === 'completed') && live().length === 1, 30_000, 'one live copy in Google');
      const stored = (await eventRow(e.id)).google_event_id;
      assert.deepEqual(live().map((g: any) => [g.id, g.summary]), [[stored, 'Copia B']]);
    } finally {
      await second.stop();
    }
  });

  test('create_meet: the conference is pending, then the Meet link lands on the event', async () => {
    const e = await newEvent({ kind: 'meeting', create_meet: true });
    const row = await waitFor(async () => {
      const r = await eventRow(e.id);
      return r?.meet_url && r;
    }, 30_000, 'meet_url');
    assert.match(row.meet_url, /^https:\/\/meet\.google\.com\//);
    const insert = google.requests.find((r) => r.method === 'POST' && r.body?.id === e.id)!;
    assert.equal(insert.query.get('conferenceDataVersion'), '1');
    assert.equal(insert.body.conferenceData.createRequest.requestId, `meet-${e.id}`);
    assert.equal((await api.get(`/calendar/events/${e.id}`)).body.data.meet_url, row.meet_url);
  });

  test('create_meet, sync switched off then on: the copy inserted again gets a conference of its own, and meet_url is its link', async () => {
    const e = await newEvent({ kind: 'meeting', create_meet: true, title: 'Meet ida y vuelta' });
    const first = await waitFor(async () => (await eventRow(e.id))?.meet_url, 30_000, 'the first meet_url');
    assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { sync_to_google: false } })).status, 200);
    await waitFor(async () => (await eventRow(e.id)).google_event_id === null, 20_000, 'removed from Google');
    assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { sync_to_google: true } })).status, 200);
    const row = await waitFor(async () => {
      const r = await eventRow(e.id);
      return r?.google_event_id && r.meet_url !== first && r;
    }, 30_000, 'a new meet_url');
    assert.notEqual(row.google_event_id, e.id, 'Google keeps the deleted id taken: the copy is a new event');
    const copy = google.events.get(row.google_event_id)!;
    assert.equal(copy.hangoutLink, row.meet_url, 'meet_url is the conference of the copy in Google');
    // A request id of its own: Google answers a repeated one with the conference it made before.
    const asked = google.requests
      .filter((r) => r.method === 'POST' && r.body?.conferenceData?.createRequest && r.body.extendedProperties?.private?.workspace_event_id === e.id)
      .map((r) => r.body.conferenceData.createRequest.requestId);
    assert.equal(asked[0], `meet-${e.id}`);
    assert.match(asked.at(-1), new RegExp(`^meet-${e.id}-[0-9a-f]{12}$`));
    assert.equal((await api.get(`/calendar/events/${e.id}`)).body.data.meet_url, row.meet_url);
  });

  test('sync_to_google: false keeps the event out of Google', async () => {
    const e = await newEvent({ sync_to_google: false, title: 'Privado' });
    const marker = await newEvent({ title: 'Marcador' });
    await waitFor(async () => (await eventRow(marker.id))?.google_event_id, 20_000, 'the next event synced');
    assert.equal(google.events.has(e.id), false);
  });

  test('sync_to_google switched off on a synced event removes it from Google; switched on again, it is back', async () => {
    const e = await newEvent({ title: 'Ida y vuelta' });
    await waitFor(async () => (await eventRow(e.id))?.google_event_id, 20_000, 'synced');
    assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { sync_to_google: false, title: 'No sincronizar' } })).status, 200);
    await waitFor(() => google.events.get(e.id)!.status === 'cancelled', 20_000, 'removed from Google');
    await waitFor(async () => (await eventRow(e.id)).google_event_id === null, 20_000, 'google_event_id cleared');
    assert.equal(google.events.get(e.id)!.summary, 'Ida y vuelta', 'the switch itself sent nothing but the delete');
    assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { sync_to_google: true, title: 'De vuelta' } })).status, 200);
    const again = await waitFor(async () => (await eventRow(e.id))?.google_event_id, 20_000, 'synced again');
    assert.equal(google.events.get(again)!.status, 'confirmed');
    assert.equal(google.events.get(again)!.summary, 'De vuelta');
    // Deleting an event that is in Google while sync_to_google is false still removes it there.
    const f = await newEvent({ title: 'Borrar apagado' });
    await waitFor(async () => (await eventRow(f.id))?.google_event_id, 20_000, 'synced');
    await app.pool.query('UPDATE calendar_events SET sync_to_google = false WHERE id = $1', [f.id]); // as if the delete job had not run yet
    assert.equal((await api.delete(`/calendar/events/${f.id}`)).status, 204);
    await waitFor(() => google.events.get(f.id)!.status === 'cancelled', 20_000, 'the delete in Google');
  });

  test('sync_to_google switched off while the first push is in Google: the copy it made is removed', async () => {
    const insert = google.hold('POST', /\/events$/);
    const e = await newEvent({ title: 'Carrera' });
    await insert.arrived;
    // The write sees no copy in Google yet (google_event_id is still null), so it queues nothing.
    assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { sync_to_google: false } })).status, 200);
    insert.release();
    await waitFor(() => google.events.get(e.id)?.status === 'cancelled', 20_000, 'the copy the push made is deleted in Google');
    await waitFor(async () => (await eventRow(e.id)).google_event_id === null, 20_000, 'google_event_id cleared');
  });

  test('a delete queued by a switch-off that was switched back on before it ran leaves the live copy alone', async () => {
    const e = await newEvent({ title: 'Ida, vuelta y cola' });
    const googleId = await waitFor(async () => (await eventRow(e.id))?.google_event_id, 20_000, 'synced');
    // What the switch-off queued, run after the switch back on (the row is on, with that copy's id).
    const jobId = await app.deps.jobs.send(app.pool, CALENDAR_PUSH, { company_id: tenant.companyId, event_id: e.id, user_id: tenant.ownerId, action: 'delete', google_event_id: googleId });
    await waitFor(async () => (await app.pool.query(`SELECT state FROM pgboss.job WHERE id = $1`, [jobId])).rows[0]?.state === 'completed', 20_000, 'the delete job ran');
    assert.equal(google.events.get(googleId)!.status, 'confirmed', 'the live copy stays in Google');
    // The same job once the event is switched off deletes it.
    assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { sync_to_google: false } })).status, 200);
    await waitFor(() => google.events.get(googleId)!.status === 'cancelled', 20_000, 'removed once off');
  });

  test('an event switched between all-day and timed moves in Google too (the patch clears the other kind of time)', async () => {
    const e = await newEvent({ title: 'Día libre', all_day: true, starts_at: '2058-12-04T06:00:00Z', ends_at: '2058-12-05T06:00:00Z' });
    await waitFor(async () => (await eventRow(e.id))?.google_event_id, 20_000, 'synced');
    assert.deepEqual(google.events.get(e.id)!.start, { date: '2058-12-04' });
    const lastError = async () => JSON.parse((await runCli(app, ['calendar', 'status', '--user', tenant.ownerId, '--json'])).stdout).last_error;
    // Google merges a patch's `start` into the stored one: a `dateTime` beside the old `date` is refused (400).
    const timed = await api.patch(`/calendar/events/${e.id}`, { data: { all_day: false, starts_at: '2058-12-04T15:00:00Z', ends_at: '2058-12-04T16:00:00Z' } });
    assert.equal(timed.status, 200, timed.text);
    await waitFor(async () => google.events.get(e.id)!.start?.dateTime || (await lastError()), 20_000, 'the patch in Google, or its refusal');
    assert.deepEqual([google.events.get(e.id)!.start, google.events.get(e.id)!.end, await lastError()], [
      { dateTime: '2058-12-04T15:00:00.000Z', timeZone: 'America/Mexico_City' },
      { dateTime: '2058-12-04T16:00:00.000Z', timeZone: 'America/Mexico_City' },
      null,
    ]);
    assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { all_day: true, starts_at: '2058-12-05T06:00:00Z', ends_at: '2058-12-06T06:00:00Z' } })).status, 200);
    await waitFor(async () => google.events.get(e.id)!.start?.date || (await lastError()), 20_000, 'the patch in Google, or its refusal');
    assert.deepEqual([google.events.get(e.id)!.start, google.events.get(e.id)!.end, await lastError()], [{ date: '2058-12-05' }, { date: '2058-12-06' }, null]);
  });

  test('a PATCH that changes nothing sends nothing to Google; pushed again after a full list, an unchanged event keeps its updated_at', async () => {
    const e = await newEvent({ title: 'Sin cambios' });
    await waitFor(async () => (await eventRow(e.id))?.google_event_id, 20_000, 'synced');
    const patches = () => google.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith(`/events/${e.id}`)).length;
    const pushesLeft = async () =>
      (await app.pool.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->>'event_id' = $2 AND state < 'completed'`, [CALENDAR_PUSH.name, e.id])).rows[0].n;
    const before = patches();
    const same = await api.patch(`/calendar/events/${e.id}`, { data: { title: 'Sin cambios', starts_at: e.starts_at } });
    assert.equal(same.status, 200, same.text);
    // A real change after it: once Google has it and no push of the event is left, only that one was sent.
    const changed = (await api.patch(`/calendar/events/${e.id}`, { data: { title: 'Con un cambio' } })).body.data;
    await waitFor(async () => google.events.get(e.id)!.summary === 'Con un cambio' && (await pushesLeft()) === 0, 20_000, 'the change in Google, no push left');
    assert.equal(patches() - before, 1, 'one PATCH to Google: the change, not the write that changed nothing');
    // A dead sync token: the full list pushes every upcoming event again, this one unchanged.
    google.invalidateSyncTokens();
    await pull(tenant.ownerId);
    await waitFor(async () => patches() - before === 2 && (await pushesLeft()) === 0, 20_000, 'the event pushed again');
    assert.equal((await api.get(`/calendar/events/${e.id}`)).body.data.updated_at, changed.updated_at);
  });

  test('what is cleared here is cleared in Google; reminders go as popup overrides, the 5 nearest', async () => {
    const e = await newEvent({ title: 'Con notas', description: 'orden del día', location: 'Sala 2', reminders_minutes: [60, 10, 1440, 5, 30, 120] });
    await waitFor(async () => (await eventRow(e.id))?.google_event_id, 20_000, 'synced');
    const inGoogle = google.events.get(e.id)! as any;
    assert.equal(inGoogle.description, 'orden del día');
    assert.deepEqual(inGoogle.reminders, { useDefault: false, overrides: [5, 10, 30, 60, 120].map((minutes) => ({ method: 'popup', minutes })) });
    assert.deepEqual(inGoogle.extendedProperties, { private: { workspace_event_id: e.id, workspace_user_id: tenant.ownerId } });
    assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { description: null, location: null, reminders_minutes: [] } })).status, 200);
    await waitFor(() => !('description' in google.events.get(e.id)!), 20_000, 'the description cleared in Google');
    assert.equal('location' in google.events.get(e.id)!, false);
    assert.deepEqual((google.events.get(e.id) as any).reminders, { useDefault: false, overrides: [] });
  });

  test('reconnected after needs_reauthorization: writes made meanwhile reach Google, deletions too, and imports deleted in Google are dropped', async () => {
    const person = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const theirs = client(app.baseUrl, person.key);
    const make = async (title: string, day: string) => {
      const res = await theirs.post('/calendar/events', { data: { user_id: person.ownerId, title, starts_at: `${day}T16:00:00Z`, ends_at: `${day}T17:00:00Z` } });
      assert.equal(res.status, 201, res.text);
      return res.body.data;
    };
    // Another member's event in Google (the stand-in is one calendar for everyone): this member's pulls must leave it alone.
    const othersEvent = await newEvent({ title: 'De otro miembro', starts_at: '2058-01-15T16:00:00Z', ends_at: '2058-01-15T17:00:00Z' });
    await waitFor(async () => (await eventRow(othersEvent.id))?.google_event_id, 20_000, 'the other member\'s event synced');
    await connect(person.ownerId, 'rt-first');
    const kept = await make('Antes', '2058-01-07');
    const doomed = await make('Se borrará', '2058-01-08');
    const switched = await make('Se apagará', '2058-01-11');
    for (const e of [kept, doomed, switched]) await waitFor(async () => (await eventRow(e.id))?.google_event_id, 20_000, `${e.title} synced`);
    google.createExternal({ id: 'reconn-ext', summary: 'Externo', start: { dateTime: '2058-01-09T15:00:00Z' }, end: { dateTime: '2058-01-09T16:00:00Z' } });
    await pull(person.ownerId);
    await waitFor(async () => (await app.pool.query(`SELECT 1 FROM calendar_events WHERE user_id = $1 AND google_event_id = 'reconn-ext'`, [person.ownerId])).rowCount, 20_000, 'the external event imported');

    google.revokeRefreshToken('rt-first');
    google.expireAccessTokens(); // the next call must refresh, and the refresh is refused
    const during = await make('Durante', '2058-01-10');
    await waitFor(async () => JSON.parse((await runCli(app, ['calendar', 'status', '--user', person.ownerId, '--json'])).stdout).status === 'needs_reauthorization', 20_000, 'needs_reauthorization');
    assert.equal((await theirs.patch(`/calendar/events/${kept.id}`, { data: { title: 'Antes, cambiado' } })).status, 200);
    assert.equal((await theirs.delete(`/calendar/events/${doomed.id}`)).status, 204);
    assert.equal((await theirs.patch(`/calendar/events/${switched.id}`, { data: { sync_to_google: false } })).status, 200);
    google.deleteExternal('reconn-ext');

    await connect(person.ownerId, 'rt-second'); // the operator connects the member again
    await pull(person.ownerId);
    const synced = await waitFor(async () => (await eventRow(during.id))?.google_event_id, 20_000, 'the event written meanwhile reaches Google');
    assert.equal(google.events.get(synced)!.summary, 'Durante');
    await waitFor(() => google.events.get(kept.id)!.summary === 'Antes, cambiado', 20_000, 'the change made meanwhile reaches Google');
    await waitFor(() => google.events.get(doomed.id)!.status === 'cancelled', 20_000, 'the event deleted meanwhile leaves Google');
    await waitFor(() => google.events.get(switched.id)!.status === 'cancelled', 20_000, 'the event switched off meanwhile leaves Google');
    await waitFor(async () => (await app.pool.query(`SELECT 1 FROM calendar_events WHERE user_id = $1 AND google_event_id = 'reconn-ext'`, [person.ownerId])).rowCount === 0, 20_000, 'the import deleted in Google meanwhile is dropped');
    const imported = await app.pool.query(`SELECT google_event_id FROM calendar_events WHERE user_id = $1 AND source = 'google'`, [person.ownerId]);
    assert.deepEqual(imported.rows, [], 'our own events are not imported back');
    // The stand-in is one calendar for everyone, as a shared calendar would be: this member's pulls met the
    // other member's events there, and left them alone.
    const { rows: others } = await app.pool.query(`SELECT google_event_id FROM calendar_events WHERE user_id = $1 AND source <> 'google' AND google_event_id IS NOT NULL`, [tenant.ownerId]);
    assert.ok(others.some((o: { google_event_id: string }) => o.google_event_id === othersEvent.id));
    for (const { google_event_id } of others) assert.equal(google.events.get(google_event_id)?.status, 'confirmed', `${google_event_id} of another member`);
  });

  test('connected again with another refresh token while the first still works: the next call uses a token of the new one', async () => {
    const person = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const theirs = client(app.baseUrl, person.key);
    const pushed = async (title: string) => {
      const res = await theirs.post('/calendar/events', { data: { user_id: person.ownerId, title, starts_at: '2058-02-04T16:00:00Z', ends_at: '2058-02-04T17:00:00Z' } });
      assert.equal(res.status, 201, res.text);
      await waitFor(async () => (await eventRow(res.body.data.id))?.google_event_id, 20_000, `${title} synced`);
      const insert = google.requests.find((r) => r.method === 'POST' && r.body?.id === res.body.data.id)!;
      return google.refreshTokenOf(insert.auth);
    };
    await connect(person.ownerId, 'rt-account-a');
    assert.equal(await pushed('Con la cuenta A'), 'rt-account-a');
    // Another Google account, say: the access token cached from the first must not be used for it.
    await connect(person.ownerId, 'rt-account-b');
    assert.equal(await pushed('Con la cuenta B'), 'rt-account-b');
  });

  test('an expired access token: one refresh, then the call goes through', async () => {
    await pull(tenant.ownerId); // a first call made with the connection's token
    await waitFor(async () => (await app.pool.query(`SELECT 1 FROM calendar_connections WHERE user_id = $1 AND last_synced_at IS NOT NULL`, [tenant.ownerId])).rowCount, 20_000);
    google.expireAccessTokens();
    const e = await newEvent({ title: 'Tras 401' });
    await waitFor(async () => (await eventRow(e.id))?.google_event_id, 20_000, 'synced after a refresh');
    assert.ok(google.requests.some((r) => r.path.endsWith('/events') && r.method === 'POST' && r.body?.id === e.id));
  });

  test('rate limits (429, 403 rateLimitExceeded) and a 500 are retried until Google takes the event', async () => {
    // One failure each for the next three inserts; the worker's retries (with backoff) get them through.
    google.fail({ method: 'POST', path: /events$/, status: 429, reason: 'rateLimitExceeded' });
    google.fail({ method: 'POST', path: /events$/, status: 500 });
    google.fail({ method: 'POST', path: /events$/, status: 403, reason: 'rateLimitExceeded' });
    const made = [await newEvent({ title: 'Reintento 1' }), await newEvent({ title: 'Reintento 2' }), await newEvent({ title: 'Reintento 3' })];
    // Each retry made due now rather than at the end of its backoff (10 s, 20 s …, db/queues.ts CALENDAR_PUSH).
    const retriesDue = () => app.pool.query(`UPDATE pgboss.job SET start_after = now() WHERE name = 'calendar-push' AND state = 'retry' AND start_after > now()`);
    for (const e of made) await waitFor(async () => (await retriesDue(), (await eventRow(e.id))?.google_event_id), 60_000, `${e.title} synced after a retry`);
    const failed = google.requests.filter((r) => r.method === 'POST' && made.some((e) => e.id === r.body?.id));
    assert.ok(failed.length >= 6, 'each was sent at least twice');
    // The retried failures were recorded on the connection; the pushes that went through cleared them.
    const status = JSON.parse((await runCli(app, ['calendar', 'status', '--user', tenant.ownerId, '--json'])).stdout);
    assert.equal(status.last_error, null);
    assert.ok(status.last_synced_at);
  });

  test('an event deleted in Google and then edited here is inserted there again, under a new Google id, with a Meet of its own', async () => {
    const e = await newEvent({ title: 'Borrada allá', kind: 'meeting', create_meet: true });
    const firstMeet = await waitFor(async () => (await eventRow(e.id))?.meet_url, 30_000, 'first push with its Meet link');
    google.deleteExternal(e.id);
    assert.equal((await api.patch(`/calendar/events/${e.id}`, { data: { title: 'Editada aquí' } })).status, 200);
    // Google keeps a deleted event's id taken (409 to an insert under it): the copy is a new event.
    const googleId = await waitFor(async () => {
      const id = (await eventRow(e.id))?.google_event_id;
      return id && id !== e.id && id;
    }, 20_000, 'a new Google id stored');
    assert.equal(google.events.get(googleId)!.summary, 'Editada aquí');
    assert.equal(google.events.get(googleId)!.status, 'confirmed');
    assert.equal(google.events.get(e.id)!.status, 'cancelled');
    // The deleted copy's Meet went with it: the new copy asks for its own, and meet_url follows.
    const meet = await waitFor(async () => {
      const url = (await eventRow(e.id))?.meet_url;
      return url && url !== firstMeet && url;
    }, 30_000, 'the new copy\'s Meet link');
    assert.equal(meet, google.events.get(googleId)!.hangoutLink);
  });

  test('a member removed from one of their companies: what it edits in the events they leave behind no longer reaches their Google Calendar, not even through a full list or a push queued before', async () => {
    const made = await api.post('/users', { data: { email: `se-va-${Date.now()}@example.com`, first_name: 'Saúl' } });
    assert.equal(made.status, 201, made.text);
    const leaver = made.body.data.id as string;
    // They work for another company too, so they keep their connection (it is theirs).
    assert.equal((await runCli(app, ['user', 'add-membership', leaver, '--company', other.companyId, '--json'])).code, 0);
    await connect(leaver, `rt-leaver-${Date.now()}`);
    // The connection's first full list done: it would otherwise push the event below once more (its
    // upcoming events), a push this test would count as one queued after the removal.
    await waitFor(async () => (await app.pool.query('SELECT last_synced_at FROM calendar_connections WHERE user_id = $1', [leaver])).rows[0]?.last_synced_at && (await openPulls(leaver)) === 0, 20_000, 'the first full list');
    const e = await newEvent({ user_id: leaver, title: 'Antes de irse' });
    await waitFor(() => google.events.get(e.id)?.summary === 'Antes de irse', 20_000, 'the event in Google');
    const pushes = async () => (await app.pool.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->>'event_id' = $2`, [CALENDAR_PUSH.name, e.id])).rows[0].n as number;
    const openPushes = async () =>
      (await app.pool.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND data->>'user_id' = $2 AND state NOT IN ('completed', 'failed', 'cancelled')`, [CALENDAR_PUSH.name, leaver])).rows[0].n as number;
    const before = await pushes();
    assert.equal((await api.delete(`/users/${leaver}`)).status, 204);
    const edited = await api.patch(`/calendar/events/${e.id}`, { data: { title: 'Después', description: 'confidencial', attendees: [{ email: 'cliente@secreto.example' }] } });
    assert.equal(edited.status, 200, edited.text);
    // The push is queued in the edit's own transaction, so its absence is known once the edit answered.
    assert.equal(await pushes(), before, 'no push for a host who is no longer a member');
    // A push queued before the removal that runs after it reads the event as it is now: it sends nothing.
    await app.deps.jobs.send(app.pool, CALENDAR_PUSH, { company_id: tenant.companyId, event_id: e.id, user_id: leaver, action: 'upsert', google_event_id: e.id });
    // Google drops the sync token: the full list pushes the person's upcoming events again, not this one.
    const synced = (await app.pool.query('SELECT last_synced_at FROM calendar_connections WHERE user_id = $1', [leaver])).rows[0].last_synced_at as Date;
    google.invalidateSyncTokens();
    await pull(leaver);
    await waitFor(async () => {
      const { rows } = await app.pool.query('SELECT last_synced_at FROM calendar_connections WHERE user_id = $1', [leaver]);
      return rows[0].last_synced_at > synced && (await openPulls(leaver)) === 0 && (await openPushes()) === 0;
    }, 30_000, 'the full list done, and every push it queued');
    assert.equal(await pushes(), before + 1, 'the full list queued no push of the event left behind');
    const there = google.events.get(e.id)!;
    assert.deepEqual([there.summary, there.description ?? null], ['Antes de irse', null], 'Google keeps what it had before the removal');
    const status = JSON.parse((await runCli(app, ['calendar', 'status', '--user', leaver, '--json'])).stdout);
    assert.equal(status.status, 'active', 'still connected: they work for another company');
  });

  test('a person removed from their last company leaves the service: their connection ends with the removal and its token is revoked at Google', async () => {
    const made = await api.post('/users', { data: { email: `se-fue-${Date.now()}@example.com`, first_name: 'Irene' } });
    assert.equal(made.status, 201, made.text);
    const leaver = made.body.data.id as string;
    const token = `rt-gone-${Date.now()}`;
    await connect(leaver, token);
    const e = await newEvent({ user_id: leaver, title: 'Antes de dejar el servicio' });
    await waitFor(() => google.events.get(e.id)?.summary === 'Antes de dejar el servicio', 20_000, 'the event in Google');
    assert.equal((await api.delete(`/users/${leaver}`)).status, 204);
    // Ended in the removal's transaction: no pull or push can find it from the answer on.
    assert.equal((await app.pool.query('SELECT 1 FROM calendar_connections WHERE user_id = $1', [leaver])).rowCount, 0);
    await waitFor(() => google.revoked.includes(token), 20_000, 'the refresh token revoked at Google');
    const refresh = await new GoogleCalendarClient({ ...app.config.google!, revokeUrl: undefined }).refreshAccessToken(token).catch((error) => error);
    assert.equal(refresh.reason, 'invalid_grant', 'the token no longer refreshes');
  });

  test('a connection an earlier release left to a person who has left the service is ended by the five-minute round, its token revoked', async () => {
    const made = await api.post('/users', { data: { email: `antiguo-${Date.now()}@example.com`, first_name: 'Olga' } });
    const leftover = made.body.data.id as string;
    const token = `rt-leftover-${Date.now()}`;
    await connect(leftover, token);
    // What a removal did before it ended the connection: the membership gone, the person soft-deleted.
    await app.pool.query('DELETE FROM memberships WHERE user_id = $1', [leftover]);
    await app.pool.query('UPDATE users SET deleted_at = now() WHERE id = $1', [leftover]);
    await app.deps.jobs.send(app.pool, CALENDAR_PULL_SCHEDULE, {});
    await waitFor(async () => (await app.pool.query('SELECT 1 FROM calendar_connections WHERE user_id = $1', [leftover])).rowCount === 0, 20_000, 'the connection ended');
    await waitFor(() => google.revoked.includes(token), 20_000, 'the refresh token revoked at Google');
  });

  test('a booking is pushed too, with its Meet link on the booking', async () => {
    const link = await api.post('/booking-links', {
      data: { user_id: tenant.ownerId, slug: 'meet-sync', title: 'Llamada', duration_minutes: 30, timezone: 'UTC', minimum_notice_minutes: 0, location: { type: 'google_meet' }, weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' }] },
    });
    assert.equal(link.status, 201, link.text);
    // The first two free times, whatever the day (late in the UTC day, today has one left).
    const slots = (await api.get(`/booking-links/${link.body.data.id}/slots`)).body.data.days.flatMap((d: any) => d.slots);
    const booked = await api.post('/bookings', { data: { booking_link_id: link.body.data.id, starts_at: slots[0].starts_at, booker: { name: 'Bea', email: 'bea@v.example' } } });
    assert.equal(booked.status, 201, booked.text);
    const meet = await waitFor(async () => (await api.get(`/bookings/${booked.body.data.id}`)).body.data.meet_url, 30_000, 'the booking meet_url');
    assert.match(meet, /meet\.google\.com/);
    // The host's notice (written to DATA_DIR/outbox: no SMTP_URL here) says where the link will be: their calendar's event.
    const outbox = path.join(app.config.dataDir, 'outbox');
    const notice = await waitFor(async () => {
      const name = (await readdir(outbox).catch(() => [] as string[])).find((f) => f.includes(`booking-${booked.body.data.id}-confirmed-host`));
      return name && (await simpleParser(await readFile(path.join(outbox, name)))).text;
    }, 20_000, "the host's notice");
    assert.match(notice, /^Lugar: (Google Meet \(la liga estará en el evento de tu Google Calendar\)|https:\/\/meet\.google\.com\/\S+)$/m);
    // A reschedule moves the same event, conference included: the new booking answers with its link at
    // once (its email and manage page show it), not only once the move is pushed, nor never if it cannot be.
    const moved = await api.post(`/bookings/${booked.body.data.id}/reschedule`, { data: { starts_at: slots[1].starts_at } });
    assert.deepEqual([moved.status, moved.body.data?.meet_url], [201, meet], moved.text);
    await api.post(`/bookings/${moved.body.data.id}/cancel`);
    await waitFor(() => google.events.get(booked.body.data.calendar_event_id)?.status === 'cancelled', 20_000, 'the cancelled booking removed from Google');
  });

  test('a dead refresh token: the API write still succeeds and the connection needs re-authorization', async () => {
    const person = await seedTenant(app.pool);
    await connect(person.ownerId, 'rt-doomed');
    // The first pull ran, so the worker holds an access token of it: the revocation ends that too.
    await waitFor(async () => JSON.parse((await runCli(app, ['calendar', 'status', '--user', person.ownerId, '--json'])).stdout).last_synced_at, 20_000, 'the first pull');
    google.revokeRefreshToken('rt-doomed');
    const res = await client(app.baseUrl, person.key).post('/calendar/events', { data: { user_id: person.ownerId, title: 'Igual se guarda', starts_at: '2058-12-04T16:00:00Z', ends_at: '2058-12-04T17:00:00Z' } });
    assert.equal(res.status, 201);
    const status = await waitFor(async () => {
      const s = JSON.parse((await runCli(app, ['calendar', 'status', '--user', person.ownerId, '--json'])).stdout);
      return s.status === 'needs_reauthorization' && s;
    }, 20_000, 'needs_reauthorization');
    assert.match(status.last_error, /invalid_grant/);
  });

  test('import: Google events become read-only source google events (paging, updates, deletions), ours are not imported back; free and declined ones are not', async () => {
    const ours = await newEvent({ title: 'Nuestro' });
    await waitFor(async () => (await eventRow(ours.id))?.google_event_id, 20_000);
    for (let i = 0; i < 3; i++) {
      google.createExternal({ id: `ext${i}`, summary: `Externo ${i}`, start: { dateTime: `2058-12-0${5 + i}T15:00:00Z` }, end: { dateTime: `2058-12-0${5 + i}T16:00:00Z` } });
    }
    google.createExternal({ id: 'extfree', summary: 'Libre', transparency: 'transparent', start: { dateTime: '2058-12-09T15:00:00Z' }, end: { dateTime: '2058-12-09T16:00:00Z' } });
    // An invitation the member declined blocks nothing either (Google's free/busy ignores it).
    google.createExternal({ id: 'extdeclined', summary: 'Invitación rechazada', attendees: [{ email: 'otra@example.com' }, { email: 'yo@example.com', self: true, responseStatus: 'declined' }], start: { dateTime: '2058-12-10T15:00:00Z' }, end: { dateTime: '2058-12-10T16:00:00Z' } });
    google.createExternal({ id: 'extallday', summary: 'Vacaciones', start: { date: '2058-12-20', timeZone: 'America/Mexico_City' }, end: { date: '2058-12-21', timeZone: 'America/Mexico_City' } });
    await pull(tenant.ownerId);
    const imported = async () => (await app.pool.query(`SELECT google_event_id, title, starts_at, all_day FROM calendar_events WHERE user_id = $1 AND source = 'google' ORDER BY google_event_id`, [tenant.ownerId])).rows;
    const rows = await waitFor(async () => {
      const r = await imported();
      return r.length === 4 && r;
    }, 20_000, 'four imported events');
    assert.deepEqual(rows.map((r: any) => r.google_event_id), ['ext0', 'ext1', 'ext2', 'extallday']);
    assert.equal(rows[3].all_day, true);
    assert.equal(rows[3].starts_at.toISOString(), '2058-12-20T06:00:00.000Z');
    const { rows: mine } = await app.pool.query(`SELECT count(*)::int AS n FROM calendar_events WHERE google_event_id = $1`, [ours.id]);
    assert.equal(mine[0].n, 1, 'our own event is not imported back');
    const listed = await api.get(`/calendar/events?source=google`);
    const ext0 = listed.body.data.find((e: any) => e.google_event_id === 'ext0');
    const patch = await api.patch(`/calendar/events/${ext0.id}`, { data: { title: 'x' } });
    assert.equal(patch.status, 422);
    assert.equal(patch.body.error, 'read_only_event');
    assert.equal((await api.delete(`/calendar/events/${ext0.id}`)).body.error, 'read_only_event');
    // Another company never sees them.
    assert.equal((await client(app.baseUrl, other.key).get(`/calendar/events/${ext0.id}`)).status, 404);

    google.updateExternal('ext1', { summary: 'Externo movido' });
    google.deleteExternal('ext2');
    await pull(tenant.ownerId);
    await waitFor(async () => {
      const r = await imported();
      return r.length === 3 && r.find((x: any) => x.google_event_id === 'ext1')?.title === 'Externo movido';
    }, 20_000, 'the incremental changes');

    // Google drops our sync token: a full resync gives the same picture.
    google.invalidateSyncTokens();
    google.createExternal({ id: 'ext9', summary: 'Tras 410', start: { dateTime: '2058-12-11T15:00:00Z' }, end: { dateTime: '2058-12-11T16:00:00Z' } });
    await pull(tenant.ownerId);
    await waitFor(async () => (await imported()).map((r: any) => r.google_event_id).join() === 'ext0,ext1,ext9,extallday', 20_000, 'the full resync');

    // Text no column can hold, from Google (U+0000; a title cut at 300 through a surrogate pair): kept with U+FFFD.
    google.createExternal({
      id: 'extnul', summary: `${'a'.repeat(299)}😀`, description: 'nota\u0000oculta', location: 'sala\u0000',
      // A room Google gives no email for is left out: an attendee is a name and an email in the API.
      attendees: [{ displayName: 'Sala 3', resource: true }, { email: 'x@example.com', displayName: 'Ana\u0000' }],
      start: { dateTime: '2058-12-12T15:00:00Z' }, end: { dateTime: '2058-12-12T16:00:00Z' },
    } as any);
    await pull(tenant.ownerId);
    const odd = await waitFor(async () => (await app.pool.query(`SELECT title, description, location, attendees FROM calendar_events WHERE user_id = $1 AND google_event_id = 'extnul'`, [tenant.ownerId])).rows[0], 20_000, 'the event with U+0000 imported');
    assert.equal(odd.description, 'nota\uFFFDoculta');
    assert.equal(odd.title, `${'a'.repeat(299)}\uFFFD`);
    assert.deepEqual(odd.attendees, [{ name: 'Ana\uFFFD', email: 'x@example.com' }]);
  });

  test('two members sharing a Google event each get it as busy time; a company joined later gets it at the next pull; a removal takes it away', async () => {
    const created = await api.post('/users', { data: { first_name: 'Sara', last_name: 'Compartida', email: `sara-${Date.now()}@test.example` } });
    assert.equal(created.status, 201, created.text);
    const member = created.body.data.id;
    // Both attend one Google event: the same id in both calendars (the stand-in's one calendar serves both).
    google.createExternal({ id: 'shared1', summary: 'Junta compartida', start: { dateTime: '2058-12-03T18:00:00Z' }, end: { dateTime: '2058-12-03T19:00:00Z' } });
    await connect(member, 'rt-member');
    await pull(tenant.ownerId);
    await pull(member);
    const holders = async (companyId: string) =>
      (await app.pool.query(`SELECT user_id FROM calendar_events WHERE company_id = $1 AND source = 'google' AND google_event_id = 'shared1' ORDER BY user_id`, [companyId])).rows.map((r: any) => r.user_id);
    await waitFor(async () => (await holders(tenant.companyId)).length === 2, 20_000, 'the shared event imported for both members');
    assert.deepEqual(await holders(tenant.companyId), [tenant.ownerId, member].sort());

    // Joined another company after connecting: the next pull lists the calendar in full, into that company too.
    const joined = await runCli(app, ['user', 'add-membership', member, '--company', other.companyId, '--json']);
    assert.equal(joined.code, 0, joined.stderr);
    await pull(member);
    await waitFor(async () => (await holders(other.companyId)).length === 1, 20_000, 'the busy time in the company joined');
    assert.deepEqual(await holders(other.companyId), [member]);

    // Removed from the first company: their busy time leaves it; the owner's and the other company's stay.
    assert.equal((await api.delete(`/users/${member}`)).status, 204);
    assert.deepEqual(await holders(tenant.companyId), [tenant.ownerId]);
    assert.deepEqual(await holders(other.companyId), [member]);
  });

  test('an all-day Google event without a zone is the day in the calendar\'s zone (named on every list page)', async () => {
    google.setTimeZone('Asia/Tokyo');
    try {
      google.createExternal({ id: 'tokyoday', summary: 'Feriado', start: { date: '2058-12-24' }, end: { date: '2058-12-25' } });
      await pull(tenant.ownerId);
      const row = await waitFor(
        async () => (await app.pool.query(`SELECT starts_at, ends_at, timezone, all_day FROM calendar_events WHERE user_id = $1 AND google_event_id = 'tokyoday'`, [tenant.ownerId])).rows[0],
        20_000,
        'the all-day event imported',
      );
      assert.deepEqual([row.starts_at.toISOString(), row.ends_at.toISOString(), row.timezone, row.all_day], ['2058-12-23T15:00:00.000Z', '2058-12-24T15:00:00.000Z', 'Asia/Tokyo', true]);
    } finally {
      google.setTimeZone('America/Mexico_City');
    }
  });

  test('an event with no zone of its own, from a list that names none, is read in each company\'s zone, not the first one\'s', async () => {
    const [first, second] = [await seedTenant(app.pool), await seedTenant(app.pool)];
    await updateCompany(app.pool, first.companyId, { timezone: 'Asia/Tokyo' });
    await updateCompany(app.pool, second.companyId, { timezone: 'Europe/Madrid' });
    assert.equal((await runCli(app, ['user', 'add-membership', first.ownerId, '--company', second.companyId, '--json'])).code, 0);
    google.setTimeZone(undefined);
    try {
      google.createExternal({ id: 'sinzona', summary: 'Feriado', start: { date: '2058-12-26' }, end: { date: '2058-12-27' } });
      await connect(first.ownerId, 'rt-two-zones');
      const rows = await waitFor(async () => {
        const { rows } = await app.pool.query(`SELECT company_id, starts_at, timezone FROM calendar_events WHERE user_id = $1 AND google_event_id = 'sinzona'`, [first.ownerId]);
        return rows.length === 2 && rows;
      }, 20_000, 'the event imported in both companies');
      const byCompany = Object.fromEntries(rows.map((r) => [r.company_id, [r.starts_at.toISOString(), r.timezone]]));
      assert.deepEqual(byCompany[first.companyId], ['2058-12-25T15:00:00.000Z', 'Asia/Tokyo']);
      assert.deepEqual(byCompany[second.companyId], ['2058-12-25T23:00:00.000Z', 'Europe/Madrid']);
    } finally {
      google.setTimeZone('America/Mexico_City');
      google.deleteExternal('sinzona');
    }
  });

  test('an all-day event whose start names a zone is the day there at both ends; a zone no runtime knows is the calendar\'s', async () => {
    google.createExternal({ id: 'madridday', summary: 'Fiesta', start: { date: '2058-12-04', timeZone: 'Europe/Madrid' }, end: { date: '2058-12-05' } });
    google.createExternal({ id: 'marsday', summary: 'Marte', start: { dateTime: '2058-12-06T10:00:00Z', timeZone: 'Mars/Olympus' }, end: { dateTime: '2058-12-06T11:00:00Z', timeZone: 'Mars/Olympus' } });
    try {
      await pull(tenant.ownerId);
      const row = async (id: string) => (await app.pool.query(`SELECT starts_at, ends_at, timezone FROM calendar_events WHERE user_id = $1 AND google_event_id = $2`, [tenant.ownerId, id])).rows[0];
      const madrid = await waitFor(() => row('madridday'), 20_000, 'the Madrid all-day event imported');
      // One day in Madrid, midnight to midnight (the end read in Mexico City's zone made it 31 hours).
      assert.deepEqual([madrid.starts_at.toISOString(), madrid.ends_at.toISOString(), madrid.timezone], ['2058-12-03T23:00:00.000Z', '2058-12-04T23:00:00.000Z', 'Europe/Madrid']);
      const mars = await waitFor(() => row('marsday'), 20_000, 'the event with an unknown zone imported');
      assert.equal(mars.timezone, 'America/Mexico_City', 'the calendar\'s zone, not one the API refuses');
    } finally {
      google.deleteExternal('madridday');
      google.deleteExternal('marsday');
    }
  });

  test('an event Google sends with a date that cannot be read is skipped; the rest of the list is imported and the sync goes on', async () => {
    google.createExternal({ id: 'impossible', summary: 'Imposible', start: { date: '2058-02-30' }, end: { date: '2058-03-01' } });
    google.createExternal({ id: 'badtime', summary: 'Mal', start: { dateTime: '12058-01-01T10:00:00Z' }, end: { dateTime: '12058-01-01T11:00:00Z' } });
    google.createExternal({ id: 'afterbad', summary: 'Después', start: { dateTime: '2058-12-08T10:00:00Z' }, end: { dateTime: '2058-12-08T11:00:00Z' } });
    try {
      await pull(tenant.ownerId);
      await waitFor(async () => (await app.pool.query(`SELECT 1 FROM calendar_events WHERE user_id = $1 AND google_event_id = 'afterbad'`, [tenant.ownerId])).rowCount === 1, 20_000, 'the event after the unreadable ones imported');
      const status = JSON.parse((await runCli(app, ['calendar', 'status', '--user', tenant.ownerId, '--json'])).stdout);
      assert.equal(status.last_error, null, JSON.stringify(status));
      const { rows } = await app.pool.query(`SELECT google_event_id FROM calendar_events WHERE user_id = $1 AND google_event_id IN ('impossible', 'badtime')`, [tenant.ownerId]);
      assert.deepEqual(rows, []);
    } finally {
      for (const id of ['impossible', 'badtime', 'afterbad']) google.deleteExternal(id);
    }
  });

  test('two worker processes: a member\'s second pull waits its turn (the connection\'s lease) instead of listing beside the first', async () => {
    const member = await seedTenant(app.pool);
    google.createExternal({ id: 'una-vez', summary: 'Una vez', start: { dateTime: '2058-12-11T10:00:00Z' }, end: { dateTime: '2058-12-11T11:00:00Z' } });
    const lists = () => google.requests.filter((r) => r.method === 'GET' && r.path.endsWith('/events') && google.refreshTokenOf(r.auth) === 'rt-two-pulls').length;
    const second = await startWorker(app.config, app.pool, app.databaseUrl);
    try {
      const list = google.hold('GET', /\/events$/, 'rt-two-pulls');
      await connect(member.ownerId, 'rt-two-pulls');
      await list.arrived; // the first pull (a full list) is reading
      await pull(member.ownerId);
      // The other worker takes the second pull, finds the lease held and puts it back in the queue.
      await waitFor(
        async () => (await app.pool.query(`SELECT 1 FROM pgboss.job WHERE name = $1 AND singleton_key = $2`, [CALENDAR_PULL.name, `${member.ownerId}:leased`])).rowCount! > 0,
        20_000,
        'the second pull put back',
      );
      assert.equal(lists(), 1, 'one list at a time');
      list.release();
      await waitFor(async () => (await openPulls(member.ownerId)) === 0, 30_000, 'every pull to end');
      assert.ok(lists() >= 2, 'the pull put back ran once the first was over');
      const { rows } = await app.pool.query(`SELECT google_event_id FROM calendar_events WHERE user_id = $1 AND source = 'google'`, [member.ownerId]);
      const ids = rows.map((r) => r.google_event_id);
      assert.ok(ids.includes('una-vez'), JSON.stringify(ids));
      assert.equal(new Set(ids).size, ids.length, 'each Google event imported once');
      const lease = await app.pool.query('SELECT pull_lease_until FROM calendar_connections WHERE user_id = $1', [member.ownerId]);
      assert.equal(lease.rows[0].pull_lease_until, null, 'the lease given back');
    } finally {
      await second.stop();
      google.deleteExternal('una-vez');
    }
  });

  test('a disconnect while a pull is reading: what the pull reads afterwards is not imported, no busy time is left behind', async () => {
    const member = await seedTenant(app.pool);
    google.createExternal({ id: 'racing', summary: 'Carrera', start: { dateTime: '2058-12-10T10:00:00Z' }, end: { dateTime: '2058-12-10T11:00:00Z' } });
    try {
      const list = google.hold('GET', /\/events$/, 'rt-disconnect-race');
      google.addRefreshToken('rt-disconnect-race');
      assert.equal((await runCli(app, ['calendar', 'connect', '--user', member.ownerId, '--refresh-token', 'rt-disconnect-race', '--json'])).code, 0);
      await list.arrived;
      // Google out of reach for the revocation (best effort), so the pull's access token still works.
      google.fail({ method: 'POST', path: /\/revoke$/, status: 503 });
      assert.equal((await runCli(app, ['calendar', 'disconnect', '--user', member.ownerId, '--json'])).code, 0);
      list.release();
      await waitFor(async () => (await openPulls(member.ownerId)) === 0, 20_000, 'the pull to end');
      const { rows } = await app.pool.query(`SELECT google_event_id FROM calendar_events WHERE user_id = $1 AND source = 'google'`, [member.ownerId]);
      assert.deepEqual(rows, [], 'the disconnected member keeps no imported busy time');
    } finally {
      google.deleteExternal('racing');
    }
  });

  test('connected again with another token while a pull of the first is reading: the old pull\'s outcome is not the new connection\'s', async () => {
    const member = await seedTenant(app.pool);
    google.createExternal({ id: 'reconnect', summary: 'Vuelta', start: { dateTime: '2058-12-12T10:00:00Z' }, end: { dateTime: '2058-12-12T11:00:00Z' } });
    try {
      const list = google.hold('GET', /\/events$/, 'rt-first-account');
      google.addRefreshToken('rt-first-account');
      google.addRefreshToken('rt-second-account');
      assert.equal((await runCli(app, ['calendar', 'connect', '--user', member.ownerId, '--refresh-token', 'rt-first-account', '--json'])).code, 0);
      await list.arrived;
      assert.equal((await runCli(app, ['calendar', 'connect', '--user', member.ownerId, '--refresh-token', 'rt-second-account', '--json'])).code, 0);
      // The first account is refused from now on (as after Google revokes it): its pull must not mark the second.
      google.revokeRefreshToken('rt-first-account');
      list.release();
      await waitFor(async () => (await openPulls(member.ownerId)) === 0, 30_000, 'both pulls to end');
      const imported = await app.pool.query(`SELECT 1 FROM calendar_events WHERE user_id = $1 AND google_event_id = 'reconnect'`, [member.ownerId]);
      assert.equal(imported.rowCount, 1, 'the second connection listed the calendar in full');
      const status = JSON.parse((await runCli(app, ['calendar', 'status', '--user', member.ownerId, '--json'])).stdout);
      assert.equal(status.status, 'active', JSON.stringify(status));
    } finally {
      google.deleteExternal('reconnect');
      await runCli(app, ['calendar', 'disconnect', '--user', member.ownerId, '--json']);
    }
  });

  test('imported events block booking slots when the host blocks overlapping bookings', async () => {
    google.createExternal({ id: 'busyday', summary: 'Ocupada', start: { dateTime: '2058-12-15T10:00:00Z' }, end: { dateTime: '2058-12-15T11:00:00Z' } });
    await pull(tenant.ownerId);
    // The host's own copy (another member connected to the same calendar gets one of their own).
    await waitFor(async () => (await app.pool.query(`SELECT 1 FROM calendar_events WHERE user_id = $1 AND company_id = $2 AND google_event_id = 'busyday'`, [tenant.ownerId, tenant.companyId])).rowCount, 20_000, 'busyday imported for the host');
    const link = await api.post('/booking-links', {
      data: { user_id: tenant.ownerId, slug: 'bloqueo', title: 'X', duration_minutes: 60, timezone: 'UTC', minimum_notice_minutes: 0, booking_window: { type: 'range', start_on: '2058-12-15', end_on: '2058-12-15' }, weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '09:00', end: '12:00' }] },
    });
    const starts = async () => (await api.get(`/booking-links/${link.body.data.id}/slots?from=2058-12-15&to=2058-12-15`)).body.data.days.flatMap((d: any) => d.slots.map((s: any) => s.starts_at.slice(11, 16)));
    assert.deepEqual(await starts(), ['09:00', '10:00', '11:00']);
    await app.pool.query(`UPDATE users SET settings_preferences = settings_preferences || '{"block_overlapping_bookings": true}' WHERE id = $1`, [tenant.ownerId]);
    assert.deepEqual(await starts(), ['09:00', '11:00']);
  });
});

describe('the consent callback past the per-address limit', () => {
  let google: GoogleStandIn;
  let app: TestApp;
  before(async () => {
    google = await startGoogleStandIn();
    app = await startTestApp({ ...google.env, RATE_LIMIT_PER_MINUTE: '2' });
  });
  after(async () => {
    await app.close();
    await google.close();
  });

  test('a person\'s browser gets a page saying when to try again (429, Retry-After), not the API\'s JSON', async () => {
    const callback = `${app.url}/integrations/google/callback?code=x&state=y`;
    for (let i = 0; i < 2; i++) assert.equal((await fetch(callback)).status, 400, 'a bad link, counted');
    const limited = await fetch(callback);
    assert.equal(limited.status, 429);
    assert.match(limited.headers.get('content-type') ?? '', /^text\/html/);
    const wait = Number(limited.headers.get('retry-after'));
    assert.ok(wait >= 1);
    assert.match(await limited.text(), new RegExp(`vuelve a abrir la liga en ${wait} segundos`));
  });
});
