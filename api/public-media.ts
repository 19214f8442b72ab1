// Public, stable URLs for catalog images: `GET /media/<token>/<filename>`.
// Product images are meant for public storefronts, so no key is needed; the
// token (128 random bits, storage/media-items.ts) names one original or thumbnail
// of a media row, so no other blob (private form files) is ever reachable and
// one URL says nothing about any other. A file never changes once written (a
// new upload gets a new token), so responses are cacheable for a year.
import { Readable } from 'node:stream';
import Router from '@koa/router';

import { findPublicBlob, MEDIA_TOKEN } from '../storage/media-items.ts';
import { ApiError } from './errors.ts';
import { limitUnauthenticated } from './middleware/rate-limit.ts';
import type { ApiContextExtension, ApiRouter, ApiState, Deps } from './types.ts';

export function mediaRouter(deps: Deps): ApiRouter {
  const router: ApiRouter = new Router<ApiState, ApiContextExtension>();
  router.get('/media/:token/:filename', async (ctx) => {
    // Per client address, like refused credentials: no key to count against,
    // and a client probing for tokens is throttled like any other traffic.
    await limitUnauthenticated(ctx);
    const token = ctx.params.token;
    const blob = MEDIA_TOKEN.test(token) ? await findPublicBlob(deps.pool, token) : null;
    if (!blob) throw new ApiError('not_found');
    const etag = `"${blob.sha256}"`;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
    ctx.set('Cross-Origin-Resource-Policy', 'cross-origin');
    // Public files: a storefront may fetch() one or draw it on a canvas (crossOrigin), not only show it in <img>.
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.set('Last-Modified', new Date(blob.created_at).toUTCString());
    const inm = ctx.get('If-None-Match');
    // `*` matches any current representation (RFC 9110 §13.1.2); a tag matches weakly. Without
    // If-None-Match, If-Modified-Since at or after the file's time (to the second) is 304 too (§13.1.3).
    const since = inm ? Number.NaN : Date.parse(ctx.get('If-Modified-Since'));
    const notModified = inm
      ? inm.trim() === '*' || inm.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)
      : Math.floor(new Date(blob.created_at).getTime() / 1000) * 1000 <= since;
    if (notModified) {
      ctx.status = 304;
      return;
    }
    ctx.status = 200;
    ctx.type = blob.content_type;
    if (ctx.method !== 'HEAD') ctx.body = await startedStream(deps.blobs.read(deps.pool, blob.id));
    ctx.length = Number(blob.size_bytes); // after the body: assigning a stream drops Content-Length
  });
  return router;
}

/**
 * The stream with its first chunk already read: a store that fails before any byte (the bucket down,
 * the object missing) fails here, while an answer can still be given (503, or 500), rather than as a
 * cut connection after a 200. A failure later in the body can only end the connection.
 */
export async function startedStream(stream: Readable): Promise<Readable> {
  const chunks = stream[Symbol.asyncIterator]();
  const first = await chunks.next();
  async function* all() {
    if (first.done) return;
    yield first.value;
    for (let next = await chunks.next(); !next.done; next = await chunks.next()) yield next.value;
  }
  const out = Readable.from(all());
  // A visitor who hangs up (Koa destroys the body) ends the store's read too: an S3 object's body left
  // paused would hold its connection to the bucket for good (32 such downloads once blocked every call).
  out.once('close', () => stream.destroy());
  return out;
}
