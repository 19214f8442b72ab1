// Webhook endpoints API over real HTTP (contract: "Webhook endpoint",
// "Webhook delivery", "Events", the "Webhook endpoints" endpoint table,
// "Errors", "Authentication"; DESIGN.md: manual pause vs automatic shut-off,
// one delivery at /webhook-endpoints/:id/deliveries/:delivery_id). No worker
// runs here, so every delivery a write fans out stays `pending`: these tests
// check the configuration surface and the history, the delivery itself is
// test/webhooks.delivery.test.ts's.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { issueKey } from '../api/admin/keys.ts';
import { EMITTED_EVENT_NAMES } from '../lib/webhook-events.ts';
import { client, request, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { signedInMember, signedInOwner } from './helpers/sessions.ts';

type Api = ReturnType<typeof client>;

// Written out from the contract's "Event names" table on purpose: importing
// the product's list would make this test agree with any mistake in it.
const CONTRACT_EVENTS = [
  'income.created',
  'income.paid',
  'income.deleted',
  'sale.created',
  'sale.paid',
  'sale.refunded',
  'recurring.created',
  'recurring.occurrence_created',
  'recurring.ended',
  'recurring.deactivated',
  'invoice.emitted',
  'invoice.cancelled',
  'invoice.substituted',
  'invoice.payment_complement_added',
  'customer.created',
  'lead.created',
];

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const HOOK_URL = 'https://hooks.example.com/service';
const MISSING_ID = '0123456789abcdef01234567';

async function createEndpoint(api: Api, data: Record<string, unknown> = {}, prefix = '/webhook-endpoints') {
  const res = await api.post(prefix, { data: { url: HOOK_URL, enabled_events: ['*'], ...data } });
  assert.equal(res.status, 201, res.text);
  return res.body.data as Record<string, any>;
}

function assertValidationFailed(res: { status: number; body: any; text: string }, field: RegExp, label: string): void {
  assert.equal(res.status, 422, `${label}: ${res.text}`);
  assert.equal(res.body.error, 'validation_failed', label);
  const fields = Object.keys(res.body.errors ?? {});
  assert.ok(fields.length > 0 && fields.every((name) => field.test(name)), `${label}: errors ${JSON.stringify(res.body.errors)}`);
}

describe('webhook endpoints (API key)', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  async function tenant(options: { scopes?: string[] } = {}): Promise<Tenant & { api: Api }> {
    const t = await seedTenant(app.pool, { ...options });
    return { ...t, api: client(app.baseUrl, t.key) };
  }

  test('create answers 201 with the secret once (whsec_, last four), active, no failures, null health fields', async () => {
    const { api } = await tenant();
    const res = await api.post('/webhook-endpoints', {
      data: { url: HOOK_URL, enabled_events: ['customer.created', 'invoice.*'], description: 'ERP' },
    });
    assert.equal(res.status, 201, res.text);
    const ep = res.body.data;
    assert.match(ep.id, /^[0-9a-f]{24}$/);
    assert.equal(ep.object, 'webhook_endpoint');
    assert.equal(ep.url, HOOK_URL);
    assert.equal(ep.description, 'ERP');
    assert.deepEqual(ep.enabled_events, ['customer.created', 'invoice.*']);
    assert.match(ep.secret, /^whsec_.{16,}$/);
    assert.equal(ep.secret_last_four, ep.secret.slice(-4));
    assert.equal(ep.active, true);
    assert.equal(ep.consecutive_failures, 0);
    assert.equal(ep.last_delivery_at, null);
    assert.equal(ep.last_delivery_status, null);
    assert.equal(ep.disabled_at, null);
    assert.equal(ep.disabled_reason, null);
    assert.match(ep.created_at, ISO);
    assert.match(ep.updated_at, ISO);
  });

  test('the secret is never readable again: GET and list omit it', async () => {
    const { api } = await tenant();
    const ep = await createEndpoint(api);
    const read = await api.get(`/webhook-endpoints/${ep.id}`);
    assert.equal(read.status, 200);
    assert.equal('secret' in read.body.data, false);
    assert.equal(read.body.data.secret_last_four, ep.secret.slice(-4));
    assert.ok(!read.text.includes(ep.secret));
    const list = await api.get('/webhook-endpoints');
    assert.equal(list.status, 200);
    assert.equal(list.body.data.length, 1);
    assert.equal('secret' in list.body.data[0], false);
    assert.ok(!list.text.includes(ep.secret));
  });

  test('list: meta.available_events lists the events the service emits (test/webhooks.emitted.test.ts); limit and has_more present', async () => {
    const { api } = await tenant();
    const first = await createEndpoint(api);
    const second = await createEndpoint(api, { url: 'https://hooks.example.com/second' });
    const list = await api.get('/webhook-endpoints');
    assert.equal(list.status, 200);
    assert.deepEqual([...list.body.meta.available_events].sort(), [...EMITTED_EVENT_NAMES].sort());
    for (const name of list.body.meta.available_events) assert.ok(CONTRACT_EVENTS.includes(name), `${name} is a contract event`);
    assert.equal(list.body.meta.limit, 25);
    assert.equal(list.body.meta.has_more, false);
    assert.deepEqual(list.body.data.map((e: any) => e.id), [second.id, first.id], 'newest first');
    const paged = await api.get('/webhook-endpoints?limit=1');
    assert.equal(paged.body.meta.limit, 1);
    assert.equal(paged.body.meta.has_more, true);
  });

  test('enabled_events: empty, unknown names and misplaced or unknown wildcards are 422 validation_failed on enabled_events', async () => {
    const { api } = await tenant();
    const refused = [[], ['foo.bar'], ['invoice.pa*'], ['*.paid'], ['nope.*'], ['invoice.*.x']];
    for (const events of refused) {
      const res = await api.post('/webhook-endpoints', { data: { url: HOOK_URL, enabled_events: events } });
      assertValidationFailed(res, /^enabled_events/, JSON.stringify(events));
    }
    assert.equal((await api.get('/webhook-endpoints')).body.data.length, 0, 'nothing was stored');
  });

  test('enabled_events: "*", a whole-segment prefix wildcard and a list of names are accepted', async () => {
    const { api } = await tenant();
    for (const events of [['*'], ['invoice.*'], ['customer.created', 'lead.created']]) {
      const ep = await createEndpoint(api, { enabled_events: events });
      assert.deepEqual(ep.enabled_events, events);
    }
  });

  test('missing url or enabled_events is 422 parameter_missing; an unknown field such as secret is 422 validation_failed', async () => {
    const { api } = await tenant();
    const noUrl = await api.post('/webhook-endpoints', { data: { enabled_events: ['*'] } });
    assert.equal(noUrl.status, 422);
    assert.equal(noUrl.body.error, 'parameter_missing');
    assert.match(noUrl.body.message, /data\.url/);
    const noEvents = await api.post('/webhook-endpoints', { data: { url: HOOK_URL } });
    assert.equal(noEvents.status, 422);
    assert.equal(noEvents.body.error, 'parameter_missing');
    assert.match(noEvents.body.message, /data\.enabled_events/);
    const noData = await api.post('/webhook-endpoints', { url: HOOK_URL, enabled_events: ['*'] });
    assert.equal(noData.body.error, 'parameter_missing');
    // A client must not choose its own secret.
    const withSecret = await api.post('/webhook-endpoints', { data: { url: HOOK_URL, enabled_events: ['*'], secret: 'whsec_mine' } });
    assertValidationFailed(withSecret, /^secret$/, 'secret');
  });

  test('a URL that is not one, not http(s), or carries credentials is 422 with errors.url', async () => {
    const { api } = await tenant();
    for (const url of ['not a url', 'ftp://x', 'https://user:pw@example.com/']) {
      const res = await api.post('/webhook-endpoints', { data: { url, enabled_events: ['*'] } });
      assertValidationFailed(res, /^url$/, url);
      assert.ok(res.body.errors.url.length > 0);
    }
  });

  test('PUT active:false is a manual pause: disabled_at/disabled_reason stay null, secret, url and events kept', async () => {
    const { api } = await tenant();
    const ep = await createEndpoint(api, { enabled_events: ['customer.created'] });
    const res = await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: false } });
    assert.equal(res.status, 200, res.text);
    const paused = res.body.data;
    assert.equal(paused.active, false);
    assert.equal(paused.disabled_at, null);
    assert.equal(paused.disabled_reason, null);
    assert.equal(paused.secret_last_four, ep.secret_last_four);
    assert.equal('secret' in paused, false);
    assert.equal(paused.url, ep.url);
    assert.deepEqual(paused.enabled_events, ep.enabled_events);
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}`)).body.data.active, false);
  });

  test('PUT active:true resumes an endpoint after the automatic shut-off: failures 0, disabled_at/disabled_reason cleared', async () => {
    const { api } = await tenant();
    const ep = await createEndpoint(api);
    await app.pool.query(
      `UPDATE webhook_endpoints SET consecutive_failures = 20, active = false, disabled_at = now(), disabled_reason = 'x' WHERE id = $1`,
      [ep.id],
    );
    const off = (await api.get(`/webhook-endpoints/${ep.id}`)).body.data;
    assert.equal(off.active, false);
    assert.match(off.disabled_at, ISO);
    assert.equal(off.disabled_reason, 'x');
    const res = await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: true } });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.active, true);
    assert.equal(res.body.data.consecutive_failures, 0);
    assert.equal(res.body.data.disabled_at, null);
    assert.equal(res.body.data.disabled_reason, null);
  });

  test('PUT changes url, description and enabled_events; enabled_events [] is 422; PATCH is 405 (PUT is the verb)', async () => {
    const { api } = await tenant();
    const ep = await createEndpoint(api, { description: 'antes' });
    const res = await api.put(`/webhook-endpoints/${ep.id}`, {
      data: { url: 'https://hooks.example.com/new', description: 'después', enabled_events: ['lead.created', 'sale.*'] },
    });
    assert.equal(res.status, 200, res.text);
    assert.equal(res.body.data.url, 'https://hooks.example.com/new');
    assert.equal(res.body.data.description, 'después');
    assert.deepEqual(res.body.data.enabled_events, ['lead.created', 'sale.*']);
    assert.equal(res.body.data.active, true, 'a PUT without active leaves it alone');
    assert.deepEqual((await api.get(`/webhook-endpoints/${ep.id}`)).body.data, res.body.data);
    assert.ok(res.body.data.updated_at > ep.updated_at, 'a change moves updated_at');
    // The object PUT back as it reads changes nothing, updated_at included.
    const { url, description, enabled_events, active } = res.body.data;
    const same = await api.put(`/webhook-endpoints/${ep.id}`, { data: { url, description, enabled_events, active } });
    assert.deepEqual([same.status, same.body.data.updated_at], [200, res.body.data.updated_at], same.text);

    const empty = await api.put(`/webhook-endpoints/${ep.id}`, { data: { enabled_events: [] } });
    assertValidationFailed(empty, /^enabled_events/, 'PUT enabled_events []');
    const badUrl = await api.put(`/webhook-endpoints/${ep.id}`, { data: { url: 'ftp://x' } });
    assertValidationFailed(badUrl, /^url$/, 'PUT ftp url');
    assert.deepEqual((await api.get(`/webhook-endpoints/${ep.id}`)).body.data.enabled_events, ['lead.created', 'sale.*']);

    const patch = await api.patch(`/webhook-endpoints/${ep.id}`, { data: { description: 'x' } });
    assert.equal(patch.status, 405);
    assert.equal(patch.body.error, 'method_not_allowed');
    // RFC 9110: a 405 names the methods the resource has.
    assert.deepEqual(patch.headers.get('allow')?.split(', ').sort(), ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PUT']);
    // A method no route has: 405 on a known path, 404 on an unknown one (no empty Allow).
    const propfind = await fetch(`${app.baseUrl}/webhook-endpoints/${ep.id}`, { method: 'PROPFIND' });
    assert.equal(propfind.status, 405);
    const nowhere = await fetch(`${app.baseUrl}/no-such-thing`, { method: 'PROPFIND' });
    assert.equal(nowhere.status, 404);
    assert.equal(nowhere.headers.get('allow'), null);
    assert.equal(((await nowhere.json()) as { error: string }).error, 'not_found');
  });

  test('rotate-secret answers 200 with a new secret, effective at once; last four follows', async () => {
    const { api, key } = await tenant();
    const ep = await createEndpoint(api);
    const res = await api.post(`/webhook-endpoints/${ep.id}/rotate-secret`);
    assert.equal(res.status, 200, res.text);
    const rotated = res.body.data;
    assert.equal(rotated.id, ep.id);
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, ep.secret);
    assert.equal(rotated.secret_last_four, rotated.secret.slice(-4));
    const { rows } = await app.pool.query('SELECT secret FROM webhook_endpoints WHERE id = $1', [ep.id]);
    assert.equal(rows[0].secret, rotated.secret, 'the stored signing secret is the new one');
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}`)).body.data.secret_last_four, rotated.secret.slice(-4));
    // The action without a body as some clients send it: chunked, empty, no Content-Type. Not a 415.
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(new URL(`${app.baseUrl}/webhook-endpoints/${ep.id}/rotate-secret`), { method: 'POST', headers: { authorization: `Bearer ${key}` } }, (r) => {
        r.resume();
        resolve(r.statusCode!);
      });
      req.on('error', reject);
      req.flushHeaders(); // headers out before the end: Node sends the empty body chunked
      req.end();
    });
    assert.equal(status, 200);
  });

  test('rotate-secret takes no body: `{}` and `{data: {}}` rotate, a field is 422 validation_failed and the secret stays', async () => {
    const { api } = await tenant();
    const ep = await createEndpoint(api);
    for (const body of [{}, { data: {} }]) assert.equal((await api.post(`/webhook-endpoints/${ep.id}/rotate-secret`, body)).status, 200, JSON.stringify(body));
    const before = (await app.pool.query('SELECT secret FROM webhook_endpoints WHERE id = $1', [ep.id])).rows[0].secret;
    for (const [body, field] of [[{ data: { secret: 'whsec_mine' } }, 'secret'], [{ data: {}, foo: 1 }, 'foo']] as const) {
      const res = await api.post(`/webhook-endpoints/${ep.id}/rotate-secret`, body);
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.error, 'validation_failed');
      assert.ok(res.body.errors?.[field], res.text);
    }
    const after = (await app.pool.query('SELECT secret FROM webhook_endpoints WHERE id = $1', [ep.id])).rows[0].secret;
    assert.equal(after, before, 'a refused rotation keeps the secret');
  });

  test('rotate-secret under one Idempotency-Key: no body, `{}` and `{data: {}}` are the same request, one rotation replayed', async () => {
    const { api } = await tenant();
    const ep = await createEndpoint(api);
    const headers = { 'Idempotency-Key': `rotate-${ep.id}` };
    const first = await api.post(`/webhook-endpoints/${ep.id}/rotate-secret`, undefined, headers);
    assert.equal(first.status, 200, first.text);
    for (const body of [{}, { data: {} }]) {
      const again = await api.post(`/webhook-endpoints/${ep.id}/rotate-secret`, body, headers);
      assert.equal(again.status, 200, `${JSON.stringify(body)}: ${again.text}`);
      assert.equal(again.body.data.secret, first.body.data.secret, 'replayed, not rotated again');
    }
    const stored = (await app.pool.query('SELECT secret FROM webhook_endpoints WHERE id = $1', [ep.id])).rows[0].secret;
    assert.equal(stored, first.body.data.secret);
  });

  test('an Idempotency-Key replay repeats the secret only while it still signs: rotated since or deleted, secret is null; the stored answer never holds it', async () => {
    const { api } = await tenant();
    const headers = { 'Idempotency-Key': `crear-${Math.random()}` };
    const create = () => api.post('/webhook-endpoints', { data: { url: HOOK_URL, enabled_events: ['*'] } }, headers);
    const first = await create();
    assert.equal(first.status, 201, first.text);
    const ep = first.body.data;
    const replay = await create();
    assert.deepEqual([replay.status, replay.headers.get('idempotent-replayed'), replay.body.data], [201, 'true', ep]);
    const rows = async () => (await app.pool.query(`SELECT response_body::text AS body FROM idempotency_keys WHERE response_body::text LIKE $1`, [`%${ep.id}%`])).rows;
    assert.ok((await rows()).length > 0);
    for (const row of await rows()) assert.ok(!row.body.includes(ep.secret), 'no secret in the stored answers');

    const rotateHeaders = { 'Idempotency-Key': `rotar-${ep.id}` };
    const rotated = await api.post(`/webhook-endpoints/${ep.id}/rotate-secret`, undefined, rotateHeaders);
    assert.equal(rotated.status, 200, rotated.text);
    const stale = await create();
    assert.deepEqual([stale.status, stale.body.data.id, stale.body.data.secret, stale.body.data.secret_last_four], [201, ep.id, null, ep.secret_last_four], 'the first secret no longer signs');
    assert.equal((await api.post(`/webhook-endpoints/${ep.id}/rotate-secret`, undefined, rotateHeaders)).body.data.secret, rotated.body.data.secret);
    for (const row of await rows()) assert.ok(!row.body.includes(rotated.body.data.secret), 'nor the rotated one');

    assert.equal((await api.delete(`/webhook-endpoints/${ep.id}`)).status, 204);
    const gone = await api.post(`/webhook-endpoints/${ep.id}/rotate-secret`, undefined, rotateHeaders);
    assert.deepEqual([gone.status, gone.body.data.secret], [200, null], 'the endpoint is gone: nothing signs with it');
  });

  test('scopes: rotate-secret needs create-webhook_endpoints; list needs read-webhook_endpoints', async () => {
    const owner = await tenant();
    const ep = await createEndpoint(owner.api);
    const readOnly = await issueKey(app.pool, { companyId: owner.companyId, scopes: ['read-webhook_endpoints'] });
    const reader = client(app.baseUrl, readOnly.secret);
    assert.equal((await reader.get('/webhook-endpoints')).status, 200);
    const rotate = await reader.post(`/webhook-endpoints/${ep.id}/rotate-secret`);
    assert.equal(rotate.status, 403);
    assert.equal(rotate.body.error, 'insufficient_scope');
    assert.equal(rotate.body.required, 'create-webhook_endpoints');

    const noRead = await issueKey(app.pool, { companyId: owner.companyId, scopes: ['create-webhook_endpoints', 'read-customers'] });
    const list = await client(app.baseUrl, noRead.secret).get('/webhook-endpoints');
    assert.equal(list.status, 403);
    assert.equal(list.body.error, 'insufficient_scope');
    assert.equal(list.body.required, 'read-webhook_endpoints');
    assert.equal((await client(app.baseUrl, noRead.secret).get(`/webhook-endpoints/${ep.id}/deliveries`)).status, 403);
  });

  test('DELETE answers 204; the endpoint is then 404 not_found and its deliveries are gone', async () => {
    const { api } = await tenant();
    const ep = await createEndpoint(api, { enabled_events: ['customer.created'] });
    assert.equal((await api.post('/customers', { data: { name: 'Ana' } })).status, 201);
    const before = await api.get(`/webhook-endpoints/${ep.id}/deliveries`);
    assert.equal(before.body.data.length, 1);
    assert.equal(before.body.data[0].status, 'pending');

    const deleted = await api.delete(`/webhook-endpoints/${ep.id}`);
    assert.equal(deleted.status, 204);
    assert.equal(deleted.text, '');
    const read = await api.get(`/webhook-endpoints/${ep.id}`);
    assert.equal(read.status, 404);
    assert.equal(read.body.error, 'not_found');
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}/deliveries`)).status, 404);
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1', [ep.id]);
    assert.equal(rows[0].n, 0);
    assert.equal((await api.delete(`/webhook-endpoints/${ep.id}`)).status, 404);
  });

  test('deliveries: one pending delivery per matching event, filters by event and status, bad status is 400', async () => {
    const { api } = await tenant();
    const ep = await createEndpoint(api, { enabled_events: ['*'] });
    assert.equal((await api.post('/customers', { data: { name: 'Uno' } })).status, 201);
    assert.equal((await api.post('/customers', { data: { name: 'Dos' } })).status, 201);
    assert.equal((await api.post('/leads', { data: { name: 'Prospecto' } })).status, 201);

    const list = await api.get(`/webhook-endpoints/${ep.id}/deliveries`);
    assert.equal(list.status, 200, list.text);
    assert.equal(list.body.data.length, 3);
    assert.equal(typeof list.body.meta.limit, 'number');
    assert.equal(list.body.meta.has_more, false);
    assert.deepEqual(list.body.data.map((d: any) => d.event), ['lead.created', 'customer.created', 'customer.created'], 'newest first');
    for (const d of list.body.data) {
      assert.equal(d.object, 'webhook_delivery');
      assert.equal(d.endpoint_id, ep.id);
      assert.equal(d.status, 'pending');
      assert.equal(d.attempts, 0);
      assert.equal(d.max_attempts, 6);
      assert.match(d.event_id, /^evt_/);
      assert.equal(d.delivered_at, null);
      assert.equal(d.response_status, null);
      assert.equal('payload' in d, false, 'the payload is only in the single read');
    }
    assert.equal(new Set(list.body.data.map((d: any) => d.event_id)).size, 3);

    const leads = await api.get(`/webhook-endpoints/${ep.id}/deliveries?event=lead.created`);
    assert.equal(leads.body.data.length, 1);
    assert.equal(leads.body.data[0].event, 'lead.created');
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}/deliveries?status=succeeded`)).body.data.length, 0);
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}/deliveries?status=pending&event=customer.created`)).body.data.length, 2);
    const bogus = await api.get(`/webhook-endpoints/${ep.id}/deliveries?status=bogus`);
    assert.equal(bogus.status, 400);
    assert.equal(bogus.body.error, 'invalid_parameter');
  });

  test('a delivery id carries the time of its event, not of its endpoint (ids are ObjectIds: time first)', async () => {
    const { api } = await tenant();
    const ep = await createEndpoint(api);
    // An endpoint registered long ago: its deliveries are still dated now.
    await app.pool.query(`UPDATE webhook_endpoints SET created_at = now() - interval '40 days' WHERE id = $1`, [ep.id]);
    const before = Math.floor(Date.now() / 1000);
    assert.equal((await api.post('/customers', { data: { name: 'Reciente' } })).status, 201);
    const after = Math.ceil(Date.now() / 1000);
    const [delivery] = (await api.get(`/webhook-endpoints/${ep.id}/deliveries`)).body.data;
    const seconds = parseInt(delivery.id.slice(0, 8), 16);
    assert.ok(seconds >= before && seconds <= after, `id ${delivery.id} says ${new Date(seconds * 1000).toISOString()}`);
    assert.equal(Math.floor(Date.parse(delivery.created_at) / 1000), seconds);
  });

  test('deliveries: cursor pagination with limit and starting_after walks every delivery once', async () => {
    const { api } = await tenant();
    const ep = await createEndpoint(api);
    for (const name of ['a', 'b']) assert.equal((await api.post('/customers', { data: { name } })).status, 201);
    assert.equal((await api.post('/leads', { data: { name: 'c' } })).status, 201);
    const all = (await api.get(`/webhook-endpoints/${ep.id}/deliveries`)).body.data.map((d: any) => d.id);
    const first = await api.get(`/webhook-endpoints/${ep.id}/deliveries?limit=2`);
    assert.equal(first.body.data.length, 2);
    assert.equal(first.body.meta.limit, 2);
    assert.equal(first.body.meta.has_more, true);
    const cursor = first.body.data[1].id;
    const second = await api.get(`/webhook-endpoints/${ep.id}/deliveries?limit=2&starting_after=${cursor}`);
    assert.equal(second.status, 200, second.text);
    assert.equal(second.body.data.length, 1);
    assert.equal(second.body.meta.has_more, false);
    assert.deepEqual([...first.body.data, ...second.body.data].map((d: any) => d.id), all);
    // The collection is this endpoint's deliveries: a second endpoint's do not count in include_total.
    await createEndpoint(api);
    assert.equal((await api.post('/customers', { data: { name: 'd' } })).status, 201);
    const counted = (await api.get(`/webhook-endpoints/${ep.id}/deliveries?include_total=true&event=lead.created`)).body.meta;
    assert.equal(counted.total, 4);
  });

  test('one delivery: payload is the envelope (id = event_id, evento = event, api_version, data.object/id/metadata); response_body null', async () => {
    const { api } = await tenant();
    const ep = await createEndpoint(api, { enabled_events: ['customer.created'] });
    const customer = (await api.post('/customers', { data: { name: 'Ana López', email: 'ana@example.com' } })).body.data;
    const [listed] = (await api.get(`/webhook-endpoints/${ep.id}/deliveries`)).body.data;
    const res = await api.get(`/webhook-endpoints/${ep.id}/deliveries/${listed.id}`);
    assert.equal(res.status, 200, res.text);
    const d = res.body.data;
    assert.equal(d.id, listed.id);
    assert.equal(d.object, 'webhook_delivery');
    assert.equal(d.response_body, null);
    assert.equal(typeof d.payload, 'string', 'the exact signed body, as text');
    const body = JSON.parse(d.payload);
    assert.deepEqual(Object.keys(body).sort(), ['api_version', 'created_at', 'data', 'event', 'evento', 'id']);
    assert.equal(body.id, d.event_id);
    assert.match(body.id, /^evt_/);
    assert.equal(body.event, 'customer.created');
    assert.equal(body.evento, body.event);
    assert.match(body.created_at, ISO);
    assert.match(body.api_version, /^\d{4}-\d{2}-\d{2}$/);
    assert.equal(body.data.object, 'customer');
    assert.equal(body.data.id, customer.id);
    assert.deepEqual(body.data.metadata, {});
  });

  test('one delivery: another endpoint\'s delivery under this path is 404; malformed ids are 400 invalid_id', async () => {
    const { api } = await tenant();
    const a = await createEndpoint(api, { url: 'https://hooks.example.com/a' });
    const b = await createEndpoint(api, { url: 'https://hooks.example.com/b' });
    assert.equal((await api.post('/customers', { data: { name: 'Ana' } })).status, 201);
    const [ofB] = (await api.get(`/webhook-endpoints/${b.id}/deliveries`)).body.data;
    assert.ok(ofB);
    assert.equal((await api.get(`/webhook-endpoints/${b.id}/deliveries/${ofB.id}`)).status, 200);
    const crossed = await api.get(`/webhook-endpoints/${a.id}/deliveries/${ofB.id}`);
    assert.equal(crossed.status, 404);
    assert.equal(crossed.body.error, 'not_found');
    assert.equal((await api.get(`/webhook-endpoints/${a.id}/deliveries/${MISSING_ID}`)).status, 404);

    for (const path of [
      `/webhook-endpoints/nope`,
      `/webhook-endpoints/nope/deliveries`,
      `/webhook-endpoints/${a.id}/deliveries/nope`,
      `/webhook-endpoints/zzzzzzzzzzzzzzzzzzzzzzzz/deliveries/${ofB.id}`,
      `/webhook-endpoints/%27%20OR%201=1/rotate-secret`,
    ]) {
      const res = path.endsWith('rotate-secret') ? await api.post(path) : await api.get(path);
      assert.equal(res.status, 400, path);
      assert.equal(res.body.error, 'invalid_id', path);
    }
    const starting = await api.get(`/webhook-endpoints/${a.id}/deliveries?starting_after=nope`);
    assert.equal(starting.status, 400);
    assert.equal(starting.body.error, 'invalid_id');
  });

  test('security: another company\'s endpoint and deliveries are 404 for every operation', async () => {
    const victim = await tenant();
    const attacker = await tenant();
    const ep = await createEndpoint(victim.api);
    assert.equal((await victim.api.post('/customers', { data: { name: 'Ana' } })).status, 201);
    const [delivery] = (await victim.api.get(`/webhook-endpoints/${ep.id}/deliveries`)).body.data;
    const api = attacker.api;
    const answers = [
      await api.get(`/webhook-endpoints/${ep.id}`),
      await api.put(`/webhook-endpoints/${ep.id}`, { data: { url: 'https://evil.example.com/' } }),
      await api.post(`/webhook-endpoints/${ep.id}/rotate-secret`),
      await api.get(`/webhook-endpoints/${ep.id}/deliveries`),
      await api.get(`/webhook-endpoints/${ep.id}/deliveries/${delivery.id}`),
      await api.delete(`/webhook-endpoints/${ep.id}`),
    ];
    for (const res of answers) {
      assert.equal(res.status, 404, res.text);
      assert.equal(res.body.error, 'not_found');
    }
    assert.equal((await api.get('/webhook-endpoints')).body.data.length, 0);
    const still = (await victim.api.get(`/webhook-endpoints/${ep.id}`)).body.data;
    assert.equal(still.url, HOOK_URL);
    assert.equal(still.secret_last_four, ep.secret_last_four);
  });
});

describe('webhook endpoints in production (https only, SSRF guard at registration)', () => {
  let app: TestApp;
  let key: string;
  let api: Api;
  before(async () => {
    app = await startTestApp({ NODE_ENV: 'production' });
    key = (await seedTenant(app.pool)).key;
    // TLS ends at the platform router, which says so in X-Forwarded-Proto.
    const https = (headers?: Record<string, string>) => ({ 'x-forwarded-proto': 'https', ...headers });
    api = {
      get: (path, headers) => request(app.baseUrl, 'GET', path, { key, headers: https(headers) }),
      post: (path, body, headers) => request(app.baseUrl, 'POST', path, { key, body, headers: https(headers) }),
      patch: (path, body, headers) => request(app.baseUrl, 'PATCH', path, { key, body, headers: https(headers) }),
      put: (path, body, headers) => request(app.baseUrl, 'PUT', path, { key, body, headers: https(headers) }),
      delete: (path, headers) => request(app.baseUrl, 'DELETE', path, { key, headers: https(headers) }),
    } as Api;
  });
  after(() => app.close());

  test('plain HTTP requests are 426 https_required', async () => {
    const res = await request(app.baseUrl, 'GET', '/webhook-endpoints', { key });
    assert.equal(res.status, 426);
    assert.equal(res.body.error, 'https_required');
    const forwardedHttp = await request(app.baseUrl, 'GET', '/webhook-endpoints', { key, headers: { 'x-forwarded-proto': 'http' } });
    assert.equal(forwardedHttp.status, 426);
    assert.equal((await api.get('/webhook-endpoints')).status, 200);
  });

  test('an http URL is refused, and so is every spelling of a loopback, private, metadata or localhost target', async () => {
    const refused = [
      'http://93.184.216.34/hook',
      'https://127.0.0.1/',
      'https://2130706433/',
      'https://0x7f.1/',
      'https://127.1/',
      'https://[::1]/',
      'https://10.0.0.1/',
      'https://169.254.169.254/latest/meta-data',
      'https://localhost/',
    ];
    for (const url of refused) {
      const res = await api.post('/webhook-endpoints', { data: { url, enabled_events: ['*'] } });
      assertValidationFailed(res, /^url$/, url);
    }
    assert.equal((await api.get('/webhook-endpoints')).body.data.length, 0);
  });

  test('PUT to an internal URL is refused and the stored url is unchanged', async () => {
    // A public IP literal: accepted without a DNS lookup.
    const good = 'https://93.184.216.34/hook';
    const ep = await createEndpoint(api, { url: good });
    for (const url of ['https://127.0.0.1/', 'https://169.254.169.254/latest/meta-data', 'https://[::1]/', 'http://93.184.216.34/hook']) {
      const res = await api.put(`/webhook-endpoints/${ep.id}`, { data: { url } });
      assertValidationFailed(res, /^url$/, `PUT ${url}`);
    }
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}`)).body.data.url, good);
    const { rows } = await app.pool.query('SELECT url FROM webhook_endpoints WHERE id = $1', [ep.id]);
    assert.equal(rows[0].url, good);
  });
});

describe('webhook endpoints under a user session (/user/developers/webhook-endpoints)', () => {
  let app: TestApp;
  const USER_PATH = '/user/developers/webhook-endpoints';

  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  const ownerSession = () => signedInOwner(app);
  const memberSession = (companyId: string, permissions: string[]) => signedInMember(app, companyId, permissions);

  test('an owner session creates, lists, reads, updates, rotates and deletes, and sees what the API key sees', async () => {
    const { api, session } = await ownerSession();
    const byKey = await createEndpoint(api, { url: 'https://hooks.example.com/key' });
    const created = await session.post(USER_PATH, { data: { url: 'https://hooks.example.com/session', enabled_events: ['lead.created'] } });
    assert.equal(created.status, 201, created.text);
    const ep = created.body.data;
    assert.match(ep.secret, /^whsec_/);

    const list = await session.get(USER_PATH);
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.meta.available_events, [...EMITTED_EVENT_NAMES]);
    assert.equal(list.body.data.some((e: any) => 'secret' in e), false);
    const viaKey = await api.get('/webhook-endpoints');
    assert.deepEqual(list.body.data.map((e: any) => e.id).sort(), viaKey.body.data.map((e: any) => e.id).sort());
    assert.deepEqual(list.body.data.map((e: any) => e.id).sort(), [byKey.id, ep.id].sort());

    const read = await session.get(`${USER_PATH}/${byKey.id}`);
    assert.equal(read.status, 200);
    assert.equal('secret' in read.body.data, false);
    const updated = await session.put(`${USER_PATH}/${ep.id}`, { data: { description: 'desde la app', active: false } });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.data.active, false);
    assert.equal(updated.body.data.disabled_at, null);
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}`)).body.data.description, 'desde la app');

    const rotated = await session.post(`${USER_PATH}/${ep.id}/rotate-secret`);
    assert.equal(rotated.status, 200, rotated.text);
    assert.notEqual(rotated.body.data.secret, ep.secret);
    assert.equal(rotated.body.data.secret_last_four, rotated.body.data.secret.slice(-4));
    assert.equal((await session.get(`${USER_PATH}/${ep.id}/deliveries`)).status, 200);

    assert.equal((await session.delete(`${USER_PATH}/${ep.id}`)).status, 204);
    assert.equal((await session.get(`${USER_PATH}/${ep.id}`)).status, 404);
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}`)).status, 404);
  });

  test('credentials do not cross: an API key on a /user route and a session on /webhook-endpoints are 401 invalid_key', async () => {
    const { key, token } = await ownerSession();
    const keyOnUser = await client(app.baseUrl, key).get(USER_PATH);
    assert.equal(keyOnUser.status, 401);
    assert.equal(keyOnUser.body.error, 'invalid_key');
    const sessionOnKeyRoute = await client(app.baseUrl, token).get('/webhook-endpoints');
    assert.equal(sessionOnKeyRoute.status, 401);
    assert.equal(sessionOnKeyRoute.body.error, 'invalid_key');
    const none = await request(app.baseUrl, 'GET', USER_PATH);
    assert.equal(none.status, 401);
    assert.equal(none.body.error, 'invalid_key');
    const forged = await client(app.baseUrl, `service_ses_${'A'.repeat(43)}`).get(USER_PATH);
    assert.equal(forged.status, 401);
    assert.equal(forged.body.error, 'invalid_key');
  });

  test('a member without manage-developers is 403 insufficient_scope; with it, 200', async () => {
    const { companyId, api } = await ownerSession();
    const ep = await createEndpoint(api);
    const plain = await memberSession(companyId, []);
    for (const res of [
      await plain.get(USER_PATH),
      await plain.post(USER_PATH, { data: { url: HOOK_URL, enabled_events: ['*'] } }),
      await plain.post(`${USER_PATH}/${ep.id}/rotate-secret`),
      await plain.delete(`${USER_PATH}/${ep.id}`),
    ]) {
      assert.equal(res.status, 403, res.text);
      assert.equal(res.body.error, 'insufficient_scope');
      assert.equal(res.body.required, 'manage-developers');
      // The refusal counts against the person's rate limit, as a key's missing scope does (docs/api.md).
      assert.ok(res.headers.get('ratelimit-limit') && res.headers.get('ratelimit-remaining'), 'RateLimit-* on the 403');
    }
    const remaining = [Number((await plain.get(USER_PATH)).headers.get('ratelimit-remaining'))];
    remaining.push(Number((await plain.get(USER_PATH)).headers.get('ratelimit-remaining')));
    assert.equal(remaining[1], remaining[0] - 1, 'each refusal spends one request');
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}`)).status, 200, 'nothing was deleted');

    const developer = await memberSession(companyId, ['manage-developers']);
    const list = await developer.get(USER_PATH);
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(list.body.data.map((e: any) => e.id), [ep.id]);
  });

  test('security: another company\'s endpoint through a session is 404 for every operation', async () => {
    const victim = await ownerSession();
    const attacker = await ownerSession();
    const ep = await createEndpoint(victim.api);
    const s = attacker.session;
    for (const res of [
      await s.get(`${USER_PATH}/${ep.id}`),
      await s.put(`${USER_PATH}/${ep.id}`, { data: { active: false } }),
      await s.post(`${USER_PATH}/${ep.id}/rotate-secret`),
      await s.get(`${USER_PATH}/${ep.id}/deliveries`),
      await s.delete(`${USER_PATH}/${ep.id}`),
    ]) {
      assert.equal(res.status, 404, res.text);
      assert.equal(res.body.error, 'not_found');
    }
    const still = (await victim.api.get(`/webhook-endpoints/${ep.id}`)).body.data;
    assert.equal(still.active, true);
    assert.equal(still.secret_last_four, ep.secret_last_four);
    assert.equal((await s.get(USER_PATH)).body.data.length, 0);
  });
});
