// Per-address and per-person limits that a client must not be able to dodge:
// the address is the one the platform router appended to X-Forwarded-For
// (TRUST_PROXY_HOPS, default 1), never the entries the client wrote; sign-in
// is limited per email and address, per address and per email; several
// sessions of one person share one rate-limit bucket.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setPassword } from '../api/admin/users.ts';
import { SIGN_IN_LIMITS } from '../api/auth/sessions.ts';
import { request, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';

const PASSWORD = 'contraseña-correcta';

/** A request as the platform router forwards it: whatever the client sent, then the client's real address. */
const from = (address: string, forged = '') => ({ 'x-forwarded-for': forged ? `${forged}, ${address}` : address });

describe('limits keyed by client address and person', () => {
  let app: TestApp;
  let tenant: Tenant;
  let email: string;
  before(async () => {
    app = await startTestApp({ RATE_LIMIT_PER_MINUTE: '4' });
    tenant = await seedTenant(app.pool);
    await setPassword(app.pool, tenant.ownerId, PASSWORD);
    email = (await app.pool.query('SELECT email FROM users WHERE id = $1', [tenant.ownerId])).rows[0].email;
  });
  after(() => app.close());

  const signIn = (address: string, password: string, who = email) =>
    request(app.baseUrl, 'POST', '/user/sessions', { headers: from(address), body: { data: { email: who, password } } });

  test('a forged leftmost X-Forwarded-For does not give a client a new address: refused keys from one address hit 429', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await request(app.baseUrl, 'GET', '/customers', { headers: { authorization: 'Bearer service_sk_nope', ...from('203.0.113.7', `198.51.100.${i}`) } });
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [401, 401, 401, 401, 429, 429], 'the fifth refused key from one address is over the limit of 4');
    const elsewhere = await request(app.baseUrl, 'GET', '/customers', { headers: { authorization: 'Bearer service_sk_nope', ...from('203.0.113.8') } });
    assert.equal(elsewhere.status, 401, 'another real address has its own window');
  });

  test('sign-in: guessing from one address is stopped without locking the person out from theirs', async () => {
    for (let i = 0; i < SIGN_IN_LIMITS.perEmailAndAddress; i++) assert.equal((await signIn('192.0.2.10', 'mala')).status, 401);
    const stopped = await signIn('192.0.2.10', PASSWORD);
    assert.equal(stopped.status, 429, 'even the right password waits at the guessing address');
    const retryAfter = Number(stopped.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    const owner = await signIn('192.0.2.20', PASSWORD);
    assert.equal(owner.status, 201, `the owner signs in from their own address: ${owner.text}`);
  });

  test('sign-in: one address spraying many emails is limited per address', async () => {
    const statuses: number[] = [];
    for (let i = 0; i <= SIGN_IN_LIMITS.perAddress; i++) statuses.push((await signIn('192.0.2.30', 'mala', `nadie${i}@example.com`)).status);
    assert.equal(statuses.filter((s) => s === 401).length, SIGN_IN_LIMITS.perAddress);
    assert.equal(statuses.at(-1), 429);
  });

  test('two sessions of one person share one rate-limit bucket', async () => {
    const a = (await signIn('192.0.2.40', PASSWORD)).body.data.token;
    const b = (await signIn('192.0.2.41', PASSWORD)).body.data.token;
    const statuses: number[] = [];
    for (const token of [a, b, a, b, a]) {
      statuses.push((await request(app.baseUrl, 'GET', '/user/developers/webhook-endpoints', { headers: { authorization: `Bearer ${token}` } })).status);
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 429]);
  });

  test('/media is limited per client address and carries the RateLimit headers', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${app.url}/media/${'0'.repeat(31)}${i}/x.png`, { headers: from('203.0.113.50', `198.51.100.${i}`) });
      assert.equal(res.headers.get('ratelimit-limit'), '4');
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [404, 404, 404, 404, 429, 429], 'probing for tokens from one address is throttled');
  });
});
