// The storage interface for uploaded bytes (product images and thumbnails,
// logos, avatars, form files). The default backend keeps them in PostgreSQL
// as 256 KB chunks (db/migrations/003_blobs.sql), so the service needs no
// other stateful component; another backend (S3-compatible) would implement
// the same four functions.
//
// Writes stream: memory stays at about one chunk per upload whatever the size.
// A write that exceeds `maxBytes` stops reading, deletes what it wrote and
// reports `too_large` (an expected outcome, not an exception).
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import type { Queryable } from '../db/pool.ts';
import { objectId } from '../lib/objectid.ts';

export const CHUNK_BYTES = 256 * 1024;

export type BlobInfo = { id: string; companyId: string; contentType: string; sizeBytes: number; sha256: string; createdAt: Date };

export type WriteResult = { ok: true; blob: BlobInfo } | { ok: false; reason: 'too_large'; sizeBytes: number };

export async function writeBlob(
  db: Queryable,
  companyId: string,
  source: AsyncIterable<Uint8Array> | Uint8Array,
  options: { contentType: string; maxBytes?: number },
): Promise<WriteResult> {
  const id = objectId();
  const hash = createHash('sha256');
  await db.query('INSERT INTO blobs (id, company_id, content_type) VALUES ($1, $2, $3)', [id, companyId, options.contentType]);
  let size = 0;
  let seq = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = async (all: boolean) => {
    while (pendingBytes >= CHUNK_BYTES || (all && pendingBytes > 0)) {
      const joined = Buffer.concat(pending);
      const chunk = joined.subarray(0, CHUNK_BYTES);
      const rest = joined.subarray(chunk.length);
      await db.query('INSERT INTO blob_chunks (blob_id, seq, data) VALUES ($1, $2, $3)', [id, seq++, chunk]);
      pending = rest.length ? [Buffer.from(rest)] : [];
      pendingBytes = rest.length;
    }
  };
  const iterable: AsyncIterable<Uint8Array> = source instanceof Uint8Array ? Readable.from([source]) : source;
  for await (const piece of iterable) {
    size += piece.length;
    if (options.maxBytes !== undefined && size > options.maxBytes) {
      await db.query('DELETE FROM blobs WHERE id = $1', [id]);
      return { ok: false, reason: 'too_large', sizeBytes: size };
    }
    hash.update(piece);
    pending.push(Buffer.from(piece));
    pendingBytes += piece.length;
    await flush(false);
  }
  await flush(true);
  const sha256 = hash.digest('hex');
  const { rows } = await db.query(
    'UPDATE blobs SET size_bytes = $2, sha256 = $3, complete = true WHERE id = $1 RETURNING created_at',
    [id, size, sha256],
  );
  return { ok: true, blob: { id, companyId, contentType: options.contentType, sizeBytes: size, sha256, createdAt: rows[0].created_at } };
}

export async function blobInfo(db: Queryable, id: string): Promise<BlobInfo | null> {
  const { rows } = await db.query(
    'SELECT id, company_id, content_type, size_bytes, sha256, created_at FROM blobs WHERE id = $1 AND complete',
    [id],
  );
  const row = rows[0];
  return row
    ? { id: row.id, companyId: row.company_id, contentType: row.content_type, sizeBytes: Number(row.size_bytes), sha256: row.sha256, createdAt: row.created_at }
    : null;
}

/** Streams a blob chunk by chunk (one query per chunk; memory stays at one chunk). */
export function readBlob(db: Queryable, id: string): Readable {
  async function* chunks() {
    for (let seq = 0; ; seq++) {
      const { rows } = await db.query('SELECT data FROM blob_chunks WHERE blob_id = $1 AND seq = $2', [id, seq]);
      if (!rows[0]) return;
      yield rows[0].data as Buffer;
    }
  }
  return Readable.from(chunks());
}

/**
 * The whole blob in memory (the worker's thumbnail input, a form file's
 * content check). It comes over `COPY ... TO STDOUT (FORMAT binary)`: the bytes
 * as stored. A plain SELECT sends bytea as hex text, which PostgreSQL spends
 * ~7 ms per MB encoding and Node as much again decoding: 4× slower, and a
 * third of a thumbnail's time (docs/bench.md, "Thumbnails").
 */
export async function readBlobBuffer(db: Queryable, id: string): Promise<Buffer> {
  if (!(db instanceof pg.Pool)) return copyChunks(db, id);
  const client = await db.connect();
  try {
    const bytes = await copyChunks(client, id);
    client.release();
    return bytes;
  } catch (error) {
    // A COPY cut off mid-stream leaves the connection in an unknown state: discard it.
    client.release(error as Error);
    throw error;
  }
}

async function copyChunks(client: pg.PoolClient, id: string): Promise<Buffer> {
  const sql = `COPY (SELECT data FROM blob_chunks WHERE blob_id = ${client.escapeLiteral(id)} ORDER BY seq) TO STDOUT (FORMAT binary)`;
  const parts: Buffer[] = [];
  for await (const part of client.query(copyTo(sql))) parts.push(part as Buffer);
  return joinByteaRows(Buffer.concat(parts));
}

/**
 * PostgreSQL's binary COPY format (docs: "COPY", "Binary Format") for rows of
 * one non-null bytea column: an 11-byte signature, a flags word and a header
 * extension, then per row a field count (1), a length and the bytes, then -1.
 * The rows' bytes are moved together inside the same buffer (no second copy
 * of the blob) and returned as a view of it.
 */
function joinByteaRows(all: Buffer): Buffer {
  let at = 11 + 4;
  at += 4 + all.readInt32BE(at);
  const start = at;
  let end = at;
  for (;;) {
    const count = all.readInt16BE(at);
    if (count === -1) break;
    const length = all.readInt32BE(at + 2);
    at += 6;
    all.copyWithin(end, at, at + length);
    end += length;
    at += length;
  }
  return all.subarray(start, end);
}

export async function deleteBlob(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM blobs WHERE id = $1', [id]);
}
