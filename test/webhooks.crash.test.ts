// At-least-once delivery across a worker crash: a worker process killed with
// SIGKILL in the middle of an attempt leaves its delivery claimed; the claim's
// lease (LEASE_SECONDS) runs out, the delivery is due again, and another
// worker sends it again, with the same event id. The test sees the dead
// worker's lease held, then runs it out (`leased_until = now()`, as if its 40 s
// had passed) once the surviving worker is up (docs/testing.md).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startWorker, type Worker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { startReceiver, verifySignature, type Receiver } from './helpers/receiver.ts';
import { waitFor } from './helpers/wait.ts';

const WORKER_MAIN = fileURLToPath(new URL('../worker/main.ts', import.meta.url));

describe('webhook delivery survives kill -9 of the worker mid-attempt', () => {
  let app: TestApp;
  let receiver: Receiver;
  let worker: Worker | undefined;

  before(async () => {
    app = await startTestApp();
    receiver = await startReceiver();
  });
  after(async () => {
    await worker?.stop();
    await receiver.close();
    await app.close();
  });

  test('the delivery is retried by another worker, never lost; the duplicate carries the same event id and body', async () => {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, t.key);
    // The first request is held open: the worker process is killed while it waits.
    receiver.on('/crash', (_req, n) => (n === 1 ? { hang: true } : { status: 200 }));
    const ep = (await api.post('/webhook-endpoints', { data: { url: receiver.url('/crash'), enabled_events: ['customer.created'] } })).body.data;

    const child = spawn(process.execPath, [WORKER_MAIN], {
      // The receiver is on 127.0.0.1: the worker opts out of the SSRF guard, as test/helpers/app.ts does.
      env: { ...process.env, DATABASE_URL: app.databaseUrl, NODE_ENV: 'test', LOG_LEVEL: 'silent', ALLOW_PRIVATE_WEBHOOK_TARGETS: '1' },
      stdio: 'ignore',
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    try {
      assert.equal((await api.post('/customers', { data: { name: 'Caída' } })).status, 201);
      await waitFor(() => receiver.at('/crash').length === 1, 30_000, 'the first attempt to reach the receiver');
    } finally {
      child.kill('SIGKILL');
    }
    assert.equal(await exited, 'SIGKILL');

    const [d] = (await api.get(`/webhook-endpoints/${ep.id}/deliveries`)).body.data;
    assert.equal(d.status, 'pending', 'nothing was recorded by the dead worker');
    const { rows } = await app.pool.query(`SELECT leased_until > now() AS claimed, next_attempt_at <= now() AS due FROM webhook_deliveries WHERE id = $1`, [d.id]);
    assert.deepEqual({ ...rows[0] }, { claimed: true, due: true }, 'due, but leased by the dead worker until its lease runs out');

    // A surviving worker, and the dead one's lease run out (LEASE_SECONDS, 40 s, passed at once).
    worker = await startWorker(app.config, app.pool, app.databaseUrl, { boss: { schedule: false } });
    await app.pool.query(`UPDATE webhook_deliveries SET leased_until = now() WHERE id = $1`, [d.id]);
    const settled = await waitFor(async () => {
      const one = (await api.get(`/webhook-endpoints/${ep.id}/deliveries/${d.id}`)).body.data;
      return one.status === 'succeeded' && one;
    }, 30_000, 'the delivery to be sent again');

    const [first, second] = receiver.at('/crash');
    assert.equal(receiver.at('/crash').length, 2);
    assert.equal(second.headers['x-service-event-id'], first.headers['x-service-event-id']);
    assert.equal(second.body, first.body);
    assert.equal(settled.payload, first.body);
    assert.equal(settled.attempts, 1, 'the lost attempt is made again, not counted twice');
    assert.ok(verifySignature(second.headers['x-service-signature'], second.body, ep.secret));
  });
});
