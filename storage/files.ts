// The company file manager: folders by absolute path and files whose bytes
// are blobs (storage/blobs.ts). Files here are private: nothing in the public
// API serves them, and anything that ever does must use `downloadHeaders`.
import type { Queryable } from '../db/pool.ts';
import { objectId } from '../lib/objectid.ts';

const MIB = 1024 * 1024;

/** A path segment made safe: no separators, no control characters, bounded length. */
export function pathSegment(value: string, fallback: string): string {
  const cleaned = value
    .normalize('NFKC')
    .replace(/[\p{Cc}\p{Cf}]/gu, '')
    .replace(/[\\/]/g, '-')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^\.+/, '')
    .slice(0, 120);
  return cleaned || fallback;
}

/**
 * Creates a folder at `path`; when the path is taken (two submissions the same
 * day with the same email) it becomes `path (2)`, `path (3)`… so each
 * submission has a folder of its own.
 */
export async function createUniqueFolder(db: Queryable, companyId: string, path: string): Promise<{ id: string; path: string }> {
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? path : `${path} (${n})`;
    const { rows } = await db.query(
      `INSERT INTO file_folders (id, company_id, path) VALUES ($1, $2, $3)
       ON CONFLICT (company_id, path) DO NOTHING RETURNING id, path`,
      [objectId(), companyId, candidate],
    );
    if (rows[0]) return rows[0];
  }
}

/**
 * `name`, or `name (2).ext`, `(3)`… when a file of the folder already has it (compared without
 * case): a folder path and a file name then name one file, as a folder path names one folder.
 * `taken` holds the names given so far, lowercased, and gets this one.
 */
export function uniqueFileName(taken: Set<string>, name: string): string {
  const dot = name.lastIndexOf('.');
  const [base, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
  let candidate = name;
  for (let n = 2; taken.has(candidate.toLowerCase()); n++) candidate = `${base} (${n})${ext}`;
  taken.add(candidate.toLowerCase());
  return candidate;
}

export type NewFile = { blobId: string; name: string; contentType: string; sizeBytes: number; sha256: string };

export async function insertFile(db: Queryable, companyId: string, folderId: string, file: NewFile): Promise<string> {
  const id = objectId();
  await db.query(
    `INSERT INTO files (id, company_id, folder_id, blob_id, name, content_type, size_bytes, sha256)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [id, companyId, folderId, file.blobId, file.name, file.contentType, file.sizeBytes, file.sha256],
  );
  return id;
}

/**
 * Bytes of everything the company keeps: file-manager files (form uploads),
 * media originals and thumbnails (catalog images, logos, avatars). Blobs
 * staged for a request still in flight are not counted until something
 * refers to them.
 */
export async function storedBytes(db: Queryable, companyId: string): Promise<number> {
  const { rows } = await db.query<{ n: string | number }>(
    `SELECT coalesce(sum(b.size_bytes), 0)::bigint AS n FROM blobs b
      WHERE b.company_id = $1 AND b.complete
        AND (EXISTS (SELECT 1 FROM files f WHERE f.blob_id = b.id)
          OR EXISTS (SELECT 1 FROM media m WHERE m.original_blob_id = b.id OR m.thumbnail_blob_id = b.id))`,
    [companyId],
  );
  return Number(rows[0].n);
}

async function freeBytesOf(db: Queryable, companyId: string, lock: boolean): Promise<number> {
  const { rows } = await db.query(`SELECT storage_quota_mb FROM companies WHERE id = $1${lock ? ' FOR NO KEY UPDATE' : ''}`, [companyId]);
  const quota = Number(rows[0]?.storage_quota_mb ?? 0) * MIB;
  return Math.max(0, quota - (await storedBytes(db, companyId)));
}

/** Bytes the company may still store, read without a lock: a first check before bytes are streamed in. */
export function freeBytes(db: Queryable, companyId: string): Promise<number> {
  return freeBytesOf(db, companyId, false);
}

/**
 * Bytes the company may still store. Locks the company row so concurrent
 * submissions of one company take turns: two cannot both see the last free
 * megabyte. Call inside the transaction that inserts the files.
 */
export function lockFreeBytes(db: Queryable, companyId: string): Promise<number> {
  return freeBytesOf(db, companyId, true);
}

export type StoredFile = { id: string; blob_id: string; name: string; content_type: string; size_bytes: number };

/** A company's stored file by id; null when it has none by that id (another company's included). */
export async function findFile(db: Queryable, companyId: string, id: string): Promise<StoredFile | null> {
  const { rows } = await db.query<StoredFile>('SELECT id, blob_id, name, content_type, size_bytes FROM files WHERE company_id = $1 AND id = $2', [companyId, id]);
  return rows[0] ?? null;
}

/** Headers for serving a stored file: always a download, never sniffed or rendered inline. */
export function downloadHeaders(file: { name: string; contentType: string; sizeBytes: number }): Record<string, string> {
  const ascii = file.name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return {
    'Content-Type': file.contentType,
    'Content-Length': String(file.sizeBytes),
    // RFC 8187 attr-char: encodeURIComponent leaves ' ( ) * unescaped, which the grammar does not allow.
    'Content-Disposition': `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(file.name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`,
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "default-src 'none'; sandbox",
    'Cache-Control': 'private, no-store',
  };
}
