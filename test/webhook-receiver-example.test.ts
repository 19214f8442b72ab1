// The README's reference receiver (examples/webhook-receiver.ts) against the
// contract's Events → Signature rules, with bodies signed here by node:crypto
// (never by the project's signer), then end to end against the real service:
// REST write → outbox → worker → signed POST → the example → delivery recorded.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { waitFor } from './helpers/wait.ts';
import { after, before, describe, mock, test } from 'node:test';
import { createReceiver, type WebhookEvent } from '../examples/webhook-receiver.ts';
import { startWorker, type Worker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';

const SECRET = 'whsec_5f2b8c0e4a7d41c39e6b0f1a2d3c4b5a';
/** The receiver's clock in these tests: every `t` is relative to it (option `now`). */
const NOW_S = 1_900_000_000;

function sign(body: string | Buffer, secret = SECRET, t = NOW_S): string {
  const digest = createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
  return `t=${t},v1=${digest}`;
}

function envelope(id: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ id, evento: 'customer.created', event: 'customer.created', created_at: '2030-03-17T17:46:40.000Z', api_version: '2025-01-01', data: { object: 'customer', id: 'cus_1', metadata: {} }, ...extra });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

async function post(url: string, body: string | Buffer, headers: Record<string, string> = {}) {
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-service-attempt': '1', ...headers } });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) };
}

describe('example webhook receiver: signature, tolerance, de-duplication', () => {
  let dir: string;
  let seenFile: string;
  let server: Server;
  let url: string;
  const events: WebhookEvent[] = [];
  const logged: string[] = [];

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'webhook-receiver-'));
    seenFile = path.join(dir, 'nested', 'seen.log');
    mock.method(console, 'log', (line: string) => logged.push(line));
    server = createReceiver({ secret: SECRET, seenFile, onEvent: (e) => void events.push(e), now: () => NOW_S * 1000 });
    url = await listen(server);
  });
  after(async () => {
    mock.restoreAll();
    await close(server);
    await rm(dir, { recursive: true, force: true });
  });

  test('a valid signature over the raw bytes is processed once: 200, onEvent called, one JSON log line, id recorded', async () => {
    const body = envelope('evt_0001');
    const res = await post(url, body, { 'x-service-signature': sign(body), 'x-service-event-id': 'evt_0001' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { received: true });
    assert.deepEqual(events.map((e) => e.id), ['evt_0001']);
    assert.deepEqual(JSON.parse(logged.at(-1)!), { id: 'evt_0001', event: 'customer.created', object: 'customer', object_id: 'cus_1' });
    assert.equal(await readFile(seenFile, 'utf8'), 'evt_0001\n');
  });

  test('bytes are verified as sent, not re-serialized: odd spacing and escapes still verify', async () => {
    const body = `{ "id":"evt_0002",  "event":"customer.created", "data":{"object":"customer","id":"cus_\\u0032","metadata":{}} }`;
    const res = await post(url, body, { 'x-service-signature': sign(body) });
    assert.equal(res.status, 200);
    assert.equal(events.at(-1)!.data.id, 'cus_2');
  });

  test('duplicates are ignored: the same event id on a later attempt (new t, attempt 2) answers 200 duplicate without processing', async () => {
    const body = envelope('evt_0101');
    const first = await post(url, body, { 'x-service-signature': sign(body), 'x-service-attempt': '1' });
    assert.deepEqual([first.status, first.body], [200, { received: true }]);
    const res = await post(url, body, { 'x-service-signature': sign(body, SECRET, NOW_S + 60), 'x-service-attempt': '2' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.body, { received: true, duplicate: true });
    assert.equal(events.filter((e) => e.id === 'evt_0101').length, 1);
  });

  test('seen ids are durable: a restarted receiver on the same file still treats the id as a duplicate', async () => {
    const body = envelope('evt_0102');
    assert.deepEqual((await post(url, body, { 'x-service-signature': sign(body) })).body, { received: true }, 'seen once by the first receiver');
    const calls: WebhookEvent[] = [];
    const restarted = createReceiver({ secret: SECRET, seenFile, onEvent: (e) => void calls.push(e), now: () => NOW_S * 1000 });
    const restartedUrl = await listen(restarted);
    try {
      const res = await post(restartedUrl, body, { 'x-service-signature': sign(body, SECRET, NOW_S + 120), 'x-service-attempt': '3' });
      assert.deepEqual([res.status, res.body], [200, { received: true, duplicate: true }]);
      assert.equal(calls.length, 0);
    } finally {
      await close(restarted);
    }
  });

  test('a body changed by one byte after signing is rejected with 400 and not processed', async () => {
    const body = envelope('evt_0003');
    const tampered = Buffer.from(body);
    tampered[tampered.indexOf('cus_1') + 4] = '2'.charCodeAt(0);
    const before = events.length;
    const res = await post(url, tampered, { 'x-service-signature': sign(body) });
    assert.equal(res.status, 400);
    assert.equal(events.length, before);
  });

  test('the key is the whole secret: a signature made without the whsec_ prefix is rejected with 400', async () => {
    const body = envelope('evt_0004');
    const res = await post(url, body, { 'x-service-signature': sign(body, SECRET.slice('whsec_'.length)) });
    assert.equal(res.status, 400);
  });

  test('t more than 300 s from the receiver clock is rejected either way (301 s past, 301 s future); 300 s is accepted', async () => {
    for (const [id, skew, status] of [['evt_0005', -301, 400], ['evt_0006', 301, 400], ['evt_0007', -300, 200], ['evt_0008', 300, 200]] as const) {
      const body = envelope(id);
      const res = await post(url, body, { 'x-service-signature': sign(body, SECRET, NOW_S + skew) });
      assert.equal(res.status, status, `skew ${skew} s`);
    }
    assert.ok(!events.some((e) => e.id === 'evt_0005' || e.id === 'evt_0006'));
  });

  test('a missing or malformed signature header is rejected with 400', async () => {
    const body = envelope('evt_0009');
    const good = sign(body);
    const digest = good.split('v1=')[1];
    for (const header of [undefined, '', 'garbage', `v1=${digest}`, `t=${NOW_S}`, `t=abc,v1=${digest}`, `t=${NOW_S},t=${NOW_S},v1=${digest}`, `t=${NOW_S},v1=${digest.slice(2)}`]) {
      const res = await post(url, body, header === undefined ? {} : { 'x-service-signature': header });
      assert.equal(res.status, 400, `header ${JSON.stringify(header)}`);
    }
    assert.ok(!events.some((e) => e.id === 'evt_0009'));
  });

  test('several v1 values and unknown schemes are tolerated: the request passes when any v1 matches (here the second)', async () => {
    const body = envelope('evt_0010');
    const right = sign(body).split('v1=')[1];
    const wrong = sign(body, 'whsec_old').split('v1=')[1];
    const res = await post(url, body, { 'x-service-signature': `t=${NOW_S},v1=${wrong},v0=deadbeef,v1=${right}` });
    assert.equal(res.status, 200);
    assert.equal(events.at(-1)!.id, 'evt_0010');
  });
});

describe('example webhook receiver end to end against the service', () => {
  let app: TestApp;
  let worker: Worker;
  let server: Server | undefined;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'webhook-receiver-e2e-'));
    app = await startTestApp();
    worker = await startWorker(app.config, app.pool, app.databaseUrl, { boss: { supervise: false, schedule: false } });
  });
  after(async () => {
    mock.restoreAll();
    await worker.stop();
    await app.close();
    if (server) await close(server);
    await rm(dir, { recursive: true, force: true });
  });

  test('customer.created is delivered, verified and processed by the example, and the delivery is recorded succeeded with 200', async () => {
    const tenant = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, tenant.key);
    mock.method(console, 'log', () => {});

    // The endpoint needs the receiver's URL and the receiver needs the endpoint's secret:
    // reserve the port first, then attach the real receiver to it.
    const events: WebhookEvent[] = [];
    const probe = http.createServer();
    const probeUrl = await listen(probe);
    await close(probe);
    const endpoint = await api.post('/webhook-endpoints', { data: { url: probeUrl, enabled_events: ['customer.created'] } });
    assert.equal(endpoint.status, 201, endpoint.text);
    const { id: endpointId, secret } = endpoint.body.data;
    assert.match(secret, /^whsec_/);
    server = createReceiver({ secret, seenFile: path.join(dir, 'seen.log'), onEvent: (e) => void events.push(e) });
    await new Promise<void>((resolve) => server!.listen(Number(new URL(probeUrl).port), '127.0.0.1', resolve));

    const customer = await api.post('/customers', { data: { name: 'Ana' } });
    assert.equal(customer.status, 201, customer.text);
    const got = await pollFor(() => events.find((e) => e.event === 'customer.created' && e.data.id === customer.body.data.id), 'the example to process customer.created');
    assert.match(got.id, /^evt_/);
    assert.equal(got.data.object, 'customer');
    assert.equal(events.length, 1);

    const delivery = await pollFor(async () => {
      const res = await api.get(`/webhook-endpoints/${endpointId}/deliveries`);
      assert.equal(res.status, 200, res.text);
      return res.body.data.find((d: { status: string }) => d.status === 'succeeded');
    }, 'the delivery to be recorded');
    assert.equal(delivery.response_status, 200);
    assert.equal(delivery.event_id, got.id);
    assert.equal(delivery.attempts, 1);
  });
});


/** The helper's waitFor with this file's argument order (what, then bound). */
function pollFor<T>(fn: () => T | undefined | Promise<T | undefined>, what: string, ms = 10_000): Promise<T> {
  return waitFor(fn, { timeoutMs: ms, what });
}
