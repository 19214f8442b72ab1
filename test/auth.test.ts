// Authentication rules of the contract (Authentication 1-8), happy path and
// hostile input: every malformed, unknown, tampered or revoked key gets the
// byte-identical 401, scopes are enforced per operation, the Origin allow-list
// and opt-in modules are checked, and production refuses plain HTTP.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { revokeKey } from '../api/admin/keys.ts';
import { updateCompany } from '../api/admin/companies.ts';
import type { AddressInfo } from 'node:net';
import { createApp } from '../api/app.ts';
import { defineRoute } from '../api/route.ts';
import { apiRoutes } from '../api/routes/index.ts';
import { client, request, requestRepeatingHeaders, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { waitFor } from './helpers/wait.ts';

describe('API keys', () => {
  let app: TestApp;
  let tenant: Tenant;
  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool);
  });
  after(() => app.close());

  test('a valid key reaches its company', async () => {
    const res = await client(app.baseUrl, tenant.key).get('/customers');
    assert.equal(res.status, 200);
  });

  test('missing, malformed, unknown, tampered and revoked keys all get the identical 401 invalid_key', async () => {
    const revoked = await seedTenant(app.pool);
    await revokeKey(app.pool, revoked.keyId);
    const lastChar = tenant.key.at(-1) === 'A' ? 'B' : 'A';
    const variants: Array<Record<string, string>> = [
      {},
      { authorization: '' },
      { authorization: 'Bearer' },
      { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` },
      { authorization: 'Bearer service_sk_short' },
      { authorization: `Bearer ${tenant.key.slice(0, -1)}${lastChar}` }, // one character changed
      { authorization: `Bearer ${tenant.key}x` }, // one character appended
      { authorization: `Bearer service_oat_${'a'.repeat(43)}` }, // an OAuth token is not a REST key
      { authorization: `Bearer ${'service_sk_'.padEnd(54, 'A')}` },
      { authorization: `Bearer ${revoked.key}` },
      { authorization: `Bearer ${tenant.key}' OR '1'='1` },
    ];
    const bodies = new Set<string>();
    for (const headers of variants) {
      const res = await request(app.baseUrl, 'GET', '/customers', { headers });
      assert.equal(res.status, 401, JSON.stringify(headers));
      // Counted against the client address, so a 401 carries the headers of every response.
      assert.equal(res.headers.get('ratelimit-limit'), '600');
      assert.match(res.headers.get('ratelimit-remaining') ?? '', /^\d+$/);
      assert.match(res.headers.get('ratelimit-reset') ?? '', /^\d+$/);
      // RFC 9110 §11.6.1: every 401 carries its challenge, and (contract) the same one whatever was wrong.
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="api"', JSON.stringify(headers));
      bodies.add(res.text);
    }
    assert.equal(bodies.size, 1, 'every invalid key must produce the same body');
    assert.deepEqual(JSON.parse([...bodies][0]), { error: 'invalid_key', message: 'La clave de API no es válida.' });
  });

  test('an Authorization header sent twice is 401 invalid_key, whichever of the two is the valid key', async () => {
    const other = `Bearer ${'service_sk_'.padEnd(54, 'A')}`;
    for (const pair of [[`Bearer ${tenant.key}`, other], [other, `Bearer ${tenant.key}`], [`Bearer ${tenant.key}`, `Bearer ${tenant.key}`]]) {
      const res = await requestRepeatingHeaders(`${app.baseUrl}/customers`, 'GET', { authorization: pair });
      assert.equal(res.status, 401, pair.join(' | '));
      assert.deepEqual(JSON.parse(res.text), { error: 'invalid_key', message: 'La clave de API no es válida.' });
    }
    // Sent once, the same key is taken.
    assert.equal((await requestRepeatingHeaders(`${app.baseUrl}/customers`, 'GET', { authorization: `Bearer ${tenant.key}` })).status, 200);
  });

  test('revoking a key takes effect on the next request even after it was cached', async () => {
    const t = await seedTenant(app.pool);
    assert.equal((await client(app.baseUrl, t.key).get('/customers')).status, 200);
    await revokeKey(app.pool, t.keyId);
    // The NOTIFY from the revoke transaction reaches the cache asynchronously: polled, with a bound.
    await waitFor(async () => (await client(app.baseUrl, t.key).get('/customers')).status === 401, 10_000, 'the revoked key refused');
  });

  test('a key without the operation scope gets 403 insufficient_scope naming it', async () => {
    const t = await seedTenant(app.pool, { scopes: ['read-customers'] });
    const api = client(app.baseUrl, t.key);
    assert.equal((await api.get('/customers')).status, 200);
    const create = await api.post('/customers', { data: { name: 'X' } });
    assert.equal(create.status, 403);
    assert.deepEqual(create.body, { error: 'insufficient_scope', message: create.body.message, required: 'create-customers' });
    const leads = await api.get('/leads');
    assert.equal(leads.status, 403);
    assert.equal(leads.body.required, 'read-leads');
    const del = await api.delete('/customers/0123456789abcdef01234567');
    assert.equal(del.body.required, 'delete-customers');
  });

  test('the Origin/Referer allow-list: exact host, wildcard subdomain, mismatch and absence', async () => {
    const t = await seedTenant(app.pool, { origins: ['shop.example.com', '*.tienda.mx'] });
    const get = (headers: Record<string, string>) => client(app.baseUrl, t.key).get('/customers', headers);
    assert.equal((await get({ origin: 'https://shop.example.com' })).status, 200);
    assert.equal((await get({ referer: 'https://a.tienda.mx/checkout?x=1' })).status, 200);
    const refused: Array<Record<string, string>> = [
      { origin: 'https://evil.example.com' },
      { origin: 'https://shop.example.com.evil.io' },
      { origin: 'https://tienda.mx' }, // the wildcard covers subdomains, not the apex
      { origin: 'https://xtienda.mx' },
      { origin: 'null' },
      { referer: 'not a url' },
      {},
    ];
    for (const headers of refused) {
      const res = await get(headers);
      assert.equal(res.status, 403, JSON.stringify(headers));
      assert.equal(res.body.error, 'origin_not_allowed');
      assert.equal(res.headers.get('ratelimit-limit'), '600', 'a refused origin is counted against the key');
    }
  });

  test('CORS: a browser page may call the API with a key (preflight, readable answers and errors); the allow-list still refuses other origins', async () => {
    const t = await seedTenant(app.pool, { origins: ['shop.example.com'] });
    // The preflight carries no key: answered before authentication, whatever the path's route.
    const preflight = await fetch(`${app.baseUrl}/customers`, {
      method: 'OPTIONS',
      headers: { origin: 'https://shop.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' },
    });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
    assert.match(preflight.headers.get('access-control-allow-methods')!, /POST/);
    for (const h of ['Authorization', 'Content-Type', 'Idempotency-Key']) assert.match(preflight.headers.get('access-control-allow-headers')!, new RegExp(h));
    assert.equal(preflight.headers.get('access-control-allow-credentials'), null, 'bearer keys, never cookies');
    // The request itself: readable, with the headers a client reads exposed.
    const ok = await client(app.baseUrl, t.key).post('/customers', { data: { name: 'Desde el navegador' } }, { origin: 'https://shop.example.com', 'idempotency-key': 'cors-1' });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.headers.get('access-control-allow-origin'), '*');
    for (const h of ['X-Request-Id', 'RateLimit-Remaining', 'Idempotent-Replayed', 'Retry-After']) assert.match(ok.headers.get('access-control-expose-headers')!, new RegExp(h));
    // Another origin gets its 403 in a body it can read; the key's allow-list decides, not CORS.
    const refused = await client(app.baseUrl, t.key).get('/customers', { origin: 'https://evil.example.com' });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error, 'origin_not_allowed');
    assert.equal(refused.headers.get('access-control-allow-origin'), '*');
    // Not the API: no CORS headers (MCP and OAuth answer their own).
    assert.equal((await fetch(`${app.url}/healthz`, { headers: { origin: 'https://shop.example.com' } })).headers.get('access-control-allow-origin'), null);
    // Without Origin (a server), nothing changes: OPTIONS still lists the methods.
    const plain = await fetch(`${app.baseUrl}/customers`, { method: 'OPTIONS' });
    assert.equal(plain.headers.get('access-control-allow-origin'), null);
  });

  test('automations are core: a company with no module enabled reaches /automations with the scope', async () => {
    const t = await seedTenant(app.pool, { modules: [] });
    const res = await client(app.baseUrl, t.key).get('/automations');
    assert.equal(res.status, 200, res.text);
    const scoped = await seedTenant(app.pool, { modules: [], scopes: ['read-customers'] });
    const refused = await client(app.baseUrl, scoped.key).get('/automations');
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error, 'insufficient_scope');
    assert.equal(refused.body.required, 'read-automations');
  });

  test('an opt-in module (invoicing) must be enabled for the company: 403 module_not_enabled until an operator enables it', async () => {
    // A route of the opt-in module, mounted through the real route table and middleware.
    const probe = defineRoute({
      method: 'GET',
      path: '/invoicing-probe',
      scope: 'read-customers',
      module: 'invoicing',
      tag: 'Probe',
      summary: 'probe',
      status: 200,
      handler: async () => ({ data: { ok: true } }),
    });
    const server = createApp(app.deps, [...apiRoutes, probe]).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`;
    try {
      const t = await seedTenant(app.pool, { modules: [] });
      const res = await client(base, t.key).get('/invoicing-probe');
      assert.equal(res.status, 403);
      assert.equal(res.body.error, 'module_not_enabled');
      assert.deepEqual(Object.keys(res.body).sort(), ['error', 'message'], 'exactly {error, message}');
      await updateCompany(app.pool, t.companyId, { modules: ['invoicing'] });
      // The change reaches the key cache through NOTIFY.
      await waitFor(async () => (await client(base, t.key).get('/invoicing-probe')).status === 200, 10_000, 'the module to be enabled');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('production mode', () => {
  let app: TestApp;
  let tenant: Tenant;
  before(async () => {
    app = await startTestApp({ NODE_ENV: 'production' });
    tenant = await seedTenant(app.pool);
  });
  after(() => app.close());

  test('plain HTTP gets 426 https_required, before authentication', async () => {
    for (const key of [tenant.key, undefined]) {
      const res = await client(app.baseUrl, key).get('/customers');
      assert.equal(res.status, 426);
      assert.equal(res.body.error, 'https_required');
      assert.equal(res.headers.get('upgrade'), 'TLS/1.2, HTTP/1.1', 'RFC 9110: a 426 names the protocol to use');
      assert.match(res.headers.get('connection') ?? '', /upgrade/i, 'and lists Upgrade in Connection');
      assert.equal(res.headers.get('strict-transport-security'), null, 'HSTS only over HTTPS');
    }
  });

  test('a CORS preflight over plain HTTP is 426 too; over HTTPS it is answered', async () => {
    const preflight = (headers: Record<string, string> = {}) =>
      fetch(`${app.baseUrl}/customers`, { method: 'OPTIONS', headers: { origin: 'https://shop.example', 'access-control-request-method': 'GET', ...headers } });
    const plain = await preflight();
    assert.equal(plain.status, 426);
    assert.equal(((await plain.json()) as { error: string }).error, 'https_required');
    const secure = await preflight({ 'x-forwarded-proto': 'https' });
    assert.equal(secure.status, 204);
    assert.equal(secure.headers.get('access-control-allow-origin'), '*');
  });

  test('behind the router, X-Forwarded-Proto: https is accepted, and answers carry Strict-Transport-Security', async () => {
    const res = await client(app.baseUrl, tenant.key).get('/customers', { 'x-forwarded-proto': 'https' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('strict-transport-security'), 'max-age=31536000');
    const refused = await client(app.baseUrl, 'service_sk_nope').get('/customers', { 'x-forwarded-proto': 'https' });
    assert.deepEqual([refused.status, refused.headers.get('strict-transport-security')], [401, 'max-age=31536000'], 'errors too');
  });

  test('X-Forwarded-Proto is read as X-Forwarded-For is: the trusted router\'s entry, from the right, not what the client put first', async () => {
    // A client on plain HTTP sends "https"; a router that appends adds its "http".
    const forged = await client(app.baseUrl, tenant.key).get('/customers', { 'x-forwarded-proto': 'https, http' });
    assert.deepEqual([forged.status, forged.body.error], [426, 'https_required']);
    const appended = await client(app.baseUrl, tenant.key).get('/customers', { 'x-forwarded-proto': 'http, https' });
    assert.equal(appended.status, 200);
  });

  test('the sign-in page behind the router: its Secure cookies follow the trusted X-Forwarded-Proto entry, not the client\'s first one', async () => {
    const https = { 'x-forwarded-proto': 'https', 'content-type': 'application/json' };
    const registered = await fetch(`${app.url}/oauth/register`, { method: 'POST', headers: https, body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:43210/callback'], client_name: 'Detrás del router' }) });
    assert.equal(registered.status, 201, await registered.clone().text());
    const { client_id } = (await registered.json()) as { client_id: string };
    const query = new URLSearchParams({
      response_type: 'code', client_id, redirect_uri: 'http://127.0.0.1:43210/callback', state: 'x',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM', code_challenge_method: 'S256',
    });
    // A client's own "http" first, the router's "https" appended: the request came over HTTPS.
    for (const proto of ['https', 'http, https']) {
      const page = await fetch(`${app.url}/authorize?${query}`, { headers: { 'x-forwarded-proto': proto } });
      assert.equal(page.status, 200, `${proto}: ${await page.text()}`);
      const cookie = page.headers.getSetCookie().find((c) => c.startsWith('__Host-'));
      assert.ok(cookie && /;\s*secure/i.test(cookie), `${proto}: ${page.headers.getSetCookie().join(' | ')}`);
    }
  });

  test('with no trusted proxy (TRUST_PROXY_HOPS=0) the header is the client\'s own: plain HTTP is refused whatever it says', async () => {
    const direct = await startTestApp({ NODE_ENV: 'production', TRUST_PROXY_HOPS: '0' });
    try {
      const t = await seedTenant(direct.pool);
      const res = await client(direct.baseUrl, t.key).get('/customers', { 'x-forwarded-proto': 'https' });
      assert.deepEqual([res.status, res.body.error], [426, 'https_required']);
    } finally {
      await direct.close();
    }
  });

  test('health checks stay reachable for the platform over plain HTTP: liveness and readiness', async () => {
    assert.equal((await fetch(`${app.url}/healthz`)).status, 200);
    assert.equal((await fetch(`${app.url}/readyz`)).status, 200);
  });
});
