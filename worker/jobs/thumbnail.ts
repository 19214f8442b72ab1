// Thumbnails of uploaded catalog images (queue `thumbnail`, data {media_id}).
//
// - Decoding happens here, never in the web process: sharp with a 40 MP
//   limit (storage/images.ts), first frame only, EXIF orientation applied,
//   metadata stripped, WebP inside 400×400.
// - The original is only ever read. A transient failure (database, storage
//   not readable) throws, and pg-boss retries with exponential backoff; an
//   image libvips cannot decode is a permanent, expected outcome: recorded as
//   `failed` on the media row, not retried. Either way the original and its
//   URL stay as they were.
// - The result is written only if the media row is still current (the image
//   may have been replaced or removed meanwhile); otherwise it is discarded.
import type { Job, JobResult } from 'pg-boss';
import { prepared, type Queryable } from '../../db/pool.ts';
import { log } from '../../lib/log.ts';
import { deleteBlob } from '../../storage/blobs.ts';
import { makeThumbnail, THUMBNAIL_TYPE } from '../../storage/images.ts';
import { THUMBNAIL, type ThumbnailJob } from '../../db/queues.ts';
import { MEDIA_OWNERS, type MediaOwner } from '../../db/media-owners.ts';
import { mediaToken, mediaUrl } from '../../storage/media-items.ts';
import type { JobDefinition, WorkerDeps } from './types.ts';

export async function processThumbnail({ pool, config, blobs }: Pick<WorkerDeps, 'pool' | 'config' | 'blobs'>, mediaId: string): Promise<'done' | 'gone' | 'failed'> {
  const { rows } = await pool.query(prepared(
    `SELECT m.*, b.size_bytes AS blob_size, b.object_key AS blob_object_key
       FROM media m JOIN blobs b ON b.id = m.original_blob_id WHERE m.id = $1 AND b.complete`,
    [mediaId],
  ));
  const media = rows[0];
  if (!media || media.status !== 'pending') return 'gone';
  const original = await blobs.readBuffer(pool, media.original_blob_id, { objectKey: media.blob_object_key });
  if (original.length !== Number(media.blob_size)) {
    throw new Error(`original of media ${mediaId} not fully readable (${original.length} of ${media.blob_size} bytes)`);
  }
  let thumbnail: Buffer;
  try {
    thumbnail = await makeThumbnail(original);
  } catch (error) {
    await pool.query(`UPDATE media SET status = 'failed', error = $2, updated_at = now() WHERE id = $1 AND status = 'pending'`, [
      mediaId,
      String((error as Error).message).slice(0, 500),
    ]);
    log('thumbnail.failed', { media_id: mediaId, error: (error as Error).message });
    return 'failed';
  }
  const written = await blobs.write(pool, media.company_id, thumbnail, { contentType: THUMBNAIL_TYPE });
  if (!written.ok) throw new Error('unreachable: no size limit was given');
  const filename = media.filename.replace(/\.[^.]+$/, '') + '-thumb.webp';
  const token = mediaToken();
  const url = mediaUrl(config.siteUrl, token, filename);
  if (!(await applyThumbnail(pool, media, written.blob.id, token, url))) {
    await deleteBlob(pool, written.blob.id);
    return 'gone';
  }
  return 'done';
}

/**
 * Points the media row and its owner at the thumbnail, if the media row is
 * still pending and still the owner's image; false if not. One statement
 * (one round trip where a transaction took five; docs/bench.md, "Thumbnails"),
 * taking its locks in the order an upload or a removal of the image takes
 * them (api/uploads/image-route.ts): the owner's row, then the media row.
 * Taking the media row first deadlocked with a replacement deleting this
 * media under the owner's lock. `EXISTS (SELECT 1 FROM owner)` is
 * uncorrelated, so PostgreSQL evaluates it once, before it reads the media
 * row; `shown` reads the media update's result, so it runs after it.
 */
async function applyThumbnail(pool: Queryable, media: { id: string; owner_type: MediaOwner; owner_id: string }, blobId: string, token: string, url: string): Promise<boolean> {
  const spec = MEDIA_OWNERS[media.owner_type];
  const { rows } = await pool.query(prepared(
    `WITH owner AS (SELECT 1 FROM ${spec.table} WHERE id = $4 FOR NO KEY UPDATE),
     applied AS (
       UPDATE media SET thumbnail_blob_id = $2, thumbnail_token = $3, status = 'ready', error = NULL, updated_at = now()
        WHERE id = $1 AND status = 'pending' AND EXISTS (SELECT 1 FROM owner)
        RETURNING id
     ),
     shown AS (
       -- The owner by its primary key (media.owner_id), and only while this media is still its image.
       UPDATE ${spec.table} SET ${spec.thumbnail} = $5 WHERE id = $4 AND ${spec.media} = $1 AND EXISTS (SELECT 1 FROM applied)
     )
     SELECT EXISTS (SELECT 1 FROM applied) AS applied`,
    [media.id, blobId, token, media.owner_id, url],
  ));
  return rows[0].applied;
}

// Batches of 4 with per-job results, the images of a batch decoded in
// parallel (sharp runs on libuv's thread pool, so one process keeps every
// core busy): a failing image retries alone, and a full batch makes pg-boss
// fetch again at once (with batchSize 1 it would wait a polling interval
// between every image). One batch at a time per process bounds memory: at
// most 4 decodes of at most 40 MP each.
export const thumbnail: JobDefinition<ThumbnailJob> = {
  queue: THUMBNAIL,
  work: { batchSize: 4, burstWhenBatchFull: true, perJobResults: true, localConcurrency: 1, pollingIntervalSeconds: 0.5 },
  handler: (deps, jobs: Job<ThumbnailJob>[]): Promise<JobResult[]> =>
    Promise.all(
      jobs.map(async (job): Promise<JobResult> => {
        try {
          return { id: job.id, status: 'completed', output: { outcome: await processThumbnail(deps, job.data.media_id) } };
        } catch (error) {
          log('thumbnail.retry', { media_id: job.data.media_id, error: (error as Error).message });
          return { id: job.id, status: 'failed', output: { message: (error as Error).message } };
        }
      }),
    ),
};
