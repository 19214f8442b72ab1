// User sessions: the credential of the in-application routes
// (`/api/v1/user/...`, contract: "authenticated with a user session and
// permission manage-developers"). A person signs in with email and password
// (set by operators: `wsctl user set-password`) at POST /api/v1/user/sessions
// and gets `service_ses_<secret>`, sent as `Authorization: Bearer ...` like an
// API key. A bearer token rather than a cookie: nothing is sent implicitly by
// a browser, so there is no CSRF surface. As with keys, only the SHA-256
// digest is stored, and every way a token can be wrong gives the same 401.
import { randomBytes } from 'node:crypto';
import type { Next } from 'koa';
import { z } from 'zod';
import type { Queryable } from '../../db/pool.ts';
import { objectId } from '../../lib/objectid.ts';
import { hashPassword, needsRehash, verifyPassword } from '../../lib/passwords.ts';
import { digestSecret } from './keys.ts';
import type { Permission } from './scopes.ts';
import { ApiError } from '../errors.ts';
import { authorizationOf, bearerToken } from '../middleware/authenticate.ts';
import { headerSeconds, limitUnauthenticated } from '../middleware/rate-limit.ts';
import type { ApiContext } from '../types.ts';
import { parseData } from '../validation.ts';

export const SESSION_PREFIX = 'service_ses_';
const TOKEN_SHAPE = /^service_ses_[A-Za-z0-9_-]{43}$/;
export const SESSION_TTL_HOURS = 12;
/**
 * Sign-in attempts per minute, against password guessing (sliding windows of
 * the shared limiter, so nothing is ever locked for longer than a minute):
 * - per email and client address: one address guessing a person's password is
 *   stopped, and that never locks the person out from their own address;
 * - per client address, whatever the email: one address spraying many emails;
 * - per email over every address: a distributed guess, with a limit high
 *   enough that reaching it takes many addresses.
 */
export const SIGN_IN_LIMITS = { perEmailAndAddress: 10, perAddress: 30, perEmail: 100 } as const;


export const signInSchema = z.strictObject({
  email: z.email(),
  password: z.string().min(1).max(200),
  company_id: z.string().regex(/^[0-9a-f]{24}$/).optional().describe('Empresa en la que actúa la sesión; obligatoria si el usuario pertenece a varias'),
});

export type SessionAuth = { sessionId: string; userId: string; companyId: string; isOwner: boolean; permissions: string[]; enabledModules: string[] };

/**
 * Whether `password` is the person's. A missing person still costs one scrypt, so timing does not tell
 * which emails exist. A right password whose hash was made at an older cost is stored again at the
 * current one (lib/passwords.ts), without moving `updated_at` or ending any session: nothing the person
 * sees changed.
 */
export async function checkPassword(db: Queryable, user: { id: string; password_hash: string | null } | undefined, password: string): Promise<boolean> {
  const ok = await verifyPassword(password, user?.password_hash ?? null);
  if (!user || !ok) return false;
  if (needsRehash(user.password_hash!)) {
    // Only over the hash that verified. None written: a set-password committed meanwhile replaced it, and
    // ended the sessions; a sign-in with the password it replaced opens none.
    const { rowCount } = await db.query('UPDATE users SET password_hash = $3 WHERE id = $1 AND password_hash = $2', [user.id, user.password_hash, await hashPassword(password)]);
    if (rowCount === 0) return false;
  }
  return true;
}

/** Checks the password and opens a session on one of the user's companies; null when the credentials are wrong. */
export async function signIn(db: Queryable, input: z.infer<typeof signInSchema>) {
  const { rows: users } = await db.query('SELECT id, password_hash FROM users WHERE lower(email) = lower($1) AND deleted_at IS NULL', [input.email]);
  if (!(await checkPassword(db, users[0], input.password))) return null;
  const { rows: memberships } = await db.query<{ company_id: string; name: string }>(
    `SELECT m.company_id, c.name FROM memberships m JOIN companies c ON c.id = m.company_id
      WHERE m.user_id = $1 AND ($2::text IS NULL OR m.company_id = $2) ORDER BY m.created_at, m.company_id`,
    [users[0].id, input.company_id ?? null],
  );
  if (memberships.length === 0) return null;
  if (memberships.length > 1) {
    // The password was right: the person may learn their own companies, to pick one (`companies`, as
    // insufficient_scope names what is `required`).
    throw new ApiError('validation_failed', 'Perteneces a varias empresas: indica company_id, una de companies.', {
      errors: { company_id: ['perteneces a varias empresas: indica company_id'] },
      companies: memberships.map((m) => ({ id: m.company_id, name: m.name })),
    });
  }
  const token = SESSION_PREFIX + randomBytes(32).toString('base64url');
  const { rows } = await db.query(
    `INSERT INTO user_sessions (id, user_id, company_id, token_digest, expires_at)
     VALUES ($1, $2, $3, $4, now() + make_interval(hours => $5)) RETURNING id, user_id, company_id, expires_at`,
    [objectId(), users[0].id, memberships[0].company_id, digestSecret(token), SESSION_TTL_HOURS],
  );
  return { token, session: rows[0] as { id: string; user_id: string; company_id: string; expires_at: Date } };
}

export async function findSession(db: Queryable, token: string): Promise<SessionAuth | null> {
  if (!TOKEN_SHAPE.test(token)) return null;
  const { rows } = await db.query(
    `SELECT s.id, s.user_id, s.company_id, m.is_owner, m.permissions, c.enabled_modules
       FROM user_sessions s
       JOIN memberships m ON m.user_id = s.user_id AND m.company_id = s.company_id
       JOIN companies c ON c.id = s.company_id
       JOIN users u ON u.id = s.user_id AND u.deleted_at IS NULL
      WHERE s.token_digest = $1 AND s.revoked_at IS NULL AND s.expires_at > now()`,
    [digestSecret(token)],
  );
  const row = rows[0];
  if (!row) return null;
  return { sessionId: row.id, userId: row.user_id, companyId: row.company_id, isOwner: row.is_owner, permissions: row.permissions, enabledModules: row.enabled_modules };
}

export async function revokeSession(db: Queryable, sessionId: string): Promise<void> {
  await db.query('UPDATE user_sessions SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL', [sessionId]);
}

/**
 * Session authentication for `/user/...` routes. Sets `ctx.state.auth` like an
 * API key does, so rate limit and idempotency work unchanged (keyed by the
 * person and company). The route's permission is checked after the rate limit
 * (`requirePermission`), as a key's scope is: a refusal counts and carries the
 * RateLimit-* headers.
 */
export function authenticateSession() {
  return async function sessionCheck(ctx: ApiContext, next: Next) {
    const token = bearerToken(authorizationOf(ctx));
    const session = token ? await findSession(ctx.deps.pool, token) : null;
    if (!session) {
      await limitUnauthenticated(ctx);
      throw new ApiError('invalid_key', 'La sesión no es válida o expiró.');
    }
    ctx.state.session = session;
    ctx.state.auth = {
      // One rate-limit bucket per person and company, however many sessions they open.
      keyId: `user:${session.userId}:${session.companyId}`,
      companyId: session.companyId,
      userId: session.userId,
      scopes: [],
      allowedOrigins: [],
      rateLimitPerMinute: null,
      enabledModules: session.enabledModules,
      responseCache: false,
    };
    await next();
  };
}

/** The session's person holds `permission` in its company (owners hold every one); 403 insufficient_scope otherwise. */
export function requirePermission(permission: Permission) {
  return async function permissionCheck(ctx: ApiContext, next: Next) {
    const session = ctx.state.session!;
    if (!session.isOwner && !session.permissions.includes(permission)) {
      throw new ApiError('insufficient_scope', 'Tu usuario no tiene el permiso necesario para esta operación.', { required: permission });
    }
    await next();
  };
}

/**
 * Counts a sign-in attempt, by email and address, by address, and by email
 * across addresses (SIGN_IN_LIMITS, per minute), and returns the refusal if one
 * bucket is spent. The API's sign-in and the OAuth sign-in page share the
 * buckets, so alternating between them buys no extra guesses.
 */
export async function consumeSignInAttempt(ctx: ApiContext, email: string): Promise<{ resetSeconds: number } | null> {
  for (const [bucket, limit] of [
    [`signin:${email}:${ctx.ip}`, SIGN_IN_LIMITS.perEmailAndAddress],
    [`signin-ip:${ctx.ip}`, SIGN_IN_LIMITS.perAddress],
    [`signin-email:${email}`, SIGN_IN_LIMITS.perEmail],
  ] as const) {
    const decision = await ctx.deps.rateLimiter.consume(bucket, limit);
    if (!decision.allowed) return { resetSeconds: decision.resetSeconds };
  }
  return null;
}

/** POST /api/v1/user/sessions (sign in) and DELETE /api/v1/user/sessions/current (sign out). */
export async function signInHandler(ctx: ApiContext) {
  const input = parseData(signInSchema, ctx.request.body);
  const refused = await consumeSignInAttempt(ctx, input.email.toLowerCase());
  if (refused) {
    ctx.set('Retry-After', String(headerSeconds(refused.resetSeconds)));
    throw new ApiError('rate_limited');
  }
  const opened = await signIn(ctx.deps.pool, input);
  if (!opened) throw new ApiError('invalid_key', 'Correo o contraseña incorrectos.');
  ctx.status = 201;
  ctx.body = {
    data: {
      object: 'user_session',
      token: opened.token,
      user_id: opened.session.user_id,
      company_id: opened.session.company_id,
      expires_at: opened.session.expires_at.toISOString(),
    },
  };
}
