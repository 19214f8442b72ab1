// Bearer API key → tenant (contract, Authentication 1-6). Every way a key can
// be wrong yields the same 401 body, so a client cannot tell a revoked key
// from a typo and an attacker learns nothing from the difference.
import type { IncomingMessage } from 'node:http';
import type { Next } from 'koa';
import { isWellFormedSecret } from '../auth/keys.ts';
import { ApiError } from '../errors.ts';
import { limitKey, limitUnauthenticated } from './rate-limit.ts';
import type { ApiContext } from '../types.ts';

/**
 * The request's Authorization header, or null when it came more than once. It is not a list (RFC 9110
 * §11.6.2): two are a malformed request, answered as one (401 invalid_key), never by either of them.
 * Node keeps the first and drops the rest, so the raw headers are counted.
 */
export function authorizationOf(ctx: { get(field: string): string; req: IncomingMessage }): string | null {
  return singleHeader(ctx, 'Authorization');
}

/**
 * A header that is no list, or null when the request sent it more than once (`''` when it sent none).
 * Node joins repeats of most names with ", " (and keeps the first of some), so the raw headers are counted.
 */
export function singleHeader(ctx: { get(field: string): string; req: IncomingMessage }, name: string): string | null {
  const header = ctx.get(name);
  if (!header) return header;
  const raw = ctx.req.rawHeaders;
  const lower = name.toLowerCase();
  let seen = 0;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length === lower.length && raw[i].toLowerCase() === lower && ++seen > 1) return null;
  }
  return header;
}

/** The token of an `Authorization: Bearer <token>` header; null for any other header, or none. */
export function bearerToken(header: string | null): string | null {
  if (header === null) return null;
  const match = /^Bearer +(\S+) *$/i.exec(header);
  return match ? match[1] : null;
}

/**
 * The `error` of MCP's 401 Bearer challenge (RFC 6750 §3.1; the REST 401 carries none, api/middleware/request.ts): `invalid_token` for a
 * token sent and refused, `invalid_request` for a malformed Bearer header (`Bearer`, `Bearer a b`),
 * none when no Bearer credential was sent (no header, or another scheme such as Basic); `invalid_request`
 * too for an Authorization header sent twice (`authorizationOf` gives null).
 */
export function bearerChallengeError(header: string | null): string {
  if (header === null) return ', error="invalid_request"';
  if (bearerToken(header)) return ', error="invalid_token"';
  return /^Bearer(\s|$)/i.test(header) ? ', error="invalid_request"' : '';
}

/** The API key the request's Authorization names, if it is a valid one. */
function keyOf(ctx: ApiContext) {
  const secret = bearerToken(authorizationOf(ctx));
  return secret && isWellFormedSecret(secret) ? ctx.deps.keyCache.lookup(ctx.deps.pool, secret) : null;
}

export async function authenticate(ctx: ApiContext, next: Next) {
  const key = await keyOf(ctx);
  if (!key) {
    await limitUnauthenticated(ctx);
    throw new ApiError('invalid_key');
  }
  ctx.state.auth = key;
  await next();
}

/**
 * A request no route took (an unknown path, a method the path does not have)
 * is counted like any other, against its key when it holds a valid one, else
 * its address, so that its 404 or 405 carries RateLimit-* too (DESIGN.md:
 * every response) without the key's validity changing the status.
 */
export async function limitUnrouted(ctx: ApiContext): Promise<void> {
  const key = await keyOf(ctx);
  if (key) await limitKey(ctx, key, ctx.deps.config.rateLimitPerMinute);
  else await limitUnauthenticated(ctx);
}

/** After the rate limit, so a refused origin is counted and carries RateLimit-* too. */
export async function checkOrigin(ctx: ApiContext, next: Next) {
  const key = ctx.state.auth!;
  if (key.allowedOrigins.length > 0 && !originAllowed(ctx, key.allowedOrigins)) {
    throw new ApiError('origin_not_allowed');
  }
  await next();
}

/**
 * The allow-list holds host names: `shop.example.com` matches exactly,
 * `*.example.com` matches any subdomain (not the apex). The Origin header is
 * checked, else Referer; a key with an allow-list refuses requests that carry
 * neither, since the list exists to pin where the key may be used from.
 */
export function originAllowed(ctx: ApiContext, allowed: string[]): boolean {
  const source = ctx.get('Origin') || ctx.get('Referer');
  if (!source || source === 'null') return false;
  let host: string;
  try {
    host = new URL(source).hostname.toLowerCase();
  } catch {
    return false;
  }
  return allowed.some((entry) => {
    const pattern = entry.toLowerCase();
    if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
    return host === pattern;
  });
}

export function requireScope(scope: string) {
  return async function scopeCheck(ctx: ApiContext, next: Next) {
    if (!ctx.state.auth?.scopes.includes(scope)) throw new ApiError('insufficient_scope', undefined, { required: scope });
    await next();
  };
}

export function requireModule(module: string) {
  return async function moduleCheck(ctx: ApiContext, next: Next) {
    if (!ctx.state.auth?.enabledModules.includes(module)) {
      throw new ApiError('module_not_enabled', `El módulo ${module} no está habilitado para esta empresa.`);
    }
    await next();
  };
}
