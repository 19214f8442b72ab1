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
import { HELD_MESSAGE } from '../lib/webhook-retry.ts';
import { DEFAULT_DISPATCHER_OPTIONS, WebhookDispatcher } from '../worker/webhooks/dispatcher.ts';
import { startWorker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { startReceiver, verifySignature, type Receiver } from './helpers/receiver.ts';
import { waitFor } from './helpers/wait.ts';

// One app and one receiver for the file: each test uses companies and paths of its own.
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

describe('webhook dispatcher: stopping, and results the database refuses', () => {
  test('a stop gives back what was claimed ahead (due at once, no lease) and records the attempts in flight', async () => {
    const { perEndpoint, prefetch } = DEFAULT_DISPATCHER_OPTIONS;
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, t.key);
    receiver.on('/slow', () => ({ status: 200, delayMs: 2000 }));
    const ep = (await api.post('/webhook-endpoints', { data: { url: receiver.url('/slow'), enabled_events: ['customer.created'] } })).body.data;
    // Healthy (its last attempt succeeded): it gets the whole bound, not the window of an endpoint with no success yet.
    await app.pool.query(`UPDATE webhook_endpoints SET last_delivery_status = 'succeeded', last_delivery_at = now() WHERE id = $1`, [ep.id]);
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

  test("a result written after another worker's later one leaves the endpoint's last delivery and its failures as they were", async () => {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, t.key);
    const ep = (await api.post('/webhook-endpoints', { data: { url: receiver.url('/late-writer'), enabled_events: ['customer.created'] } })).body.data;
    // Another worker's attempt, made later than the one below and written first: a failure, the third in a row.
    const { rows: [later] } = await app.pool.query(
      `UPDATE webhook_endpoints SET last_delivery_at = now() + interval '1 minute', last_delivery_status = 'failed', consecutive_failures = 3 WHERE id = $1 RETURNING last_delivery_at`,
      [ep.id],
    );
    assert.equal((await api.post('/customers', { data: { name: 'Escritura tardía' } })).status, 201);
    const dispatcher = new WebhookDispatcher({ pool: app.pool, config: app.config }, { idlePollMs: 20 });
    dispatcher.start();
    try {
      await waitFor(async () => {
        const { rows } = await app.pool.query(`SELECT status FROM webhook_deliveries WHERE endpoint_id = $1`, [ep.id]);
        return rows[0]?.status === 'succeeded';
      }, 10_000, 'the delivery recorded');
      const read = (await api.get(`/webhook-endpoints/${ep.id}`)).body.data;
      assert.deepEqual(
        { at: read.last_delivery_at, status: read.last_delivery_status, failures: read.consecutive_failures },
        { at: later.last_delivery_at.toISOString(), status: 'failed', failures: 3 },
      );
    } finally {
      await dispatcher.stop();
      await api.delete(`/webhook-endpoints/${ep.id}`);
    }
  });

  test('a worker whose slots are all taken claims nothing ahead: another worker sends a healthy endpoint its delivery at once', async () => {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, t.key);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    receiver.on('/stuck', () => ({ status: 200, until: held }));
    const stuck = (await api.post('/webhook-endpoints', { data: { url: receiver.url('/stuck'), enabled_events: ['customer.created'] } })).body.data;
    for (let i = 0; i < 2; i++) assert.equal((await api.post('/customers', { data: { name: `Atascado ${i}` } })).status, 201);
    // Worker A: two slots, both taken by the receiver that does not answer; a wait ahead of 30 s.
    const a = new WebhookDispatcher({ pool: app.pool, config: app.config }, { maxInFlight: 2, perEndpoint: 2, prefetch: 16, aheadMaxMs: 30_000, idlePollMs: 20 });
    a.start();
    let b: WebhookDispatcher | null = null;
    const other = client(app.baseUrl, (await seedTenant(app.pool, { rateLimitPerMinute: 100_000 })).key);
    const healthy = (await other.post('/webhook-endpoints', { data: { url: receiver.url('/healthy'), enabled_events: ['customer.created'] } })).body.data;
    try {
      await waitFor(() => receiver.at('/stuck').length === 2, 10_000, "both of A's slots taken");
      assert.equal((await other.post('/customers', { data: { name: 'Sano' } })).status, 201);
      // A's full claims (every 20 ms) have had the delivery due for ten rounds before B starts.
      await new Promise((r) => setTimeout(r, 200));
      b = new WebhookDispatcher({ pool: app.pool, config: app.config }, { idlePollMs: 20 });
      b.start();
      await waitFor(() => receiver.at('/healthy').length === 1, 10_000, "B sends it (A had claimed it ahead, held for A's 30 s wait)");
    } finally {
      release();
      await b?.stop();
      await a.stop();
      await api.delete(`/webhook-endpoints/${stuck.id}`);
      await other.delete(`/webhook-endpoints/${healthy.id}`);
    }
  });

  test('a delivery claimed ahead that waits for a slot longer than aheadMaxMs is given back and claimed afresh (a new lease), never sent twice', async () => {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, t.key);
    receiver.on('/busy', () => ({ status: 200, delayMs: 2500 }));
    const ep = (await api.post('/webhook-endpoints', { data: { url: receiver.url('/busy'), enabled_events: ['customer.created'] } })).body.data;
    for (let i = 0; i < 3; i++) assert.equal((await api.post('/customers', { data: { name: `Espera ${i}` } })).status, 201);
    // The endpoint's two slots both taken by slow attempts; one more claimed ahead (a third slot free in all), waiting.
    const dispatcher = new WebhookDispatcher({ pool: app.pool, config: app.config }, { maxInFlight: 3, perEndpoint: 2, prefetch: 1, aheadMaxMs: 300, idlePollMs: 20 });
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

// Deliveries claimed ahead wait for a slot while their endpoint may change.
// These tests take one slot per endpoint and three ahead, with the first
// attempt held by the receiver until the test lets it answer, and
// `aheadFreshMs: 0`: a delivery claimed ahead is sent only by the claim that
// has just read its endpoint again (the default allows a read 50 ms old), so
// what the change does is the same on every run.
describe('webhook dispatcher: deliveries claimed ahead follow their endpoint', () => {
  /** An endpoint at `path` with four deliveries: the first in flight, held by the receiver until `answer()`, the other three claimed ahead. */
  async function oneInFlightThreeAhead(path: string) {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, t.key);
    let answer!: () => void;
    const held = new Promise<void>((resolve) => (answer = resolve));
    receiver.on(path, (_req, count) => (count === 1 ? { status: 200, until: held } : { status: 200 }));
    const ep = (await api.post('/webhook-endpoints', { data: { url: receiver.url(path), enabled_events: ['customer.created'] } })).body.data;
    for (let i = 0; i < 4; i++) assert.equal((await api.post('/customers', { data: { name: `Adelantado ${i}` } })).status, 201);
    const dispatcher = new WebhookDispatcher({ pool: app.pool, config: app.config }, { perEndpoint: 1, prefetch: 3, aheadFreshMs: 0, idlePollMs: 20 });
    dispatcher.start();
    const leases = async () => {
      const { rows } = await app.pool.query(`SELECT id, leased_until::text AS lease, next_attempt_at, status FROM webhook_deliveries WHERE endpoint_id = $1 ORDER BY id`, [ep.id]);
      return rows;
    };
    await waitFor(async () => receiver.at(path).length === 1 && (await leases()).every((r) => r.lease !== null), 10_000, 'one attempt in flight, three claimed ahead');
    const deliveries = () => app.pool.query(`SELECT status, attempts, leased_until, next_attempt_at FROM webhook_deliveries WHERE endpoint_id = $1`, [ep.id]).then((r) => r.rows);
    return { api, ep, dispatcher, answer, leases, deliveries };
  }

  test('a new URL and a new secret apply to the deliveries claimed ahead before the change', async () => {
    const { api, ep, dispatcher, answer, deliveries } = await oneInFlightThreeAhead('/ahead-old');
    try {
      assert.equal((await api.put(`/webhook-endpoints/${ep.id}`, { data: { url: receiver.url('/ahead-new') } })).status, 200);
      const rotated = await api.post(`/webhook-endpoints/${ep.id}/rotate-secret`, { data: {} });
      assert.equal(rotated.status, 200);
      answer();
      await waitFor(async () => (await deliveries()).filter((d) => d.status === 'succeeded').length === 4, 10_000, 'all four delivered');
      assert.equal(receiver.at('/ahead-old').length, 1, 'only the attempt already in flight went to the old URL');
      const moved = receiver.at('/ahead-new');
      assert.equal(moved.length, 3);
      for (const r of moved) {
        assert.ok(verifySignature(r.headers['x-service-signature'], r.body, rotated.body.data.secret), 'signed with the new secret');
        assert.ok(!verifySignature(r.headers['x-service-signature'], r.body, ep.secret), 'not with the old one');
      }
    } finally {
      await dispatcher.stop();
      await app.pool.query('DELETE FROM webhook_endpoints WHERE id = $1', [ep.id]);
    }
  });

  test('a pause drops what was claimed ahead: not sent, given back held (no lease), and sent at once when switched on', async () => {
    const { api, ep, dispatcher, answer, deliveries } = await oneInFlightThreeAhead('/ahead-pause');
    try {
      assert.equal((await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: false } })).status, 200);
      answer();
      await waitFor(async () => {
        const rows = await deliveries();
        return rows.filter((d) => d.status === 'succeeded').length === 1 && rows.filter((d) => d.status === 'pending' && d.leased_until === null && d.next_attempt_at === null).length === 3;
      }, 10_000, 'the attempt in flight recorded; the three claimed ahead given back, unscheduled');
      assert.equal(receiver.at('/ahead-pause').length, 1, 'nothing claimed ahead was sent to the paused endpoint');
      const held = await app.pool.query(`SELECT error_message FROM webhook_deliveries WHERE endpoint_id = $1 AND attempts = 0`, [ep.id]);
      assert.deepEqual(held.rows.map((r) => r.error_message), [HELD_MESSAGE, HELD_MESSAGE, HELD_MESSAGE], 'each of the three says why it waits');

      // No lease left to wait out: switching on sends them now, not 40 s after their claim.
      assert.equal((await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: true } })).status, 200);
      await waitFor(async () => (await deliveries()).filter((d) => d.status === 'succeeded').length === 4, 10_000, 'all four delivered after the switch-on');
      assert.equal(receiver.at('/ahead-pause').length, 4, 'each sent once');
    } finally {
      await dispatcher.stop();
      await app.pool.query('DELETE FROM webhook_endpoints WHERE id = $1', [ep.id]);
    }
  });

  test('a deleted endpoint gets nothing of what was claimed ahead for it', async () => {
    const { api, ep, dispatcher, answer } = await oneInFlightThreeAhead('/ahead-deleted');
    try {
      assert.equal((await api.delete(`/webhook-endpoints/${ep.id}`)).status, 204);
      answer();
      // Another endpoint, with one delivery, made after the deletion: by the time a claim sends it,
      // the claims after the deletion have read the deleted endpoint again.
      const marker = await api.post('/webhook-endpoints', { data: { url: receiver.url('/ahead-marker'), enabled_events: ['customer.created'] } });
      assert.equal(marker.status, 201);
      assert.equal((await api.post('/customers', { data: { name: 'Marcador' } })).status, 201);
      await waitFor(() => receiver.at('/ahead-marker').length === 1, 10_000, 'the later endpoint delivered');
      assert.equal(receiver.at('/ahead-deleted').length, 1, 'only the attempt already in flight reached the deleted endpoint');
      await app.pool.query('DELETE FROM webhook_endpoints WHERE id = $1', [marker.body.data.id]);
    } finally {
      await dispatcher.stop();
    }
  });

  test('giving back locks in id order, as a switch-on does: the two wait for each other, never deadlock', async () => {
    const { ep, dispatcher, answer, leases } = await oneInFlightThreeAhead('/ahead-order');
    const inFlight = String(receiver.at('/ahead-order')[0].headers['x-service-delivery']).replace(/-\d+$/, '');
    const ahead = (await leases()).filter((r) => r.id !== inFlight).map((r) => r.id).sort();
    // A switch-on's first step: the lowest of the held deliveries locked, in a transaction still open.
    const db = await app.pool.connect();
    let stopping: Promise<void> | undefined;
    try {
      await db.query('BEGIN');
      await db.query(`SET LOCAL lock_timeout = '30s'`);
      await db.query('SELECT id FROM webhook_deliveries WHERE id = $1 FOR NO KEY UPDATE', [ahead[0]]);
      // The worker stopping gives the three back, with the statement a pause's give-back runs. (Pausing the
      // endpoint through the API raced this lock: the claim loop, 20 ms later, could give them back first.)
      stopping = dispatcher.stop();
      await waitFor(async () => {
        const { rows } = await app.pool.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%SET leased_until = NULL, next_attempt_at%'`);
        return rows.length > 0;
      }, 30_000, 'the give-back waiting for the row this transaction holds');
      // The switch-on's next steps: the other rows, in id order. Had the give-back locked one of them first,
      // each side would wait for the other.
      await db.query('SELECT id FROM webhook_deliveries WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE', [ahead.slice(1)]);
      await db.query('COMMIT');
      await waitFor(async () => (await leases()).filter((r) => ahead.includes(r.id)).every((r) => r.lease === null), 30_000, 'the three given back once the transaction ended');
    } finally {
      await db.query('ROLLBACK').catch(() => {});
      db.release();
      answer();
      await (stopping ?? dispatcher.stop());
      await app.pool.query('DELETE FROM webhook_endpoints WHERE id = $1', [ep.id]);
    }
  });

  test('giving back leaves alone a lease that is no longer its own (it ran out, another worker claimed the delivery)', async () => {
    const { ep, dispatcher, answer, leases } = await oneInFlightThreeAhead('/ahead-lease');
    try {
      const inFlight = String(receiver.at('/ahead-lease')[0].headers['x-service-delivery']).replace(/-\d+$/, '');
      const ahead = (await leases()).filter((r) => r.id !== inFlight);
      assert.equal(ahead.length, 3);
      // As if this worker had stalled past its lease and another worker had claimed them.
      const { rows: taken } = await app.pool.query(
        `UPDATE webhook_deliveries SET leased_until = now() + interval '39 seconds' WHERE endpoint_id = $1 AND id = ANY($2::text[]) AND attempts = 0 AND status = 'pending'
          RETURNING id, leased_until::text AS lease`,
        [ep.id, ahead.map((r) => r.id)],
      );
      const stopping = dispatcher.stop();
      answer();
      await stopping;
      const after = new Map((await leases()).map((r) => [r.id, r.lease]));
      assert.equal(taken.length, 3);
      assert.deepEqual(taken.map((r) => after.get(r.id)), taken.map((r) => r.lease), "the other worker's leases kept");
      assert.equal(receiver.at('/ahead-lease').length, 1, 'nothing claimed ahead was sent');
    } finally {
      await app.pool.query('DELETE FROM webhook_endpoints WHERE id = $1', [ep.id]);
    }
  });
});

