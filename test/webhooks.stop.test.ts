// A worker's graceful stop and the deliveries it claimed ahead (the
// dispatcher's prefetch): they are given back, due at once for the next
// worker, rather than left leased for 40 s; the attempts in flight finish and
// are recorded.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_DISPATCHER_OPTIONS } from '../worker/webhooks/dispatcher.ts';
import { startWorker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { waitFor } from './helpers/wait.ts';

describe('webhook dispatcher: stopping', () => {
  let app: TestApp;
  let receiver: Receiver;

  before(async () => {
    app = await startTestApp();
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver.close();
    await app.close();
  });

  test('a stop gives back what was claimed ahead (due at once, no lease) and records the attempts in flight', async () => {
    const { perEndpoint, prefetch } = DEFAULT_DISPATCHER_OPTIONS;
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, t.key);
    receiver.on('/slow', () => ({ status: 200, delayMs: 2000 }));
    const ep = (await api.post('/webhook-endpoints', { data: { url: receiver.url('/slow'), enabled_events: ['customer.created'] } })).body.data;
    const events = perEndpoint + prefetch + 10;
    for (let i = 0; i < events; i++) assert.equal((await api.post('/customers', { data: { name: `Cliente ${i}` } })).status, 201);

    const worker = await startWorker(app.config, app.pool, app.databaseUrl, { boss: { schedule: false } });
    const claimed = () =>
      app.pool.query(`SELECT count(*) FILTER (WHERE leased_until > now())::int AS leased FROM webhook_deliveries WHERE endpoint_id = $1`, [ep.id]).then((r) => r.rows[0].leased);
    await waitFor(async () => receiver.at('/slow').length === perEndpoint && (await claimed()) === perEndpoint + prefetch, 10_000, 'the bound in flight and the prefetch claimed ahead');
    await worker.stop();

    const { rows } = await app.pool.query(
      `SELECT attempts, status, leased_until IS NULL AS free, next_attempt_at <= now() AS due FROM webhook_deliveries WHERE endpoint_id = $1`,
      [ep.id],
    );
    const count = (pred: (r: any) => boolean) => rows.filter(pred).length;
    assert.equal(receiver.at('/slow').length, perEndpoint, 'nothing claimed ahead was sent once the stop began');
    assert.equal(count((r) => r.status === 'succeeded' && r.attempts === 1 && r.free), perEndpoint, 'the attempts in flight finished and were recorded');
    assert.equal(count((r) => r.status === 'pending' && r.attempts === 0 && r.free && r.due), events - perEndpoint, 'the rest due at once, none left leased');
  });
});
