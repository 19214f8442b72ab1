// The webhook dispatcher's own robustness, on a test app with no worker of
// its own: a graceful stop and the deliveries it claimed ahead (given back,
// due at once, rather than left leased for 40 s), and results the database
// refuses (written again before anything is claimed, so an outage longer
// than the leases does not make it send an attempt twice). The database
// "refuses" through a pool that fails the results statement while `down` is
// set: the rest stays up, as in a partial outage or a statement timing out.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Pool } from '../db/pool.ts';
import { DEFAULT_DISPATCHER_OPTIONS, WebhookDispatcher } from '../worker/webhooks/dispatcher.ts';
import { startWorker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { waitFor } from './helpers/wait.ts';

describe('webhook dispatcher: stopping, and results the database refuses', () => {
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
    // Its deliveries go with it: the next test's dispatcher claims every company's.
    assert.equal((await api.delete(`/webhook-endpoints/${ep.id}`)).status, 204);
  });

  test('held results are written before anything is claimed again: no second attempt after the lease runs out', async () => {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, t.key);
    const ep = (await api.post('/webhook-endpoints', { data: { url: receiver.url('/outage'), enabled_events: ['customer.created'] } })).body.data;
    assert.equal((await api.post('/customers', { data: { name: 'Caída parcial' } })).status, 201);

    let down = true;
    let refused = 0;
    const pool = new Proxy(app.pool, {
      get(target, key, receiver) {
        if (key !== 'query') return Reflect.get(target, key, receiver);
        return (config: { text?: string }, ...rest: unknown[]) => {
          if (down && typeof config === 'object' && config.text?.includes('json_to_recordset')) {
            refused++;
            return Promise.reject(Object.assign(new Error('the database is away'), { code: '57P01' }));
          }
          return (target.query as (...args: unknown[]) => unknown)(config, ...rest);
        };
      },
    }) as Pool;
    const dispatcher = new WebhookDispatcher({ pool, config: app.config }, { idlePollMs: 20 });
    dispatcher.start();
    try {
      await waitFor(() => receiver.at('/outage').length === 1 && refused >= 1, 10_000, 'the attempt made and its result refused');
      // The lease runs out while the result is held (as after 40 s of outage).
      await app.pool.query(`UPDATE webhook_deliveries SET leased_until = now() - interval '1 second' WHERE endpoint_id = $1`, [ep.id]);
      // Claims would find it due now; the dispatcher must not claim while its results wait.
      await waitFor(() => refused >= 3, 10_000, 'two more refused writes (the retry every second)');
      assert.equal(receiver.at('/outage').length, 1, 'not sent again while its result was held');
      down = false;
      const d = await waitFor(async () => {
        const { rows } = await app.pool.query(`SELECT status, attempts, leased_until FROM webhook_deliveries WHERE endpoint_id = $1`, [ep.id]);
        return rows[0].status === 'succeeded' && rows[0];
      }, 10_000, 'the result written once the database is back');
      assert.deepEqual({ ...d }, { status: 'succeeded', attempts: 1, leased_until: null });
      // A later delivery goes out: claims resumed after the write.
      assert.equal((await api.post('/customers', { data: { name: 'De vuelta' } })).status, 201);
      await waitFor(() => receiver.at('/outage').length === 2, 10_000, 'the next delivery after the write');
      assert.notEqual(JSON.parse(receiver.at('/outage')[1].body).id, JSON.parse(receiver.at('/outage')[0].body).id, 'a new event, not the first sent again');
    } finally {
      await dispatcher.stop();
    }
  });

  test('a delivery claimed ahead that waits for a slot longer than aheadMaxMs is given back and claimed afresh (a new lease), never sent twice', async () => {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, t.key);
    receiver.on('/busy', () => ({ status: 200, delayMs: 2500 }));
    const ep = (await api.post('/webhook-endpoints', { data: { url: receiver.url('/busy'), enabled_events: ['customer.created'] } })).body.data;
    for (let i = 0; i < 3; i++) assert.equal((await api.post('/customers', { data: { name: `Espera ${i}` } })).status, 201);
    // Two slots in all, both taken by slow attempts; one more claimed ahead, waiting.
    const dispatcher = new WebhookDispatcher({ pool: app.pool, config: app.config }, { maxInFlight: 2, perEndpoint: 2, prefetch: 1, aheadMaxMs: 300, idlePollMs: 20 });
    dispatcher.start();
    try {
      const waiting = async () => {
        const { rows } = await app.pool.query(`SELECT id, leased_until FROM webhook_deliveries WHERE endpoint_id = $1 AND attempts = 0 AND leased_until > now()`, [ep.id]);
        const sent = new Set(receiver.at('/busy').map((r) => String(r.headers['x-service-delivery']).replace(/-\d+$/, '')));
        return rows.filter((r) => !sent.has(r.id));
      };
      const first = await waitFor(async () => receiver.at('/busy').length === 2 && (await waiting()).length === 1 && (await waiting())[0], 10_000, 'two in flight, one claimed ahead');
      const renewed = await waitFor(async () => {
        const now = (await waiting())[0];
        return now && now.id === first.id && now.leased_until > first.leased_until && now;
      }, 2_000, 'the delivery waiting ahead given back and claimed again, with a new lease');
      assert.ok(renewed);
      await waitFor(async () => {
        const { rows } = await app.pool.query(`SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS n FROM webhook_deliveries WHERE endpoint_id = $1`, [ep.id]);
        return rows[0].n === 3;
      }, 15_000, 'all three delivered');
      assert.equal(receiver.at('/busy').length, 3, 'each sent once');
    } finally {
      await dispatcher.stop();
    }
  });
});
