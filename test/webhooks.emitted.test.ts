// `meta.available_events` (and the OpenAPI `webhooks`) promise what the
// service emits. For every name listed, this test performs the write that
// emits it and waits for a real receiver to get it, signed, with the created
// record's id. A name listed without a write here fails the first assertion:
// the list cannot promise an event nothing sends.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { startWorker, type Worker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { startReceiver, verifySignature, type Receiver } from './helpers/receiver.ts';
import { waitFor } from './helpers/wait.ts';
import { json } from './helpers/cli.ts';
import { testCsd } from './helpers/csd.ts';

type Api = ReturnType<typeof client>;

const accounts = new WeakMap<Api, string>();
async function account(api: Api): Promise<string> {
  if (!accounts.has(api)) accounts.set(api, (await api.post('/accounts', { data: { name: 'Banco', kind: 'bank', currency: 'mxn' } })).body.data.id);
  return accounts.get(api)!;
}
const yesterday = () => new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
async function created(res: Promise<{ status: number; body: any; text: string }>): Promise<any> {
  const r = await res;
  assert.ok(r.status === 201 || r.status === 200, r.text);
  return r.body.data;
}
async function sale(api: Api, pay: number): Promise<any> {
  const s = await created(api.post('/sales', { data: { currency: 'mxn', line_items: [{ description: 'Servicio', quantity: 1, unit_price_cents: 10000, vat_rate: 16 }] } }));
  if (pay) await created(api.post(`/sales/${s.id}/payments`, { data: { account_id: await account(api), amount_cents: pay } }));
  return s;
}

/**
 * A stamped invoice of a new sale (module invoicing, tax profile set in `before`); `deferred` for payment
 * complements, to a customer with an RFC (a global invoice to the general public is PUE only).
 */
async function stampedInvoice(api: Api, terms: 'immediate' | 'deferred' = 'immediate'): Promise<any> {
  const customer = terms === 'deferred'
    ? await created(api.post('/customers', { data: { name: 'Cliente Fiscal', tax_id: 'URE180429TM6', legal_name: 'UNIVERSIDAD ROBOTICA ESPAÑOLA', address: { postal_code: '86991' } } }))
    : null;
  const s = await created(api.post('/sales', { data: { currency: 'mxn', payment_terms: terms, customer_id: customer?.id, line_items: [{ description: 'Servicio', quantity: 1, unit_price_cents: 10000, vat_rate: 16 }] } }));
  const inv = await created(api.post(`/sales/${s.id}/invoice`, customer ? { data: { receiver: { tax_regime: '601' } } } : undefined));
  await waitFor(async () => (await api.get(`/invoices/${inv.id}`)).body.data.status === 'valid', 15_000, 'the invoice stamped');
  return { sale: s, invoice: inv };
}

/** The write that emits each event; it answers the id the event's `data.id` must carry. */
const WRITES: Record<string, (api: Api) => Promise<string>> = {
  'customer.created': async (api) => (await api.post('/customers', { data: { name: 'Evento Cliente' } })).body.data.id,
  'lead.created': async (api) => (await api.post('/leads', { data: { name: 'Evento Prospecto' } })).body.data.id,
  'income.created': async (api) => (await created(api.post('/incomes', { data: { account_id: await account(api), amount_cents: 500, occurred_at: new Date().toISOString(), status: 'pending' } }))).id,
  'income.paid': async (api) => (await created(api.post('/incomes', { data: { account_id: await account(api), amount_cents: 700, occurred_at: new Date().toISOString() } }))).id,
  'income.deleted': async (api) => {
    const income = await created(api.post('/incomes', { data: { account_id: await account(api), amount_cents: 900, occurred_at: new Date().toISOString(), status: 'pending' } }));
    assert.equal((await api.delete(`/incomes/${income.id}`)).status, 204);
    return income.id;
  },
  'sale.created': async (api) => (await sale(api, 0)).id,
  'sale.paid': async (api) => (await sale(api, 11600)).id,
  'sale.refunded': async (api) => {
    const s = await sale(api, 5000);
    await created(api.post(`/sales/${s.id}/refunds`, { data: { account_id: await account(api), amount_cents: 1000 } }));
    return s.id;
  },
  'recurring.created': async (api) =>
    (await created(api.post('/recurring-transactions', { data: { type: 'expense', account_id: await account(api), amount_cents: 100, frequency: 'monthly', starts_on: '2099-01-01' } }))).id,
  'recurring.occurrence_created': async (api) =>
    (await created(api.post('/recurring-transactions', { data: { type: 'income', account_id: await account(api), amount_cents: 100, frequency: 'daily', starts_on: yesterday() } }))).id,
  'recurring.ended': async (api) =>
    (await created(api.post('/recurring-transactions', { data: { type: 'income', account_id: await account(api), amount_cents: 100, frequency: 'daily', starts_on: yesterday(), ends_count: 1 } }))).id,
  'invoice.emitted': async (api) => (await stampedInvoice(api)).invoice.id,
  'invoice.cancelled': async (api) => {
    const { invoice } = await stampedInvoice(api);
    await created(api.post(`/invoices/${invoice.id}/cancel`, { data: { motive: '02' } }).then((r) => ({ ...r, status: r.status === 200 ? 201 : r.status })));
    return invoice.id;
  },
  'invoice.substituted': async (api) => {
    const { sale: s, invoice } = await stampedInvoice(api);
    return (await created(api.post(`/sales/${s.id}/invoice`, { data: { substitutes_id: invoice.id } }))).id;
  },
  'invoice.payment_complement_added': async (api) => {
    const { sale: s, invoice } = await stampedInvoice(api, 'deferred');
    await created(api.post(`/sales/${s.id}/payments`, { data: { account_id: await account(api), amount_cents: 5000 } }));
    return invoice.id;
  },
  'recurring.deactivated': async (api) => {
    const r = await created(api.post('/recurring-transactions', { data: { type: 'expense', account_id: await account(api), amount_cents: 100, frequency: 'weekly', starts_on: '2099-01-01' } }));
    assert.equal((await api.patch(`/recurring-transactions/${r.id}`, { data: { active: false } })).status, 200);
    return r.id;
  },
};

describe('webhook events: every event listed as available is emitted by a write', () => {
  let app: TestApp;
  let worker: Worker;
  let receiver: Receiver;
  before(async () => {
    app = await startTestApp();
    receiver = await startReceiver();
    worker = await startWorker(app.config, app.pool, app.databaseUrl, { boss: { supervise: false, schedule: false } });
  });
  after(async () => {
    await worker.stop();
    await receiver.close();
    await app.close();
  });

  test('each name of meta.available_events reaches a subscribed receiver after its write', async () => {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000, modules: ['invoicing'] });
    const csd = testCsd();
    await json(app, ['company', 'tax-profile', t.companyId, '--rfc', csd.rfc, '--legal-name', 'ESCUELA KEMPER URGATE', '--tax-regime', '601', '--zip', '42501', '--cer', csd.cerPath, '--key', csd.keyPath, '--key-password', csd.password]);
    const api = client(app.baseUrl, t.key);
    const created = await api.post('/webhook-endpoints', { data: { url: receiver.url('/all'), enabled_events: ['*'] } });
    assert.equal(created.status, 201, created.text);
    const available: string[] = (await api.get('/webhook-endpoints')).body.meta.available_events;
    assert.deepEqual([...available].sort(), Object.keys(WRITES).sort(), 'every available event has a write that emits it, and no more');

    // Each body must match its event's schema in the OpenAPI document (what receivers generate types from).
    const doc = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as any;
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addFormat('date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    ajv.addFormat('date', /^\d{4}-\d{2}-\d{2}$/);
    for (const name of available) {
      const id = await WRITES[name](api);
      // The event of this write (another write may emit the same name first: a deferred invoice's customer).
      const got = await waitFor(() => receiver.at('/all').find((r) => JSON.parse(r.body).event === name && JSON.parse(r.body).data.id === id), 15_000, `${name} of ${id} to be delivered`);
      const body = JSON.parse(got.body);
      const data: Record<string, unknown> = body.data; // (read before ajv's type guard narrows body)
      assert.equal(body.data.id, id, `${name} carries the record's id`);
      assert.equal(got.headers['x-service-event'], name);
      assert.ok(verifySignature(got.headers['x-service-signature'], got.body, created.body.data.secret), `${name} is signed`);
      const validate = ajv.compile({ ...doc.webhooks[name].post.requestBody.content['application/json'].schema, components: doc.components });
      assert.ok(validate(body), `${name} matches its documented schema: ${ajv.errorsText(validate.errors)}\n${got.body}`);
      // The published schema stays open (`data` may gain fields), but every field sent is documented:
      // the envelope's object, id and metadata, and the event's own.
      const component = doc.webhooks[name].post.requestBody.content['application/json'].schema.$ref?.split('/').at(-1);
      const eventSchema = component ? doc.components.schemas[component] : doc.webhooks[name].post.requestBody.content['application/json'].schema;
      const documented = new Set(['object', 'id', 'metadata', ...eventSchema.allOf.flatMap((part: any) => Object.keys(part.properties?.data?.properties ?? {}))]);
      assert.deepEqual(Object.keys(data).filter((key) => !documented.has(key)), [], `${name}: data fields its schema does not document`);
    }
  });
});
