import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { API_RELEASED_AT, API_VERSION } from '../lib/version.ts';
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

  test('every response, errors included, carries the version headers and a request id', async () => {
    for (const path of ['/healthz', '/api/v1/customers', '/api/v1/nope']) {
      const res = await fetch(app.url + path);
      assert.equal(res.headers.get('x-service-api-version'), API_VERSION);
      assert.equal(res.headers.get('x-service-api-released-at'), API_RELEASED_AT);
      assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    }
  });
});
