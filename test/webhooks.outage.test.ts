// The dispatcher when PostgreSQL refuses its writes: the results it holds are
// written again, and it claims nothing until they are, so an outage longer
// than the leases does not make it send the same attempt a second time.
// (The database "refuses" through a pool that fails the results statement
// while `down` is set: the rest of the database stays up, as in a partial
// outage or a statement timing out.)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Pool } from '../db/pool.ts';
import { WebhookDispatcher } from '../worker/webhooks/dispatcher.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { waitFor } from './helpers/wait.ts';

describe('webhook dispatcher: results the database refuses', () => {
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
});
