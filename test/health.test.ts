import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { API_RELEASED_AT, API_VERSION } from '../lib/version.ts';
import pg from 'pg';
import { isDatabaseUnavailable, toApiError } from '../api/middleware/request.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';

describe('health and version headers', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  test('GET /healthz answers 200 when the database answers', async () => {
    const res = await fetch(`${app.url}/healthz`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'ok' });
  });

  test('GET /readyz: 200 ready; 503 with Retry-After while the process drains, healthz still 200', async () => {
    const ok = await fetch(`${app.url}/readyz`);
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), { status: 'ready' });
    app.deps.lifecycle.draining = true;
    try {
      const draining = await fetch(`${app.url}/readyz`);
      assert.equal(draining.status, 503);
      assert.equal(((await draining.json()) as any).error, 'service_unavailable');
      assert.equal(draining.headers.get('retry-after'), '5');
      assert.equal((await fetch(`${app.url}/healthz`)).status, 200);
    } finally {
      app.deps.lifecycle.draining = false;
    }
  });

  test('PostgreSQL unreachable is 503 service_unavailable (retry shortly), not a 500', async () => {
    const dead = new pg.Pool({ connectionString: 'postgres://x:y@127.0.0.1:9/none', connectionTimeoutMillis: 1000 });
    const error = await dead.query('SELECT 1').catch((e) => e);
    await dead.end();
    assert.equal(isDatabaseUnavailable(error), true);
    assert.equal(toApiError(error)?.status, 503);
    assert.equal(toApiError(error)?.code, 'service_unavailable');
    assert.equal(toApiError(new Error('a bug')), null);
  });

  test('every response, errors included, carries the version headers and a request id', async () => {
    for (const path of ['/healthz', '/api/v1/customers', '/api/v1/nope']) {
      const res = await fetch(app.url + path);
      assert.equal(res.headers.get('x-service-api-version'), API_VERSION);
      assert.equal(res.headers.get('x-service-api-released-at'), API_RELEASED_AT);
      assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    }
  });

  test('what the HTTP server refuses before any middleware (headers over 16 KB, not HTTP) answers in the contract\'s shape, with the version headers', async () => {
    const huge = await fetch(`${app.url}/api/v1/customers`, { headers: { authorization: `Bearer service_sk_${'x'.repeat(20_000)}` } });
    assert.equal(huge.status, 431);
    assert.equal(huge.headers.get('x-service-api-version'), API_VERSION);
    assert.equal(huge.headers.get('x-service-api-released-at'), API_RELEASED_AT);
    assert.deepEqual(await huge.json(), { error: 'headers_too_large', message: 'Las cabeceras de la petición pasan de 16 KB.' });
    // A request line that is not HTTP, written on a raw socket.
    const { port } = new URL(app.url);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => socket.write('GET /\u0000 nonsense\r\n\r\n'));
      let text = '';
      socket.on('data', (d) => (text += d));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    assert.match(raw, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.match(raw, new RegExp(`X-Service-API-Version: ${API_VERSION.replace(/\./g, '\\.')}\r\n`));
    assert.match(raw, /\r\n\r\n\{"error":"invalid_request","message":"La petición no es HTTP válido\."\}$/);
  });
});
