// Uploaded catalog images ("media"): the original blob, the thumbnail blob
// the worker adds later, and the record (product, variant, brand, category)
// that shows them. Used by the web process (attach, detach) and by the
// thumbnail job; URLs are public: `{site_url}/media/<token>/<name>`, where
// the token is 128 random bits of that one file (never an id a client could
// count from: an ObjectId is a timestamp and a counter). The token and name
// never change; the root follows SITE_URL (db/media-owners.ts, rebaseMediaUrls).
import { randomBytes } from 'node:crypto';
import type { Queryable } from '../db/pool.ts';
import type { MediaOwner } from '../db/media-owners.ts';
import { objectId } from '../lib/objectid.ts';
import { deleteBlob, type BlobInfo } from './blobs.ts';
import type { InspectedImage } from './images.ts';

/** The public, unguessable name of one media file: 32 hex characters. */
export function mediaToken(): string {
  return randomBytes(16).toString('hex');
}

export const MEDIA_TOKEN = /^[0-9a-f]{32}$/;

export function mediaUrl(siteUrl: string, token: string, filename: string): string {
  return `${siteUrl}/media/${token}/${encodeURIComponent(filename)}`;
}

/** The token a media URL names (`…/media/<token>/<name>`, a trailing slash too, as the route answers it), or null for any other URL. */
function tokenOf(url: string | null): string | null {
  if (!url) return null;
  try {
    return /\/media\/([0-9a-f]{32})\/[^/]+\/?$/.exec(new URL(url).pathname)?.[1] ?? null;
  } catch {
    return null;
  }
}

/**
 * What writing `url` over a record's image (or logo) means, judged by the media token in it (the name
 * after the token is for people: any name answers the same file):
 * - `kept`: the URL stored (a record written back as read), or the record's own upload under another
 *   name: no change, the upload and its thumbnail stay;
 * - `own_thumbnail`: the record's own thumbnail, which replacing the upload would delete: the caller
 *   refuses it (422) rather than store a URL that no longer answers;
 * - `replaced`: any other URL: the upload, if any, is deleted and the URL stored.
 */
function imageUrlWrite(url: string | null, current: { url: string | null; thumbnailUrl: string | null; mediaId: string | null } | null): 'kept' | 'own_thumbnail' | 'replaced' {
  if (!current) return 'replaced';
  if (url === current.url) return 'kept';
  if (!current.mediaId) return 'replaced';
  const token = tokenOf(url);
  if (token && token === tokenOf(current.url)) return 'kept';
  if (token && token === tokenOf(current.thumbnailUrl)) return 'own_thumbnail';
  return 'replaced';
}

/** A record's image columns: products, categories and variants keep `image_*`, brands `logo_*`. */
const IMAGE_COLUMNS = { url: 'image_url', thumbnail: 'thumbnail_url', media: 'image_media_id' } as const;
export const LOGO_COLUMNS = { url: 'logo_url', thumbnail: 'logo_thumbnail_url', media: 'logo_media_id' } as const;
type ImageColumns = typeof IMAGE_COLUMNS | typeof LOGO_COLUMNS;

/**
 * A write of `url` over a record's image (`columns`, IMAGE_COLUMNS by default): the columns to set
 * (none when the upload is kept; the upload deleted when replaced), or `own_thumbnail` for the caller
 * to refuse (imageUrlWrite).
 */
export async function imageUrlColumns(
  db: Queryable,
  companyId: string,
  url: string | null,
  /** The record as stored (a row with `columns`), null on create. */
  existing: object | null,
  columns: ImageColumns = IMAGE_COLUMNS,
): Promise<Record<string, unknown> | 'own_thumbnail'> {
  const current = existing as Record<string, string | null> | null;
  const write = imageUrlWrite(url, current && { url: current[columns.url] ?? null, thumbnailUrl: current[columns.thumbnail] ?? null, mediaId: current[columns.media] ?? null });
  if (write !== 'replaced') return write === 'kept' ? {} : write;
  if (current) await deleteMedia(db, companyId, [current[columns.media]]);
  return { [columns.url]: url, [columns.thumbnail]: null, [columns.media]: null };
}

/** The 422 message for `own_thumbnail` (imageUrlWrite), naming the field that reads the image's URL. */
export const ownThumbnail = (field: string) =>
  `es la miniatura de la imagen subida de este registro, que se borraría al reemplazarla: envía la URL de la imagen (${field} tal como se lee) o sube otra`;

export type StoredMedia = { id: string; url: string; blobId: string; filename: string };

/** The media row of an original already written (`blob`); the caller points the owner at it and enqueues the thumbnail. */
export async function storeMedia(
  db: Queryable,
  siteUrl: string,
  input: { companyId: string; ownerType: MediaOwner; ownerId: string; blob: BlobInfo; image: InspectedImage; filename: string },
): Promise<StoredMedia> {
  const id = objectId();
  const token = mediaToken();
  await db.query(
    `INSERT INTO media (id, company_id, owner_type, owner_id, original_blob_id, original_token, filename, content_type, width, height, frames, size_bytes)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [id, input.companyId, input.ownerType, input.ownerId, input.blob.id, token, input.filename, input.image.contentType,
      input.image.width, input.image.height, input.image.frames, input.blob.sizeBytes],
  );
  return { id, url: mediaUrl(siteUrl, token, input.filename), blobId: input.blob.id, filename: input.filename };
}

/** The blob a public media URL names: an original or a thumbnail, by its token; null for anything else. */
export async function findPublicBlob(db: Queryable, token: string) {
  const { rows } = await db.query<{ id: string; content_type: string; size_bytes: number; sha256: string; created_at: Date }>(
    `SELECT b.id, b.content_type, b.size_bytes, b.sha256, b.created_at
       FROM media m
       JOIN blobs b ON b.id = CASE WHEN m.original_token = $1 THEN m.original_blob_id ELSE m.thumbnail_blob_id END
      WHERE (m.original_token = $1 OR m.thumbnail_token = $1) AND b.complete`,
    [token],
  );
  return rows[0] ?? null;
}

/** Deletes media rows and their bytes (original and thumbnail). */
export async function deleteMedia(db: Queryable, companyId: string, mediaIds: Array<string | null | undefined>): Promise<void> {
  const ids = mediaIds.filter((id): id is string => !!id);
  if (ids.length === 0) return;
  const { rows } = await db.query(
    'SELECT original_blob_id, thumbnail_blob_id FROM media WHERE company_id = $1 AND id = ANY($2)',
    [companyId, ids],
  );
  for (const row of rows) {
    if (row.thumbnail_blob_id) await deleteBlob(db, row.thumbnail_blob_id);
    await deleteBlob(db, row.original_blob_id); // cascades to the media row
  }
}

/** Bytes the media items keep in storage: originals and thumbnails (what deleting them gives back to the quota). */
export async function mediaBytes(db: Queryable, companyId: string, mediaIds: Array<string | null | undefined>): Promise<number> {
  const ids = mediaIds.filter((id): id is string => !!id);
  if (ids.length === 0) return 0;
  const { rows } = await db.query<{ n: string }>(
    `SELECT coalesce(sum(b.size_bytes), 0)::bigint AS n FROM media m JOIN blobs b ON b.id IN (m.original_blob_id, m.thumbnail_blob_id)
      WHERE m.company_id = $1 AND m.id = ANY($2)`,
    [companyId, ids],
  );
  return Number(rows[0].n);
}

/** Media of a product and all its variants (for deleting the product). */
export async function productMediaIds(db: Queryable, companyId: string, productId: string): Promise<string[]> {
  const { rows } = await db.query(
    `SELECT image_media_id AS id FROM products WHERE company_id = $1 AND id = $2 AND image_media_id IS NOT NULL
     UNION ALL
     SELECT image_media_id FROM product_variants WHERE company_id = $1 AND product_id = $2 AND image_media_id IS NOT NULL`,
    [companyId, productId],
  );
  return rows.map((r) => r.id);
}
