// A person's session (POST /api/v1/user/sessions, api/auth/sessions.ts) for tests of the /user routes:
// a company's owner or a member with given permissions, signed in with a password set as wsctl sets it.
import assert from 'node:assert/strict';
import { setPassword } from '../../api/admin/users.ts';
import { objectId } from '../../lib/objectid.ts';
import { client, request, seedTenant, type TestApp } from './app.ts';

export const SESSION_PASSWORD = 'correct horse battery staple';

export async function emailOf(app: TestApp, userId: string): Promise<string> {
  const { rows } = await app.pool.query('SELECT email FROM users WHERE id = $1', [userId]);
  return rows[0].email;
}

export function signInAs(app: TestApp, email: string, password = SESSION_PASSWORD) {
  return request(app.baseUrl, 'POST', '/user/sessions', { body: { data: { email, password } } });
}

/** A new company whose owner is signed in: its API key client (`api`) and the owner's session client (`session`, `token`). */
export async function signedInOwner(app: TestApp) {
  const t = await seedTenant(app.pool);
  await setPassword(app.pool, t.ownerId, SESSION_PASSWORD);
  const res = await signInAs(app, await emailOf(app, t.ownerId));
  assert.equal(res.status, 201, res.text);
  return { ...t, token: res.body.data.token as string, api: client(app.baseUrl, t.key), session: client(app.baseUrl, res.body.data.token) };
}

/** A non-owner member of the company, with the given permissions, signed in: their session's client. */
export async function signedInMember(app: TestApp, companyId: string, permissions: string[]) {
  const id = objectId();
  const email = `member-${id}@test.example`;
  await app.pool.query('INSERT INTO users (id, email) VALUES ($1, $2)', [id, email]);
  await app.pool.query('INSERT INTO memberships (company_id, user_id, is_owner, permissions) VALUES ($1, $2, false, $3)', [companyId, id, permissions]);
  await setPassword(app.pool, id, SESSION_PASSWORD);
  const res = await signInAs(app, email);
  assert.equal(res.status, 201, res.text);
  return client(app.baseUrl, res.body.data.token);
}
