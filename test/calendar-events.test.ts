// Calendar events (contract: "Calendar event", "Calendar events"): defaults,
// the host rule (422 invalid_user), time rules on create and PATCH, all-day
// events on DST days, the range filter, scopes and idempotency. Another
// company's events are walked by test/security.cross-tenant.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';

describe('calendar events', () => {
  let app: TestApp;
  let tenant: Tenant;
  let api: ReturnType<typeof client>;
  const event = (over: Record<string, unknown> = {}) => ({
    user_id: tenant.ownerId,
    title: 'Junta',
    starts_at: '2026-12-01T16:00:00Z',
    ends_at: '2026-12-01T17:00:00Z',
    ...over,
  });

  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    api = client(app.baseUrl, tenant.key);
  });
  after(() => app.close());

  test('create: the contract defaults, source native, write-only sync_to_google not read back', async () => {
    const res = await api.post('/calendar/events', { data: event({ sync_to_google: false, attendees: [{ email: 'ana@example.com' }] }) });
    assert.equal(res.status, 201, res.text);
    const e = res.body.data;
    assert.equal(e.color, '#2563eb');
    assert.equal(e.timezone, 'America/Mexico_City');
    assert.equal(e.kind, 'event');
    assert.equal(e.all_day, false);
    assert.deepEqual(e.reminders_minutes, [15]);
    assert.equal(e.source, 'native');
    assert.equal(e.create_meet, false);
    assert.equal(e.meet_url, null);
    assert.equal(e.google_event_id, null);
    assert.deepEqual(e.attendees, [{ name: null, email: 'ana@example.com' }]);
    assert.equal('sync_to_google' in e, false);
    assert.equal(e.starts_at, '2026-12-01T16:00:00.000Z');
    const read = await api.get(`/calendar/events/${e.id}`);
    assert.deepEqual(read.body.data, e);
  });

  test('instants are taken to the millisecond: microseconds (Python\'s isoformat) are stored as they are read back', async () => {
    const created = await api.post('/calendar/events', { data: event({ starts_at: '2026-12-02T10:00:00.123456+00:00', ends_at: '2026-12-02T11:00:00.999999Z' }) });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual([created.body.data.starts_at, created.body.data.ends_at], ['2026-12-02T10:00:00.123Z', '2026-12-02T11:00:00.999Z']);
    const { rows } = await app.pool.query(`SELECT to_char(starts_at AT TIME ZONE 'UTC', 'HH24:MI:SS.US') AS at FROM calendar_events WHERE id = $1`, [created.body.data.id]);
    assert.equal(rows[0].at, '10:00:00.123000', 'stored as read back, not to the microsecond');
    // One microsecond apart is one instant here: ends_at is not after starts_at.
    const same = await api.post('/calendar/events', { data: event({ starts_at: '2026-12-02T10:00:00.000001Z', ends_at: '2026-12-02T10:00:00.000002Z' }) });
    assert.equal(same.status, 422);
    assert.ok(same.body.errors.ends_at, same.text);
  });

  test('the host: missing, malformed, unknown or another company’s user is 422 invalid_user', async () => {
    const other = await seedTenant(app.pool);
    for (const user_id of [undefined, 'nope', '0123456789abcdef01234567', other.ownerId, 123, null, {}, ['x']]) {
      const res = await api.post('/calendar/events', { data: event({ user_id }) });
      assert.equal(res.status, 422, String(user_id));
      assert.equal(res.body.error, 'invalid_user', String(user_id));
    }
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM calendar_events WHERE company_id = $1 AND user_id = $2', [tenant.companyId, other.ownerId]);
    assert.equal(rows[0].n, 0);
  });

  test('invalid_user is an input refusal: the Idempotency-Key is not spent, the corrected body goes through with it', async () => {
    const headers = { 'Idempotency-Key': `host-${Date.now()}` };
    const { user_id: _missing, ...hostless } = event();
    const refused = await api.post('/calendar/events', { data: hostless }, headers);
    assert.deepEqual([refused.status, refused.body.error], [422, 'invalid_user']);
    const made = await api.post('/calendar/events', { data: event() }, headers);
    assert.equal(made.status, 201, made.text);
    const replay = await api.post('/calendar/events', { data: event() }, headers);
    assert.deepEqual([replay.status, replay.headers.get('idempotent-replayed'), replay.body.data.id], [201, 'true', made.body.data.id]);
  });

  test('create_meet applies only when kind is not task: a task reads false, and true again once it is an event', async () => {
    const task = await api.post('/calendar/events', { data: event({ kind: 'task', create_meet: true }) });
    assert.equal(task.status, 201, task.text);
    assert.equal(task.body.data.create_meet, false);
    const moved = await api.patch(`/calendar/events/${task.body.data.id}`, { data: { kind: 'meeting' } });
    assert.equal(moved.body.data.create_meet, true);
  });

  test('a missing starts_at or ends_at is 422 parameter_missing naming it (the contract lists only a missing title as validation_failed)', async () => {
    for (const field of ['starts_at', 'ends_at']) {
      const res = await api.post('/calendar/events', { data: event({ [field]: undefined }) });
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.error, 'parameter_missing');
      assert.match(res.body.message, new RegExp(`data\\.${field}`));
    }
  });

  test('validation: missing title, ends_at not after starts_at, unknown kind or zone, read-only fields: 422 validation_failed naming the field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [event({ title: undefined }), 'title'],
      [event({ title: undefined, starts_at: undefined }), 'title'],
      [event({ ends_at: '2026-12-01T16:00:00Z' }), 'ends_at'],
      [event({ starts_at: '2026-12-01T00:00:00+16:00' }), 'starts_at'], // an offset PostgreSQL cannot read (was a 500)
      [event({ ends_at: '2026-12-01T15:00:00Z' }), 'ends_at'],
      [event({ kind: 'party' }), 'kind'],
      [event({ timezone: 'Mars/Olympus' }), 'timezone'],
      // Not IANA names, though Intl reads them (and Google Calendar refuses them when the event syncs).
      [event({ timezone: '+05:00' }), 'timezone'],
      [event({ timezone: 'america/mexico_city' }), 'timezone'],
      [event({ timezone: 'utc' }), 'timezone'],
      [event({ color: 'red' }), 'color'],
      [event({ source: 'google' }), 'source'],
      [event({ meet_url: 'https://meet.example/x' }), 'meet_url'],
      [event({ google_event_id: 'x' }), 'google_event_id'],
      [event({ reminders_minutes: [-5] }), 'reminders_minutes.0'],
    ];
    for (const [data, field] of cases) {
      const res = await api.post('/calendar/events', { data });
      assert.equal(res.status, 422, `${field}: ${res.text}`);
      assert.equal(res.body.error, 'validation_failed', field);
      assert.ok(res.body.errors[field], `${field}: ${JSON.stringify(res.body.errors)}`);
    }
  });

  test('PATCH: the host cannot change; a change that puts ends_at before the stored starts_at is refused; other fields change', async () => {
    const e = (await api.post('/calendar/events', { data: event() })).body.data;
    const host = await api.patch(`/calendar/events/${e.id}`, { data: { user_id: tenant.ownerId } });
    assert.equal(host.status, 422);
    assert.ok(host.body.errors.user_id);
    const backwards = await api.patch(`/calendar/events/${e.id}`, { data: { ends_at: '2026-12-01T15:59:00Z' } });
    assert.equal(backwards.status, 422);
    assert.ok(backwards.body.errors.ends_at);
    const moved = await api.patch(`/calendar/events/${e.id}`, { data: { title: 'Junta movida', starts_at: '2026-12-01T18:00:00Z', ends_at: '2026-12-01T19:00:00Z', kind: 'task' } });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.data.title, 'Junta movida');
    assert.equal(moved.body.data.kind, 'task');
    assert.equal(moved.body.data.user_id, tenant.ownerId);
    assert.equal((await api.get(`/calendar/events/${e.id}`)).body.data.starts_at, '2026-12-01T18:00:00.000Z');
  });

  test('a PATCH that changes nothing ({data: {}}, or the stored values sent again) writes nothing: updated_at stays', async () => {
    const e = (await api.post('/calendar/events', { data: event({ attendees: [{ name: 'Ana', email: 'ana@example.com' }], reminders_minutes: [10, 30] }) })).body.data;
    for (const data of [{}, { title: e.title, starts_at: e.starts_at, attendees: e.attendees, reminders_minutes: e.reminders_minutes, description: null, all_day: false }]) {
      const res = await api.patch(`/calendar/events/${e.id}`, { data });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body.data, e, JSON.stringify(data));
    }
    const moved = await api.patch(`/calendar/events/${e.id}`, { data: { title: e.title, location: 'Sala 1' } });
    assert.equal(moved.body.data.location, 'Sala 1');
    assert.ok(moved.body.data.updated_at > e.updated_at, 'a change moves updated_at');
  });

  test('all-day events run from local midnight to local midnight, so a DST day is 23 hours', async () => {
    // New York, 2026-03-08: clocks go forward; midnight is 05:00Z, the next midnight 04:00Z.
    const ny = await api.post('/calendar/events', {
      data: event({ all_day: true, timezone: 'America/New_York', starts_at: '2026-03-08T05:00:00Z', ends_at: '2026-03-09T04:00:00Z' }),
    });
    assert.equal(ny.status, 201, ny.text);
    const naive = await api.post('/calendar/events', {
      data: event({ all_day: true, timezone: 'America/New_York', starts_at: '2026-03-08T05:00:00Z', ends_at: '2026-03-09T05:00:00Z' }),
    });
    assert.equal(naive.status, 422, '24 hours later is 01:00 local on that day');
    assert.ok(naive.body.errors.ends_at);
    // Mexico City, 2022-04-03 (DST still in force then): 06:00Z to 05:00Z.
    const mx = await api.post('/calendar/events', {
      data: event({ all_day: true, timezone: 'America/Mexico_City', starts_at: '2022-04-03T06:00:00Z', ends_at: '2022-04-04T05:00:00Z' }),
    });
    assert.equal(mx.status, 201, mx.text);
    // Days that have no midnight start at their first moment: Santiago's DST starts at 00:00 on
    // 2026-09-06 (that day runs 01:00-03 = 04:00Z to 00:00-03 = 03:00Z), Havana's on 2026-03-08.
    for (const [timezone, starts_at, ends_at] of [
      ['America/Santiago', '2026-09-06T04:00:00Z', '2026-09-07T03:00:00Z'],
      ['America/Santiago', '2026-09-05T04:00:00Z', '2026-09-06T04:00:00Z'],
      ['America/Havana', '2026-03-08T05:00:00Z', '2026-03-09T04:00:00Z'],
    ]) {
      const res = await api.post('/calendar/events', { data: event({ all_day: true, timezone, starts_at, ends_at }) });
      assert.equal(res.status, 201, `${timezone} ${starts_at}: ${res.text}`);
    }
    const notFirst = await api.post('/calendar/events', { data: event({ all_day: true, timezone: 'America/Santiago', starts_at: '2026-09-06T05:00:00Z', ends_at: '2026-09-07T03:00:00Z' }) });
    assert.equal(notFirst.status, 422, 'an hour after the day began');
    // IANA names as the zone database writes them, aliases included.
    for (const timezone of ['UTC', 'US/Eastern', 'Asia/Kolkata']) assert.equal((await api.post('/calendar/events', { data: event({ timezone }) })).status, 201, timezone);
    const offMidnight = await api.post('/calendar/events', { data: event({ all_day: true, starts_at: '2026-12-01T16:00:00Z', ends_at: '2026-12-02T16:00:00Z' }) });
    assert.equal(offMidnight.status, 422);
    assert.ok(offMidnight.body.errors.starts_at);
  });

  test('list filters: from/to select overlapping events (bounds exclusive), user_id, kind, source', async () => {
    const t = await seedTenant(app.pool);
    const own = client(app.baseUrl, t.key);
    const at = (start: string, end: string, over: Record<string, unknown> = {}) =>
      own.post('/calendar/events', { data: { user_id: t.ownerId, title: start, starts_at: start, ends_at: end, ...over } }).then((r) => r.body.data.id);
    const before = await at('2026-05-01T08:00:00Z', '2026-05-01T09:00:00Z');
    const spanning = await at('2026-05-01T09:30:00Z', '2026-05-01T11:00:00Z', { kind: 'meeting' });
    const inside = await at('2026-05-01T10:15:00Z', '2026-05-01T10:45:00Z');
    const touching = await at('2026-05-01T11:00:00Z', '2026-05-01T12:00:00Z');
    const ids = async (qs: string) => ((await own.get(`/calendar/events?${qs}`)).body.data as Array<{ id: string }>).map((e) => e.id).sort();
    assert.deepEqual(await ids('from=2026-05-01T10:00:00Z&to=2026-05-01T11:00:00Z'), [spanning, inside].sort());
    assert.deepEqual(await ids('from=2026-05-01T09:00:00Z'), [spanning, inside, touching].sort(), 'an event ending exactly at from is not included');
    assert.deepEqual(await ids('to=2026-05-01T09:30:00Z'), [before], 'an event starting exactly at to is not included');
    // from after to: the contract's two conditions still apply (it was a 500: a range cannot run backwards).
    // The events covering 10:30–10:40 both end after 10:40 and start before 10:30.
    const backwards = await own.get('/calendar/events?from=2026-05-01T10:40:00Z&to=2026-05-01T10:30:00Z');
    assert.equal(backwards.status, 200, backwards.text);
    assert.deepEqual(backwards.body.data.map((e: { id: string }) => e.id).sort(), [spanning, inside].sort());
    // from equal to to: the events in progress at that instant (an empty range overlapped nothing).
    assert.deepEqual(await ids('from=2026-05-01T10:30:00Z&to=2026-05-01T10:30:00Z'), [spanning, inside].sort());
    assert.deepEqual(await ids('from=2026-05-01T11:00:00Z&to=2026-05-01T11:00:00Z'), [], 'one ending there, one starting there: neither is in progress');
    assert.deepEqual(await ids('kind=meeting'), [spanning]);
    assert.deepEqual(await ids(`user_id=${t.ownerId}&source=native&limit=2`).then((l) => l.length), 2);
    assert.deepEqual(await ids('source=google'), []);
    const bad = await own.get('/calendar/events?from=yesterday');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, 'invalid_parameter');
    // A malformed id in a filter is a malformed query parameter, as on every list (invalid_id is a path's or a cursor's).
    const badHost = await own.get('/calendar/events?user_id=zz');
    assert.deepEqual([badHost.status, badHost.body.error], [400, 'invalid_parameter']);
    assert.match(badHost.body.message, /user_id/);
    // A day (ISO 8601 allows it) is read in the company's zone, America/Mexico_City (-06:00): 2026-05-01
    // runs from 06:00Z to 06:00Z the next day, `to` included whole.
    const lateNight = await at('2026-05-01T05:00:00Z', '2026-05-01T05:30:00Z'); // 23:00 local on April 30
    const nextNight = await at('2026-05-02T05:30:00Z', '2026-05-02T05:45:00Z'); // 23:30 local on May 1
    assert.deepEqual(await ids('from=2026-05-01&to=2026-05-01'), [before, spanning, inside, touching, nextNight].sort());
    assert.deepEqual(await ids('to=2026-04-30'), [lateNight]);
    assert.equal((await own.get('/calendar/events?from=2026-02-30')).status, 400, 'a day that does not exist');
  });

  test('DELETE is 204 and the event is gone; scopes are enforced; Idempotency-Key replays a create', async () => {
    const e = (await api.post('/calendar/events', { data: event() })).body.data;
    assert.equal((await api.delete(`/calendar/events/${e.id}`)).status, 204);
    assert.equal((await api.get(`/calendar/events/${e.id}`)).status, 404);
    const reader = await seedTenant(app.pool, { scopes: ['read-calendar_events'] });
    const refused = await client(app.baseUrl, reader.key).post('/calendar/events', { data: { ...event(), user_id: reader.ownerId } });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.required, 'create-calendar_events');
    const headers = { 'Idempotency-Key': 'evento-unico' };
    const first = await api.post('/calendar/events', { data: event({ title: 'Una vez' }) }, headers);
    const again = await api.post('/calendar/events', { data: event({ title: 'Una vez' }) }, headers);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.body.data.id, first.body.data.id);
    const { rows } = await app.pool.query(`SELECT count(*)::int AS n FROM calendar_events WHERE company_id = $1 AND title = 'Una vez'`, [tenant.companyId]);
    assert.equal(rows[0].n, 1);
  });
});
