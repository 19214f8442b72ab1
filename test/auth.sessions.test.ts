// A person's session on the /user routes (api/auth/sessions.ts; docs/webhooks.md, "The user-session
// routes"): sign-in with email and password (POST /api/v1/user/sessions), the company choice of a person
// in several, sign-out (DELETE /api/v1/user/sessions/current), and what ends a session at once (removal
// from the company, a new password). What a session may do on the webhook endpoints is
// test/webhooks.endpoints.test.ts's; the limits on sign-in, test/auth.limits.test.ts's.
import assert from 'node:assert/strict';
import { randomBytes, scryptSync } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { setPassword } from '../api/admin/users.ts';
import { objectId } from '../lib/objectid.ts';
import { hashPassword } from '../lib/passwords.ts';
import { client, request, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { json } from './helpers/cli.ts';
import { emailOf, SESSION_PASSWORD, signedInOwner, signInAs } from './helpers/sessions.ts';
import { waitForLockWaits } from './helpers/wait.ts';

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

  test('a password stored before the cost was (Node\'s default scrypt) signs in and is stored again at the current cost; a tampered cost is a wrong password', async () => {
    const { ownerId } = await seedTenant(app.pool);
    const email = await emailOf(app, ownerId);
    const salt = randomBytes(16);
    const legacy = `scrypt$${salt.toString('base64')}$${scryptSync('clave-de-antes-1', salt, 32).toString('base64')}`;
    await app.pool.query('UPDATE users SET password_hash = $2 WHERE id = $1', [ownerId, legacy]);
    const updatedAt = (await app.pool.query('SELECT updated_at FROM users WHERE id = $1', [ownerId])).rows[0].updated_at;
    assert.equal((await signInAs(app, email, 'clave-de-antes-2')).status, 401, 'a wrong password is still wrong');
    assert.equal((await app.pool.query('SELECT password_hash FROM users WHERE id = $1', [ownerId])).rows[0].password_hash, legacy, 'a failed sign-in stores nothing');
    const first = await signInAs(app, email, 'clave-de-antes-1');
    assert.equal(first.status, 201, first.text);
    const { rows } = await app.pool.query('SELECT password_hash, updated_at FROM users WHERE id = $1', [ownerId]);
    assert.match(rows[0].password_hash, /^scrypt\$ln=14,r=8,p=5\$[A-Za-z0-9+/=]{24}\$[A-Za-z0-9+/=]{44}$/);
    assert.deepEqual(rows[0].updated_at, updatedAt, 'the person changed nothing');
    assert.equal((await client(app.baseUrl, first.body.data.token).get(USER_PATH)).status, 200, 'the session opened with the old hash lives on');
    assert.equal((await signInAs(app, email, 'clave-de-antes-1')).status, 201, 'the new hash verifies');
    // A cost no sign-in may spend (2^40 blocks), or one that is not a number: the password is wrong, never a 500 or a hang.
    // (ln=17 is 128 MB a sign-in: over the bound of 64 MB a stored cost may ask.)
    for (const tampered of [rows[0].password_hash.replace('ln=14', 'ln=40'), rows[0].password_hash.replace('ln=14', 'ln=17'), rows[0].password_hash.replace('p=5', 'p=x'), 'scrypt$ln=14,r=8,p=5$$']) {
      await app.pool.query('UPDATE users SET password_hash = $2 WHERE id = $1', [ownerId, tampered]);
      const res = await signInAs(app, email, 'clave-de-antes-1');
      assert.deepEqual([res.status, res.body.error], [401, 'invalid_key'], tampered);
    }
  });

  test('a sign-in with an older hash racing a new password (wsctl user set-password): no session is opened with the replaced password', async () => {
    const { ownerId } = await seedTenant(app.pool);
    const email = await emailOf(app, ownerId);
    const salt = randomBytes(16);
    await app.pool.query('UPDATE users SET password_hash = $2 WHERE id = $1', [ownerId, `scrypt$${salt.toString('base64')}$${scryptSync('clave-vieja-123', salt, 32).toString('base64')}`]);
    // The operator's change holds the person's row while the sign-in verifies the old password and goes to store it again.
    const operator = await app.pool.connect();
    try {
      await operator.query('BEGIN');
      await operator.query('SELECT 1 FROM users WHERE id = $1 FOR UPDATE', [ownerId]);
      const signIn = signInAs(app, email, 'clave-vieja-123');
      await waitForLockWaits(app.pool, { query: 'UPDATE users SET password_hash%', what: 'the sign-in to wait to store the old password again' });
      await operator.query('UPDATE users SET password_hash = $2 WHERE id = $1', [ownerId, await hashPassword('clave-nueva-456')]);
      await operator.query('COMMIT');
      const res = await signIn;
      assert.deepEqual([res.status, res.body.error], [401, 'invalid_key'], res.text);
    } finally {
      await operator.query('ROLLBACK').catch(() => {});
      operator.release();
    }
    assert.equal((await app.pool.query('SELECT count(*)::int AS n FROM user_sessions WHERE user_id = $1', [ownerId])).rows[0].n, 0, 'no session opened');
    assert.equal((await signInAs(app, email, 'clave-nueva-456')).status, 201);
  });

  test('a member created over the API has no password: nobody signs in as them until an operator sets one', async () => {
    const t = await seedTenant(app.pool);
    const email = `sin-clave-${objectId()}@test.example`;
    const created = await client(app.baseUrl, t.key).post('/users', { data: { email, first_name: 'Sin', last_name: 'Clave' } });
    assert.equal(created.status, 201, created.text);
    assert.equal((await app.pool.query('SELECT password_hash FROM users WHERE id = $1', [created.body.data.id])).rows[0].password_hash, null);
    for (const password of ['', 'x'.repeat(8), 'null']) assert.equal((await signInAs(app, email, password)).status, password ? 401 : 422);
    await setPassword(app.pool, created.body.data.id, SESSION_PASSWORD);
    assert.equal((await signInAs(app, email)).status, 201);
  });
});
