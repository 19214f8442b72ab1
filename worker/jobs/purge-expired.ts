// Hourly housekeeping: idempotency keys live 24 h (DESIGN.md); rate-limit
// windows untouched for 2 minutes are empty by definition and can go; blobs
// whose upload never completed (a crash mid-stream) are dropped after an
// hour, and so are complete blobs nothing refers to (a crash between writing
// the bytes and committing the record that points at them). Objects of blobs
// in an S3 bucket whose rows went are deleted from the bucket (BlobStore.purgeObjects).
import { liveGrantSql } from '../../db/oauth-grants.ts';
import type { Queryable } from '../../db/pool.ts';
import { PURGE_EXPIRED } from '../../db/queues.ts';
import type { JobDefinition } from './types.ts';

/** Blobs are kept this long before an unreferenced one counts as orphaned (an upload in flight is younger). */
const ORPHAN_AFTER = '1 hour';

/**
 * Deletes blobs older than an hour that no row refers to. The referring
 * columns are read from the foreign keys to `blobs` (media originals and
 * thumbnails, file-manager files, and whatever a later table adds), so a new
 * owner of blobs is respected without touching this query.
 */
export async function purgeOrphanBlobs(db: Queryable): Promise<number> {
  const { rows: refs } = await db.query<{ tbl: string; col: string }>(
    `SELECT c.conrelid::regclass::text AS tbl, a.attname AS col
       FROM pg_constraint c
       JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
      WHERE c.contype = 'f' AND c.confrelid = 'blobs'::regclass AND c.conrelid <> 'blob_chunks'::regclass
      ORDER BY 1, 2`,
  );
  // Identifiers come from the catalog, quoted as such; nothing from input.
  const quote = (name: string) => name.split('.').map((part) => `"${part.replace(/"/g, '""')}"`).join('.');
  const unreferenced = refs.map((r) => `NOT EXISTS (SELECT 1 FROM ${quote(r.tbl)} x WHERE x.${quote(r.col)} = b.id)`);
  const { rowCount } = await db.query(
    `DELETE FROM blobs b WHERE b.created_at < now() - interval '${ORPHAN_AFTER}'
       AND (NOT b.complete${unreferenced.length ? ` OR (${unreferenced.join(' AND ')})` : ' OR true'})`,
  );
  return rowCount ?? 0;
}

export const purgeExpired: JobDefinition = {
  queue: PURGE_EXPIRED,
  cron: '17 * * * *',
  handler: async ({ pool, blobs }) => {
    await pool.query(`DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours'`);
    await pool.query(`DELETE FROM rate_limit_windows WHERE base_second < extract(epoch FROM now())::bigint - 180`);
    await purgeOrphanBlobs(pool);
    // OAuth: expired sign-in sessions, denials of authorization requests after 30 days, and registered clients unused for 30 days with no live grant.
    await pool.query('DELETE FROM oauth_sessions WHERE expires_at < now()');
    await pool.query('DELETE FROM used_consent_states WHERE expires_at < now()');
    await pool.query(`DELETE FROM oauth_denied_requests WHERE denied_at < now() - interval '30 days'`);
    await pool.query(
      `DELETE FROM oauth_clients c WHERE c.last_used_at < now() - interval '30 days'
         AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = c.id AND ${liveGrantSql('g')})`,
    );
    // Last, and bounded: objects of deleted blobs, 500 per batch, at most 20 batches an hour
    // (a backlog, e.g. after a company was deleted, drains over the next runs).
    for (let batch = 0; batch < 20; batch++) {
      const { deleted, failed } = await blobs.purgeObjects(pool);
      if (deleted === 0 || failed > 0) break;
    }
  },
};
