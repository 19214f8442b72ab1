// The image columns of a media owner (db/media-owners.ts MEDIA_OWNERS: a
// product, variant, category or brand row): which media it shows, pointing it
// at a new one or at none, and reading its URLs back. Table and column names
// come from MEDIA_OWNERS, never from input.
import type { Queryable } from '../../db/pool.ts';
import { MEDIA_OWNERS, type MediaOwner } from '../../db/media-owners.ts';
import { ApiError } from '../errors.ts';

export type OwnerImage = { image_url: string | null; thumbnail_url: string | null };

/** The owner's current media id, its row locked until the transaction ends; 404 when the company has no such owner. */
export async function lockOwnerMedia(db: Queryable, owner: MediaOwner, companyId: string, ownerId: string): Promise<string | null> {
  const spec = MEDIA_OWNERS[owner];
  const { rows } = await db.query<{ media_id: string | null }>(
    `SELECT ${spec.media} AS media_id FROM ${spec.table} WHERE ${spec.scope} FOR UPDATE`,
    [companyId, ownerId],
  );
  if (!rows[0]) throw new ApiError('not_found');
  return rows[0].media_id;
}

/** The owner's image (its media id) without a lock: a first look before any byte is stored. 404 when there is no such owner. */
export async function readOwnerMediaId(db: Queryable, owner: MediaOwner, companyId: string, ownerId: string): Promise<string | null> {
  const spec = MEDIA_OWNERS[owner];
  const { rows } = await db.query<{ media_id: string | null }>(`SELECT ${spec.media} AS media_id FROM ${spec.table} WHERE ${spec.scope}`, [companyId, ownerId]);
  if (!rows[0]) throw new ApiError('not_found');
  return rows[0].media_id;
}

/**
 * Points the owner at a stored image (its thumbnail to come from the worker), or at none. An owner
 * already so (a DELETE of an image there is not) is not written: its `updated_at` stays.
 */
export async function setOwnerImage(
  db: Queryable,
  owner: MediaOwner,
  companyId: string,
  ownerId: string,
  image: { url: string; mediaId: string } | null,
): Promise<void> {
  const spec = MEDIA_OWNERS[owner];
  await db.query(
    `UPDATE ${spec.table} SET ${spec.url} = $3, ${spec.thumbnail} = NULL, ${spec.media} = $4, updated_at = now()
      WHERE ${spec.scope} AND (${spec.url}, ${spec.thumbnail}, ${spec.media}) IS DISTINCT FROM ($3::text, NULL::text, $4::text)`,
    [companyId, ownerId, image?.url ?? null, image?.mediaId ?? null],
  );
}

/** The owner's image and thumbnail URLs (both null for an owner the company does not have). */
export async function readOwnerImage(db: Queryable, owner: MediaOwner, companyId: string, ownerId: string): Promise<OwnerImage> {
  const spec = MEDIA_OWNERS[owner];
  const { rows } = await db.query<{ url: string | null; thumbnail: string | null }>(
    `SELECT ${spec.url} AS url, ${spec.thumbnail} AS thumbnail FROM ${spec.table} WHERE ${spec.scope}`,
    [companyId, ownerId],
  );
  return { image_url: rows[0]?.url ?? null, thumbnail_url: rows[0]?.thumbnail ?? null };
}
