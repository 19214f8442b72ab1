// Where each kind of record keeps its uploaded image (storage/media-items.ts
// stores the files), and the release phase's rewrite of their URLs when
// SITE_URL changes: database knowledge, so that db/migrate-cli.ts (the
// release) can run it.
import type { Queryable } from './pool.ts';

/** Where each kind of owner keeps its image: trusted identifiers only. */
// `scope` selects the owner row of a company: `$1` is the company id, `$2`
// the owner's id (the company itself for its logo; a member for an avatar).
const OF_COMPANY = 'company_id = $1 AND id = $2';
export const MEDIA_OWNERS = {
  product: { table: 'products', media: 'image_media_id', url: 'image_url', thumbnail: 'thumbnail_url', scope: OF_COMPANY },
  variant: { table: 'product_variants', media: 'image_media_id', url: 'image_url', thumbnail: 'thumbnail_url', scope: OF_COMPANY },
  product_category: { table: 'product_categories', media: 'image_media_id', url: 'image_url', thumbnail: 'thumbnail_url', scope: OF_COMPANY },
  brand: { table: 'brands', media: 'logo_media_id', url: 'logo_url', thumbnail: 'logo_thumbnail_url', scope: OF_COMPANY },
  company: { table: 'companies', media: 'logo_media_id', url: 'logo_url', thumbnail: 'logo_thumbnail_url', scope: 'id = $1 AND id = $2' },
  user: {
    table: 'users',
    media: 'avatar_media_id',
    url: 'avatar_url',
    thumbnail: 'avatar_thumbnail_url',
    scope: 'id = $2 AND deleted_at IS NULL AND EXISTS (SELECT 1 FROM memberships m WHERE m.company_id = $1 AND m.user_id = $2)',
  },
} as const;

export type MediaOwner = keyof typeof MEDIA_OWNERS;

// A media URL is stored whole, with the SITE_URL of the process that took the
// upload or made the thumbnail. When SITE_URL changes (a new domain; in
// development, another PORT), the release phase and `npm start` move every
// stored URL of this service's media to the new root (rebaseMediaUrls), so
// no image answers with a host the service is no longer reached at.
/** A stored URL of this service's media: its path (`[1]`) and token (`[2]`). */
const STORED_MEDIA_URL = String.raw`^https?://[^/]+(/media/([0-9a-f]{32})/.*)$`;

/**
 * Rewrites the stored URLs of this service's media whose root is not
 * `siteUrl` (lib/config.ts: scheme, host and port); returns how many rows
 * changed. A URL is this service's when its path is `/media/<token>/…` and a
 * media row holds that token (128 random bits), so an image URL a client set
 * to its own CDN is never touched. Idempotent.
 */
export async function rebaseMediaUrls(db: Queryable, siteUrl: string): Promise<number> {
  let changed = 0;
  for (const owner of Object.values(MEDIA_OWNERS)) {
    for (const column of [owner.url, owner.thumbnail]) {
      const { rowCount } = await db.query(
        `UPDATE ${owner.table} SET ${column} = $1 || (regexp_match(${column}, $2))[1]
          WHERE ${column} ~ $2 AND NOT starts_with(${column}, $1 || '/media/')
            AND EXISTS (SELECT 1 FROM media m WHERE (regexp_match(${column}, $2))[2] IN (m.original_token, m.thumbnail_token))`,
        [siteUrl, STORED_MEDIA_URL],
      );
      changed += rowCount ?? 0;
    }
  }
  return changed;
}
