// The public booking page over HTTP: the HTML and its security headers, the
// JSON endpoints beside it, 404s for unknown and inactive links and tokens,
// an idempotent double submit, the per-address rate limit, the manage link
// (cancel, reschedule, an old link leading to the newest booking), and what
// a visitor can never see. test/booking-page.browser.test.ts drives the same
// pages in Chromium.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { PUBLIC_READS_PER_MINUTE, PUBLIC_WRITES_PER_MINUTE } from '../api/booking-page/routes.ts';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { waitForLockWaits } from './helpers/wait.ts';
import { loggablePath } from '../api/middleware/request.ts';

describe('public booking page (HTTP)', () => {
  let app: TestApp;
  let tenant: Tenant;
  let api: ReturnType<typeof client>;
  let hostSlug: string;
  let n = 0;
  /** Each test speaks from its own client address, so the per-address write limit is per test. */
  const from = () => ({ 'x-forwarded-for': `198.51.100.${++n}` });

  const newLink = async (over: Record<string, unknown> = {}) => {
    const res = await api.post('/booking-links', {
      data: {
        user_id: tenant.ownerId,
        slug: `pagina-${++n}`,
        title: 'Consulta <inicial>',
        description: 'Trae tus <dudas> & preguntas',
        duration_minutes: 30,
        timezone: 'UTC',
        minimum_notice_minutes: 0,
        weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' }],
        location: { type: 'in_person', value: 'Calle "Uno" <1>' },
        questions: [{ key: 'motivo', label: 'Motivo', type: 'text', required: true }],
        ...over,
      },
    });
    assert.equal(res.status, 201, res.text);
    return res.body.data;
  };
  const page = (path: string, headers: Record<string, string> = {}) => fetch(`${app.url}${path}`, { headers, redirect: 'manual' });
  const postJson = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${app.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  };
  const firstSlot = async (path: string) => {
    const res = await fetch(`${app.url}${path}/slots`, { headers: from() });
    const body = (await res.json()) as any;
    // The first free time of any day (late in the UTC day, today may have none left).
    return body.data.days.flatMap((d: any) => d.slots)[0] as { starts_at: string; ends_at: string };
  };

  before(async () => {
    app = await startTestApp({ TRUST_PROXY_HOPS: '1' });
    tenant = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    api = client(app.baseUrl, tenant.key);
    hostSlug = `anfitriona-${Date.now().toString(36)}`;
    await app.pool.query(`UPDATE users SET booking_slug = $2, first_name = 'Ana', last_name = 'López <3' WHERE id = $1`, [tenant.ownerId, hostSlug]);
  });
  after(() => app.close());

  test('a link switched off while a booking waits for it (its host removed) answers the page\'s 404, as an inactive link does', async () => {
    const link = await newLink();
    const base = `/book/${hostSlug}/${link.slug}`;
    const slot = await firstSlot(base);
    // The switch-off holds the link's row (as removing the host does) while the booking, which found the
    // link active, waits for it.
    const blocker = await app.pool.connect();
    await blocker.query('BEGIN');
    await blocker.query('UPDATE booking_links SET active = false WHERE id = $1', [link.id]);
    let booking: ReturnType<typeof postJson> | undefined;
    try {
      booking = postJson(`${base}/bookings`, { data: { starts_at: slot.starts_at, booker: { name: 'A', email: 'tarde@v.example' }, answers: { motivo: 'x' } } }, from());
      await waitForLockWaits(app.pool, { what: 'the booking to wait for the link' });
      await blocker.query('COMMIT');
      const res = await booking;
      assert.equal(res.status, 404, JSON.stringify(res.body));
      assert.equal(res.body.error, 'not_found');
    } finally {
      await blocker.query('ROLLBACK').catch(() => {});
      blocker.release();
      await booking?.catch(() => {});
    }
  });

  test('the page: host, link facts and questions, everything escaped, strict CSP with a nonce, the theme chosen in <head>', async () => {
    const link = await newLink();
    const res = await page(`/book/${hostSlug}/${link.slug}`, from());
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /text\/html/);
    const csp = res.headers.get('content-security-policy')!;
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    assert.ok(nonce, csp);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /frame-ancestors 'none'/);
    const body = await res.text();
    assert.ok(body.includes('Consulta &lt;inicial&gt;'));
    assert.ok(body.includes('Trae tus &lt;dudas&gt; &amp; preguntas'));
    assert.ok(body.includes('Calle &quot;Uno&quot; &lt;1&gt;'));
    assert.ok(body.includes('López &lt;3'));
    assert.ok(!body.includes('<inicial>') && !body.includes('<dudas>'));
    assert.ok(body.includes('30 minutos'));
    assert.ok(body.includes('id="q-motivo"'));
    // Without JavaScript the page says it needs it, rather than an empty list of times.
    assert.match(body, /<noscript><p class="error" role="alert">Esta página necesita JavaScript/);
    // Every script carries the nonce; the theme script runs in <head>, before the body.
    const scripts = body.match(/<script(?![^>]*type="application\/json")[^>]*>/g)!;
    assert.ok(scripts.length >= 2 && scripts.every((s) => s.includes(`nonce="${nonce}"`)), scripts.join('\n'));
    assert.ok(body.indexOf("getHours()") < body.indexOf('<body>'));
    const script = await page('/book/assets/booking.js');
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type')!, /javascript/);
  });

  test('the host page (/book/<booking_slug>, the booking_url of users): their active links, escaped, each to its page; 404 page without any', async () => {
    const active = await newLink();
    const inactive = await newLink();
    await api.patch(`/booking-links/${inactive.id}`, { data: { active: false } });
    const res = await page(`/book/${hostSlug}`, from());
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /text\/html/);
    assert.match(res.headers.get('content-security-policy')!, /default-src 'none'/);
    const body = await res.text();
    assert.ok(body.includes('López &lt;3') && !body.includes('López <3'));
    assert.ok(body.includes(`href="/book/${hostSlug}/${active.slug}"`));
    assert.ok(!body.includes(`/book/${hostSlug}/${inactive.slug}"`), 'an inactive link is not listed');
    assert.ok(body.includes('Consulta &lt;inicial&gt;'));
    for (const path of [`/book/nadie-${n}`, '/book/NO_VALE']) {
      const missing = await page(path, from());
      assert.equal(missing.status, 404, path);
      assert.match(missing.headers.get('content-type')!, /text\/html/, path);
    }
    // The public slots show no internal id (the link's is the company's): only the slots themselves.
    const slots = (await (await page(`/book/${hostSlug}/${active.slug}/slots`, from())).json()) as any;
    assert.ok(slots.data.days.length > 0);
    assert.equal('booking_link_id' in slots.data, false);
  });

  test('the host page of a person in two companies lists both\'s links under no company\'s logo; with one company\'s links, that company\'s logo', async () => {
    const a = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const b = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const slug = `dos-empresas-${Date.now().toString(36)}`;
    await app.pool.query(`UPDATE users SET booking_slug = $2, first_name = 'Ana' WHERE id = $1`, [a.ownerId, slug]);
    await app.pool.query('INSERT INTO memberships (company_id, user_id, is_owner) VALUES ($1, $2, false)', [b.companyId, a.ownerId]);
    await app.pool.query(`UPDATE companies SET logo_url = 'https://cdn.example/logo-a.png' WHERE id = $1`, [a.companyId]);
    const linkOf = async (key: string, linkSlug: string) => {
      const res = await client(app.baseUrl, key).post('/booking-links', { data: { user_id: a.ownerId, slug: linkSlug, title: linkSlug, duration_minutes: 30 } });
      assert.equal(res.status, 201, res.text);
      return res.body.data;
    };
    await linkOf(a.key, 'de-a');
    const ofB = await linkOf(b.key, 'de-b');
    const both = await (await page(`/book/${slug}`, from())).text();
    assert.ok(both.includes(`/book/${slug}/de-a"`) && both.includes(`/book/${slug}/de-b"`), 'both companies\' links listed');
    assert.ok(!both.includes('logo-a.png'), 'company A\'s logo does not brand company B\'s link');
    assert.ok((await (await page(`/book/${slug}/de-a`, from())).text()).includes('https://cdn.example/logo-a.png'), 'each link\'s own page: its company\'s logo');
    assert.equal((await client(app.baseUrl, b.key).patch(`/booking-links/${ofB.id}`, { data: { active: false } })).status, 200);
    assert.ok((await (await page(`/book/${slug}`, from())).text()).includes('https://cdn.example/logo-a.png'), 'one company\'s links: its logo');
  });

  test('404 pages for an unknown host, an unknown link and an inactive link; the JSON endpoints answer 404 not_found', async () => {
    const link = await newLink();
    for (const path of [`/book/nadie-${n}/${link.slug}`, `/book/${hostSlug}/no-existe`, `/book/${hostSlug}/${link.slug.toUpperCase()}`]) {
      const res = await page(path, from());
      assert.equal(res.status, 404, path);
      assert.match(await res.text(), /no existe/);
    }
    await api.patch(`/booking-links/${link.id}`, { data: { active: false } });
    assert.equal((await page(`/book/${hostSlug}/${link.slug}`, from())).status, 404);
    const slots = await page(`/book/${hostSlug}/${link.slug}/slots`, from());
    assert.equal(slots.status, 404);
    assert.equal(((await slots.json()) as any).error, 'not_found');
    const book = await postJson(`/book/${hostSlug}/${link.slug}/bookings`, { data: { starts_at: new Date().toISOString(), booker: { name: 'X', email: 'x@x.example' } } }, from());
    assert.equal(book.status, 404);
  });

  test('book from the page: 201 with the visitor view only; a double submit under one Idempotency-Key makes one booking', async () => {
    const link = await newLink();
    const base = `/book/${hostSlug}/${link.slug}`;
    const slot = await firstSlot(base);
    const key = `visita-${n}`;
    const headers = { ...from(), 'idempotency-key': key };
    const payload = { data: { starts_at: slot.starts_at, booker: { name: 'Eva', email: 'eva@visita.example', timezone: 'Europe/Madrid' }, answers: { motivo: 'Dudas' } } };
    const [a, b] = await Promise.all([postJson(`${base}/bookings`, payload, headers), postJson(`${base}/bookings`, payload, headers)]);
    const statuses = [a.status, b.status].sort();
    // One creates; the other replays it, or is told the first is still running.
    assert.ok(statuses[0] === 201 && (statuses[1] === 201 || statuses[1] === 409), JSON.stringify([a, b]));
    const created = a.status === 201 ? a : b;
    assert.deepEqual(Object.keys(created.body.data).sort(), ['booker', 'ends_at', 'id', 'location', 'manage_url', 'meet_url', 'starts_at', 'status', 'title']);
    assert.equal(created.body.data.status, 'confirmed');
    const replay = await postJson(`${base}/bookings`, payload, headers);
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.body.data.id, created.body.data.id);
    // The replay hands back the same manage link, though the stored answer does not hold it: the link
    // opens the booking, and the database keeps only its token's digest (docs/bookings.md).
    assert.equal(replay.body.data.manage_url, created.body.data.manage_url);
    // Another visitor (another address) sending the same key and body is not handed Eva's answer and
    // manage link: the key is the visitor's own, so theirs is a new booking of a slot that is taken.
    const stranger = await postJson(`${base}/bookings`, payload, { ...from(), 'idempotency-key': key });
    assert.deepEqual([stranger.status, stranger.body.error, stranger.headers.get('idempotent-replayed')], [409, 'slot_unavailable', null], JSON.stringify(stranger.body));
    assert.ok(!JSON.stringify(stranger.body).includes(created.body.data.manage_url));
    const token = created.body.data.manage_url.split('/').at(-1);
    const stored = await app.pool.query(
      `SELECT response_body::text AS body FROM idempotency_keys WHERE scope = 'booking_page' AND company_id = $1 AND state = 'done' ORDER BY created_at DESC LIMIT 1`,
      [tenant.companyId],
    );
    assert.equal(stored.rowCount, 1);
    assert.ok(!stored.rows[0].body.includes(token), stored.rows[0].body);
    // Nor does the request log line of the link's pages.
    assert.equal(loggablePath(`/book/manage/${token}/cancel`), '/book/manage/[token]/cancel');
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM bookings WHERE booking_link_id = $1', [link.id]);
    assert.equal(rows[0].n, 1);
    // The same key string used by the company's API integrator is another namespace; its answers are
    // stored as they are (a custom property named manage_url is the customer's own value).
    const own = { data: { name: 'Cliente', custom_properties: [{ key: 'manage_url', value: 'https://propio.example/x' }] } };
    const integrator = await api.post('/customers', own, { 'Idempotency-Key': key });
    assert.equal(integrator.status, 201, integrator.text);
    const again = await api.post('/customers', own, { 'Idempotency-Key': key });
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.body.data.manage_url, 'https://propio.example/x');
  });

  test('an unusable Idempotency-Key is refused before the body is read, as by the API', async () => {
    const link = await newLink();
    const bad = { ...from(), 'idempotency-key': 'clave con ñ' };
    for (const body of [{ data: {} }, { data: { starts_at: 'mañana', booker: { name: 'X', email: 'x@x.example' } } }]) {
      const res = await postJson(`/book/${hostSlug}/${link.slug}/bookings`, body, bad);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error, 'invalid_idempotency_key');
      const api400 = await api.post('/customers', { data: {} }, { 'Idempotency-Key': 'clave con ñ' });
      assert.equal(api400.body.error, res.body.error, 'the API answers the same');
    }
    const reschedule = await postJson('/book/manage/no-such-token/reschedule', { data: {} }, bad);
    assert.equal(reschedule.body.error, 'invalid_idempotency_key');
  });

  test('booking errors in the contract shape: a taken slot 409 slot_unavailable, bad input 422', async () => {
    const link = await newLink();
    const base = `/book/${hostSlug}/${link.slug}`;
    const slot = await firstSlot(base);
    const ok = await postJson(`${base}/bookings`, { data: { starts_at: slot.starts_at, booker: { name: 'A', email: 'a@v.example' }, answers: { motivo: 'x' } } }, from());
    assert.equal(ok.status, 201);
    const taken = await postJson(`${base}/bookings`, { data: { starts_at: slot.starts_at, booker: { name: 'B', email: 'b@v.example' }, answers: { motivo: 'x' } } }, from());
    assert.equal(taken.status, 409);
    assert.equal(taken.body.error, 'slot_unavailable');
    const missing = await postJson(`${base}/bookings`, { data: { starts_at: slot.starts_at, booker: { name: 'B', email: 'b@v.example' } } }, from());
    assert.equal(missing.status, 422);
    assert.ok(missing.body.errors['answers.motivo']);
    const extra = await postJson(`${base}/bookings`, { data: { starts_at: slot.starts_at, booker: { name: 'B', email: 'b@v.example' }, answers: { motivo: 'x' }, booking_link_id: link.id } }, from());
    assert.equal(extra.status, 422);
    // A body that is not JSON (a form post, fetch's text/plain for a string body): 415, as on the API.
    for (const type of ['text/plain', 'application/x-www-form-urlencoded']) {
      const res = await fetch(`${app.url}${base}/bookings`, { method: 'POST', headers: { 'content-type': type, ...from() }, body: JSON.stringify({ data: {} }) });
      assert.equal(res.status, 415, type);
      assert.equal(((await res.json()) as any).error, 'unsupported_media_type', type);
    }
  });

  test('rate limit per client address: writes past the limit get 429 rate_limited with Retry-After', async () => {
    const link = await newLink();
    const base = `/book/${hostSlug}/${link.slug}`;
    const headers = from();
    let last = null as null | Awaited<ReturnType<typeof postJson>>;
    for (let i = 0; i <= PUBLIC_WRITES_PER_MINUTE; i++) last = await postJson(`${base}/bookings`, { data: {} }, headers);
    assert.equal(last!.status, 429);
    assert.equal(last!.body.error, 'rate_limited');
    assert.ok(Number(last!.headers.get('retry-after')) >= 1);
    // Another address is not affected.
    assert.equal((await postJson(`${base}/bookings`, { data: {} }, from())).status, 422);
  });

  test('a page opened past the read limit is a page that says so (429, Retry-After), not the API\'s JSON', async () => {
    const link = await newLink();
    const headers = from();
    for (let i = 0; i < PUBLIC_READS_PER_MINUTE; i++) {
      const res = await page(`/book/${hostSlug}/${link.slug}/slots`, headers);
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    }
    for (const path of [`/book/${hostSlug}/${link.slug}`, `/book/${hostSlug}`, `/book/manage/${'a'.repeat(43)}`]) {
      const res = await page(path, headers);
      assert.equal(res.status, 429, path);
      assert.match(res.headers.get('content-type') ?? '', /^text\/html/, path);
      assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'none'/);
      const wait = Number(res.headers.get('retry-after'));
      assert.ok(wait >= 1, path);
      assert.match(await res.text(), new RegExp(`Vuelve a intentarlo en ${wait} segundos`), path);
    }
    // The slots, which the page's script reads, stay JSON.
    const slots = await page(`/book/${hostSlug}/${link.slug}/slots`, headers);
    assert.deepEqual([slots.status, ((await slots.json()) as any).error], [429, 'rate_limited']);
  });

  test('a cancel through the manage link under an Idempotency-Key replays its 200 on a retry (not 409 booking_cancelled)', async () => {
    const link = await newLink();
    const base = `/book/${hostSlug}/${link.slug}`;
    const slot = await firstSlot(base);
    const made = await postJson(`${base}/bookings`, { data: { starts_at: slot.starts_at, booker: { name: 'Eli', email: 'eli@v.example' }, answers: { motivo: 'x' } } }, from());
    const manage = new URL(made.body.data.manage_url).pathname;
    const headers = { ...from(), 'idempotency-key': `cancelar-${n}` };
    const first = await postJson(`${manage}/cancel`, { data: { reason: 'No puedo' } }, headers);
    assert.equal(first.status, 200);
    const retry = await postJson(`${manage}/cancel`, { data: { reason: 'No puedo' } }, headers);
    assert.equal(retry.status, 200, JSON.stringify(retry.body));
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, first.body);
    // Without the key, a second cancel is the conflict it is.
    assert.equal((await postJson(`${manage}/cancel`, {}, from())).body.error, 'booking_cancelled');
  });

  test('the manage link\'s cancel reason is quoted in both emails: control and direction characters are 422 there as in the API', async () => {
    const link = await newLink();
    const base = `/book/${hostSlug}/${link.slug}`;
    const slot = await firstSlot(base);
    const made = await postJson(`${base}/bookings`, { data: { starts_at: slot.starts_at, booker: { name: 'Flor', email: 'flor@v.example' }, answers: { motivo: 'x' } } }, from());
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const manage = new URL(made.body.data.manage_url).pathname;
    for (const reason of ['ok \u202egnp.exe', 'a\u0007b', 'rojo \u001b[31m']) {
      const res = await postJson(`${manage}/cancel`, { data: { reason } }, from());
      assert.equal(res.status, 422, JSON.stringify(reason));
      assert.equal(res.body.error, 'validation_failed');
      assert.ok(res.body.errors.reason, JSON.stringify(res.body));
    }
    const stored = await api.get(`/bookings/${made.body.data.id}`);
    assert.equal(stored.body.data.status, 'confirmed', 'nothing was cancelled by the refused reasons');
    const ok = await postJson(`${manage}/cancel`, { data: { reason: 'No puedo\nel martes' } }, from());
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal((await api.get(`/bookings/${made.body.data.id}`)).body.data.cancellation_reason, 'No puedo\nel martes');
  });

  test('the manage link of a meeting that has ended neither cancels nor moves it: 409 booking_ended; the host still can', async () => {
    const link = await newLink();
    const base = `/book/${hostSlug}/${link.slug}`;
    const slot = await firstSlot(base);
    const made = await postJson(`${base}/bookings`, { data: { starts_at: slot.starts_at, booker: { name: 'Ida', email: 'ida@v.example' }, answers: { motivo: 'x' } } }, from());
    assert.equal(made.status, 201);
    // Time passes: the meeting took place (an hour ago).
    await app.pool.query(`UPDATE bookings SET starts_at = now() - interval '2 hours', ends_at = now() - interval '1 hour' WHERE id = $1`, [made.body.data.id]);
    const manage = new URL(made.body.data.manage_url).pathname;
    const view = await (await page(manage, from())).text();
    assert.match(view, /Esta reserva ya terminó/);
    assert.doesNotMatch(view, /id="cancel-form"/);
    for (const [action, body] of [['cancel', {}], ['reschedule', { data: { starts_at: slot.starts_at } }]] as const) {
      const refused = await postJson(`${manage}/${action}`, body, from());
      assert.deepEqual([refused.status, refused.body.error], [409, 'booking_ended'], action);
    }
    const byApi = await api.get(`/bookings/${made.body.data.id}`);
    assert.equal(byApi.body.data.status, 'confirmed');
    assert.equal((await api.get(`/calendar/events/${byApi.body.data.calendar_event_id}`)).status, 200, 'the event of the meeting is kept');
    // No times are offered to move it either: the slots of its manage link answer as its reschedule does.
    const slots = await fetch(`${app.url}${manage}/slots`, { headers: from() });
    assert.deepEqual([slots.status, ((await slots.json()) as any).error], [409, 'booking_ended']);
    assert.equal((await api.post(`/bookings/${made.body.data.id}/cancel`, { data: { reason: 'No se presentó' } })).status, 200, 'the host cancels through the API');
    // A meeting that took place is history: its cancellation by the host mails nobody (no email job was queued with it).
    const { rows } = await app.pool.query(`SELECT count(*)::int AS n FROM pgboss.job WHERE name = 'booking-emails' AND data->>'booking_id' = $1 AND data->>'kind' = 'cancelled'`, [made.body.data.id]);
    assert.equal(rows[0].n, 0);
    const cancelled = await fetch(`${app.url}${manage}/slots`, { headers: from() });
    assert.deepEqual([cancelled.status, ((await cancelled.json()) as any).error], [409, 'booking_cancelled']);
    // The host may also give a no-show another time through the API (docs/bookings.md): a reschedule as any other.
    const noShow = await postJson(`${base}/bookings`, { data: { starts_at: slot.starts_at, booker: { name: 'Faltó', email: 'falto@v.example' }, answers: { motivo: 'x' } } }, from());
    assert.equal(noShow.status, 201, JSON.stringify(noShow.body));
    await app.pool.query(`UPDATE bookings SET starts_at = now() - interval '2 hours', ends_at = now() - interval '1 hour' WHERE id = $1`, [noShow.body.data.id]);
    const again = await api.post(`/bookings/${noShow.body.data.id}/reschedule`, { data: { starts_at: slot.starts_at, reason: 'No se presentó; otra hora' } });
    assert.equal(again.status, 201, again.text);
    assert.equal(again.body.data.rescheduled_from_id, noShow.body.data.id);
  });

  test('the manage link: the page, reschedule (the old link then leads to the new booking), cancel; unknown tokens 404', async () => {
    const link = await newLink({ duration_minutes: 60, slot_interval_minutes: 30 });
    const base = `/book/${hostSlug}/${link.slug}`;
    // A slot with another one 30 minutes later on the same day (late in the UTC day the first slot has
    // none: an hour starting at 23:30 would end past the day's hours, and earlier tests' bookings of
    // this host take some times).
    const offered = ((await (await fetch(`${app.url}${base}/slots`, { headers: from() })).json()) as any).data.days.flatMap((d: any) => d.slots) as Array<{ starts_at: string }>;
    const slot = offered.find((s) => offered.some((t) => Date.parse(t.starts_at) === Date.parse(s.starts_at) + 30 * 60_000))!;
    assert.ok(slot, 'two slots 30 minutes apart');
    const made = await postJson(`${base}/bookings`, { data: { starts_at: slot.starts_at, booker: { name: 'Leo', email: 'leo@v.example' }, answers: { motivo: 'x' } } }, from());
    const manage = new URL(made.body.data.manage_url).pathname;
    const view = await page(manage, from());
    assert.equal(view.status, 200);
    assert.match(await view.text(), /A nombre de Leo/);
    // Slots for a reschedule count the booking's own time as free: 30 minutes later overlaps it.
    const later = new Date(Date.parse(slot.starts_at) + 30 * 60_000).toISOString();
    const slots = (await (await page(`${manage}/slots?from=${slot.starts_at.slice(0, 10)}&to=${slot.starts_at.slice(0, 10)}&timezone=UTC`, from())).json()) as any;
    assert.ok(slots.data.days.flatMap((d: any) => d.slots).some((s: any) => s.starts_at === later), 'the overlapping time is offered');
    const movedKey = `mover-${n}-${Date.now()}`;
    const moved = await postJson(`${manage}/reschedule`, { data: { starts_at: later } }, { ...from(), 'idempotency-key': movedKey });
    assert.equal(moved.status, 201, JSON.stringify(moved.body));
    assert.equal(moved.body.data.starts_at, later);
    // The key's row keeps neither token: not the old one of the path, not the new one of the answer.
    // (Stored under the visitor's digest of the key: the latest reschedule row of the page.)
    const keyRow = (await app.pool.query(
      `SELECT path, response_body FROM idempotency_keys WHERE scope = 'booking_page' AND company_id = $1 AND path LIKE '%/reschedule' ORDER BY created_at DESC LIMIT 1`,
      [tenant.companyId],
    )).rows[0];
    assert.ok(keyRow, 'the reschedule stored its answer');
    for (const token of [manage.split('/').at(-1)!, moved.body.data.manage_url.split('/').at(-1)]) {
      assert.ok(!JSON.stringify(keyRow).includes(token), JSON.stringify(keyRow));
    }
    const old = await page(manage, from());
    assert.equal(old.status, 302);
    assert.equal(old.headers.get('location'), moved.body.data.manage_url);
    const { rows } = await app.pool.query('SELECT cancelled_by, rescheduled_to_id FROM bookings WHERE id = $1', [made.body.data.id]);
    assert.deepEqual(rows[0], { cancelled_by: 'booker', rescheduled_to_id: moved.body.data.id });
    const newManage = new URL(moved.body.data.manage_url).pathname;
    const cancelled = await postJson(`${newManage}/cancel`, { data: { reason: 'Ya no puedo' } }, from());
    assert.equal(cancelled.status, 200);
    assert.equal(cancelled.body.data.status, 'cancelled');
    const again = await postJson(`${newManage}/cancel`, {}, from());
    assert.equal(again.status, 409);
    assert.equal(again.body.error, 'booking_cancelled');
    const byApi = await api.get(`/bookings/${moved.body.data.id}`);
    assert.equal(byApi.body.data.cancelled_by, 'booker');
    assert.equal(byApi.body.data.cancellation_reason, 'Ya no puedo');
    for (const token of ['x'.repeat(43), 'corto', made.body.data.manage_url.slice(-43).replace(/^./, (c: string) => (c === 'A' ? 'B' : 'A'))]) {
      assert.equal((await page(`/book/manage/${token}`, from())).status, 404, token);
      assert.equal((await postJson(`/book/manage/${token}/cancel`, {}, from())).status, 404);
    }
  });

  test('the manage page of a booking whose link was switched off or deleted offers cancelling only, and says why', async () => {
    const link = await newLink({ duration_minutes: 30 });
    const base = `/book/${hostSlug}/${link.slug}`;
    const slot = await firstSlot(base);
    const made = await postJson(`${base}/bookings`, { data: { starts_at: slot.starts_at, booker: { name: 'Sol', email: 'sol@v.example' }, answers: { motivo: 'x' } } }, from());
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const manage = new URL(made.body.data.manage_url).pathname;
    assert.match(await (await page(manage, from())).text(), /Cambiar la hora/);
    assert.equal((await api.patch(`/booking-links/${link.id}`, { data: { active: false } })).status, 200);
    const off = await (await page(manage, from())).text();
    assert.doesNotMatch(off, /Cambiar la hora|resched-confirm/);
    assert.match(off, /Cancelar la reserva/);
    assert.match(off, /ya no se puede cambiar de hora/);
    assert.equal((await api.delete(`/booking-links/${link.id}`)).status, 204);
    const gone = await (await page(manage, from())).text();
    assert.doesNotMatch(gone, /Cambiar la hora|resched-confirm/);
    assert.match(gone, /ya no se puede cambiar de hora/);
    // Its times are still read in the link's zone, kept with the booking (UTC here; the company's is Mexico City's).
    const data = JSON.parse(/<script type="application\/json" id="booking-data">([^<]*)<\/script>/.exec(gone)![1]);
    assert.equal(data.linkTimezone, 'UTC');
  });

  test('a host booking slug cannot take the page paths (manage, assets)', async () => {
    for (const slug of ['manage', 'assets']) {
      const res = await api.put(`/users/${tenant.ownerId}`, { data: { booking_slug: slug } });
      assert.equal(res.status, 422, slug);
      assert.ok(res.body.errors.booking_slug);
    }
  });
});

describe('public booking page on a host of its own (BOOKING_URL)', () => {
  let app: TestApp;
  after(() => app?.close());

  test('the links handed out work on that host: the page, its slots and its script; the API host is unchanged', async () => {
    app = await startTestApp({ BOOKING_URL: 'http://book.example.test' });
    const tenant = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, tenant.key);
    const hostSlug = `propia-${Date.now().toString(36)}`;
    await app.pool.query(`UPDATE users SET booking_slug = $2 WHERE id = $1`, [tenant.ownerId, hostSlug]);
    const created = await api.post('/booking-links', {
      data: { user_id: tenant.ownerId, slug: 'consulta', title: 'Consulta', duration_minutes: 30, timezone: 'UTC', minimum_notice_minutes: 0, weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' }] },
    });
    assert.equal(created.status, 201, created.text);
    const publicUrl = new URL(created.body.data.public_url);
    assert.equal(publicUrl.host, 'book.example.test');
    // The booking host pointed at this process (its Host header); fetch cannot set Host, node:http can.
    const onBookingHost = (path: string) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: new URL(app.url).port, path, headers: { host: 'book.example.test' } }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d) => (body += d)).on('end', () => resolve({ status: res.statusCode!, body }));
        });
        req.on('error', reject).end();
      });
    const pageRes = await onBookingHost(publicUrl.pathname);
    assert.equal(pageRes.status, 200);
    assert.match(pageRes.body, /Consulta/);
    assert.equal((await onBookingHost(`${publicUrl.pathname}/slots`)).status, 200);
    assert.equal((await onBookingHost(`/book${publicUrl.pathname}/slots`)).status, 200, "the page's own /book/... requests");
    assert.equal((await onBookingHost('/book/assets/booking.js')).status, 200);
    assert.equal((await onBookingHost('/api/v1/customers')).status, 404, 'the booking host serves booking pages only');
    // On the API host nothing moved.
    assert.equal((await fetch(`${app.url}/book${publicUrl.pathname}`)).status, 200);
    assert.equal((await api.get('/customers')).status, 200);
  });
});
