// A person's session on the /user routes (api/auth/sessions.ts; docs/webhooks.md, "The user-session
// routes"): sign-in with email and password (POST /api/v1/user/sessions), the company choice of a person
// in several, sign-out (DELETE /api/v1/user/sessions/current), and what ends a session at once (removal
// from the company, a new password). What a session may do on the webhook endpoints is
// test/webhooks.endpoints.test.ts's; the limits on sign-in, test/auth.limits.test.ts's.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setPassword } from '../api/admin/users.ts';
import { objectId } from '../lib/objectid.ts';
import { client, request, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { json } from './helpers/cli.ts';
import { emailOf, SESSION_PASSWORD, signedInOwner, signInAs } from './helpers/sessions.ts';

// A /user route a session may call (an owner has every permission).
const USER_PATH = '/user/developers/webhook-endpoints';

describe('user sessions', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  test('sign-in answers 201 with a service_ses_ token; a wrong password and an unknown email get the identical 401 invalid_key', async () => {
    const t = await seedTenant(app.pool);
    await setPassword(app.pool, t.ownerId, SESSION_PASSWORD);
    const email = await emailOf(app, t.ownerId);
    const ok = await signInAs(app, email);
    assert.equal(ok.status, 201, ok.text);
    assert.match(ok.body.data.token, /^service_ses_/);
    assert.equal(ok.body.data.user_id, t.ownerId);
    assert.equal(ok.body.data.company_id, t.companyId);
    assert.ok(Date.parse(ok.body.data.expires_at) > Date.now());

    const wrong = await signInAs(app, email, 'not the password');
    const unknown = await signInAs(app, `nobody-${objectId()}@test.example`);
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.error, 'invalid_key');
    assert.equal(unknown.status, 401);
    assert.equal(unknown.text, wrong.text, 'no difference tells which emails exist');
  });

  test('a member removed from the company: their session is 401 at once, and stays so when the membership is given back', async () => {
    const owner = await signedInOwner(app);
    const id = objectId();
    const email = `vuelve-${id}@test.example`;
    await app.pool.query('INSERT INTO users (id, email) VALUES ($1, $2)', [id, email]);
    await app.pool.query('INSERT INTO memberships (company_id, user_id, is_owner, permissions) VALUES ($1, $2, false, $3)', [owner.companyId, id, ['manage-developers']]);
    // Also in another company, so the removal leaves the person in the service.
    const elsewhere = await seedTenant(app.pool);
    await app.pool.query('INSERT INTO memberships (company_id, user_id, is_owner, permissions) VALUES ($1, $2, false, $3)', [elsewhere.companyId, id, []]);
    await setPassword(app.pool, id, SESSION_PASSWORD);
    const signIn = (mail: string) => request(app.baseUrl, 'POST', '/user/sessions', { body: { data: { email: mail, password: SESSION_PASSWORD, company_id: owner.companyId } } });
    // Without company_id the answer names the person's companies, to pick one (the password was right).
    const which = await request(app.baseUrl, 'POST', '/user/sessions', { body: { data: { email, password: SESSION_PASSWORD } } });
    assert.deepEqual([which.status, which.body.error, Object.keys(which.body.errors)], [422, 'validation_failed', ['company_id']]);
    assert.deepEqual(which.body.companies.map((c: { id: string }) => c.id).sort(), [owner.companyId, elsewhere.companyId].sort());
    assert.ok(which.body.companies.every((c: { name: string }) => typeof c.name === 'string' && c.name));
    const signed = await signIn(email);
    assert.equal(signed.status, 201, signed.text);
    const session = client(app.baseUrl, signed.body.data.token);
    assert.equal((await session.get(USER_PATH)).status, 200);
    assert.equal((await owner.api.delete(`/users/${id}`)).status, 204);
    assert.equal((await session.get(USER_PATH)).status, 401);
    await json(app, ['user', 'add-membership', id, '--company', owner.companyId]);
    assert.equal((await session.get(USER_PATH)).status, 401, 'the old session is not revived');
    const again = await signIn(email);
    assert.equal(again.status, 201, 'a new sign-in works');
    assert.equal((await client(app.baseUrl, again.body.data.token).get('/user/oauth-grants')).status, 200);
  });

  test('after DELETE /user/sessions/current the token is 401', async () => {
    const { session, token } = await signedInOwner(app);
    assert.equal((await session.get(USER_PATH)).status, 200);
    const out = await request(app.baseUrl, 'DELETE', '/user/sessions/current', { key: token });
    assert.equal(out.status, 204);
    // Counted against the session's limit, as every /user route.
    assert.ok(Number(out.headers.get('ratelimit-limit')) > 0 && out.headers.get('ratelimit-remaining') !== null, 'RateLimit-* on the sign-out');
    const after = await session.get(USER_PATH);
    assert.equal(after.status, 401);
    assert.equal(after.body.error, 'invalid_key');
  });

  test('a new password (wsctl user set-password) ends the open sessions at once; the new one signs in', async () => {
    const { session, ownerId } = await signedInOwner(app);
    assert.equal((await session.get(USER_PATH)).status, 200);
    // A sign-in on the OAuth page (its session row) ends too.
    await app.pool.query(`INSERT INTO oauth_sessions (digest, user_id, csrf, expires_at) VALUES ($1, $2, 'x', now() + interval '1 hour')`, [Buffer.from(ownerId), ownerId]);
    await setPassword(app.pool, ownerId, 'otra-contraseña-9');
    assert.equal((await app.pool.query('SELECT 1 FROM oauth_sessions WHERE user_id = $1', [ownerId])).rowCount, 0);
    const after = await session.get(USER_PATH);
    assert.equal(after.status, 401);
    assert.equal(after.body.error, 'invalid_key');
    assert.equal((await signInAs(app, await emailOf(app, ownerId), 'otra-contraseña-9')).status, 201);
  });
});
