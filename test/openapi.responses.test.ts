// What the service answers agrees with what its OpenAPI document says it
// answers: every list route (a GET without path parameters) is called for a
// company holding a record of each kind, and its 200 body is validated
// against the operation's response schema with a JSON Schema validator
// (Ajv, draft 2020-12, as OpenAPI 3.1 specifies). A generated client types
// its code from these schemas: a field the schema forbids (ListMeta with
// `additionalProperties: false`) is a field that client cannot read.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { createAutomation } from '../api/admin/automations.ts';
import { createForm } from '../api/admin/forms.ts';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { sampleFormFile } from './helpers/forms.ts';

/** Lists whose records before() cannot make, and why; every other list's detail is checked on a record. */
const NOT_SEEDED: Record<string, string> = {
  '/invoices': 'an invoice is stamped: it needs a CSD and the stamping stand-in (test/invoices.test.ts)',
};

describe('OpenAPI: live answers match the documented response schemas', () => {
  let app: TestApp;
  let tenant: Tenant;
  let doc: any;

  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { modules: ['invoicing'], rateLimitPerMinute: 100_000 });
    doc = await (await fetch(`${app.baseUrl}/openapi.json`)).json();
    // One record of each kind the lists show, so their items are checked too.
    const api = client(app.baseUrl, tenant.key);
    const created = async (path: string, data: Record<string, unknown>) => {
      const res = await api.post(path, { data });
      assert.ok(res.status === 201 || res.status === 200, `${path}: ${res.status} ${res.text}`);
      return res.body.data;
    };
    const customer = await created('/customers', { name: 'Ana', email: 'ana@example.com', tags: ['vip'], custom_properties: [{ key: 'nivel', value: 2 }] });
    await created('/leads', { name: 'Beto', email: 'beto@example.com' });
    const brand = await created('/brands', { name: 'Marca' });
    const category = await created('/product-categories', { name: 'Categoría' });
    await created('/products', { name: 'Taza', prices_cents: { mxn: 15000 }, brand_id: brand.id, product_category_id: category.id });
    const account = await created('/accounts', { name: 'Banco', kind: 'bank', currency: 'mxn' });
    await created('/incomes', { account_id: account.id, amount_cents: 500, occurred_at: '2026-02-10T17:00:00Z', metadata: { pedido: '1' } });
    await created('/expenses', { account_id: account.id, amount_cents: 200, occurred_at: '2026-02-11T17:00:00Z', supplier_name: 'Papelería' });
    await created('/sales', { customer_id: customer.id, currency: 'mxn', occurred_at: '2026-02-12T17:00:00Z', line_items: [{ description: 'Taza', quantity: 1, unit_price_cents: 15000, vat_rate: 16 }] });
    await created('/calendar/events', { user_id: tenant.ownerId, title: 'Junta', starts_at: '2026-12-01T16:00:00Z', ends_at: '2026-12-01T17:00:00Z' });
    await created('/webhook-endpoints', { url: 'https://hooks.example.com/ws', enabled_events: ['customer.created'] });
    await app.pool.query(`UPDATE users SET booking_slug = $2 WHERE id = $1`, [tenant.ownerId, `host-${Date.now()}`]);
    const link = await created('/booking-links', {
      user_id: tenant.ownerId, slug: 'asesoria', title: 'Asesoría', duration_minutes: 30, minimum_notice_minutes: 0,
      weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' }],
    });
    const [slot] = (await api.get(`/booking-links/${link.id}/slots`)).body.data.days.flatMap((d: any) => d.slots);
    await created('/bookings', { booking_link_id: link.id, starts_at: slot.starts_at, booker: { name: 'Cita', email: 'cita@example.com' } });
    await created('/recurring-transactions', { type: 'expense', account_id: account.id, amount_cents: 1000, category: 'renta', frequency: 'monthly', starts_on: '2027-01-31' });
    await createAutomation(app.pool, tenant.companyId, { name: 'Bienvenida', trigger_type: 'lead.created', trigger_config: {}, steps: [{ type: 'send_email' }] });
    await createForm(app.pool, tenant.companyId, sampleFormFile());
    await app.pool.query('INSERT INTO accounting_periods (company_id, year, month) VALUES ($1, 2025, 12)', [tenant.companyId]);
  });
  after(() => app?.close());

  const validator = () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    // The API's own shapes (docs/api.md): instants in UTC with milliseconds and Z, days as YYYY-MM-DD.
    ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    ajv.addFormat('date', /^\d{4}-\d{2}-\d{2}$/);
    return ajv;
  };

  test('every list route answers what its schema describes', async () => {
    const ajv = validator();
    const checked: string[] = [];
    const failures: string[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, any>)) {
      const op = item.get;
      if (!op || path.includes('{')) continue;
      // Required query parameters (the reports' ranges) get a value that covers the seeded records.
      const required = (op.parameters ?? []).filter((p: any) => p.in === 'query' && p.required).map((p: any) => p.name);
      const query = required.length ? `?${required.map((p: string) => `${p}=${p === 'start_on' ? '2026-01-01' : '2026-12-31'}`).join('&')}` : '';
      const schema = op.responses?.['200']?.content?.['application/json']?.schema;
      if (!schema) continue;
      const res = await fetch(`${app.baseUrl}${path}${query}`, { headers: { authorization: `Bearer ${tenant.key}` } });
      // Routes a key cannot use (the session-only /user/... ones) are not what this test is about.
      if (res.status === 401) continue;
      const body = await res.json();
      assert.equal(res.status, 200, `${path}: ${JSON.stringify(body)}`);
      const validate = ajv.compile({ ...schema, components: doc.components });
      if (!validate(body)) failures.push(`${path}: ${ajv.errorsText(validate.errors)}`);
      checked.push(path);
    }
    assert.deepEqual(failures, []);
    // The walk reached the lists this file is about (it did not pass by checking nothing).
    for (const path of ['/customers', '/products', '/accounts', '/webhook-endpoints', '/accounting-periods', '/calendar/events', '/booking-links', '/reports/balance-sheet', '/reports/income-statement', '/reports/cash-flow']) {
      assert.ok(checked.includes(path), `${path} was checked (${checked.length} in all)`);
    }
  });

  test('every detail route answers what its schema describes, each required field present', async () => {
    // A serializer that forgets a field its schema requires (a new column read but not answered)
    // fails here for the one-record reads too, not only in the lists.
    const ajv = validator();
    const checked: string[] = [];
    const unseeded: string[] = [];
    const failures: string[] = [];
    const get = (path: string) => fetch(`${app.baseUrl}${path}`, { headers: { authorization: `Bearer ${tenant.key}` } });
    for (const [path, item] of Object.entries(doc.paths as Record<string, any>)) {
      const detail = doc.paths[`${path}/{id}`]?.get;
      if (!item.get || path.includes('{') || !detail) continue;
      const list = await get(path);
      if (list.status !== 200) continue;
      const first = (((await list.json()) as { data?: Array<{ id?: string }> }).data ?? [])[0];
      if (!first?.id) {
        unseeded.push(path);
        continue;
      }
      const res = await get(`${path}/${first.id}`);
      const body = await res.json();
      assert.equal(res.status, 200, `${path}/${first.id}: ${JSON.stringify(body)}`);
      const validate = ajv.compile({ ...detail.responses['200'].content['application/json'].schema, components: doc.components });
      if (!validate(body)) failures.push(`${path}/{id}: ${ajv.errorsText(validate.errors)}`);
      checked.push(path);
    }
    assert.deepEqual(failures, []);
    // A new resource is checked only once before() seeds a record of it: a list that answered none fails
    // here until it is seeded, or named in NOT_SEEDED saying why.
    assert.deepEqual(unseeded.sort(), Object.keys(NOT_SEEDED).sort(), 'lists with a detail route and no record to check it by: seed one in before()');
    for (const path of ['/customers', '/leads', '/products', '/brands', '/product-categories', '/accounts', '/incomes', '/expenses', '/sales', '/calendar/events', '/booking-links', '/webhook-endpoints', '/users']) {
      assert.ok(checked.includes(path), `${path}/{id} was checked (${checked.join(', ')})`);
    }
  });
});
