// Mounts the admin tRPC router at /admin/trpc behind `Authorization: Bearer
// <ADMIN_TOKEN>`, compared in constant time. Without a configured token the
// endpoint is closed (401), never open.
import { createHash, timingSafeEqual } from 'node:crypto';
import { nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import type { Next } from 'koa';
import { ApiError } from '../errors.ts';
import { log, logError } from '../../lib/log.ts';
import { authorizationOf, bearerToken } from '../middleware/authenticate.ts';
import { headerSeconds } from '../middleware/rate-limit.ts';
import type { ApiContext, Deps } from '../types.ts';
import { adminRouter } from './router.ts';
import { loggedErrors } from './trpc.ts';

function tokenMatches(given: string | null, expected: string | undefined): boolean {
  if (!given || !expected) return false;
  // Hashing first makes the comparison constant-time regardless of lengths.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** Wrong admin tokens per client address per minute before the address is refused (429) for the rest of the window. */
export const ADMIN_FAILURES_PER_MINUTE = 10;

/**
 * Throttling of wrong tokens: failures count in the shared limiter; once an
 * address is over, this process refuses it until the window frees (before
 * even looking at the token, so guessing cannot continue through 429s).
 * Another process learns it at that address's next failure there.
 */
const blockedUntil = new Map<string, number>();

async function refuseGuessing(ctx: ApiContext, deps: Deps): Promise<void> {
  const until = blockedUntil.get(ctx.ip) ?? 0;
  if (until > Date.now()) {
    ctx.set('Retry-After', String(headerSeconds((until - Date.now()) / 1000)));
    throw new ApiError('rate_limited');
  }
  if (tokenMatches(bearerToken(authorizationOf(ctx)), deps.config.adminToken)) return;
  const decision = await deps.rateLimiter.consume(`admin-fail:${ctx.ip}`, ADMIN_FAILURES_PER_MINUTE);
  log('admin.refused', { address: ctx.ip, request_id: ctx.state.requestId, throttled: !decision.allowed });
  if (!decision.allowed) {
    const seconds = headerSeconds(decision.resetSeconds);
    if (blockedUntil.size > 10_000) blockedUntil.clear();
    blockedUntil.set(ctx.ip, Date.now() + seconds * 1000);
    ctx.set('Retry-After', String(seconds));
    throw new ApiError('rate_limited');
  }
  throw new ApiError('invalid_key', 'El token de administración no es válido.');
}

export function adminMiddleware(deps: Deps) {
  return async function admin(ctx: ApiContext, _next: Next) {
    await refuseGuessing(ctx, deps);
    const path = ctx.path.replace(/^\/admin\/trpc\/?/, '');
    ctx.respond = false;
    // Koa starts every response at 404; tRPC only sets its status when it
    // finds 200 there, so without this every answer, success or error, is a 404.
    ctx.res.statusCode = 200;
    await nodeHTTPRequestHandler({
      router: adminRouter,
      req: ctx.req,
      res: ctx.res,
      path,
      createContext: () => ({ deps, requestId: ctx.state.requestId, address: ctx.ip }),
      // Logged where it happens (api/admin/trpc.ts, admin.error with its stack); here only what failed
      // before any procedure ran (the request itself), as a JSON line like every other.
      onError: ({ error, path: procedure }) => {
        if (error.code === 'INTERNAL_SERVER_ERROR' && !loggedErrors.has(error)) logError('admin.failed', error, { procedure, request_id: ctx.state.requestId });
      },
    });
  };
}
