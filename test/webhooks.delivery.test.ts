// Webhook delivery end to end: writes through the REST API, the real worker
// (the dispatcher claiming due deliveries), and a real HTTP receiver that
// checks every signature with its own HMAC code. Retry timing is advanced by
// moving a delivery's `next_attempt_at` (what the claim reads), never by
// sleeping minutes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { replayDelivery, updateEndpoint } from '../api/routes/webhook-endpoint-queries.ts';
import { recordEvent } from '../db/events.ts';
import { transaction, type Pool } from '../db/pool.ts';
import { purgeWebhookHistory } from '../worker/jobs/purge-webhook-history.ts';
import { HELD_MESSAGE } from '../lib/webhook-retry.ts';
import { DEFAULT_DISPATCHER_OPTIONS } from '../worker/webhooks/dispatcher.ts';
import { startWorker, type Worker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { startReceiver, verifySignature, type Receiver } from './helpers/receiver.ts';
import { waitFor, waitForLockWaits } from './helpers/wait.ts';

// The contract's offsets of attempts 2 to 6 from the first (Limits), written out on purpose.
const RETRY_OFFSETS_SECONDS = [60, 300, 1800, 7200, 21600];

type Api = ReturnType<typeof client>;

async function delivery(api: Api, endpointId: string, deliveryId: string) {
  const res = await api.get(`/webhook-endpoints/${endpointId}/deliveries/${deliveryId}`);
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

async function onlyDelivery(api: Api, endpointId: string) {
  const res = await api.get(`/webhook-endpoints/${endpointId}/deliveries`);
  assert.equal(res.status, 200);
  assert.equal(res.body.data.length, 1, JSON.stringify(res.body.data));
  return res.body.data[0];
}

/** The endpoint's only delivery once `holds` is true of it (polled, within `timeoutMs`). */
function deliveryWhen(api: Api, endpointId: string, holds: (d: any) => unknown, what: string, timeoutMs = 15_000) {
  return waitFor(async () => {
    const d = await onlyDelivery(api, endpointId);
    return holds(d) ? d : false;
  }, timeoutMs, what);
}

/** The endpoint's only delivery once its first attempt failed and its retry is scheduled. */
function failedWithRetry(api: Api, endpointId: string) {
  return deliveryWhen(api, endpointId, (d) => d.status === 'failed' && d.next_attempt_at, 'a failed delivery with its retry scheduled');
}

/** When a delivery's next attempt is scheduled, as the dispatcher's claim reads it (null: none; not while claimed). */
async function scheduledAt(pool: Pool, deliveryId: string): Promise<Date | null> {
  const { rows } = await pool.query(`SELECT next_attempt_at, leased_until FROM webhook_deliveries WHERE id = $1`, [deliveryId]);
  assert.equal(rows[0].leased_until, null, 'not claimed');
  return rows[0].next_attempt_at;
}

/** Moves the next attempt's scheduled time to now: the worker picks it up at once. */
async function advance(pool: Pool, deliveryId: string): Promise<void> {
  const { rowCount } = await pool.query(
    `UPDATE webhook_deliveries SET next_attempt_at = now() WHERE id = $1 AND next_attempt_at IS NOT NULL AND leased_until IS NULL`,
    [deliveryId],
  );
  assert.equal(rowCount, 1, 'one scheduled attempt to advance');
}

describe('webhook delivery: fan-out, signatures, retries, shut-off, history', () => {
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

  async function endpoint(api: Api, path: string, enabledEvents: string[] = ['*']) {
    const res = await api.post('/webhook-endpoints', { data: { url: receiver.url(path), enabled_events: enabledEvents } });
    assert.equal(res.status, 201, res.text);
    return res.body.data as { id: string; secret: string; updated_at: string };
  }

  async function tenant() {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    return { ...t, api: client(app.baseUrl, t.key) };
  }

  test('a write fans out to the receiver: signed envelope, every header, and the delivery records exactly the bytes sent', async () => {
    const { api } = await tenant();
    const ep = await endpoint(api, '/fanout');
    const customer = await api.post('/customers', { data: { name: 'Ana López', email: 'ana@example.com' } });
    assert.equal(customer.status, 201);
    const [got] = await waitFor(() => receiver.at('/fanout').length === 1 && receiver.at('/fanout'), 10_000, 'the delivery');

    assert.ok(verifySignature(got.headers['x-service-signature'], got.body, ep.secret), 'signature verifies with the whole whsec_ secret');
    assert.ok(!verifySignature(got.headers['x-service-signature'], got.body, ep.secret.slice('whsec_'.length)), 'the prefix is part of the key');
    assert.ok(!verifySignature(got.headers['x-service-signature'], got.body.replace('Ana', 'Ano'), ep.secret), 'a changed body does not verify');
    const t = Number(/t=(\d+)/.exec(String(got.headers['x-service-signature']))![1]);
    assert.ok(Math.abs(Date.now() / 1000 - t) < 30, 'the timestamp is the time of sending');

    const body = JSON.parse(got.body);
    assert.deepEqual(Object.keys(body).sort(), ['api_version', 'created_at', 'data', 'event', 'evento', 'id']);
    assert.match(body.id, /^evt_[0-9a-f]+$/);
    assert.equal(body.event, 'customer.created');
    assert.equal(body.evento, 'customer.created');
    assert.match(body.api_version, /^\d{4}-\d{2}-\d{2}$/);
    assert.equal(body.data.object, 'customer');
    assert.equal(body.data.id, customer.body.data.id);
    assert.deepEqual(body.data.metadata, {});
    assert.ok(Math.abs(Date.parse(body.created_at) - Date.parse(customer.body.data.created_at)) < 5_000, 'created_at is when the fact happened');

    assert.equal(got.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(got.headers['x-service-event'], 'customer.created');
    assert.equal(got.headers['x-service-event-id'], body.id);
    assert.equal(got.headers['x-service-attempt'], '1');

    const d = await waitFor(async () => {
      const one = await onlyDelivery(api, ep.id);
      return one.status === 'succeeded' && one;
    }, 10_000, 'the delivery to be recorded');
    assert.equal(got.headers['x-service-delivery'], `${d.id}-1`);
    assert.equal(d.object, 'webhook_delivery');
    assert.equal(d.event_id, body.id);
    assert.equal(d.attempts, 1);
    assert.equal(d.max_attempts, 6);
    assert.equal(d.response_status, 200);
    assert.equal(d.next_attempt_at, null);
    assert.ok(d.delivered_at);
    const full = await delivery(api, ep.id, d.id);
    assert.equal(full.payload, got.body, 'payload is byte for byte the signed body');
    assert.equal(full.response_body, 'ok');

    const health = (await api.get(`/webhook-endpoints/${ep.id}`)).body.data;
    assert.equal(health.last_delivery_status, 'succeeded');
    assert.ok(health.last_delivery_at);
    assert.equal(health.consecutive_failures, 0);
  });

  test('last_delivery_at is when the last attempt was sent (as its signature\'s t), not when its slow answer came', async () => {
    const { api } = await tenant();
    receiver.on('/slow-answer', () => ({ status: 500, delayMs: 1_500 }));
    const ep = await endpoint(api, '/slow-answer', ['lead.created']);
    assert.equal((await api.post('/leads', { data: { name: 'Lenta' } })).status, 201);
    const [got] = await waitFor(() => receiver.at('/slow-answer').length === 1 && receiver.at('/slow-answer'), 10_000, 'the attempt');
    const health = await waitFor(async () => {
      const read = (await api.get(`/webhook-endpoints/${ep.id}`)).body.data;
      return read.last_delivery_status === 'failed' && read;
    }, 10_000, 'the failed attempt to be recorded');
    const sentAt = Date.parse(health.last_delivery_at);
    // Sent before the receiver read it; the answer came 1.5 s after that (it read 1.5 s later before).
    assert.ok(sentAt <= got.at, `last_delivery_at ${health.last_delivery_at} is not after the request arrived (${new Date(got.at).toISOString()})`);
    const t = Number(/t=(\d+)/.exec(String(got.headers['x-service-signature']))![1]);
    assert.ok(Math.abs(Math.floor(sentAt / 1000) - t) <= 1, 'the second of the signature\'s timestamp');
  });

  test('a receiver answering bytes no text column holds (U+0000, binary) is recorded, and holds up no other company’s deliveries', async () => {
    const hostile = await tenant();
    const bystander = await tenant();
    receiver.on('/nul', () => ({ status: 200, body: 'ok\u0000fin' }));
    receiver.on('/binary', () => ({ status: 500, body: Buffer.from([0x00, 0xff, 0xfe, 0x00, 0x41]) }));
    const nul = await endpoint(hostile.api, '/nul', ['lead.created']);
    const binary = await endpoint(hostile.api, '/binary', ['lead.created']);
    const fine = await endpoint(bystander.api, '/bystander', ['customer.created']);
    assert.equal((await hostile.api.post('/leads', { data: { name: 'x' } })).status, 201);
    assert.equal((await bystander.api.post('/customers', { data: { name: 'y' } })).status, 201);
    // Recorded (the batch write of finished attempts failed on U+0000, for every company, on every retry).
    const okOne = await deliveryWhen(hostile.api, nul.id, (d) => d.status === 'succeeded', 'the NUL answer recorded');
    assert.equal((await delivery(hostile.api, nul.id, okOne.id)).response_body, 'ok\uFFFDfin');
    const failedOne = await deliveryWhen(hostile.api, binary.id, (d) => d.attempts === 1 && d.status !== 'pending', 'the binary answer recorded');
    assert.equal(failedOne.response_status, 500);
    assert.ok(!(await delivery(hostile.api, binary.id, failedOne.id)).response_body.includes('\u0000'));
    await deliveryWhen(bystander.api, fine.id, (d) => d.status === 'succeeded', 'the other company’s delivery recorded');
  });

  test('enabled_events select by exact name, <prefix>.* and *; other events are not delivered', async () => {
    const { api } = await tenant();
    const endpoints = {
      customer: await endpoint(api, '/sel-customer', ['customer.*']),
      lead: await endpoint(api, '/sel-lead', ['lead.created']),
      all: await endpoint(api, '/sel-all', ['*']),
      invoice: await endpoint(api, '/sel-invoice', ['invoice.*']),
    };
    assert.equal((await api.post('/customers', { data: { name: 'C' } })).status, 201);
    assert.equal((await api.post('/leads', { data: { name: 'L' } })).status, 201);
    // Deliveries are created in the write's own transaction: what each endpoint will ever be sent is known now.
    const deliveries = async (ep: { id: string }) =>
      ((await api.get(`/webhook-endpoints/${ep.id}/deliveries`)).body.data as Array<{ event: string }>).map((d) => d.event).sort();
    assert.deepEqual(await deliveries(endpoints.customer), ['customer.created']);
    assert.deepEqual(await deliveries(endpoints.lead), ['lead.created']);
    assert.deepEqual(await deliveries(endpoints.all), ['customer.created', 'lead.created']);
    assert.deepEqual(await deliveries(endpoints.invoice), []);
    await waitFor(() => receiver.at('/sel-all').length === 2, 10_000, 'both events at *');
    await waitFor(() => receiver.at('/sel-customer').length === 1 && receiver.at('/sel-lead').length === 1, 10_000, 'the filtered endpoints');
    assert.deepEqual(receiver.at('/sel-customer').map((r) => r.headers['x-service-event']), ['customer.created']);
    assert.deepEqual(receiver.at('/sel-lead').map((r) => r.headers['x-service-event']), ['lead.created']);
    assert.deepEqual(receiver.at('/sel-all').map((r) => r.headers['x-service-event']).sort(), ['customer.created', 'lead.created']);
    assert.equal(receiver.at('/sel-invoice').length, 0);
  });

  test('the next attempt is counted from when the failed one was sent, not from its slow answer', async () => {
    const { api } = await tenant();
    receiver.on('/slow-failure', () => ({ status: 500, delayMs: 3000 }));
    const ep = await endpoint(api, '/slow-failure');
    await api.post('/customers', { data: { name: 'Respuesta lenta' } });
    const first = await deliveryWhen(api, ep.id, (d) => d.attempts === 1, 'attempt 1');
    const sentAt = receiver.at('/slow-failure')[0].at;
    const delay = (Date.parse(first.next_attempt_at) - sentAt) / 1000;
    assert.ok(Math.abs(delay - RETRY_OFFSETS_SECONDS[0]) < 1.5, `attempt 2 due 60 s after attempt 1 was sent (got ${delay}; its answer took 3 s)`);
  });

  test('failures (4xx and 5xx) retry at +1 min, +5 min, +30 min, +2 h, +6 h from the first attempt (each wait counted from the attempt before) with the same event id and body, then exhausted', async () => {
    const { api } = await tenant();
    receiver.on('/retry', (_req, n) => ({ status: n === 1 ? 404 : 500, body: `fallo ${n}` }));
    const ep = await endpoint(api, '/retry');
    await api.post('/customers', { data: { name: 'Reintento' } });

    let last = await deliveryWhen(api, ep.id, (d) => d.attempts === 1, 'attempt 1', 10_000);
    assert.equal(last.status, 'failed');
    assert.equal(last.response_status, 404, 'a 4xx is a failure too');
    for (let attempt = 1; attempt <= 5; attempt++) {
      // The test moves each attempt forward in time (advance), so it checks each wait: on time, they add
      // up to the offsets from the first attempt.
      const requestAt = receiver.at('/retry')[attempt - 1].at;
      const delay = (Date.parse(last.next_attempt_at) - requestAt) / 1000;
      const wait = RETRY_OFFSETS_SECONDS[attempt - 1] - (RETRY_OFFSETS_SECONDS[attempt - 2] ?? 0);
      assert.ok(Math.abs(delay - wait) < 5, `attempt ${attempt + 1} is scheduled ${wait} s after attempt ${attempt} (got ${delay})`);
      assert.equal((await scheduledAt(app.pool, last.id))?.toISOString(), last.next_attempt_at, 'due at next_attempt_at, not before');

      assert.equal(receiver.at('/retry').length, attempt, 'nothing is sent before its time');
      await advance(app.pool, last.id);
      last = await waitFor(async () => {
        const d = await delivery(api, ep.id, last.id);
        return d.attempts === attempt + 1 && d;
      }, 10_000, `attempt ${attempt + 1}`);
      assert.equal(last.response_status, 500);
    }
    const sent = receiver.at('/retry');
    assert.equal(sent.length, 6);
    assert.deepEqual(sent.map((r) => r.headers['x-service-attempt']), ['1', '2', '3', '4', '5', '6']);
    assert.equal(new Set(sent.map((r) => r.headers['x-service-event-id'])).size, 1, 'one event id on every attempt');
    assert.equal(new Set(sent.map((r) => r.body)).size, 1, 'the same bytes on every attempt');
    assert.deepEqual(sent.map((r) => r.headers['x-service-delivery']), [1, 2, 3, 4, 5, 6].map((n) => `${last.id}-${n}`), 'an id per attempt');
    for (const r of sent) assert.ok(verifySignature(r.headers['x-service-signature'], r.body, ep.secret));

    assert.equal(last.status, 'exhausted');
    assert.equal(last.next_attempt_at, null);
    assert.equal(last.response_body, 'fallo 6');
    assert.match(last.error_message, /500/);
    assert.equal(await scheduledAt(app.pool, last.id), null, 'no attempt after the sixth');
    const failed = await api.get(`/webhook-endpoints/${ep.id}/deliveries?status=exhausted`);
    assert.equal(failed.body.data.length, 1);
    const health = (await api.get(`/webhook-endpoints/${ep.id}`)).body.data;
    assert.equal(health.consecutive_failures, 6);
    assert.equal(health.last_delivery_status, 'failed');
    assert.equal(health.active, true);
  });

  test('after rotate-secret the next attempt is signed with the new secret', async () => {
    const { api } = await tenant();
    receiver.on('/rotate', (_req, n) => ({ status: n === 1 ? 503 : 200 }));
    const ep = await endpoint(api, '/rotate');
    await api.post('/customers', { data: { name: 'Rotación' } });
    const d = await waitFor(async () => {
      const one = await onlyDelivery(api, ep.id);
      return one.attempts === 1 && one;
    }, 10_000, 'attempt 1');
    const rotated = await api.post(`/webhook-endpoints/${ep.id}/rotate-secret`);
    assert.equal(rotated.status, 200);
    assert.notEqual(rotated.body.data.secret, ep.secret);
    await advance(app.pool, d.id);
    await waitFor(() => receiver.at('/rotate').length === 2, 10_000, 'attempt 2');
    const [first, second] = receiver.at('/rotate');
    assert.ok(verifySignature(first.headers['x-service-signature'], first.body, ep.secret));
    assert.ok(verifySignature(second.headers['x-service-signature'], second.body, rotated.body.data.secret), 'signed with the new secret');
    assert.ok(!verifySignature(second.headers['x-service-signature'], second.body, ep.secret), 'not with the old one');
  });

  test('a success resets consecutive_failures', async () => {
    const { api } = await tenant();
    receiver.on('/reset', (_req, n) => ({ status: n <= 3 ? 500 : 200 }));
    const ep = await endpoint(api, '/reset');
    for (let i = 0; i < 3; i++) await api.post('/customers', { data: { name: `F${i}` } });
    await waitFor(async () => (await api.get(`/webhook-endpoints/${ep.id}`)).body.data.consecutive_failures === 3, 10_000, '3 failures');
    await api.post('/customers', { data: { name: 'OK' } });
    await waitFor(async () => (await api.get(`/webhook-endpoints/${ep.id}`)).body.data.last_delivery_status === 'succeeded', 10_000, 'a success');
    const after = (await api.get(`/webhook-endpoints/${ep.id}`)).body.data;
    assert.equal(after.consecutive_failures, 0);
    // Health is what attempts observe, not a change to the endpoint: updated_at stays (docs/webhooks.md).
    assert.equal(after.updated_at, ep.updated_at);
  });

  test('PUT active: true on an endpoint already on keeps its failure count (only a switch-on starts it again)', async () => {
    const { api } = await tenant();
    receiver.on('/still-failing', () => ({ status: 500 }));
    const ep = await endpoint(api, '/still-failing');
    for (let i = 0; i < 2; i++) await api.post('/customers', { data: { name: `G${i}` } });
    await waitFor(async () => (await api.get(`/webhook-endpoints/${ep.id}`)).body.data.consecutive_failures === 2, 10_000, '2 failures');
    const put = await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: true, description: 'el objeto entero' } });
    assert.equal(put.status, 200, put.text);
    assert.equal(put.body.data.consecutive_failures, 2);
    assert.equal(put.body.data.description, 'el objeto entero');
  });

  test('a burst to a receiver that fails from the start: exactly 20 attempts, then the shut-off; the rest are never attempted', async () => {
    const { api } = await tenant();
    // Slow to fail, so that every event of the burst is due while the first attempts are still out.
    receiver.on('/burst-fail', () => ({ status: 500, delayMs: 300 }));
    const ep = await endpoint(api, '/burst-fail', ['customer.created']);
    const created = await Promise.all(Array.from({ length: 30 }, (_, i) => api.post('/customers', { data: { name: `Ráfaga ${i}` } })));
    assert.deepEqual([...new Set(created.map((r) => r.status))], [201]);
    const off = await waitFor(async () => {
      const e = (await api.get(`/webhook-endpoints/${ep.id}`)).body.data;
      return e.active === false && e;
    }, 15_000, 'the shut-off');
    // An endpoint with no success yet never has more attempts out than failures left before the shut-off:
    // when the 20th failure is written nothing else is in flight, so these counts are final.
    assert.equal(off.consecutive_failures, 20);
    assert.equal(off.updated_at, off.disabled_at, 'the shut-off is a change of the endpoint: updated_at moves with it');
    assert.equal(receiver.at('/burst-fail').length, 20, 'no attempt past the 20th failure');
    const deliveries = (await api.get(`/webhook-endpoints/${ep.id}/deliveries?limit=100`)).body.data;
    assert.equal(deliveries.filter((d: any) => d.attempts === 1 && d.status === 'failed').length, 20);
    const never = deliveries.filter((d: any) => d.attempts === 0);
    assert.equal(never.length, 10);
    assert.ok(never.every((d: any) => d.status === 'pending' && d.next_attempt_at === null && d.error_message === HELD_MESSAGE), JSON.stringify(never[0]));
  });

  test('20 consecutive failures switch the endpoint off and stop its attempts; PUT active: true resumes it and sends every delivery still owed', async () => {
    const { api } = await tenant();
    let answer = 500;
    receiver.on('/shutoff', () => ({ status: answer }));
    const ep = await endpoint(api, '/shutoff');
    for (let i = 0; i < 20; i++) assert.equal((await api.post('/customers', { data: { name: `Falla ${i}` } })).status, 201);
    const off = await waitFor(async () => {
      const e = (await api.get(`/webhook-endpoints/${ep.id}`)).body.data;
      return e.active === false && e;
    }, 15_000, 'the shut-off');
    assert.equal(off.consecutive_failures, 20);
    assert.ok(off.disabled_at);
    assert.match(off.disabled_reason, /20/);
    assert.equal(receiver.at('/shutoff').length, 20);

    // No further attempts (contract): no delivery shows one once the endpoint is off…
    const { body: list } = await api.get(`/webhook-endpoints/${ep.id}/deliveries?limit=100`);
    assert.deepEqual(list.data.filter((d: any) => d.next_attempt_at !== null).map((d: any) => d.id), []);
    // …and none is claimed even when its time has come: the claim only reads endpoints that are on.
    // (Set due by hand here; a sentinel endpoint of the same company, claimed by the same statement
    // that would have taken them, shows the claim ran.)
    await app.pool.query(`UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 second' WHERE endpoint_id = $1`, [ep.id]);
    const sentinel = await endpoint(api, '/shutoff-sentinel', ['lead.created']);
    await api.post('/leads', { data: { name: 'Centinela', email: 'centinela@example.com' } });
    await deliveryWhen(api, sentinel.id, (d) => d.status === 'succeeded', 'the sentinel delivered', 10_000);
    const claimed = await app.pool.query(`SELECT id FROM webhook_deliveries WHERE endpoint_id = $1 AND leased_until IS NOT NULL`, [ep.id]);
    assert.equal(claimed.rowCount, 0, 'nothing of the disabled endpoint was claimed');
    assert.equal(receiver.at('/shutoff').length, 20, 'no attempt after the shut-off');
    await app.pool.query(`UPDATE webhook_deliveries SET next_attempt_at = NULL WHERE endpoint_id = $1`, [ep.id]);
    const held = (await api.get(`/webhook-endpoints/${ep.id}/deliveries?limit=100`)).body.data;
    assert.ok(held.every((d: any) => d.status === 'failed' && d.attempts === 1));

    // New events are not queued for it.
    await api.post('/customers', { data: { name: 'Mientras apagado' } });
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}/deliveries?limit=100`)).body.data.length, 20);

    answer = 200;
    const resumed = await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: true } });
    assert.equal(resumed.status, 200);
    assert.equal(resumed.body.data.active, true);
    assert.equal(resumed.body.data.consecutive_failures, 0);
    assert.equal(resumed.body.data.disabled_at, null);
    assert.equal(resumed.body.data.disabled_reason, null);
    // Nothing owed is lost: the retries held while it was off, and the failure that switched it off
    // (which never had a retry queued), are all sent again, at once, with their own event ids.
    await api.post('/customers', { data: { name: 'De vuelta' } });
    await waitFor(async () => {
      const { body } = await api.get(`/webhook-endpoints/${ep.id}/deliveries?limit=100`);
      return body.data.length === 21 && body.data.every((d: any) => d.status === 'succeeded');
    }, 15_000, 'every delivery owed, and the new one, succeeded after the resume');
    const received = receiver.at('/shutoff');
    assert.equal(received.length, 41, '20 failed attempts, 20 second attempts, 1 new event');
    const ids = (requests: typeof received) => new Set(requests.map((r) => JSON.parse(r.body).id));
    assert.deepEqual([...ids(received.slice(20))].sort(), [...ids(received)].sort(), 'each event of the 20 was sent again after the resume');
    const second = (await api.get(`/webhook-endpoints/${ep.id}/deliveries?limit=100`)).body.data.filter((d: any) => d.attempts === 2);
    assert.equal(second.length, 20);
    await waitFor(async () => (await api.get(`/webhook-endpoints/${ep.id}`)).body.data.last_delivery_status === 'succeeded', 10_000, 'recorded');
  });

  test('a manual pause sends nothing and keeps configuration and secret; disabled_at stays null', async () => {
    const { api } = await tenant();
    const ep = await endpoint(api, '/pause', ['customer.created']);
    const paused = await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: false } });
    assert.equal(paused.body.data.active, false);
    assert.equal(paused.body.data.disabled_at, null);
    assert.equal(paused.body.data.disabled_reason, null);
    await api.post('/customers', { data: { name: 'En pausa' } });
    // A paused endpoint gets no delivery row (they are made in the write's transaction), so nothing can be sent.
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}/deliveries`)).body.data.length, 0);
    await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: true } });
    await api.post('/customers', { data: { name: 'Reanudado' } });
    const [got] = await waitFor(() => receiver.at('/pause').length === 1 && receiver.at('/pause'), 10_000, 'delivery after the pause');
    assert.equal(JSON.parse(got.body).data.name, 'Reanudado', 'the event of the pause was never sent');
    assert.ok(verifySignature(got.headers['x-service-signature'], got.body, ep.secret), 'the secret survived the pause');
  });

  test('a pause leaves no delivery showing a next attempt; resumed before the retry is due, the retry is made at once', async () => {
    const { api } = await tenant();
    receiver.on('/pause-retry', () => ({ status: 503 }));
    const ep = await endpoint(api, '/pause-retry', ['customer.created']);
    await api.post('/customers', { data: { name: 'Reintento' } });
    const failed = await failedWithRetry(api, ep.id);
    assert.ok(Date.parse(failed.next_attempt_at) > Date.now() + 30_000, 'the retry is a minute away');
    assert.equal((await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: false } })).status, 200);
    const paused = await onlyDelivery(api, ep.id);
    assert.equal(paused.next_attempt_at, null);
    assert.deepEqual([paused.status, paused.response_status, paused.error_message], ['failed', 503, failed.error_message], 'the last outcome is kept');
    // Resumed: what it was owed is due at once (docs/webhooks.md), not at the retry's old time.
    receiver.on('/pause-retry', () => ({ status: 200 }));
    const before = Date.now();
    assert.equal((await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: true } })).status, 200);
    const done = await deliveryWhen(api, ep.id, (d) => d.status === 'succeeded', 'the retry made after the resume');
    assert.equal(done.attempts, 2);
    assert.ok(receiver.at('/pause-retry')[1].at >= before, 'made after the resume');
  });

  test('paused and switched on while an attempt is in flight: that attempt is not sent a second time', async () => {
    const { api } = await tenant();
    receiver.on('/in-flight', () => ({ status: 200, delayMs: 3000 }));
    const ep = await endpoint(api, '/in-flight', ['customer.created']);
    await api.post('/customers', { data: { name: 'En vuelo' } });
    await waitFor(() => receiver.at('/in-flight').length === 1, 10_000, 'the attempt reaching the receiver');
    assert.equal((await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: false } })).status, 200);
    assert.equal((await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: true } })).status, 200);
    const d = await waitFor(async () => {
      const one = await onlyDelivery(api, ep.id);
      return one.status === 'succeeded' && one;
    }, 15_000, 'the in-flight attempt recorded');
    assert.equal(d.attempts, 1);
    assert.equal(receiver.at('/in-flight').length, 1, 'sent once');
  });

  test('a receiver that never answers is cut off at the 10 s read timeout and retried later', async () => {
    const { api } = await tenant();
    receiver.on('/hang', () => ({ hang: true }));
    const ep = await endpoint(api, '/hang');
    await api.post('/customers', { data: { name: 'Lento' } });
    const d = await waitFor(async () => {
      const one = await onlyDelivery(api, ep.id);
      return one.attempts === 1 && one;
    }, 20_000, 'the timed-out attempt');
    assert.equal(d.status, 'failed');
    assert.equal(d.response_status, null);
    assert.equal(d.error_message, 'Tiempo de lectura agotado (10 s)', 'the read timeout ended it, not the overall deadline');
    assert.ok(d.next_attempt_at);
  });

  test('a huge answer is read only up to 64 KB and only a prefix is stored', async () => {
    const { api } = await tenant();
    receiver.on('/huge', () => ({ status: 200, body: Buffer.alloc(5 * 1024 * 1024, 'x') }));
    const ep = await endpoint(api, '/huge');
    await api.post('/customers', { data: { name: 'Grande' } });
    const d = await waitFor(async () => {
      const one = await onlyDelivery(api, ep.id);
      return one.status === 'succeeded' && one;
    }, 10_000, 'the delivery');
    const full = await delivery(api, ep.id, d.id);
    assert.equal(full.response_body.length, 8 * 1024);
  });

  test('redirects are not followed and count as failures', async () => {
    const { api } = await tenant();
    receiver.on('/redirect', () => ({ status: 302, headers: { location: receiver.url('/redirect-target') } }));
    const ep = await endpoint(api, '/redirect');
    await api.post('/customers', { data: { name: 'Redirección' } });
    const d = await waitFor(async () => {
      const one = await onlyDelivery(api, ep.id);
      return one.attempts === 1 && one;
    }, 10_000, 'the attempt');
    assert.equal(d.status, 'failed');
    assert.equal(d.response_status, 302);
    assert.equal(receiver.at('/redirect-target').length, 0, 'the redirect target is never called');
  });

  test('a slow receiver does not hold back other endpoints', async () => {
    const { api } = await tenant();
    receiver.on('/slow', () => ({ hang: true }));
    const slow = await endpoint(api, '/slow');
    await endpoint(api, '/fast');
    // Healthy (its last attempt succeeded): a stalled endpoint holds the whole bound; one with no success yet holds less (below).
    await app.pool.query(`UPDATE webhook_endpoints SET last_delivery_status = 'succeeded', last_delivery_at = now() WHERE id = $1`, [slow.id]);
    const { perEndpoint: bound, prefetch } = DEFAULT_DISPATCHER_OPTIONS;
    const events = bound + prefetch + 20;
    for (let i = 0; i < events; i++) await api.post('/customers', { data: { name: `Cliente ${i}` } });
    await waitFor(() => receiver.at('/fast').length === events, 10_000, 'every delivery to the fast endpoint, not held back by the stalled one');
    await waitFor(() => receiver.at('/slow').length >= bound, 10_000, 'the stalled endpoint filling its bound');
    assert.equal(receiver.at('/slow').length, bound, `exactly the per-endpoint bound (${bound}) of attempts in flight to the stalled endpoint`);
    // The bound is held by the claim: the bound in flight, the prefetch claimed ahead, the rest due and unclaimed.
    const { rows } = await app.pool.query(
      `SELECT count(*) FILTER (WHERE leased_until > now())::int AS claimed,
              count(*) FILTER (WHERE leased_until IS NULL AND next_attempt_at <= now())::int AS waiting
         FROM webhook_deliveries WHERE endpoint_id = $1`,
      [slow.id],
    );
    assert.deepEqual({ ...rows[0] }, { claimed: bound + prefetch, waiting: events - bound - prefetch });
    assert.equal(receiver.at('/slow').length, bound);
  });

  test('replay: a new delivery of the same event id and body, signed now with the current secret', async () => {
    const { api, companyId } = await tenant();
    const ep = await endpoint(api, '/replay');
    await api.post('/customers', { data: { name: 'Repetir' } });
    const original = await waitFor(async () => {
      const one = await onlyDelivery(api, ep.id);
      return one.status === 'succeeded' && one;
    }, 10_000, 'the original delivery');
    const replay = await transaction(app.pool, (db) => replayDelivery(db, companyId, original.id));
    assert.notEqual(replay!.id, original.id);
    await waitFor(() => receiver.at('/replay').length === 2, 10_000, 'the replay');
    const [first, second] = receiver.at('/replay');
    assert.equal(second.body, first.body);
    assert.equal(second.headers['x-service-event-id'], first.headers['x-service-event-id']);
    assert.equal(second.headers['x-service-delivery'], `${replay!.id}-1`);
    assert.ok(verifySignature(second.headers['x-service-signature'], second.body, ep.secret));
  });

  test('a replay to a paused endpoint is held (no next attempt, saying why) and sent when the endpoint is switched on', async () => {
    const { api, companyId } = await tenant();
    const ep = await endpoint(api, '/replay-paused');
    await api.post('/customers', { data: { name: 'Repetir en pausa' } });
    const original = await waitFor(async () => {
      const one = await onlyDelivery(api, ep.id);
      return one.status === 'succeeded' && one;
    }, 10_000, 'the original delivery');
    assert.equal((await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: false } })).status, 200);
    const replay = await transaction(app.pool, (db) => replayDelivery(db, companyId, original.id));
    assert.deepEqual([replay!.status, replay!.attempts, replay!.next_attempt_at], ['pending', 0, null]);
    assert.equal(replay!.error_message, 'El endpoint está desactivado; la entrega no se intentó');
    assert.equal((await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: true } })).status, 200);
    const sent = await waitFor(async () => {
      const d = await delivery(api, ep.id, replay!.id);
      return d.status === 'succeeded' && d;
    }, 10_000, 'the held replay sent after the switch-on');
    assert.equal(sent.error_message, null);
    assert.equal(receiver.at('/replay-paused').length, 2);
  });

  test('a replay made while the endpoint is being switched on waits for the switch and is sent (not held)', async () => {
    const { api, companyId } = await tenant();
    const ep = await endpoint(api, '/replay-race');
    await api.post('/customers', { data: { name: 'Repetir en carrera' } });
    const original = await waitFor(async () => {
      const one = await onlyDelivery(api, ep.id);
      return one.status === 'succeeded' && one;
    }, 10_000, 'the original delivery');
    assert.equal((await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: false } })).status, 200);
    const open = await app.pool.connect();
    let replay: Promise<any> | undefined;
    try {
      await open.query('BEGIN');
      await updateEndpoint(open, companyId, ep.id, { active: true });
      replay = transaction(app.pool, (db) => replayDelivery(db, companyId, original.id));
      await waitForLockWaits(app.pool, { query: 'INSERT INTO webhook_deliveries%FOR SHARE OF e%', what: 'the replay waiting for the switch-on' });
      await open.query('COMMIT');
    } finally {
      open.release();
    }
    const made = await replay!;
    assert.equal(made.error_message, null);
    assert.ok(made.next_attempt_at, 'due, not held');
    await waitFor(async () => (await delivery(api, ep.id, made.id)).status === 'succeeded', 10_000, 'the replay sent');
    assert.equal(receiver.at('/replay-race').length, 2);
  });

  test('a write that fans out while its endpoint is being paused: unscheduled by the hourly purge, sent once switched on', async () => {
    const { api, companyId } = await tenant();
    const ep = await endpoint(api, '/pause-race', ['customer.created']);
    const write = await app.pool.connect();
    try {
      await write.query('BEGIN');
      await recordEvent(write, companyId, 'customer.created', { object: 'customer', id: 'a'.repeat(24), name: 'En carrera' });
      // The pause commits first; it could not see the write's delivery.
      assert.equal((await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: false } })).status, 200);
      await write.query('COMMIT');
    } finally {
      write.release();
    }
    const raced = await onlyDelivery(api, ep.id);
    assert.ok(raced.next_attempt_at, 'scheduled on an endpoint that is off');
    const { unscheduled } = await purgeWebhookHistory(app.pool);
    assert.ok(unscheduled >= 1);
    const held = await onlyDelivery(api, ep.id);
    assert.deepEqual([held.status, held.attempts, held.next_attempt_at, held.error_message], ['pending', 0, null, 'El endpoint está desactivado; la entrega no se intentó']);
    // Switched on, it is sent.
    assert.equal((await api.put(`/webhook-endpoints/${ep.id}`, { data: { active: true } })).status, 200);
    await deliveryWhen(api, ep.id, (d) => d.status === 'succeeded', 'sent after the switch-on', 10_000);
    assert.equal(receiver.at('/pause-race').length, 1);
  });

  test('history older than 30 days is purged with its events; newer history stays', async () => {
    const { api } = await tenant();
    const ep = await endpoint(api, '/purge');
    await api.post('/customers', { data: { name: 'Viejo' } });
    await api.post('/customers', { data: { name: 'Nuevo' } });
    const rows = await waitFor(async () => {
      const list = (await api.get(`/webhook-endpoints/${ep.id}/deliveries`)).body.data;
      return list.length === 2 && list.every((d: any) => d.status === 'succeeded') && list;
    }, 10_000, 'two deliveries');
    const old = rows[1];
    await app.pool.query(`UPDATE webhook_deliveries SET created_at = now() - interval '31 days' WHERE id = $1`, [old.id]);
    await app.pool.query(`UPDATE events SET created_at = now() - interval '31 days' WHERE id = $1`, [old.event_id]);
    const purged = await purgeWebhookHistory(app.pool);
    assert.ok(purged.deliveries >= 1);
    const after = (await api.get(`/webhook-endpoints/${ep.id}/deliveries`)).body.data;
    assert.deepEqual(after.map((d: any) => d.id), [rows[0].id]);
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}/deliveries/${old.id}`)).status, 404);
    assert.equal((await app.pool.query('SELECT 1 FROM events WHERE id = $1', [old.event_id])).rowCount, 0);
  });

  test('a replay made today of an event older than 30 days is kept, with its event, until the replay itself is 30 days old', async () => {
    const { api, companyId } = await tenant();
    const ep = await endpoint(api, '/purge-replay');
    await api.post('/customers', { data: { name: 'Reenviado' } });
    const original = await waitFor(async () => {
      const list = (await api.get(`/webhook-endpoints/${ep.id}/deliveries`)).body.data;
      return list.length === 1 && list[0].status === 'succeeded' && list[0];
    }, 10_000, 'the delivery');
    await app.pool.query(`UPDATE webhook_deliveries SET created_at = now() - interval '31 days' WHERE id = $1`, [original.id]);
    await app.pool.query(`UPDATE events SET created_at = now() - interval '31 days' WHERE id = $1`, [original.event_id]);
    const replay = await transaction(app.pool, (db) => replayDelivery(db, companyId, original.id));
    await purgeWebhookHistory(app.pool);
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}/deliveries/${original.id}`)).status, 404, 'the old delivery goes');
    assert.equal((await api.get(`/webhook-endpoints/${ep.id}/deliveries/${replay!.id}`)).status, 200, 'the replay stays');
    assert.equal((await app.pool.query('SELECT 1 FROM events WHERE id = $1', [original.event_id])).rowCount, 1, 'and the event it sends');
    await app.pool.query(`UPDATE webhook_deliveries SET created_at = now() - interval '31 days' WHERE id = $1`, [replay!.id]);
    await purgeWebhookHistory(app.pool);
    assert.equal((await app.pool.query('SELECT 1 FROM events WHERE id = $1', [original.event_id])).rowCount, 0, 'gone once the replay is old too');
  });
});

describe('webhook delivery in production: the connect-time SSRF guard', () => {
  test('an endpoint whose host now resolves to a private address (DNS rebinding) is refused at connect time; nothing reaches it', async () => {
    const app = await startTestApp({ NODE_ENV: 'production' });
    const receiver = await startReceiver();
    const worker = await startWorker(app.config, app.pool, app.databaseUrl, { boss: { supervise: false, schedule: false } });
    try {
      const t = await seedTenant(app.pool);
      const api = client(app.baseUrl, t.key);
      const https = { 'x-forwarded-proto': 'https' };
      // Registration refuses the loopback URL outright...
      const refused = await api.post('/webhook-endpoints', { data: { url: receiver.url('/internal').replace('http:', 'https:'), enabled_events: ['*'] } }, https);
      assert.equal(refused.status, 422);
      // ...so simulate an address that changed after registration: the row is written as if DNS had said otherwise then.
      await app.pool.query(
        `INSERT INTO webhook_endpoints (id, company_id, url, enabled_events, secret) VALUES ('aaaaaaaaaaaaaaaaaaaaaaaa', $1, $2, '{*}', 'whsec_test')`,
        [t.companyId, receiver.url('/internal')],
      );
      assert.equal((await api.post('/customers', { data: { name: 'SSRF' } }, https)).status, 201);
      const d = await waitFor(async () => {
        const list = (await api.get('/webhook-endpoints/aaaaaaaaaaaaaaaaaaaaaaaa/deliveries', https)).body.data;
        return list[0]?.attempts === 1 && list[0];
      }, 10_000, 'the refused attempt');
      assert.equal(d.status, 'failed');
      assert.equal(d.response_status, null);
      assert.match(d.error_message, /rechazada/);
      assert.equal(receiver.received.length, 0, 'the internal receiver got nothing');
    } finally {
      await worker.stop();
      await receiver.close();
      await app.close();
    }
  });
});
