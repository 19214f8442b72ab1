// Public, stable URLs for catalog images: `GET /media/<blob_id>/<filename>`.
// Product images are meant for public storefronts, so no key is needed; only
// blobs that a media row names (originals and thumbnails) are served, never
// other blobs such as private form files. A blob never changes once written
// (a new upload gets a new id), so responses are cacheable for a year.
import Router from '@koa/router';
import { readBlob } from '../storage/blobs.ts';
import { ApiError } from './errors.ts';
import type { ApiContextExtension, ApiRouter, ApiState, Deps } from './types.ts';

const BLOB_ID = /^[0-9a-f]{24}$/;

export function mediaRouter(deps: Deps): ApiRouter {
  const router: ApiRouter = new Router<ApiState, ApiContextExtension>();
  router.get('/media/:blob_id/:filename', async (ctx) => {
    const blobId = ctx.params.blob_id;
    if (!BLOB_ID.test(blobId)) throw new ApiError('not_found');
    const { rows } = await deps.pool.query(
      `SELECT b.content_type, b.size_bytes, b.sha256, b.created_at
         FROM blobs b
        WHERE b.id = $1 AND b.complete
          AND EXISTS (SELECT 1 FROM media m WHERE m.original_blob_id = b.id OR m.thumbnail_blob_id = b.id)`,
      [blobId],
    );
    const blob = rows[0];
    if (!blob) throw new ApiError('not_found');
    const etag = `"${blob.sha256}"`;
    ctx.set('ETag', etag);
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Content-Security-Policy', "default-src 'none'; sandbox");
    ctx.set('Cross-Origin-Resource-Policy', 'cross-origin');
    ctx.set('Last-Modified', new Date(blob.created_at).toUTCString());
    const inm = ctx.get('If-None-Match');
    if (inm && inm.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)) {
      ctx.status = 304;
      return;
    }
    ctx.status = 200;
    ctx.type = blob.content_type;
    if (ctx.method !== 'HEAD') ctx.body = readBlob(deps.pool, blobId);
    ctx.length = Number(blob.size_bytes); // after the body: assigning a stream drops Content-Length
  });
  return router;
}
