import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { API_RELEASED_AT, API_VERSION } from '../lib/version.ts';
import pg from 'pg';
import { isDatabaseUnavailable, toApiError } from '../api/middleware/request.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { freezableRelay, type FreezableRelay } from './helpers/frozen-database.ts';
import { assertOneLineError, wsctl } from './helpers/cli.ts';
import { waitFor } from './helpers/wait.ts';

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

  test('every response, errors included, carries the version headers, a request id, Cache-Control: no-store and nosniff', async () => {
    for (const path of ['/healthz', '/api/v1/customers', '/api/v1/nope']) {
      const res = await fetch(app.url + path);
      assert.equal(res.headers.get('x-service-api-version'), API_VERSION);
      assert.equal(res.headers.get('x-service-api-released-at'), API_RELEASED_AT);
      assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
      assert.equal(res.headers.get('cache-control'), 'no-store', path);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', path);
    }
    // A company's data, served from the response cache too; what is meant to be kept says so.
    const tenant = await seedTenant(app.pool, { responseCache: true });
    for (const cache of ['MISS', 'HIT']) {
      const page = await fetch(`${app.url}/api/v1/customers`, { headers: { authorization: `Bearer ${tenant.key}` } });
      assert.deepEqual([page.status, page.headers.get('x-cache'), page.headers.get('cache-control')], [200, cache, 'no-store']);
    }
    const document = await fetch(`${app.url}/api/v1/openapi.json`);
    assert.equal(document.headers.get('cache-control'), 'no-cache');
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

  /** Writes `text` on a new connection and resolves with everything the server sent until it closed. */
  const rawExchange = (text: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(new URL(app.url).port), '127.0.0.1', () => socket.write(text));
      let answer = '';
      socket.on('data', (d) => (answer += d));
      socket.on('close', () => resolve(answer));
      socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? resolve(answer) : reject(error)));
    });
  const versionHeader = new RegExp(`\r\nX-Service-API-Version: ${API_VERSION.replace(/\./g, '\\.')}\r\n`, 'i');

  test('Node\'s own refusals are ours too: HTTP/1.1 without Host is 400 invalid_request, an Expect other than 100-continue 417, both in the contract\'s shape', async () => {
    // The client asks to keep the connection; the server closes it anyway (docs/api.md), then a second request on it is never read.
    const noHost = await rawExchange('GET /api/v1/customers HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.match(noHost, /^HTTP\/1\.1 400 /);
    assert.match(noHost, /\r\nConnection: close\r\n/i);
    assert.equal(noHost.match(/HTTP\/1\.1 /g)?.length, 1, noHost);
    assert.match(noHost, versionHeader);
    assert.match(noHost, /\r\n\r\n\{"error":"invalid_request","message":"Falta la cabecera Host, obligatoria en HTTP\/1\.1\."\}$/);
    // HTTP/1.0 has no Host requirement: served (here, the key is missing).
    assert.match(await rawExchange('GET /api/v1/customers HTTP/1.0\r\n\r\n'), /^HTTP\/1\.1 401 /);
    const expect = await rawExchange('POST /api/v1/customers HTTP/1.1\r\nHost: x\r\nExpect: something-else\r\nContent-Length: 2\r\n\r\n{}');
    assert.match(expect, /^HTTP\/1\.1 417 /);
    assert.match(expect, versionHeader);
    assert.match(expect, /\r\n\r\n\{"error":"expectation_failed","message":"La cabecera Expect solo admite 100-continue\."\}$/);
  });

  test('Host sent twice, or no host[:port] (RFC 9112 §3.2), is 400 invalid_request and the connection closed; names, IPs, ports and IPv6 pass', async () => {
    for (const host of ['Host: a\r\nHost: b', 'Host: a b', 'Host: evil.example/path', 'Host: x@y', 'Host: localhost:99999', 'Host: ']) {
      const answer = await rawExchange(`GET /healthz HTTP/1.1\r\n${host}\r\n\r\n`);
      assert.match(answer, /^HTTP\/1\.1 400 /, JSON.stringify(host));
      assert.match(answer, /\r\nConnection: close\r\n/i);
      assert.match(answer, /"error":"invalid_request"/);
    }
    for (const host of ['localhost', 'api.example.com:443', '127.0.0.1:3000', '[::1]:3000', 'web_1:8080', 'api.example.com.']) {
      assert.match(await rawExchange(`GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`), /^HTTP\/1\.1 200 /, host);
    }
  });

  test('CONNECT (no tunnels here) and a transfer coding other than chunked are 400 invalid_request in the contract\'s shape, never a silent close or a body read as plain', async () => {
    for (const target of ['localhost:443', '/api/v1/customers']) {
      const answer = await rawExchange(`CONNECT ${target} HTTP/1.1\r\nHost: localhost\r\n\r\n`);
      assert.match(answer, /^HTTP\/1\.1 400 /, `${target}: ${JSON.stringify(answer)}`);
      assert.match(answer, versionHeader);
      assert.match(answer, /"error":"invalid_request"/);
    }
    const tenant = await seedTenant(app.pool);
    const body = '{"data":{"name":"Codificado"}}';
    for (const coding of ['gzip, chunked', 'foo, chunked']) {
      const answer = await rawExchange(
        `POST /api/v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tenant.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: ${coding}\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
      );
      assert.match(answer, /^HTTP\/1\.1 400 /, `${coding}: ${answer}`);
      assert.match(answer, /\r\nConnection: close\r\n/i, 'the body was not read: the connection is closed');
      assert.match(answer, /"error":"invalid_request"/);
    }
    const { rows } = await app.pool.query(`SELECT count(*)::int AS n FROM customers WHERE company_id = $1`, [tenant.companyId]);
    assert.equal(rows[0].n, 0, 'nothing stored from a body in a coding not read');
  });

  test('OPTIONS: Allow names OPTIONS too, and an OPTIONS with Origin that is no preflight is readable cross-origin', async () => {
    const res = await fetch(`${app.url}/api/v1/customers`, { method: 'OPTIONS', headers: { origin: 'https://app.example' } });
    assert.equal(res.status, 200);
    assert.deepEqual(res.headers.get('allow')?.split(', ').sort(), ['GET', 'HEAD', 'OPTIONS', 'POST']);
    assert.equal(res.headers.get('access-control-allow-origin'), '*');
    assert.match(res.headers.get('access-control-expose-headers') ?? '', /X-Request-Id/);
  });

  test('a body whose framing breaks mid-request (a bad chunk size) is answered 400 invalid_request, never a 500', async () => {
    const tenant = await seedTenant(app.pool);
    for (let i = 0; i < 10; i++) {
      const answer = await rawExchange(
        `POST /api/v1/customers HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tenant.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"dat\r\nzz\r\n`,
      );
      assert.match(answer, /^HTTP\/1\.1 400 /, answer);
      assert.match(answer, /"error":"invalid_request"/);
    }
    // And the body parser meeting a stream already cut is the same refusal, not an internal error.
    assert.equal(toApiError(Object.assign(new Error('stream is not readable'), { status: 500, type: 'stream.not.readable' }))?.code, 'invalid_request');
  });
});

describe('a database that hangs rather than refuses (a relay in front of it stops moving bytes)', () => {
  const TOKEN = 'metrics-token-0123456789';
  let app: TestApp;
  let relay: FreezableRelay;
  before(async () => {
    app = await startTestApp({ METRICS_TOKEN: TOKEN }, {
      connectVia: async (url) => {
        relay = await freezableRelay(url);
        return relay.url;
      },
    });
  });
  after(async () => {
    relay.thaw();
    relay.up();
    await app.close();
    await relay.close();
  });

  test('/healthz, /readyz and /metrics answer: 503 for the probes, and the process\'s own series with database_up 0; all back once it answers', async () => {
    // An idle connection in the pool, as on a live process: the probe gets it and would wait on it.
    assert.equal((await fetch(`${app.url}/healthz`)).status, 200);
    const metrics = () => fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` }, signal: AbortSignal.timeout(30_000) });
    assert.match(await (await metrics()).text(), /^database_up 1$/m);
    relay.freeze();
    try {
      // Bounded by the client only so that a hang fails the test instead of stalling it.
      for (const path of ['/healthz', '/readyz']) {
        const res = await fetch(`${app.url}${path}`, { signal: AbortSignal.timeout(30_000) });
        assert.equal(res.status, 503, path);
        assert.equal(((await res.json()) as { error: string }).error, 'service_unavailable');
      }
      const scrape = await metrics();
      assert.equal(scrape.status, 200);
      const text = await scrape.text();
      assert.match(text, /^database_up 0$/m);
      assert.match(text, /^http_requests_total\{route="\/healthz",method="GET",status="503"\} [1-9]/m, 'the outage shows in the series kept in the process');
      assert.doesNotMatch(text, /^queue_jobs\{/m, 'a series read from the database is left out, not reported as 0');
    } finally {
      relay.thaw();
    }
    await waitFor(async () => (await fetch(`${app.url}/healthz`)).status === 200, 20_000, 'healthy again');
    assert.match(await (await metrics()).text(), /^database_up 1$/m);
  });

  test('a COMMIT whose connection drops before it is confirmed is 503 saying the write may have been saved (it was); with an Idempotency-Key the retry replays it, one record', async () => {
    const tenant = await seedTenant(app.pool);
    // This company's commits take a second (a deferred trigger runs at COMMIT): the connection is cut meanwhile.
    await app.pool.query(`CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1); RETURN NULL; END $$`);
    await app.pool.query(
      `CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON customers DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.company_id = '${tenant.companyId}') EXECUTE FUNCTION slow_commit()`,
    );
    // Straight to PostgreSQL, not through the relay: it watches the commits and counts what they left.
    const direct = new pg.Client({ connectionString: app.databaseUrl });
    await direct.connect();
    const stored = async (name: string) =>
      (await direct.query(`SELECT count(*)::int AS n FROM customers WHERE company_id = $1 AND name = $2`, [tenant.companyId, name])).rows[0].n as number;
    const postCutWhileCommitting = async (name: string, headers: Record<string, string> = {}) => {
      const answer = fetch(`${app.baseUrl}/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ data: { name } }),
        signal: AbortSignal.timeout(30_000),
      });
      await waitFor(
        async () => (await direct.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query = 'COMMIT' AND wait_event = 'PgSleep'`)).rowCount === 1,
        10_000,
        'the COMMIT running',
      );
      relay.down();
      try {
        return await answer;
      } finally {
        relay.up();
      }
    };
    try {
      const plain = await postCutWhileCommitting('Sin clave');
      assert.equal(plain.status, 503);
      const body = (await plain.json()) as { error: string; message: string };
      assert.equal(body.error, 'service_unavailable');
      assert.match(body.message, /pudo haberse guardado/, 'not the "nothing was written" of other outages');
      await waitFor(async () => (await stored('Sin clave')) === 1, 10_000, 'the write the 503 could not confirm, committed');

      const keyed = await postCutWhileCommitting('Con clave', { 'Idempotency-Key': 'confirmacion-perdida' });
      assert.equal(keyed.status, 503);
      await waitFor(async () => (await stored('Con clave')) === 1, 10_000, 'the keyed write, committed');
      const retry = await fetch(`${app.baseUrl}/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json', 'Idempotency-Key': 'confirmacion-perdida' },
        body: JSON.stringify({ data: { name: 'Con clave' } }),
      });
      assert.equal(retry.status, 201);
      assert.equal(retry.headers.get('idempotent-replayed'), 'true');
      assert.equal(await stored('Con clave'), 1, 'the retry replayed the committed write, not a second one');
    } finally {
      await direct.query('DROP TRIGGER slow_commit ON customers');
      await direct.query('DROP FUNCTION slow_commit()');
      await direct.end();
    }
  });

  test('a statement PostgreSQL cancels (57014, as its statement_timeout does) is 503 service_unavailable, nothing written', async () => {
    const tenant = await seedTenant(app.pool);
    await app.pool.query(`CREATE FUNCTION cancelled_insert() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'canceling statement due to statement timeout' USING ERRCODE = '57014'; END $$`);
    await app.pool.query(`CREATE TRIGGER cancelled_insert BEFORE INSERT ON customers FOR EACH ROW WHEN (NEW.company_id = '${tenant.companyId}') EXECUTE FUNCTION cancelled_insert()`);
    try {
      const res = await client(app.baseUrl, tenant.key).post('/customers', { data: { name: 'Cancelada' } });
      assert.equal(res.status, 503, res.text);
      assert.equal(res.body.error, 'service_unavailable');
      assert.ok(res.headers.get('retry-after'));
      const { rows } = await app.pool.query(`SELECT count(*)::int AS n FROM customers WHERE company_id = $1`, [tenant.companyId]);
      assert.equal(rows[0].n, 0);
    } finally {
      await app.pool.query('DROP TRIGGER cancelled_insert ON customers');
      await app.pool.query('DROP FUNCTION cancelled_insert()');
    }
  });

  test('wsctl while PostgreSQL is down: an outage to retry (503 SERVICE_UNAVAILABLE), not an internal error', async () => {
    relay.down();
    try {
      const run = await wsctl(app, ['company', 'list']);
      assertOneLineError(run, /is unavailable: the database is unavailable \(request [0-9a-f-]{36}\); retry in a few seconds/);
    } finally {
      relay.up();
    }
    await waitFor(async () => (await wsctl(app, ['company', 'list'])).code === 0, 20_000, 'wsctl works again');
  });
});
