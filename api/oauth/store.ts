// OAuth queries: clients, sign-in sessions, grants, codes and tokens. Codes
// and tokens are random secrets stored as SHA-256 digests only.
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { transaction, type Queryable } from '../../db/pool.ts';
import { objectId } from '../../lib/objectid.ts';

export const ACCESS_PREFIX = 'service_oat_';
export const REFRESH_PREFIX = 'service_ort_';
export const ACCESS_TTL_SECONDS = 3600;
export const REFRESH_TTL_SECONDS = 30 * 24 * 3600;
export const CODE_TTL_SECONDS = 600;

export const digest = (secret: string) => createHash('sha256').update(secret).digest();
export const randomToken = (prefix = '') => prefix + randomBytes(32).toString('base64url');

export type ClientRow = { id: string; client_name: string | null; redirect_uris: string[]; created_at: Date };
export type GrantRow = { id: string; client_id: string; user_id: string; company_id: string; scopes: string[]; revoked_at: Date | null };

export async function insertClient(db: Queryable, name: string | null, redirectUris: string[]): Promise<ClientRow> {
  const { rows } = await db.query<ClientRow>('INSERT INTO oauth_clients (id, client_name, redirect_uris) VALUES ($1, $2, $3) RETURNING *', [
    `client_${randomBytes(16).toString('hex')}`,
    name,
    redirectUris,
  ]);
  return rows[0];
}

/** A registered client; null for an id of another shape without asking the database (a NUL byte there is an error, not a miss). */
export async function findClient(db: Queryable, id: string): Promise<ClientRow | null> {
  if (!/^client_[0-9a-f]{32}$/.test(id)) return null;
  const { rows } = await db.query<ClientRow>('SELECT * FROM oauth_clients WHERE id = $1', [id]);
  return rows[0] ?? null;
}

/** The person signing in at /authorize, by email (already lowercased); null when none. */
export async function findSignInUser(db: Queryable, email: string): Promise<{ id: string; password_hash: string | null } | null> {
  const { rows } = await db.query<{ id: string; password_hash: string | null }>('SELECT id, password_hash FROM users WHERE lower(email) = $1 AND deleted_at IS NULL', [email]);
  return rows[0] ?? null;
}

export type SignInSession = { userId: string; email: string; csrf: string; formKey: string };

/** A sign-in session: its cookie token, the forms' CSRF token, and the key of the consent form's seal (never sent). */
export async function openSession(db: Queryable, user: { id: string; email: string }): Promise<{ token: string } & SignInSession> {
  const token = randomToken();
  const csrf = randomToken();
  const formKey = randomToken();
  await db.query(`INSERT INTO oauth_sessions (digest, user_id, csrf, form_key, expires_at) VALUES ($1, $2, $3, $4, now() + interval '1 hour')`, [digest(token), user.id, csrf, formKey]);
  return { token, userId: user.id, email: user.email, csrf, formKey };
}

export async function findSignInSession(db: Queryable, token: string | undefined): Promise<SignInSession | null> {
  if (!token) return null;
  const { rows } = await db.query<{ user_id: string; email: string; csrf: string; form_key: string }>(
    `SELECT s.user_id, u.email, s.csrf, s.form_key FROM oauth_sessions s JOIN users u ON u.id = s.user_id AND u.deleted_at IS NULL WHERE s.digest = $1 AND s.expires_at > now()`,
    [digest(token)],
  );
  return rows[0] ? { userId: rows[0].user_id, email: rows[0].email, csrf: rows[0].csrf, formKey: rows[0].form_key } : null;
}

/** Ends a sign-in session (the page's "not you?"). */
export async function closeSession(db: Queryable, token: string): Promise<void> {
  await db.query('DELETE FROM oauth_sessions WHERE digest = $1', [digest(token)]);
}

/** Whether the person has approved this client and not revoked it: its redirect URIs are then ones they trust. */
export async function hasApproved(db: Queryable, userId: string, clientId: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM oauth_grants WHERE user_id = $1 AND client_id = $2 AND revoked_at IS NULL LIMIT 1', [userId, clientId]);
  return (rowCount ?? 0) > 0;
}

/** The companies a person may connect, with whether their plan includes MCP. */
export async function companiesOf(db: Queryable, userId: string) {
  const { rows } = await db.query<{ id: string; name: string; plan: string; is_owner: boolean }>(
    'SELECT c.id, c.name, c.plan, m.is_owner FROM memberships m JOIN companies c ON c.id = m.company_id WHERE m.user_id = $1 ORDER BY c.name',
    [userId],
  );
  return rows.map((r) => ({ ...r, mcp: r.plan !== 'free' }));
}

/**
 * Whether this authorization request (the client and its PKCE challenge, new for every request) was
 * answered, with a code or a denial; the caller holds the request's advisory lock (answerOnce).
 */
async function answered(db: Queryable, clientId: string, codeChallenge: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `SELECT 1 FROM oauth_codes c JOIN oauth_grants g ON g.id = c.grant_id WHERE c.code_challenge = $2 AND g.client_id = $1
     UNION ALL SELECT 1 FROM oauth_denied_requests WHERE client_id = $1 AND code_challenge = $2`,
    [clientId, codeChallenge],
  );
  return (rowCount ?? 0) > 0;
}

/** `answer` for an authorization request not answered yet, else null; two submits at once take turns, so the second sees the first's answer. */
function answerOnce<T>(db: Queryable, clientId: string, codeChallenge: string, answer: (client: Queryable) => Promise<T>): Promise<T | null> {
  return transaction(db, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`oauth-code:${clientId}:${codeChallenge}`]);
    if (await answered(client, clientId, codeChallenge)) return null;
    return answer(client);
  });
}

/**
 * A grant and its authorization code (single use, 10 minutes); null when this authorization request was
 * already answered, with a code or a denial: a consent form sent again issues no second code and no
 * second connection (migrations 105, 111).
 */
export async function issueCode(
  db: Queryable,
  input: { clientId: string; userId: string; companyId: string; scopes: string[]; redirectUri: string; codeChallenge: string },
): Promise<string | null> {
  return answerOnce(db, input.clientId, input.codeChallenge, async (client) => {
    const grantId = objectId();
    await client.query('INSERT INTO oauth_grants (id, client_id, user_id, company_id, scopes) VALUES ($1, $2, $3, $4, $5)', [
      grantId,
      input.clientId,
      input.userId,
      input.companyId,
      input.scopes,
    ]);
    await client.query('UPDATE oauth_clients SET last_used_at = now() WHERE id = $1', [input.clientId]);
    const code = randomToken();
    await client.query(
      `INSERT INTO oauth_codes (digest, grant_id, redirect_uri, code_challenge, expires_at) VALUES ($1, $2, $3, $4, now() + make_interval(secs => $5))`,
      [digest(code), grantId, input.redirectUri, input.codeChallenge, CODE_TTL_SECONDS],
    );
    return code;
  });
}

/** Records the person's denial of an authorization request; false when it was already answered (a code, or an earlier denial). */
export async function denyRequest(db: Queryable, clientId: string, codeChallenge: string): Promise<boolean> {
  const denied = await answerOnce(db, clientId, codeChallenge, async (client) => {
    await client.query('INSERT INTO oauth_denied_requests (client_id, code_challenge) VALUES ($1, $2)', [clientId, codeChallenge]);
    return true;
  });
  return denied === true;
}

export type TokenPair = { access_token: string; refresh_token: string; expires_in: number; scope: string; token_type: 'Bearer' };

/**
 * A new token pair of a grant. `scopes` (a subset of the grant's, from a
 * refresh asking for less) narrows the access token only: the refresh token
 * and the grant keep what the person approved (RFC 6749 §6), so a later
 * refresh without `scope` gets all of it again.
 */
export async function issueTokens(db: Queryable, grant: GrantRow, scopes = grant.scopes): Promise<TokenPair> {
  const access = randomToken(ACCESS_PREFIX);
  const refresh = randomToken(REFRESH_PREFIX);
  const narrowed = grant.scopes.every((s) => scopes.includes(s)) ? null : scopes;
  await db.query(
    `INSERT INTO oauth_tokens (digest, grant_id, kind, expires_at, scopes) VALUES
       ($1, $3, 'access', now() + make_interval(secs => $4), $6), ($2, $3, 'refresh', now() + make_interval(secs => $5), NULL)`,
    [digest(access), digest(refresh), grant.id, ACCESS_TTL_SECONDS, REFRESH_TTL_SECONDS, narrowed],
  );
  return { access_token: access, refresh_token: refresh, expires_in: ACCESS_TTL_SECONDS, scope: scopes.join(' '), token_type: 'Bearer' };
}

/**
 * An access token as the MCP server checks it on every request: its grant
 * not revoked, the person still a member of the company, not expired.
 */
export async function verifyAccessToken(db: Queryable, token: string): Promise<{ grantId: string; companyId: string; userId: string; scopes: string[] } | null> {
  if (!token.startsWith(ACCESS_PREFIX)) return null;
  const { rows } = await db.query<GrantRow & { token_scopes: string[] }>(
    `SELECT g.*, coalesce(t.scopes, g.scopes) AS token_scopes FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id
       JOIN memberships m ON m.user_id = g.user_id AND m.company_id = g.company_id
       JOIN users u ON u.id = g.user_id AND u.deleted_at IS NULL
      WHERE t.digest = $1 AND t.kind = 'access' AND t.expires_at > now() AND g.revoked_at IS NULL`,
    [digest(token)],
  );
  const g = rows[0];
  return g ? { grantId: g.id, companyId: g.company_id, userId: g.user_id, scopes: g.token_scopes } : null;
}

/** Seconds during which a rotated refresh token still returns its successor pair (parallel refreshes). */
export const REFRESH_GRACE_SECONDS = 60;

function successorKey(oldRefreshToken: string): Buffer {
  return Buffer.from(hkdfSync('sha256', oldRefreshToken, 'workspace-oauth', 'refresh-successor', 32));
}

/** The successor pair, encrypted (AES-256-GCM) with a key only the old refresh token's holder can derive. */
export function sealSuccessor(oldRefreshToken: string, pair: TokenPair): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', successorKey(oldRefreshToken), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(pair)), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

export function openSuccessor(oldRefreshToken: string, sealed: Buffer): TokenPair | null {
  try {
    const decipher = createDecipheriv('aes-256-gcm', successorKey(oldRefreshToken), sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(12, 28));
    return JSON.parse(Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8')) as TokenPair;
  } catch {
    return null;
  }
}
