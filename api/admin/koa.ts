// Mounts the admin tRPC router at /admin/trpc behind `Authorization: Bearer
// <ADMIN_TOKEN>`, compared in constant time. Without a configured token the
// endpoint is closed (401), never open.
import { createHash, timingSafeEqual } from 'node:crypto';
import { nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import type { Next } from 'koa';
import { ApiError } from '../errors.ts';
import { bearerToken } from '../middleware/authenticate.ts';
import type { ApiContext, Deps } from '../types.ts';
import { adminRouter } from './router.ts';

function tokenMatches(given: string | null, expected: string | undefined): boolean {
  if (!given || !expected) return false;
  // Hashing first makes the comparison constant-time regardless of lengths.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

export function adminMiddleware(deps: Deps) {
  return async function admin(ctx: ApiContext, _next: Next) {
    if (!tokenMatches(bearerToken(ctx.get('Authorization')), deps.config.adminToken)) {
      throw new ApiError('invalid_key', 'El token de administración no es válido.');
    }
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
      createContext: () => ({ deps }),
      onError: ({ error }) => {
        if (error.code === 'INTERNAL_SERVER_ERROR') process.stderr.write(`admin error: ${error.message}\n`);
      },
    });
  };
}
