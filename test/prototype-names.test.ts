// Names a client chooses that JavaScript objects already have: `constructor`,
// `toString`, `hasOwnProperty`, `valueOf`, `__proto__`. As an unknown field,
// a multipart part name, a form answer key, a metadata key, a query parameter
// or an MCP tool argument they are names like any other: refused as unknown
// (422 naming them, -32602, 400) or stored and read back, never a 500 (an
// error map built with `errors[name] ??= []` found the inherited member). One
// exception, by the body parser's choice (co-body, against prototype
// poisoning): a JSON body with a `__proto__` key anywhere is 400 invalid_json
// saying so.
// Read back, such a name is the client's value, not Object's member: an optional booking question or
// form field of that name left unanswered reads as unanswered, a custom property of that name is read
// back (reading them with `obj[key]` or `key in obj` found Object's own members: a hostile-input review).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { client, request, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import * as files from './helpers/forms.ts';

const NAMES = ['constructor', 'toString', 'hasOwnProperty', 'valueOf'];
/** `__proto__` too where the body is not JSON parsed by co-body (multipart parts, MCP, query strings). */
const ALL_NAMES = [...NAMES, '__proto__'];

describe('names Object.prototype already has', () => {
  let app: TestApp;
  let tenant: Tenant;
  let api: ReturnType<typeof client>;
  let form: { id: string };

  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { plan: 'starter', rateLimitPerMinute: 100_000 });
    api = client(app.baseUrl, tenant.key);
    form = await files.createFormViaAdmin(app.url, tenant.companyId);
  });
  after(() => app.close());

  // Bodies as raw JSON text: a JS object literal would treat "__proto__" as the prototype.
  const raw = (path: string, json: string, method = 'POST') => request(app.baseUrl, method, path, { key: tenant.key, raw: json });

  test('an unknown field of that name is 422 validation_failed naming it, nothing stored', async () => {
    for (const name of NAMES) {
      for (const path of ['/customers', '/leads', '/brands']) {
        const res = await raw(path, `{"data":{"name":"x","${name}":1}}`);
        assert.equal(res.status, 422, `${path} ${name}: ${res.text}`);
        assert.equal(res.body.error, 'validation_failed');
        assert.deepEqual(Object.keys(res.body.errors), [name], `${path} ${name}`);
      }
    }
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM customers WHERE company_id = $1', [tenant.companyId]);
    assert.equal(rows[0].n, 0);
  });

  test('metadata keys of that name are stored and read back', async () => {
    const account = await api.post('/accounts', { data: { name: 'Banco', kind: 'bank', currency: 'mxn' } });
    assert.equal(account.status, 201, account.text);
    const metadata = `{${NAMES.map((n) => `"${n}":"v-${n}"`).join(',')}}`;
    const created = await raw('/incomes', `{"data":{"account_id":"${account.body.data.id}","amount_cents":100,"occurred_at":"2026-03-01T17:00:00Z","metadata":${metadata}}}`);
    assert.equal(created.status, 201, created.text);
    const read = await api.get(`/incomes/${created.body.data.id}`);
    assert.equal(read.status, 200, read.text);
    for (const n of NAMES) assert.ok(Object.hasOwn(read.body.data.metadata, n) && read.body.data.metadata[n] === `v-${n}`, `${n}: ${read.text}`);
    // A PATCH merges by key: one of them removed, one changed.
    const patched = await raw(`/incomes/${created.body.data.id}`, '{"data":{"metadata":{"valueOf":null,"constructor":"otro"}}}', 'PATCH');
    assert.equal(patched.status, 200, patched.text);
    const after = JSON.parse(patched.text).data.metadata;
    assert.equal(Object.hasOwn(after, 'valueOf'), false, patched.text);
    assert.equal(after.constructor, 'otro');
    assert.equal(after.toString, 'v-toString');
  });

  test('a JSON body with a "__proto__" key anywhere is 400 invalid_json saying so, nothing stored', async () => {
    for (const [path, json] of [
      ['/customers', '{"data":{"name":"x","__proto__":{"admin":true}}}'],
      ['/customers', '{"data":{"name":"x","custom_properties":[{"key":"k","value":{"__proto__":1}}]}}'],
      [`/forms/${form.id}/submissions`, '{"data":{"answers":{"email":"ana@example.com","name":"Ana","__proto__":"x"}}}'],
    ]) {
      const res = await raw(path!, json!);
      assert.equal(res.status, 400, `${json}: ${res.text}`);
      assert.equal(res.body.error, 'invalid_json');
      assert.match(res.body.message, /__proto__/);
    }
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM customers WHERE company_id = $1', [tenant.companyId]);
    assert.equal(rows[0].n, 0);
  });

  test('a form answer key or multipart part of that name is refused as unknown, naming it', async () => {
    for (const name of NAMES) {
      const json = await raw(`/forms/${form.id}/submissions`, `{"data":{"answers":{"email":"ana@example.com","name":"Ana","${name}":"x"}}}`);
      assert.equal(json.status, 422, `${name}: ${json.text}`);
      assert.deepEqual(Object.keys(json.body.errors), [`answers.${name}`], json.text);

    }
    for (const name of ALL_NAMES) {
      for (const part of [name, `answers[${name}]`]) {
        const body = new FormData();
        body.append('answers[email]', 'ana@example.com');
        body.append('answers[name]', 'Ana');
        body.append(part, 'x');
        const res = await fetch(`${app.baseUrl}/forms/${form.id}/submissions`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}` }, body });
        const text = await res.text();
        assert.equal(res.status, 422, `${part}: ${text}`);
        assert.deepEqual(Object.keys(JSON.parse(text).errors), [part === name ? name : `answers.${name}`], `${part}: ${text}`);
      }
    }
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM form_submissions WHERE company_id = $1', [tenant.companyId]);
    assert.equal(rows[0].n, 0);
  });

  test('an MCP tool argument of that name is -32602 naming it', async () => {
    for (const name of ALL_NAMES) {
      const res = await fetch(`${app.url}/api/mcp/v1`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_company","arguments":{"${name}":1}}}`,
      });
      const text = await res.text();
      assert.equal(res.status, 200, `${name}: ${text}`);
      const body = JSON.parse(text);
      assert.equal(body.error?.code, -32602, `${name}: ${text}`);
      assert.ok(Object.hasOwn(body.error.data.errors, name), `${name}: ${text}`);
    }
  });

  test('a query parameter of that name: a list ignores it as any unknown one; a report refuses it naming it', async () => {
    for (const name of ALL_NAMES) {
      const list = await api.get(`/customers?${name}=1`);
      assert.equal(list.status, 200, `${name}: ${list.text}`);
      const report = await api.get(`/reports/balance-sheet?${name}=1`);
      assert.equal(report.status, 400, `${name}: ${report.text}`);
      assert.equal(report.body.error, 'invalid_parameter');
      assert.ok(report.body.message.includes(name), report.text);
    }
  });

  test('an optional booking question named constructor, left unanswered, does not stop the booking', async () => {
    const link = await api.post('/booking-links', {
      data: {
        user_id: tenant.ownerId,
        slug: 'constructor',
        title: 'Obra',
        duration_minutes: 30,
        timezone: 'UTC',
        minimum_notice_minutes: 0,
        weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' }],
        questions: [{ key: 'constructor', label: 'Constructora (opcional)', type: 'text', required: false }],
      },
    });
    assert.equal(link.status, 201, link.text);
    const slots = (await api.get(`/booking-links/${link.body.data.id}/slots`)).body.data.days.flatMap((d: any) => d.slots);
    const booker = { name: 'Ana', email: 'ana@example.com' };
    const booked = await api.post('/bookings', { data: { booking_link_id: link.body.data.id, starts_at: slots[0].starts_at, booker } });
    assert.equal(booked.status, 201, booked.text);
    const answered = await api.post('/bookings', { data: { booking_link_id: link.body.data.id, starts_at: slots[1].starts_at, booker, answers: { constructor: 'Obras SA' } } });
    assert.equal(answered.status, 201, answered.text);
    assert.deepEqual(answered.body.data.answers, { constructor: 'Obras SA' });
  });

  test('optional form fields named toString and constructor, left out of a JSON submission, are unanswered', async () => {
    const prototypeForm = await files.createFormViaAdmin(app.url, tenant.companyId, {
      name: 'Prototipo',
      slug: 'prototipo',
      title: 'Prototipo',
      fields: [
        { key: 'email', field_type: 'email', label: 'Correo', required: true },
        { key: 'toString', field_type: 'text', label: 'Texto' },
        { key: 'constructor', field_type: 'checkbox', label: 'Casilla' },
      ],
    });
    const res = await api.post(`/forms/${prototypeForm.id}/submissions`, { data: { answers: { email: 'a@example.com' } } });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.data.answers, { email: 'a@example.com' });
  });

  test('a custom property named constructor is read back', async () => {
    const made = await api.post('/products', { data: { name: 'P1', prices_cents: { mxn: 100 }, custom_properties: [{ key: 'constructor', value: 'c' }, { key: 'color', value: 'rojo' }] } });
    assert.equal(made.status, 201, made.text);
    const read = (await api.get(`/products/${made.body.data.id}`)).body.data;
    assert.equal(read.constructor, 'c');
    assert.equal(read.color, 'rojo');
  });

  test('constructor[]=x in a list query is an unknown parameter (ignored), while a known one in array syntax is refused', async () => {
    assert.equal((await api.get('/products?constructor[]=x&toString[]=y')).status, 200);
    const known = await api.get('/products?limit[]=1');
    assert.equal(known.status, 400);
    assert.equal(known.body.error, 'invalid_parameter');
    assert.match(known.body.message, /limit=<valor>/);
  });
});
