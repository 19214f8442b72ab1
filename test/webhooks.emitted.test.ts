// `meta.available_events` (and the OpenAPI `webhooks`) promise what the
// service emits. For every name listed, this test performs the write that
// emits it and waits for a real receiver to get it, signed, with the created
// record's id. A name listed without a write here fails the first assertion:
// the list cannot promise an event nothing sends.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startWorker, type Worker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { startReceiver, verifySignature, type Receiver } from './helpers/receiver.ts';
import { waitFor } from './helpers/wait.ts';

type Api = ReturnType<typeof client>;

/** The write that emits each event; it answers the id the event's `data.id` must carry. */
const WRITES: Record<string, (api: Api) => Promise<string>> = {
  'customer.created': async (api) => (await api.post('/customers', { data: { name: 'Evento Cliente' } })).body.data.id,
  'lead.created': async (api) => (await api.post('/leads', { data: { name: 'Evento Prospecto' } })).body.data.id,
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
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, t.key);
    const created = await api.post('/webhook-endpoints', { data: { url: receiver.url('/all'), enabled_events: ['*'] } });
    assert.equal(created.status, 201, created.text);
    const available: string[] = (await api.get('/webhook-endpoints')).body.meta.available_events;
    assert.deepEqual([...available].sort(), Object.keys(WRITES).sort(), 'every available event has a write that emits it, and no more');

    for (const name of available) {
      const id = await WRITES[name](api);
      const got = await waitFor(() => receiver.at('/all').find((r) => JSON.parse(r.body).event === name), 15_000, `${name} to be delivered`);
      const body = JSON.parse(got.body);
      assert.equal(body.data.id, id, `${name} carries the record's id`);
      assert.equal(got.headers['x-service-event'], name);
      assert.ok(verifySignature(got.headers['x-service-signature'], got.body, created.body.data.secret), `${name} is signed`);
    }
  });
});
