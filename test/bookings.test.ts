// Booking links and bookings through the API: link rules and errors, the
// slot list and the booking step agreeing, a booking's calendar event, lead
// and emails (real SMTP server, real worker), 50 racers for one slot, cancel
// and reschedule with their .ics, scopes and tenant isolation.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openTransaction, transaction } from '../db/pool.ts';
import { objectId } from '../lib/objectid.ts';
import { findBookingLink } from '../api/routes/booking-link-queries.ts';
import { findMember, removeMember } from '../api/routes/user-queries.ts';
import { startWorker, type Worker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { startSmtp } from './helpers/smtp.ts';
import { newYorkFallBack } from './helpers/dates.ts';
import { waitFor, waitForLockWaits } from './helpers/wait.ts';

describe('booking links and bookings', () => {
  let app: TestApp;
  let tenant: Tenant;
  let other: Tenant;
  let api: ReturnType<typeof client>;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let worker: Worker;
  let slugCounter = 0;

  const link = (over: Record<string, unknown> = {}) => ({
    user_id: tenant.ownerId,
    slug: `asesoria-${++slugCounter}`,
    title: 'Asesoría',
    duration_minutes: 30,
    timezone: 'UTC',
    minimum_notice_minutes: 0,
    weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' }],
    ...over,
  });
  const createLink = async (over: Record<string, unknown> = {}) => {
    const res = await api.post('/booking-links', { data: link(over) });
    assert.equal(res.status, 201, res.text);
    return res.body.data;
  };
  const slotsOf = async (id: string, query = '') => {
    const res = await api.get(`/booking-links/${id}/slots${query}`);
    assert.equal(res.status, 200, res.text);
    return res.body.data.days.flatMap((d: any) => d.slots) as Array<{ starts_at: string; ends_at: string }>;
  };
  const booker = { name: 'Luis Pérez', email: 'Luis.Perez@cliente.example', timezone: 'America/Monterrey' };

  before(async () => {
    smtp = await startSmtp();
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    other = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    api = client(app.baseUrl, tenant.key);
    await app.pool.query(`UPDATE users SET booking_slug = $2, first_name = 'Ana', last_name = 'López' WHERE id = $1`, [tenant.ownerId, `ana-${Date.now()}`]);
    worker = await startWorker({ ...app.config, smtpUrl: smtp.url }, app.pool, app.databaseUrl);
  });
  after(async () => {
    await worker.stop();
    await app.close();
    await smtp.close();
  });

  test('a link: defaults, public_url from the host booking slug, detail by slug', async () => {
    const l = await createLink({ questions: [{ key: 'motivo', label: 'Motivo', type: 'long_text', required: true }] });
    assert.equal(l.active, true);
    assert.equal(l.slot_interval_minutes, null);
    assert.equal(l.buffer_before_minutes, 0);
    assert.deepEqual(l.booking_window, { type: 'rolling', days: 60 });
    assert.deepEqual(l.date_overrides, []);
    assert.equal(l.location, null);
    assert.deepEqual(l.questions, [{ key: 'motivo', label: 'Motivo', type: 'long_text', required: true, options: null }]);
    const { rows } = await app.pool.query('SELECT booking_slug FROM users WHERE id = $1', [tenant.ownerId]);
    assert.equal(l.public_url, `${app.config.bookingUrl}/${rows[0].booking_slug}/${l.slug}`);
    const bySlug = await api.get(`/booking-links/${l.slug}`);
    assert.equal(bySlug.status, 200);
    assert.equal(bySlug.body.data.id, l.id);
    const defaults = await api.post('/booking-links', { data: { user_id: tenant.ownerId, slug: `def-${slugCounter++}`, title: 'X', duration_minutes: 20 } });
    assert.equal(defaults.status, 201, defaults.text);
    assert.deepEqual(defaults.body.data.weekly_hours, [{ days: [1, 2, 3, 4, 5], start: '09:00', end: '17:00' }]);
    assert.equal(defaults.body.data.timezone, 'America/Mexico_City');
  });

  test('link errors: foreign host 422 invalid_user, taken slug, bad hours, bad zone, location rules, unknown fields', async () => {
    let res = await api.post('/booking-links', { data: link({ user_id: other.ownerId }) });
    assert.equal(res.status, 422);
    assert.equal(res.body.error, 'invalid_user');
    const l = await createLink();
    res = await api.post('/booking-links', { data: link({ slug: l.slug }) });
    assert.equal(res.status, 422);
    assert.equal(res.body.error, 'validation_failed');
    assert.ok(res.body.errors.slug);
    // A slug shaped like an ObjectId would be read as an id by the detail path.
    res = await api.post('/booking-links', { data: link({ slug: l.id }) });
    assert.equal(res.status, 422, res.text);
    assert.match(res.body.errors.slug[0], /ObjectId/);
    for (const bad of [
      { weekly_hours: [{ days: [8], start: '09:00', end: '10:00' }] },
      { weekly_hours: [{ days: [1], start: '10:00', end: '09:00' }] },
      { weekly_hours: [{ days: [1], start: '9:00', end: '10:00' }] },
      // Ranges of one day that overlap (50 copies of one all-day range cost 50 times the CPU of a slot list).
      { weekly_hours: Array.from({ length: 50 }, () => ({ days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' })) },
      { weekly_hours: [{ days: [1, 2], start: '00:00', end: '10:00' }, { days: [3], start: '01:00', end: '02:00' }, { days: [2], start: '05:00', end: '06:00' }] },
      // A day named twice in one range overlaps that range with itself.
      { weekly_hours: [{ days: [1, 1], start: '09:00', end: '10:00' }] },
      { date_overrides: [{ date: '2026-02-30', ranges: [] }] },
      { date_overrides: [{ date: '2026-03-02', ranges: [{ start: '09:00', end: '12:00' }, { start: '11:00', end: '13:00' }] }] },
      { timezone: 'Mars/Olympus' },
      { location: { type: 'url' } },
      { location: { type: 'url', value: 'javascript:alert(1)' } },
      { location: { type: 'google_meet', value: 'x' } },
      { slug: 'Con Espacios' },
      { duration_minutes: 2 },
      { duration_minutes: 30.5 },
      { booking_window: { type: 'range', start_on: '2026-05-01', end_on: '2026-04-01' } },
      { questions: [{ key: 'email', label: 'Correo', type: 'text' }] },
      { questions: [{ key: 'plan', label: 'Plan', type: 'select' }] },
      { questions: [{ key: 'plan', label: 'Plan', type: 'select', options: ['a', 'a'] }] },
      { questions: [{ key: 'plan', label: 'Plan\nBcc: x@y.example', type: 'text' }] },
      { source: 'x' },
    ]) {
      const r = await api.post('/booking-links', { data: link(bad) });
      assert.equal(r.status, 422, JSON.stringify(bad));
      assert.equal(r.body.error, 'validation_failed', JSON.stringify(bad));
    }
    // A booking window without its type is a missing parameter; an unknown type is invalid.
    const untyped = await api.post('/booking-links', { data: link({ booking_window: { start_on: '2026-05-01' } }) });
    assert.equal(untyped.status, 422, untyped.text);
    assert.equal(untyped.body.error, 'parameter_missing');
    assert.match(untyped.body.message, /data\.booking_window\.type/);
    const unknownType = await api.post('/booking-links', { data: link({ booking_window: { type: 'weekly' } }) });
    assert.equal(unknownType.status, 422, unknownType.text);
    assert.equal(unknownType.body.error, 'validation_failed');
    // Ranges that touch are not overlapping.
    const touching = await api.post('/booking-links', { data: link({ weekly_hours: [{ days: [1, 2], start: '09:00', end: '12:00' }, { days: [2], start: '12:00', end: '15:00' }] }) });
    assert.equal(touching.status, 201, touching.text);
    // The host never changes.
    res = await api.patch(`/booking-links/${l.id}`, { data: { user_id: other.ownerId } });
    assert.equal(res.status, 422);
  });

  test('a zone Intl reads but PostgreSQL does not know (a link the tz database removed) is refused wherever a timezone is taken', async () => {
    // US/Pacific-New: ICU keeps it, PostgreSQL's zone database dropped it in 2020. Stored, it failed
    // every SQL read in that zone (a link's daily limit: a 500 on every slot list once booked).
    const zone = 'US/Pacific-New';
    assert.doesNotThrow(() => new Intl.DateTimeFormat('en', { timeZone: zone }), 'Intl still reads it');
    const known = await app.pool.query('SELECT 1 FROM pg_timezone_names WHERE name = $1', [zone]);
    assert.equal(known.rowCount, 0, 'PostgreSQL does not');

    const refusedLink = await api.post('/booking-links', { data: link({ timezone: zone, max_bookings_per_day: 3 }) });
    assert.deepEqual([refusedLink.status, Object.keys(refusedLink.body.errors ?? {})], [422, ['timezone']], refusedLink.text);
    const l = await createLink({ timezone: 'America/Los_Angeles', max_bookings_per_day: 3 });
    // The values as stored change nothing, updated_at included (docs/api.md, Records).
    for (const body of [{}, { timezone: 'America/Los_Angeles', max_bookings_per_day: 3, title: l.title }]) {
      const same = await api.patch(`/booking-links/${l.id}`, { data: body });
      assert.deepEqual([same.status, same.body.data.updated_at], [200, l.updated_at], JSON.stringify(body));
    }
    const moved = await api.patch(`/booking-links/${l.id}`, { data: { timezone: zone } });
    assert.deepEqual([moved.status, Object.keys(moved.body.errors ?? {})], [422, ['timezone']], moved.text);
    assert.equal((await api.get(`/booking-links/${l.id}/slots?timezone=${encodeURIComponent(zone)}`)).status, 400);
    const [first] = await slotsOf(l.id);
    const booked = await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: first.starts_at, booker: { ...booker, timezone: zone } } });
    assert.deepEqual([booked.status, Object.keys(booked.body.errors ?? {})], [422, ['booker.timezone']], booked.text);
    const event = await api.post('/calendar/events', { data: { user_id: tenant.ownerId, title: 'Zona', starts_at: '2058-01-01T10:00:00Z', ends_at: '2058-01-01T11:00:00Z', timezone: zone } });
    assert.deepEqual([event.status, Object.keys(event.body.errors ?? {})], [422, ['timezone']], event.text);
    // Its zone, which both know, still answers, booked included.
    assert.equal((await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: first.starts_at, booker } })).status, 201);
    assert.equal((await api.get(`/booking-links/${l.id}/slots`)).status, 200);
  });

  test('slots: grouped by the visitor date, UTC instants, 62 days at most (422 beyond)', async () => {
    // Fixed dates far ahead, inside the link's own window: slots in the past are never offered, whatever the day the suite runs.
    const l = await createLink({ timezone: 'America/Mexico_City', booking_window: { type: 'range', start_on: '2058-11-01', end_on: '2059-03-31' }, weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '09:00', end: '10:00' }] });
    const res = await api.get(`/booking-links/${l.id}/slots?from=2058-12-01&to=2058-12-02&timezone=Asia/Kolkata`);
    assert.equal(res.status, 200, res.text);
    const data = res.body.data;
    assert.equal(data.timezone, 'Asia/Kolkata');
    // 09:00 in Mexico City is 15:00Z, 20:30 in Kolkata: the same day there.
    assert.deepEqual(data.days.map((d: any) => d.date), ['2058-12-01', '2058-12-02']);
    assert.deepEqual(data.days[0].slots, [
      { starts_at: '2058-12-01T15:00:00.000Z', ends_at: '2058-12-01T15:30:00.000Z' },
      { starts_at: '2058-12-01T15:30:00.000Z', ends_at: '2058-12-01T16:00:00.000Z' },
    ]);
    for (const day of data.days) for (const s of day.slots) assert.match(s.starts_at, /Z$/);
    let bad = await api.get(`/booking-links/${l.id}/slots?from=2058-12-01&to=2059-02-15`);
    assert.equal(bad.status, 422);
    assert.equal(bad.body.error, 'validation_failed');
    bad = await api.get(`/booking-links/${l.id}/slots?from=2058-12-05&to=2058-12-01`);
    assert.equal(bad.status, 422);
    bad = await api.get(`/booking-links/${l.id}/slots?timezone=Nowhere/City`);
    assert.equal(bad.status, 400);
    // A range running past year 9999 (the default 30 days after a late from) is 400, not a 500 of the date arithmetic.
    for (const query of ['from=9999-12-31', 'from=9999-12-01T00:00:00Z', 'to=9999-12-31']) {
      bad = await api.get(`/booking-links/${l.id}/slots?${query}`);
      assert.equal(bad.status, 400, query);
      assert.equal(bad.body.error, 'invalid_parameter', query);
    }
    const ok = await api.get(`/booking-links/${l.id}/slots?from=2058-12-01&to=2059-01-31`);
    assert.equal(ok.status, 200, ok.text);
    // Instants are held to the 62 days exactly (days in a zone with a clock change get its hour).
    assert.equal((await api.get(`/booking-links/${l.id}/slots?from=2058-12-01T00:00:00Z&to=2059-02-01T00:00:00Z`)).status, 200);
    const over = await api.get(`/booking-links/${l.id}/slots?from=2058-12-01T00:00:00Z&to=2059-02-01T00:00:00.001Z`);
    assert.deepEqual([over.status, over.body.error], [422, 'validation_failed']);
    // A bound that is neither a day nor an instant says what it takes.
    const malformed = await api.get(`/booking-links/${l.id}/slots?from=2058-12-01T09:00:00`);
    assert.deepEqual([malformed.status, malformed.body.error], [400, 'invalid_parameter']);
    assert.match(malformed.body.message, /YYYY-MM-DD o un instante ISO 8601 con su zona/);
  });

  test('a booking: calendar event, lead (created once, matched after), emails with .ics, and the slot gone from the list', async () => {
    const l = await createLink({ location: { type: 'in_person', value: 'Av. Reforma 1, CDMX' }, questions: [{ key: 'motivo', label: 'Motivo', type: 'text', required: true }] });
    const [first, second] = await slotsOf(l.id);
    const res = await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: first.starts_at, booker, answers: { motivo: 'Cotización' } } });
    assert.equal(res.status, 201, res.text);
    const b = res.body.data;
    assert.equal(b.status, 'confirmed');
    assert.equal(b.starts_at, first.starts_at);
    assert.equal(b.ends_at, first.ends_at);
    assert.deepEqual(b.booker, { name: 'Luis Pérez', email: 'luis.perez@cliente.example', phone: null, timezone: 'America/Monterrey' });
    assert.deepEqual(b.answers, { motivo: 'Cotización' });
    assert.match(b.manage_url, new RegExp(`^${app.config.bookingUrl}/manage/[A-Za-z0-9_-]{43}$`));
    // The read does not show the manage link again.
    const read = await api.get(`/bookings/${b.id}`);
    assert.equal(read.body.data.manage_url, undefined);

    const event = await api.get(`/calendar/events/${b.calendar_event_id}`);
    assert.equal(event.status, 200);
    assert.equal(event.body.data.source, 'booking');
    assert.equal(event.body.data.booking_id, b.id);
    assert.equal(event.body.data.booking_link_id, l.id);
    assert.equal(event.body.data.booker_lead_id, b.lead_id);
    assert.equal(event.body.data.location, 'Av. Reforma 1, CDMX');
    assert.deepEqual(event.body.data.attendees, [{ name: 'Luis Pérez', email: 'luis.perez@cliente.example' }]);

    const lead = await api.get(`/leads/${b.lead_id}`);
    assert.equal(lead.body.data.email, 'luis.perez@cliente.example');
    const events = await app.pool.query(`SELECT data FROM events WHERE company_id = $1 AND name = 'lead.created' AND data->>'id' = $2`, [tenant.companyId, b.lead_id]);
    assert.equal(events.rowCount, 1);

    // The slot is no longer offered; the next one still is.
    const after1 = await slotsOf(l.id);
    assert.ok(!after1.some((s) => s.starts_at === first.starts_at));
    assert.ok(after1.some((s) => s.starts_at === second.starts_at));
    // Booking it again: 409 slot_unavailable.
    const again = await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: first.starts_at, booker, answers: { motivo: 'x' } } });
    assert.equal(again.status, 409);
    assert.equal(again.body.error, 'slot_unavailable');
    assert.match(again.body.message, /horario/);

    // A second booking by the same person matches the lead.
    const b2 = await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: second.starts_at, booker: { ...booker, email: 'luis.perez@cliente.example' }, answers: { motivo: 'y' } } });
    assert.equal(b2.status, 201, b2.text);
    assert.equal(b2.body.data.lead_id, b.lead_id);

    const mails = await waitFor(() => {
      const mine = smtp.received.filter((m) => m.mail.messageId?.includes(b.id));
      return mine.length >= 2 && mine;
    }, 20_000, 'the booker and host emails');
    const toBooker = mails.find((m) => m.to.includes('luis.perez@cliente.example'))!;
    const toHost = mails.find((m) => !m.to.includes('luis.perez@cliente.example'))!;
    assert.match(toBooker.mail.subject!, /Reserva confirmada/);
    assert.ok(toBooker.mail.text!.includes(b.manage_url));
    const ics = toBooker.mail.attachments.find((a) => a.contentType.startsWith('text/calendar'));
    assert.ok(ics, 'an .ics attachment');
    const icsText = ics.content.toString();
    assert.match(icsText, /METHOD:REQUEST/);
    assert.match(icsText, new RegExp(`UID:${b.id}@`));
    assert.match(icsText, /SEQUENCE:0/);
    assert.match(toHost.mail.subject!, /Nueva reserva/);
    assert.ok(toHost.mail.text!.includes('luis.perez@cliente.example'));
  });

  test('a link title is one line (422 otherwise); one stored before that rule is escaped in the .ics, whose calendar is not ended early', async () => {
    const refused = await api.post('/booking-links', { data: link({ title: 'Asesoría\r\nEND:VCALENDAR' }) });
    assert.equal(refused.status, 422);
    assert.deepEqual(Object.keys(refused.body.errors), ['title']);
    const l = await createLink();
    const title = 'Vieja\r\nEND:VCALENDAR\nX-Inj:1; a, b\\';
    await app.pool.query('UPDATE booking_links SET title = $2 WHERE id = $1', [l.id, title]);
    const [slot] = await slotsOf(l.id);
    const res = await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slot.starts_at, booker } });
    assert.equal(res.status, 201, res.text);
    const mail = await waitFor(() => smtp.received.find((m) => m.mail.messageId?.includes(res.body.data.id) && m.to.includes('luis.perez@cliente.example')), 20_000, 'the booker\'s email');
    const ics = mail.mail.attachments.find((a) => a.contentType.startsWith('text/calendar'))!.content.toString();
    const lines = ics.replace(/\r\n[ \t]/g, '').split('\r\n').filter(Boolean);
    assert.deepEqual(lines.filter((line) => /^(BEGIN|END):VCALENDAR$/.test(line)), ['BEGIN:VCALENDAR', 'END:VCALENDAR']);
    assert.equal(lines.at(-1), 'END:VCALENDAR');
    assert.ok(!lines.some((line) => line.startsWith('X-Inj')), ics);
    const escaped = 'Vieja\\nEND:VCALENDAR\\nX-Inj:1\\; a\\, b\\\\';
    assert.ok(lines.includes(`NAME:${escaped}`), ics);
    assert.ok(lines.includes(`X-WR-CALNAME:${escaped}`), ics);
  });

  test('emails in autumn\'s repeated hour: two bookings at 01:30 say which, by their UTC offset; other times carry none', async () => {
    // New York repeats 01:00–02:00 on the first Sunday of November: 05:30Z is 01:30 EDT, 06:30Z is 01:30 EST.
    const change = newYorkFallBack(1);
    const l = await createLink({ timezone: 'America/New_York', weekly_hours: [{ days: [7], start: '01:00', end: '04:00' }], booking_window: change.window });
    const made: Array<{ id: string; expect: RegExp }> = [];
    for (const [starts_at, expect] of [
      [change.at('05:30'), /1:30 a\.\s?m\. GMT-4 \(America\/New_York\)/],
      [change.at('06:30'), /1:30 a\.\s?m\. GMT-5 \(America\/New_York\)/],
      [change.at('08:30'), /3:30 a\.\s?m\. \(America\/New_York\)/],
    ] as const) {
      const res = await api.post('/bookings', { data: { booking_link_id: l.id, starts_at, booker: { name: 'Ana', email: `ana.${starts_at.slice(11, 13)}@cliente.example`, timezone: 'America/New_York' } } });
      assert.equal(res.status, 201, res.text);
      made.push({ id: res.body.data.id, expect });
    }
    for (const { id, expect } of made) {
      const mails = await waitFor(() => {
        const mine = smtp.received.filter((m) => m.mail.messageId?.includes(id));
        return mine.length >= 2 && mine;
      }, 20_000, 'the booker and host emails');
      for (const m of mails) assert.match(m.mail.text!.replace(/\u202f|\u00a0/g, ' '), expect, m.mail.text!);
    }
  });

  test('a booker name is one visible line: line breaks, direction overrides and invisible-only names are 422 on booker.name', async () => {
    const l = await createLink();
    const slots = await slotsOf(l.id);
    for (const name of ['Mallory" <x@evil.example>\r\nBcc: victim@x.example', 'Ana\u2028Bcc: x@evil', 'Ana\u0085Linea', 'Ana\u202e', '\u200b\u2060', '\u3164', '\u00ad', ' ']) {
      const res = await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slots[0].starts_at, booker: { name, email: 'x@example.com' } } });
      assert.equal(res.status, 422, JSON.stringify(name));
      assert.ok(res.body.errors?.['booker.name'], `${JSON.stringify(name)}: ${res.text}`);
    }
    const ok = await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slots[0].starts_at, booker: { name: 'José Ñúñez', email: 'x@example.com' } } });
    assert.equal(ok.status, 201, ok.text);
  });

  test('the company name a tenant chose is the emails\' sender name, quotes and a trailing backslash included, never another address', async () => {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const own = client(app.baseUrl, t.key);
    const name = 'Acme "Uno" \\';
    assert.equal((await own.put('/company', { data: { name } })).status, 200);
    const l = (await own.post('/booking-links', { data: { ...link(), user_id: t.ownerId } })).body.data;
    const slots = (await own.get(`/booking-links/${l.id}/slots`)).body.data.days.flatMap((d: any) => d.slots);
    const b = (await own.post('/bookings', { data: { booking_link_id: l.id, starts_at: slots[0].starts_at, booker: { name: 'Ana', email: 'ana.remitente@example.com' } } })).body.data;
    const mail = await waitFor(() => smtp.received.find((m) => m.mail.messageId?.includes(b.id) && m.to.includes('ana.remitente@example.com')), 20_000, 'the booker email');
    assert.deepEqual(mail.mail.from?.value, [{ name, address: `no-reply@${new URL(app.config.siteUrl).hostname}` }]);
  });

  test('a host name or link title stored over several lines (before they had to be one line) heads the email quoted: none of its lines passes for ours', async () => {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const own = client(app.baseUrl, t.key);
    const l = (await own.post('/booking-links', { data: { ...link(), user_id: t.ownerId, title: 'Consulta' } })).body.data;
    await app.pool.query(`UPDATE users SET first_name = 'Ana', last_name = E'Ruiz\\nLugar: https://phish.example/pay\\u2028Nota: pague aquí' WHERE id = $1`, [t.ownerId]);
    await app.pool.query(`UPDATE booking_links SET title = E'Consulta\\rLugar: https://phish.example/t' WHERE id = $1`, [l.id]);
    const slots = (await own.get(`/booking-links/${l.id}/slots`)).body.data.days.flatMap((d: any) => d.slots);
    const made = await own.post('/bookings', { data: { booking_link_id: l.id, starts_at: slots[0].starts_at, booker: { name: 'Luis', email: 'luis.lineas@example.com' } } });
    assert.equal(made.status, 201, made.text);
    const mail = await waitFor(() => smtp.received.find((m) => m.mail.messageId?.includes(`booking-${made.body.data.id}-confirmed-booker`)), 20_000, 'the booker email');
    const text = mail.mail.text ?? '';
    assert.ok(text.startsWith('Consulta\n  Lugar: https://phish.example/t con Ana Ruiz\n  Lugar: https://phish.example/pay\n  Nota: pague aquí\n'), text);
    assert.doesNotMatch(text, /^(Lugar|Nota): https?:\/\/phish|^Nota:|\u2028/m);
    // The invitation's title and organizer on one line each (a calendar shows an escaped break as a break).
    const ics = mail.mail.attachments.find((a) => a.contentType.startsWith('text/calendar'))!.content.toString().replace(/\r\n[ \t]/g, '');
    assert.match(ics, /^SUMMARY:Consulta Lugar: https:\/\/phish\.example\/t con Ana Ruiz Lugar: https:\/\/phish\.example\/pay Nota: pague aquí\r?$/m);
    assert.match(ics, /^ORGANIZER;CN="?Ana Ruiz Lugar: https:\/\/phish\.example\/pay Nota: pague aquí"?:mailto:/m);
  });

  test('a long link title and booker name: the event title is cut to the events\' 300-character limit, so a client can copy it', async () => {
    const l = await createLink({ title: 'T'.repeat(198) + '📅' });
    const [slot] = await slotsOf(l.id);
    const name = '😀'.repeat(100);
    const res = await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slot.starts_at, booker: { ...booker, name } } });
    assert.equal(res.status, 201, res.text);
    const event = (await api.get(`/calendar/events/${res.body.data.calendar_event_id}`)).body.data;
    assert.ok(event.title.length <= 300 && event.title.length >= 299, `${event.title.length} UTF-16 units, as the events' schema counts`);
    assert.ok(event.title.startsWith('T'.repeat(198) + '📅: 😀'));
    assert.ok(event.title.endsWith('😀…'), 'no half of a surrogate pair before the ellipsis');
    // A client copying the event (a booking's own is read-only) gets it through the events' validation.
    const copy = await api.post('/calendar/events', { data: { user_id: event.user_id, title: event.title, starts_at: event.starts_at, ends_at: event.ends_at } });
    assert.equal(copy.status, 201, copy.text);
  });

  test('booking errors: an unknown link, an inactive link, a start that is not a slot, answers that break the questions', async () => {
    const l = await createLink({ questions: [{ key: 'plan', label: 'Plan', type: 'select', options: ['básico', 'pro'], required: true }] });
    const [slot] = await slotsOf(l.id);
    const post = (data: Record<string, unknown>) => api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slot.starts_at, booker, answers: { plan: 'pro' }, ...data } });
    let res = await post({ booking_link_id: '665f1c2a9b1e8a0012345678' });
    assert.equal(res.status, 422);
    assert.equal(res.body.error, 'validation_failed');
    res = await post({ starts_at: new Date(Date.parse(slot.starts_at) + 60_000).toISOString() });
    assert.equal(res.status, 409);
    assert.equal(res.body.error, 'slot_unavailable');
    res = await post({ starts_at: '2020-01-01T10:00:00Z' });
    assert.equal(res.status, 409);
    for (const answers of [{}, { plan: 'enterprise' }, { plan: 'pro', extra: 'x' }, { plan: true }]) {
      res = await post({ answers });
      assert.equal(res.status, 422, JSON.stringify(answers));
      assert.equal(res.body.error, 'validation_failed');
    }
    // A value of no answer's type, and answers that are no object, are named in words (not zod's "Entrada inválida").
    res = await post({ answers: { plan: 5 } });
    assert.deepEqual(res.body.errors, { 'answers.plan': ['debe ser texto (hasta 5000 caracteres) o true/false'] });
    res = await post({ answers: null });
    assert.deepEqual(res.body.errors, { answers: ['debe ser un objeto con las respuestas por clave de pregunta'] });
    res = await post({ booker: { name: 'X' } });
    assert.equal(res.status, 422);
    await api.patch(`/booking-links/${l.id}`, { data: { active: false } });
    res = await post({});
    assert.equal(res.status, 422);
    assert.equal(res.body.error, 'booking_link_inactive');
    assert.deepEqual(await slotsOf(l.id), []);
  });

  test('50 concurrent bookings of one slot: exactly one confirmed, 49 × 409 slot_unavailable, and the list agrees', async () => {
    const l = await createLink();
    const [slot] = await slotsOf(l.id);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slot.starts_at, booker: { name: `Visitante ${i}`, email: `v${i}@race.example` } } }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    assert.equal(statuses.filter((s) => s === 201).length, 1, JSON.stringify(statuses));
    assert.equal(statuses.filter((s) => s === 409).length, 49);
    assert.ok(results.filter((r) => r.status === 409).every((r) => r.body.error === 'slot_unavailable'));
    const { rows } = await app.pool.query(`SELECT count(*)::int AS n FROM bookings WHERE booking_link_id = $1 AND status = 'confirmed'`, [l.id]);
    assert.equal(rows[0].n, 1);
    assert.ok(!(await slotsOf(l.id)).some((s) => s.starts_at === slot.starts_at));
  });

  test('the exclusion constraint refuses an overlapping confirmed booking even past the lock', async () => {
    const l = await createLink();
    const [slot] = await slotsOf(l.id);
    const res = await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slot.starts_at, booker } });
    assert.equal(res.status, 201);
    await assert.rejects(
      app.pool.query(
        `INSERT INTO bookings (id, company_id, booking_link_id, user_id, status, starts_at, ends_at, blocked, title, booker_name, booker_email, manage_token_digest, ical_uid)
         SELECT '665f1c2a9b1e8a00aaaaaaaa', company_id, booking_link_id, user_id, 'confirmed', starts_at, ends_at, blocked, title, 'X', 'x@x.example', 'digest-x', 'uid-x'
           FROM bookings WHERE id = $1`,
        [res.body.data.id],
      ),
      (error: any) => error.code === '23P01',
    );
  });

  test('buffers and other bookings of the host across links; block_overlapping_bookings adds calendar events', async () => {
    const a = await createLink({ buffer_after_minutes: 30, weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '10:00', end: '12:00' }] });
    const b = await createLink({ weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '10:00', end: '12:00' }] });
    const day = new Date(Date.now() + 3 * 86_400_000).toISOString().slice(0, 10);
    const q = `?from=${day}&to=${day}`;
    const ten = `${day}T10:00:00.000Z`;
    assert.equal((await api.post('/bookings', { data: { booking_link_id: a.id, starts_at: ten, booker } })).status, 201);
    // a's booking at 10:00 blocks 10:00-11:00 (30 min + 30 min buffer) for b too.
    assert.deepEqual((await slotsOf(b.id, q)).map((s) => s.starts_at.slice(11, 16)), ['11:00', '11:30']);
    // A calendar event at 11:00 does not block until the host asks for it.
    const ev = await api.post('/calendar/events', { data: { user_id: tenant.ownerId, title: 'Comida', starts_at: `${day}T11:00:00Z`, ends_at: `${day}T11:30:00Z` } });
    assert.equal(ev.status, 201);
    assert.deepEqual((await slotsOf(b.id, q)).map((s) => s.starts_at.slice(11, 16)), ['11:00', '11:30']);
    await app.pool.query(`UPDATE users SET settings_preferences = settings_preferences || '{"block_overlapping_bookings": true}' WHERE id = $1`, [tenant.ownerId]);
    try {
      assert.deepEqual((await slotsOf(b.id, q)).map((s) => s.starts_at.slice(11, 16)), ['11:30']);
      const res = await api.post('/bookings', { data: { booking_link_id: b.id, starts_at: `${day}T11:00:00Z`, booker } });
      assert.equal(res.status, 409);
      assert.equal(res.body.error, 'slot_unavailable');
    } finally {
      await app.pool.query(`UPDATE users SET settings_preferences = settings_preferences - 'block_overlapping_bookings' WHERE id = $1`, [tenant.ownerId]);
    }
  });

  test('through the API: DST days in both directions, a +05:30 host, overrides, notice and window, and the booking step agreeing', async () => {
    // Dates decades ahead, so the test holds whatever day it runs (2030 + 28 years: the same weekdays, so the same DST days). New York changes its clocks on 2058-03-10 (forward) and 2058-11-03 (back): 09:00 is 14:00Z before, 13:00Z after, and 14:00Z again.
    const ny = await createLink({
      timezone: 'America/New_York',
      duration_minutes: 60,
      weekly_hours: [{ days: [6, 7], start: '09:00', end: '10:00' }],
      booking_window: { type: 'range', start_on: '2058-03-09', end_on: '2058-11-03' },
      date_overrides: [{ date: '2058-03-16', ranges: [] }, { date: '2058-03-17', ranges: [{ start: '15:00', end: '16:00' }] }],
    });
    const starts = async (id: string, q: string) => (await slotsOf(id, q)).map((s) => s.starts_at);
    assert.deepEqual(await starts(ny.id, '?from=2058-03-09&to=2058-03-10&timezone=UTC'), ['2058-03-09T14:00:00.000Z', '2058-03-10T13:00:00.000Z']);
    assert.deepEqual(await starts(ny.id, '?from=2058-11-02&to=2058-11-03&timezone=UTC'), ['2058-11-02T13:00:00.000Z', '2058-11-03T14:00:00.000Z']);
    // The 16th is a day off, the 17th opens at 15:00 only.
    assert.deepEqual(await starts(ny.id, '?from=2058-03-16&to=2058-03-17&timezone=UTC'), ['2058-03-17T19:00:00.000Z']);
    // Outside the date range: nothing.
    assert.deepEqual(await starts(ny.id, '?from=2058-11-09&to=2058-11-10&timezone=UTC'), []);
    // The booking step takes exactly the listed instants, not the wall time one hour off.
    assert.equal((await api.post('/bookings', { data: { booking_link_id: ny.id, starts_at: '2058-03-10T14:00:00Z', booker } })).status, 409);
    assert.equal((await api.post('/bookings', { data: { booking_link_id: ny.id, starts_at: '2058-03-10T13:00:00Z', booker } })).status, 201);

    // A host in Kolkata (+05:30): 09:00 there is 03:30Z.
    const kolkata = await createLink({ timezone: 'Asia/Kolkata', weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '09:00', end: '10:00' }] });
    const day = new Date(Date.now() + 10 * 86_400_000).toISOString().slice(0, 10);
    assert.deepEqual((await starts(kolkata.id, `?from=${day}&to=${day}&timezone=UTC`)).map((s) => s.slice(11, 16)), ['03:30', '04:00']);

    // Minimum notice: with 3 days of notice nothing in the next two days is offered, and booking it is refused.
    const notice = await createLink({ minimum_notice_minutes: 3 * 24 * 60 });
    const soon = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    assert.deepEqual(await slotsOf(notice.id, `?from=${soon}&to=${soon}&timezone=UTC`), []);
    assert.equal((await api.post('/bookings', { data: { booking_link_id: notice.id, starts_at: `${soon}T12:00:00Z`, booker } })).status, 409);
    // Rolling window of 2 days (today and tomorrow, in the link's zone, UTC): the second day is open, the third closed.
    // Measured against a link of the same host without a window, a host of their own: other tests of this
    // file book the owner, and late in the UTC day their first free slots are tomorrow's.
    const member = await api.post('/users', { data: { email: `ventana-${Date.now()}@example.com`, first_name: 'Ventana' } });
    assert.equal(member.status, 201, member.text);
    const rolling = await createLink({ user_id: member.body.data.id, booking_window: { type: 'rolling', days: 2 } });
    const unbounded = await createLink({ user_id: member.body.data.id });
    const second = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
    const third = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const secondDay = `?from=${second}&to=${second}&timezone=UTC`;
    const open = await slotsOf(unbounded.id, secondDay);
    assert.ok(open.length >= 47, `the second day's half hours are free but for one at most ending past the notice (${open.length})`);
    assert.deepEqual(await slotsOf(rolling.id, secondDay), open, 'the second day as open as without a window');
    assert.ok((await slotsOf(unbounded.id, `?from=${third}&to=${third}&timezone=UTC`)).length > 0);
    assert.deepEqual(await slotsOf(rolling.id, `?from=${third}&to=${third}&timezone=UTC`), [], 'the third closed');
  });

  test('max_bookings_per_day closes the day once reached', async () => {
    const l = await createLink({ max_bookings_per_day: 1, weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '10:00', end: '12:00' }] });
    const day = new Date(Date.now() + 5 * 86_400_000).toISOString().slice(0, 10);
    const q = `?from=${day}&to=${day}`;
    assert.equal((await slotsOf(l.id, q)).length, 4);
    assert.equal((await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: `${day}T11:00:00Z`, booker } })).status, 201);
    assert.deepEqual(await slotsOf(l.id, q), []);
    const res = await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: `${day}T10:00:00Z`, booker } });
    assert.equal(res.status, 409);
  });

  test('cancel: the event is deleted, the slot comes back, the booker gets METHOD:CANCEL; cancelling twice is 409 booking_cancelled', async () => {
    const l = await createLink();
    const [slot] = await slotsOf(l.id);
    const b = (await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slot.starts_at, booker } })).body.data;
    // No body at all is accepted (the reason is optional).
    const res = await api.post(`/bookings/${b.id}/cancel`);
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.status, 'cancelled');
    assert.equal(res.body.data.cancelled_by, 'host');
    assert.equal(res.body.data.calendar_event_id, null);
    assert.ok(res.body.data.cancelled_at);
    assert.equal((await api.get(`/calendar/events/${b.calendar_event_id}`)).status, 404);
    assert.ok((await slotsOf(l.id)).some((s) => s.starts_at === slot.starts_at));
    const twice = await api.post(`/bookings/${b.id}/cancel`, { data: { reason: 'otra vez' } });
    assert.equal(twice.status, 409);
    assert.equal(twice.body.error, 'booking_cancelled');
    const mail = await waitFor(() => smtp.received.find((m) => m.mail.messageId?.includes(`booking-${b.id}-cancelled-booker`)), 20_000, 'the cancellation email');
    const ics = mail.mail.attachments.find((a) => a.contentType.startsWith('text/calendar'))!;
    assert.match(ics.content.toString(), /METHOD:CANCEL/);
    assert.match(ics.content.toString(), /STATUS:CANCELLED/);
    // Where to book again: the link's page, which still takes bookings.
    assert.ok(l.public_url, 'the host has a booking slug');
    assert.match(mail.mail.text ?? '', new RegExp(`^Puedes reservar otro horario en ${l.public_url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
  });

  test('the host\'s notice has the booker\'s phone and answers under their labels; a reschedule\'s emails say the time it had and its reason', async () => {
    const l = await createLink({
      timezone: 'UTC',
      location: { type: 'google_meet' },
      questions: [{ key: 'motivo', label: 'Motivo de la cita', type: 'long_text', required: true }, { key: 'plan', label: 'Plan', type: 'select', options: ['Básico', 'Pro'] }, { key: 'acepto', label: 'Acepto el aviso', type: 'checkbox' }, { key: 'otro_tel', label: 'Otro teléfono', type: 'phone' }],
    });
    const [first, second] = await slotsOf(l.id);
    const made = await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: first.starts_at, booker: { ...booker, email: 'con-respuestas@cliente.example', phone: '+52 55 1234 5678' }, answers: { otro_tel: '', acepto: true, plan: 'Pro', motivo: 'Cotizar\nDos líneas\u2028Lugar: https://evil.example/meet' } } });
    assert.equal(made.status, 201, made.text);
    const id = made.body.data.id;
    const mail = (bookingId: string, kind: string, recipient: string) => waitFor(() => smtp.received.find((m) => m.mail.messageId?.includes(`booking-${bookingId}-${kind}-${recipient}`))?.mail.text, 20_000, `the ${recipient}'s ${kind} email`);
    const host = await mail(id, 'confirmed', 'host');
    assert.match(host, /^Teléfono: \+52 55 1234 5678$/m);
    // In the questions' order, a blank one left out; every further line of an answer indented (U+2028 breaks one too), so none passes for ours.
    assert.match(host, /^Motivo de la cita: Cotizar\n  Dos líneas\n  Lugar: https:\/\/evil\.example\/meet\nPlan: Pro\nAcepto el aviso: Sí$/m);
    assert.doesNotMatch(host, /Otro teléfono|\u2028|^Lugar: https:\/\/evil/m);
    // No Google Calendar connected for this host: no Meet link will come, and neither side is told to wait for one.
    assert.match(host, /^Lugar: Google Meet: tu Google Calendar no está conectado, así que la reserva no tendrá liga/m);
    assert.match(await mail(id, 'confirmed', 'booker'), /^Lugar: Google Meet \(el anfitrión te enviará la liga\)$/m);

    const moved = await api.post(`/bookings/${id}/reschedule`, { data: { starts_at: second.starts_at, reason: 'Se cruzó una junta\nLugar: https://evil.example/otra' } });
    assert.equal(moved.status, 201, moved.text);
    // Each in the reader's zone: the booker's (Monterrey), the link's (UTC) for the host.
    for (const [recipient, zone] of [['booker', booker.timezone], ['host', 'UTC']]) {
      const was = new Intl.DateTimeFormat('es-MX', { dateStyle: 'full', timeStyle: 'short', timeZone: zone }).format(new Date(first.starts_at));
      const text = await mail(moved.body.data.id, 'rescheduled', recipient);
      assert.match(text, /^Motivo: Se cruzó una junta\n  Lugar: https:\/\/evil\.example\/otra$/m, recipient);
      assert.ok(text.split('\n').some((line) => line.startsWith(`Antes: ${was}`)), `${recipient}: ${text}`);
    }
  });

  test('a cancellation with a reason: the booker and the host both read it', async () => {
    const l = await createLink();
    const [slot] = await slotsOf(l.id);
    const b = (await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slot.starts_at, booker } })).body.data;
    assert.equal((await api.post(`/bookings/${b.id}/cancel`, { data: { reason: 'Se me cruzó otra cita' } })).status, 200);
    for (const recipient of ['booker', 'host']) {
      const mail = await waitFor(() => smtp.received.find((m) => m.mail.messageId?.includes(`booking-${b.id}-cancelled-${recipient}`)), 20_000, `the ${recipient}'s cancellation email`);
      assert.match(mail.mail.text ?? '', /^Motivo: Se me cruzó otra cita$/m, recipient);
    }
  });

  test('a booker who gave no zone is written to in the link\'s zone, the cancellation too, also once the link is deleted', async () => {
    const l = await createLink({ timezone: 'America/New_York' });
    const [slot] = await slotsOf(l.id);
    const b = (await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slot.starts_at, booker: { name: 'Sin Zona', email: 'sin-zona@cliente.example' } } })).body.data;
    const text = (kind: string) => waitFor(() => smtp.received.find((m) => m.mail.messageId?.includes(`booking-${b.id}-${kind}-booker`))?.mail.text, 20_000, `the ${kind} email`);
    assert.match(await text('confirmed'), /America\/New_York/);
    assert.equal((await api.delete(`/booking-links/${l.id}`)).status, 204);
    // Its link gone, the booking can only be cancelled: a reschedule is the link's refusal, whatever the time.
    const moved = await api.post(`/bookings/${b.id}/reschedule`, { data: { starts_at: slot.starts_at } });
    assert.deepEqual([moved.status, moved.body.error, moved.body.errors], [422, 'booking_link_inactive', undefined], moved.text);
    assert.equal((await api.post(`/bookings/${b.id}/cancel`)).status, 200);
    const cancelled = await text('cancelled');
    assert.match(cancelled, /America\/New_York/);
    assert.doesNotMatch(cancelled, /America\/Mexico_City/);
  });

  test('emails one recipient at a time: a booker address refused for good still lets the host know; a host refused for now does not resend the booker\'s', async () => {
    const hostEmail = (await app.pool.query('SELECT email FROM users WHERE id = $1', [tenant.ownerId])).rows[0].email as string;
    const l = await createLink();
    const [first, second] = await slotsOf(l.id);
    const mails = (id: string, who: 'booker' | 'host') => smtp.received.filter((m) => m.mail.messageId?.includes(`booking-${id}-confirmed-${who}`));
    try {
      // A mistyped booker address, refused for good (550): the host is told anyway.
      smtp.state.reject = (to) => (to.endsWith('@rebota.example') ? 550 : null);
      const bounced = (await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: first.starts_at, booker: { name: 'Rebote', email: 'nadie@rebota.example' } } })).body.data;
      await waitFor(() => mails(bounced.id, 'host').length === 1, 20_000, 'the host notice despite the bounce');
      // Refused for good: the job ends (no retry), the address was tried once.
      const state = async (id: string) => (await app.pool.query(`SELECT state FROM pgboss.job WHERE name = 'booking-emails' AND data->>'booking_id' = $1`, [id])).rows[0]?.state;
      await waitFor(async () => (await state(bounced.id)) === 'completed', 20_000, 'the bounced booking\'s email job completed, not set to retry');
      assert.deepEqual(smtp.refused.filter((r) => r.to === 'nadie@rebota.example'), [{ to: 'nadie@rebota.example', code: 550 }]);
      // The host's server refusing for now (451): retried, and the booker's confirmation is not sent again.
      smtp.state.reject = (to) => (to === hostEmail ? 451 : null);
      const b = (await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: second.starts_at, booker: { name: 'Una Vez', email: 'una-vez@cliente.example' } } })).body.data;
      await waitFor(() => mails(b.id, 'booker').length === 1, 20_000, 'the booker confirmation');
      // Failed once and waiting for its retry (pg-boss counts a retry when it claims it, after a 15–30 s
      // backoff: the test brings that retry forward instead of waiting for it).
      const waiting = async () => (await app.pool.query(`SELECT state FROM pgboss.job WHERE name = 'booking-emails' AND data->>'booking_id' = $1`, [b.id])).rows[0]?.state === 'retry';
      await waitFor(waiting, 30_000, 'the job failed once and set to retry');
      smtp.state.reject = () => null;
      await app.pool.query(`UPDATE pgboss.job SET start_after = now() WHERE name = 'booking-emails' AND data->>'booking_id' = $1 AND state = 'retry'`, [b.id]);
      await waitFor(() => mails(b.id, 'host').length === 1, 30_000, 'the host notice after the retry');
      assert.equal(mails(b.id, 'booker').length, 1, 'the booker got one confirmation');
    } finally {
      smtp.state.reject = () => null;
    }
  });

  test('a lead deleted after it booked: the booking keeps its lead_id (a record of who booked), and so does its reschedule', async () => {
    const l = await createLink();
    const [first, second] = await slotsOf(l.id);
    const b = (await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: first.starts_at, booker: { ...booker, email: 'borrada@cliente.example' } } })).body.data;
    assert.ok(b.lead_id);
    assert.equal((await api.delete(`/leads/${b.lead_id}`)).status, 204);
    assert.equal((await api.get(`/leads/${b.lead_id}`)).status, 404);
    assert.equal((await api.get(`/bookings/${b.id}`)).body.data.lead_id, b.lead_id);
    const moved = await api.post(`/bookings/${b.id}/reschedule`, { data: { starts_at: second.starts_at } });
    assert.deepEqual([moved.status, moved.body.data?.lead_id], [201, b.lead_id], moved.text);
  });

  test('what is quoted in the emails holds no control characters: answers (one line but a long_text\'s), the booker\'s phone, a cancellation\'s reason', async () => {
    const l = await createLink({ questions: [{ key: 'tel', label: 'Teléfono', type: 'phone' }, { key: 'nota', label: 'Nota', type: 'long_text' }] });
    const [slot] = await slotsOf(l.id);
    const post = (data: Record<string, unknown>) => api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slot.starts_at, booker, ...data } });
    for (const [data, field] of [
      [{ answers: { tel: '55 1234\r\nBcc: x@y.example' } }, 'answers.tel'],
      [{ answers: { nota: 'uno\u0007dos' } }, 'answers.nota'],
      [{ answers: { nota: 'uno\u202edos' } }, 'answers.nota'],
      [{ booker: { ...booker, phone: '55\n1234' } }, 'booker.phone'],
    ] as const) {
      const refused = await post(data);
      assert.deepEqual([refused.status, Object.keys(refused.body.errors ?? {})], [422, [field]], `${JSON.stringify(data)}: ${refused.text}`);
    }
    const made = await post({ answers: { tel: '+52 (55) 1234-5678', nota: 'Primera línea\nsegunda\tcon tabulador' } });
    assert.equal(made.status, 201, made.text);
    const badReason = await api.post(`/bookings/${made.body.data.id}/cancel`, { data: { reason: 'a\u0007b' } });
    assert.deepEqual([badReason.status, Object.keys(badReason.body.errors ?? {})], [422, ['reason']], badReason.text);
    const cancelled = await api.post(`/bookings/${made.body.data.id}/cancel`, { data: { reason: 'Se movió la junta.\nGracias.' } });
    assert.deepEqual([cancelled.status, cancelled.body.data?.cancellation_reason], [200, 'Se movió la junta.\nGracias.'], cancelled.text);
  });

  test('reschedule: a new linked booking, the old one cancelled, the event moved, SEQUENCE bumped; its own time counts as free', async () => {
    const l = await createLink({ duration_minutes: 60, slot_interval_minutes: 15 });
    // A slot with another one 15 minutes later (late in the link's day the first has none: an hour from 23:00
    // would end past the day's hours, and earlier tests' bookings of this host take some times).
    const offered = await slotsOf(l.id);
    const slot = offered.find((s) => offered.some((t) => Date.parse(t.starts_at) === Date.parse(s.starts_at) + 15 * 60_000))!;
    assert.ok(slot, 'two slots 15 minutes apart');
    const b = (await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slot.starts_at, booker } })).body.data;
    // 15 minutes later overlaps the booking itself: allowed, since it moves.
    const later = new Date(Date.parse(slot.starts_at) + 15 * 60_000).toISOString();
    // A move to the time it has is none: 422 naming starts_at, and the booking stays as it was.
    const nowhere = await api.post(`/bookings/${b.id}/reschedule`, { data: { starts_at: slot.starts_at } });
    assert.deepEqual([nowhere.status, nowhere.body.errors], [422, { starts_at: ['es el horario que la reserva ya tiene'] }]);
    assert.equal((await api.get(`/bookings/${b.id}`)).body.data.status, 'confirmed');
    const res = await api.post(`/bookings/${b.id}/reschedule`, { data: { starts_at: later } });
    assert.equal(res.status, 201, res.text);
    const moved = res.body.data;
    assert.notEqual(moved.id, b.id);
    assert.equal(moved.starts_at, later);
    assert.equal(moved.rescheduled_from_id, b.id);
    assert.equal(moved.calendar_event_id, b.calendar_event_id);
    assert.equal(moved.lead_id, b.lead_id);
    const old = (await api.get(`/bookings/${b.id}`)).body.data;
    assert.equal(old.status, 'cancelled');
    assert.equal(old.rescheduled_to_id, moved.id);
    const event = (await api.get(`/calendar/events/${b.calendar_event_id}`)).body.data;
    assert.equal(event.starts_at, later);
    assert.equal(event.booking_id, moved.id);
    // The old booking cannot move again.
    const again = await api.post(`/bookings/${b.id}/reschedule`, { data: { starts_at: later } });
    assert.equal(again.status, 409);
    assert.equal(again.body.error, 'booking_cancelled');
    const mail = await waitFor(() => smtp.received.find((m) => m.mail.messageId?.includes(`booking-${moved.id}-rescheduled-booker`)), 20_000, 'the reschedule email');
    const ics = mail.mail.attachments.find((a) => a.contentType.startsWith('text/calendar'))!.content.toString();
    assert.match(ics, new RegExp(`UID:${b.id}@`));
    assert.match(ics, /SEQUENCE:1/);
    assert.match(ics, /METHOD:REQUEST/);
    // A taken time is refused and nothing changes. The time taken is a free slot after the moved booking
    // (a fixed "two hours later" could fall on another test's booking of the host, depending on the hour).
    const free = (await slotsOf(l.id, `?from=${encodeURIComponent(moved.ends_at)}`)).find((s) => Date.parse(s.starts_at) >= Date.parse(moved.ends_at) + 3_600_000)!;
    const other = await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: free.starts_at, booker } });
    assert.equal(other.status, 201, other.text);
    const clash = await api.post(`/bookings/${moved.id}/reschedule`, { data: { starts_at: other.body.data.starts_at } });
    assert.equal(clash.status, 409);
    assert.equal((await api.get(`/bookings/${moved.id}`)).body.data.status, 'confirmed');
  });

  test('list filters: link, host, status, window', async () => {
    const l = await createLink();
    const [s1, s2] = await slotsOf(l.id);
    const b1 = (await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: s1.starts_at, booker } })).body.data;
    const b2 = (await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: s2.starts_at, booker } })).body.data;
    await api.post(`/bookings/${b2.id}/cancel`);
    const ids = async (q: string) => (await api.get(`/bookings?booking_link_id=${l.id}${q}`)).body.data.map((b: any) => b.id);
    assert.deepEqual(new Set(await ids('')), new Set([b1.id, b2.id]));
    assert.deepEqual(await ids('&status=confirmed'), [b1.id]);
    assert.deepEqual(await ids('&status=cancelled'), [b2.id]);
    assert.deepEqual(await ids(`&to=${encodeURIComponent(s1.ends_at)}`), [b1.id]);
    assert.deepEqual(await ids(`&from=${encodeURIComponent(s1.ends_at)}`), [b2.id]);
    // A day, as on /calendar/events: read in the company's zone, `to` included whole.
    const zone = (await api.get('/company')).body.data.timezone;
    const localDay = (at: number) => new Intl.DateTimeFormat('en-CA', { timeZone: zone }).format(new Date(at));
    const day = localDay(Date.parse(s1.starts_at));
    assert.ok((await ids(`&from=${day}&to=${day}`)).includes(b1.id), `${day} in ${zone}`);
    const dayBefore = localDay(Date.parse(s1.starts_at) - 86_400_000);
    assert.deepEqual(await ids(`&from=${dayBefore}&to=${dayBefore}`), []);
    const badDay = await api.get('/bookings?from=2026-02-30');
    assert.deepEqual([badDay.status, badDay.body.error], [400, 'invalid_parameter']);
    assert.equal((await api.get(`/bookings?user_id=${other.ownerId}`)).body.data.length, 0);
  });

  test('a host removed from a company: their links there switch off and cannot be switched on; their other company is untouched', async () => {
    // The host of `tenant` is also a member of a second company, with a link there.
    const second = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    await app.pool.query('INSERT INTO memberships (company_id, user_id) VALUES ($1, $2)', [second.companyId, tenant.ownerId]);
    const secondApi = client(app.baseUrl, second.key);
    const there = await secondApi.post('/booking-links', { data: link() });
    assert.equal(there.status, 201, there.text);
    const here = await createLink();
    // A window two days ahead (inside the default 60-day booking window whatever today is).
    const day = new Date(Date.now() + 2 * 86_400_000).toISOString().slice(0, 10);
    const window = `?from=${day}T15:00:00Z&to=${day}T17:00:00Z`;
    const [slot] = await slotsOf(here.id, window);
    assert.equal((await secondApi.delete(`/users/${tenant.ownerId}`)).status, 204);

    const read = await secondApi.get(`/booking-links/${there.body.data.id}`);
    assert.equal(read.body.data.active, false, 'switched off with the membership');
    const slots = await secondApi.get(`/booking-links/${there.body.data.id}/slots`);
    assert.deepEqual(slots.body.data.days.flatMap((d: any) => d.slots), []);
    const booked = await secondApi.post('/bookings', { data: { booking_link_id: there.body.data.id, starts_at: slot.starts_at, booker } });
    assert.equal(booked.status, 422, booked.text);
    assert.equal(booked.body.error, 'booking_link_inactive');
    const revived = await secondApi.patch(`/booking-links/${there.body.data.id}`, { data: { active: true } });
    assert.equal(revived.status, 422, revived.text);
    assert.equal(revived.body.error, 'invalid_user');
    assert.equal((await secondApi.patch(`/booking-links/${there.body.data.id}`, { data: { title: 'Sigue guardado' } })).status, 200, 'other changes still work');
    // The company the host still belongs to keeps the link and the slot.
    assert.equal((await api.get(`/booking-links/${here.id}`)).body.data.active, true);
    assert.ok((await slotsOf(here.id, window)).some((s) => s.starts_at === slot.starts_at));
  });

  test('a host removed from their only company: the link\'s public_url is null, not the freed booking slug someone else can take', async () => {
    const slug = `anfitriona-${Date.now()}`;
    const host = await api.post('/users', { data: { email: `${slug}@example.com`, first_name: 'Hana', booking_slug: slug } });
    assert.equal(host.status, 201, host.text);
    const made = await createLink({ user_id: host.body.data.id });
    assert.match(made.public_url, new RegExp(`/${slug}/${made.slug}$`));
    assert.equal((await api.delete(`/users/${host.body.data.id}`)).status, 204);
    const read = async () => {
      const detail = (await api.get(`/booking-links/${made.id}`)).body.data;
      const listed = (await api.get(`/booking-links?user_id=${host.body.data.id}`)).body.data.find((l: any) => l.id === made.id);
      return [detail.public_url, listed.public_url];
    };
    assert.deepEqual(await read(), [null, null]);
    // The slug is free again: another person takes it, and the old link still does not point at their page.
    const taker = await api.post('/users', { data: { email: `otra-${slug}@example.com`, first_name: 'Nora', booking_slug: slug } });
    assert.equal(taker.status, 201, taker.text);
    assert.deepEqual(await read(), [null, null]);
  });

  test('removing a host while one of their links takes a booking: the removal waits for the booking, no deadlock', async () => {
    const second = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    await app.pool.query('INSERT INTO memberships (company_id, user_id) VALUES ($1, $2)', [second.companyId, tenant.ownerId]);
    const created = await client(app.baseUrl, second.key).post('/booking-links', { data: link() });
    assert.equal(created.status, 201, created.text);
    // The booking's order (api/bookings/book.ts): the link row locked, then rows referencing the company.
    const booking = await openTransaction(app.pool);
    await findBookingLink(booking.client, second.companyId, created.body.data.id, true);
    const member = (await findMember(app.pool, second.companyId, tenant.ownerId))!;
    const removal = transaction(app.pool, (db) => removeMember(db, app.deps.jobs, second.companyId, member));
    // The removal has locked the company and waits for the link row…
    await waitForLockWaits(app.pool, { query: 'UPDATE booking_links SET active = false%', what: 'the removal waiting for the link' });
    // …while the booking inserts a row referencing the company (KEY SHARE on it), then commits.
    await booking.client.query(
      `INSERT INTO calendar_events (id, company_id, user_id, title, starts_at, ends_at) VALUES ($1, $2, $3, 'Reserva', now(), now() + interval '30 minutes')`,
      [objectId(), second.companyId, tenant.ownerId],
    );
    await booking.commit();
    await removal;
    assert.equal((await client(app.baseUrl, second.key).get(`/booking-links/${created.body.data.id}`)).body.data.active, false);
  });

  test('the cached link list follows the host’s booking_slug; a deleted link is no longer named by its bookings’ events', async () => {
    const cached = await seedTenant(app.pool, { rateLimitPerMinute: 100_000, responseCache: true });
    const cachedApi = client(app.baseUrl, cached.key);
    await app.pool.query('UPDATE users SET booking_slug = $2 WHERE id = $1', [cached.ownerId, `host-${Date.now()}`]);
    const created = await cachedApi.post('/booking-links', { data: link({ user_id: cached.ownerId }) });
    assert.equal(created.status, 201, created.text);
    await cachedApi.get('/booking-links');
    const hit = await cachedApi.get('/booking-links');
    assert.equal(hit.headers.get('x-cache'), 'HIT');
    const slug = `nuevo-${Date.now()}`;
    const renamed = await cachedApi.put(`/users/${cached.ownerId}`, { data: { booking_slug: slug } });
    assert.equal(renamed.status, 200, renamed.text);
    const after = await cachedApi.get('/booking-links');
    assert.notEqual(after.headers.get('x-cache'), 'HIT');
    assert.ok(after.body.data[0].public_url.endsWith(`/${slug}/${created.body.data.slug}`), after.body.data[0].public_url);

    const l = await createLink();
    const [slot] = await slotsOf(l.id);
    const b = (await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slot.starts_at, booker } })).body.data;
    assert.equal((await api.delete(`/booking-links/${l.id}`)).status, 204);
    const booking = (await api.get(`/bookings/${b.id}`)).body.data;
    assert.equal(booking.booking_link_id, null);
    const event = (await api.get(`/calendar/events/${booking.calendar_event_id}`)).body.data;
    assert.equal(event.booking_link_id, null);
  });

  test('tenant isolation and scopes', async () => {
    const l = await createLink();
    const [slot] = await slotsOf(l.id);
    const b = (await api.post('/bookings', { data: { booking_link_id: l.id, starts_at: slot.starts_at, booker } })).body.data;
    const foreign = client(app.baseUrl, other.key);
    assert.equal((await foreign.get(`/booking-links/${l.id}`)).status, 404);
    assert.equal((await foreign.get(`/booking-links/${l.slug}`)).status, 404);
    assert.equal((await foreign.get(`/booking-links/${l.id}/slots`)).status, 404);
    assert.equal((await foreign.get(`/bookings/${b.id}`)).status, 404);
    assert.equal((await foreign.post(`/bookings/${b.id}/cancel`)).status, 404);
    const cross = await foreign.post('/bookings', { data: { booking_link_id: l.id, starts_at: slot.starts_at, booker } });
    assert.equal(cross.status, 422);
    assert.equal((await api.get(`/bookings/${b.id}`)).body.data.status, 'confirmed');
    const readOnly = await seedTenant(app.pool, { scopes: ['read-bookings', 'read-booking_links'] });
    const ro = client(app.baseUrl, readOnly.key);
    assert.equal((await ro.post('/booking-links', { data: link() })).status, 403);
    assert.equal((await ro.post('/bookings', { data: {} })).status, 403);
    assert.equal((await ro.get('/bookings')).status, 200);
  });
});
