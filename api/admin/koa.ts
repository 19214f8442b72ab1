// Mounts the admin tRPC router at /admin/trpc behind `Authorization: Bearer
// <ADMIN_TOKEN>`, compared in constant time. Without a configured token the
// endpoint is closed (401), never open.
import { secretMatches } from '../../lib/secret-compare.ts';
import { nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import type { Next } from 'koa';
import { log, logError } from '../../lib/log.ts';
import { authorizationOf, bearerToken } from '../middleware/authenticate.ts';
import { WrongTokenThrottle } from '../middleware/wrong-token.ts';
import type { ApiContext, Deps } from '../types.ts';
import { adminRouter } from './router.ts';
import { loggedErrors } from './trpc.ts';

const throttle = new WrongTokenThrottle('admin');

/**
 * A refusal before tRPC runs, in tRPC's own error shape (what `@trpc/client` reads: `error.data.code`),
 * one per procedure of a batch (`?batch=1`, procedures joined by commas), as tRPC answers errors.
 */
function refuseAsTrpc(ctx: ApiContext, path: string, code: 'UNAUTHORIZED' | 'TOO_MANY_REQUESTS', message: string): void {
  const status = code === 'UNAUTHORIZED' ? 401 : 429;
  const error = (procedure: string) => ({ error: { message, code: TRPC_ERROR_CODES_BY_KEY[code], data: { code, httpStatus: status, path: procedure } } });
  ctx.status = status;
  ctx.body = ctx.query.batch === '1' ? path.split(',').map(error) : error(path);
}

type Refusal = (code: 'UNAUTHORIZED' | 'TOO_MANY_REQUESTS', message: string) => void;

/**
 * Whether the request carries the admin token and may go on; otherwise it has been answered 401 or 429
 * through `refuse` (tRPC's error shape for /admin/trpc, the API's for /admin/files).
 */
export async function adminTokenAccepted(ctx: ApiContext, deps: Deps, refuse: Refusal): Promise<boolean> {
  const blocked = throttle.blockedSeconds(ctx);
  if (blocked) {
    // Logged too: a guesser who keeps going while refused leaves a trace of every attempt.
    log('admin.refused', { address: ctx.ip, request_id: ctx.state.requestId, throttled: true });
    ctx.set('Retry-After', String(blocked));
    refuse('TOO_MANY_REQUESTS', 'too many rejected admin tokens from this address: retry after Retry-After seconds');
    return false;
  }
  if (secretMatches(bearerToken(authorizationOf(ctx)), deps.config.adminToken)) return true;
  const refusedFor = await throttle.failed(ctx, deps);
  log('admin.refused', { address: ctx.ip, request_id: ctx.state.requestId, throttled: refusedFor > 0 });
  if (refusedFor) {
    ctx.set('Retry-After', String(refusedFor));
    refuse('TOO_MANY_REQUESTS', 'too many rejected admin tokens from this address: retry after Retry-After seconds');
    return false;
  }
  // RFC 9110 §11.6.1: a 401 carries a challenge.
  ctx.set('WWW-Authenticate', 'Bearer realm="admin"');
  refuse('UNAUTHORIZED', 'the admin token is missing or wrong (Authorization: Bearer $ADMIN_TOKEN)');
  return false;
}

export function adminMiddleware(deps: Deps) {
  return async function admin(ctx: ApiContext, _next: Next) {
    // The route matches /admin/trpc in any case (the router is case-insensitive): so does the prefix cut here.
    const path = ctx.path.replace(/^\/admin\/trpc\/?/i, '');
    if (!(await adminTokenAccepted(ctx, deps, (code, message) => refuseAsTrpc(ctx, path, code, message)))) return;
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
