// CORS for the REST API (/api/v1). A key may carry an allow-list of origins
// (contract, Authentication 5), which only means something to browsers, and a
// browser reads a cross-origin answer only when the answer allows it. The API
// authenticates with a bearer key, never a cookie, so allowing any origin to
// read gives a page nothing it does not already hold: the key is the
// credential, and its allow-list is enforced on the request itself (403
// origin_not_allowed, api/middleware/authenticate.ts), which this answer
// carries too so the page can read the error. No Allow-Credentials.
import type { Next } from 'koa';
import type { ApiContext } from '../types.ts';

const PREFIX = '/api/v1';
const METHODS = 'GET, POST, PUT, PATCH, DELETE';
const ALLOWED_HEADERS = 'Authorization, Content-Type, Content-Encoding, Idempotency-Key, X-Request-Id';
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
].join(', ');

export function apiCors() {
  return async function cors(ctx: ApiContext, next: Next) {
    if (!ctx.get('Origin') || !(ctx.path === PREFIX || ctx.path.startsWith(`${PREFIX}/`))) return next();
    ctx.set('Access-Control-Allow-Origin', '*');
    // A preflight: answered here, before authentication (a browser sends it without the key).
    if (ctx.method === 'OPTIONS' && ctx.get('Access-Control-Request-Method')) {
      ctx.set('Access-Control-Allow-Methods', METHODS);
      ctx.set('Access-Control-Allow-Headers', ALLOWED_HEADERS);
      ctx.set('Access-Control-Max-Age', '600');
      ctx.status = 204;
      return;
    }
    ctx.set('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    await next();
  };
}
