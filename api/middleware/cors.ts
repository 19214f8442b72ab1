// CORS for the REST API (/api/v1). A key may carry an allow-list of origins
// (contract, Authentication 5), which only means something to browsers, and a
// browser reads a cross-origin answer only when the answer allows it. The API
// authenticates with a bearer key, never a cookie, so allowing any origin to
// read gives a page nothing it does not already hold: the key is the
// credential, and its allow-list is enforced on the request itself (403
// origin_not_allowed, api/middleware/authenticate.ts), which this answer
// carries too so the page can read the error. No Allow-Credentials.
// @koa/cors (the Koa organisation's own) answers the preflight with 204
// before any route runs, and keeps the headers on error answers.
import cors from '@koa/cors';
import type { Next } from 'koa';
import type { ApiContext } from '../types.ts';

const PREFIX = '/api/v1';
/** The headers a client of this API reads (contract and docs/api.md), beyond the CORS-safelisted ones. */
const EXPOSED_HEADERS = [
  'X-Request-Id',
  'X-Service-API-Version',
  'X-Service-API-Released-At',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'Retry-After',
  'Idempotent-Replayed',
  'X-Cache',
  'ETag',
  'WWW-Authenticate',
];

/**
 * @koa/cors, for the API's paths only (MCP and OAuth answer their own CORS), and only to requests with an
 * Origin. A preflight that production refuses (plain HTTP: `refused`) is not answered here but passed on
 * to its 426, as every other request over plain HTTP is; other answers, the 426 included, carry the CORS
 * headers so a page can read them.
 */
export function apiCors(refused: (ctx: ApiContext) => boolean = () => false) {
  const middleware = cors({
    origin: '*',
    allowMethods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowHeaders: ['Authorization', 'Content-Type', 'Content-Encoding', 'Idempotency-Key', 'X-Request-Id'],
    exposeHeaders: EXPOSED_HEADERS,
    maxAge: 600,
    credentials: false,
  });
  return async function apiCors(ctx: ApiContext, next: Next) {
    // Without Origin (a server, the benches) nothing is added, not even Vary: API answers are not cached by shared caches.
    if (!ctx.get('Origin') || !(ctx.path === PREFIX || ctx.path.startsWith(`${PREFIX}/`))) return next();
    if (ctx.method === 'OPTIONS' && ctx.get('Access-Control-Request-Method') && refused(ctx)) return next();
    // An OPTIONS that is no preflight: @koa/cors passes it by untouched; readable like any other answer.
    if (ctx.method === 'OPTIONS' && !ctx.get('Access-Control-Request-Method')) {
      ctx.set('Access-Control-Allow-Origin', '*');
      ctx.set('Access-Control-Expose-Headers', EXPOSED_HEADERS.join(','));
      ctx.vary('Origin');
      return next();
    }
    return middleware(ctx, next);
  };
}
