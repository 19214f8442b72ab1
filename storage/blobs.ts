// The storage of uploaded bytes (product images and thumbnails, logos,
// avatars, form files): one `BlobStore` per process, in the deps of the web
// and the worker. Every blob has its row in `blobs` (owner company, content
// type, size, SHA-256); its bytes are either
// - in PostgreSQL, as 256 KB chunks (db/migrations/003_blobs.sql): the
//   default, so the service needs no other stateful component; or
// - one object of an S3-compatible bucket (BLOB_STORE=s3, storage/s3.ts;
//   db/migrations/085_blob_objects.sql), which takes the bytes' I/O and
//   storage off the database (docs/bench.md, "Thumbnails").
// New blobs go to the configured store; reads follow the row, so switching a
// deployment's store moves nothing and breaks nothing.
//
// Writes stream: memory stays at about one chunk per upload whatever the size
// (to S3, a stream is spooled to a temporary file first: S3 needs the length
// and the hash before the body). A buffer already in memory (an image, a
// thumbnail) goes to PostgreSQL in one statement, row and chunks together. A
// write that exceeds `maxBytes` stops reading, deletes what it wrote and
// reports `too_large` (an expected outcome, not an exception). Deleting a blob deletes its row; a trigger queues its
// object, which the worker deletes from the bucket (`purgeObjects`, hourly).
import { createHash } from 'node:crypto';
import { open, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { prepared, type Queryable } from '../db/pool.ts';
import { logError } from '../lib/log.ts';
import { objectId } from '../lib/objectid.ts';
import { S3Client, type PutBody, type S3Config } from './s3.ts';

export const CHUNK_BYTES = 256 * 1024;

export type BlobInfo = { id: string; companyId: string; contentType: string; sizeBytes: number; sha256: string; createdAt: Date };

export type WriteResult = { ok: true; blob: BlobInfo } | { ok: false; reason: 'too_large'; sizeBytes: number };

type Source = AsyncIterable<Uint8Array> | Uint8Array;
type WriteOptions = { contentType: string; maxBytes?: number };

export class BlobStore {
  readonly #s3: S3Client | null;

  /** `s3` null: new blobs go to PostgreSQL. */
  constructor(s3: S3Config | null) {
    this.#s3 = s3 ? new S3Client(s3) : null;
  }

  /** Where new blobs go. */
  get backend(): 'postgres' | 's3' {
    return this.#s3 ? 's3' : 'postgres';
  }

  async write(db: Queryable, companyId: string, source: Source, options: WriteOptions): Promise<WriteResult> {
    if (this.#s3) return writeObject(this.#s3, db, companyId, source, options);
    return source instanceof Uint8Array ? insertBuffer(db, companyId, source, options) : writeChunks(db, companyId, source, options);
  }

  /** Streams a blob: chunk by chunk from PostgreSQL (one query per chunk), or the object's body. Memory stays at one chunk. */
  read(db: Queryable, id: string): Readable {
    const self = this;
    async function* bytes() {
      const key = await objectKeyOf(db, id);
      if (key) {
        yield* await self.#client(id).stream(key);
        return;
      }
      for (let seq = 0; ; seq++) {
        const { rows } = await db.query('SELECT data FROM blob_chunks WHERE blob_id = $1 AND seq = $2', [id, seq]);
        if (!rows[0]) return;
        yield rows[0].data as Buffer;
      }
    }
    return Readable.from(bytes());
  }

  /**
   * The whole blob in memory (the worker's thumbnail input, a form file's
   * content check). From PostgreSQL it comes over `COPY ... TO STDOUT (FORMAT
   * binary)`: the bytes as stored. A plain SELECT sends bytea as hex text,
   * which PostgreSQL spends ~7 ms per MB encoding and Node as much again
   * decoding: 4× slower, and a third of a thumbnail's time (docs/bench.md,
   * "Thumbnails").
   */
  async readBuffer(db: Queryable, id: string, known?: { objectKey: string | null }): Promise<Buffer> {
    // `known`: the row's object_key, when the caller has read the row already (one query fewer).
    const key = known ? known.objectKey : await objectKeyOf(db, id);
    if (key) return this.#client(id).get(key);
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

  /**
   * Deletes from the bucket the objects whose rows are gone (queued by the
   * trigger of migration 085), `limit` at most; returns how many. An object
   * the service refuses to delete stays queued, moved to the back so it does
   * not block the others, and is logged; this never throws for the service.
   * Without an S3 store configured the queue is left for a process that has one.
   */
  async purgeObjects(db: Queryable, limit = 500): Promise<{ deleted: number; failed: number }> {
    const s3 = this.#s3;
    if (!s3) return { deleted: 0, failed: 0 };
    const { rows } = await db.query<{ object_key: string }>(
      'SELECT object_key FROM blob_object_deletions ORDER BY queued_at, object_key LIMIT $1',
      [limit],
    );
    const done: string[] = [];
    const failed: string[] = [];
    let firstError: unknown = null;
    let next = 0;
    await Promise.all(Array.from({ length: Math.min(8, rows.length) }, async () => {
      while (next < rows.length) {
        const key = rows[next++].object_key;
        try {
          await s3.delete(key);
          done.push(key);
        } catch (error) {
          failed.push(key);
          firstError ??= error;
        }
      }
    }));
    if (done.length) await db.query('DELETE FROM blob_object_deletions WHERE object_key = ANY($1)', [done]);
    if (failed.length) {
      await db.query('UPDATE blob_object_deletions SET queued_at = now() WHERE object_key = ANY($1)', [failed]);
      logError('blobs.object_delete_failed', firstError, { failed: failed.length, deleted: done.length });
    }
    return { deleted: done.length, failed: failed.length };
  }

  close(): Promise<void> {
    return this.#s3?.close() ?? Promise.resolve();
  }

  #client(id: string): S3Client {
    if (!this.#s3) throw new Error(`blob ${id} is stored in an S3 bucket, and this process has no S3 store configured (BLOB_STORE=s3, docs/operations.md)`);
    return this.#s3;
  }
}

/** A blob's record, wherever its bytes are; null while it is being written. */
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

/**
 * Deletes a blob, wherever its bytes are: its row goes, its chunks cascade,
 * its object (if any) is queued by a trigger for `BlobStore.purgeObjects`,
 * all in the caller's transaction.
 */
export async function deleteBlob(db: Queryable, id: string): Promise<void> {
  await db.query('DELETE FROM blobs WHERE id = $1', [id]);
}

async function objectKeyOf(db: Queryable, id: string): Promise<string | null> {
  const { rows } = await db.query<{ object_key: string | null }>('SELECT object_key FROM blobs WHERE id = $1', [id]);
  return rows[0]?.object_key ?? null;
}

async function writeChunks(db: Queryable, companyId: string, source: AsyncIterable<Uint8Array>, options: WriteOptions): Promise<WriteResult> {
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
  for await (const piece of source) {
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
  return complete(db, id, companyId, options.contentType, size, hash.digest('hex'));
}

/**
 * A buffer already in memory, in one statement: the row, complete, and its
 * chunks, each a binary parameter (node-postgres sends a Buffer as bytes, not
 * hex). Nothing is written unless all is; the streaming path (`writeChunks`)
 * needs a statement per chunk and an incomplete row meanwhile. A thumbnail is three
 * round trips fewer (docs/bench.md, "Thumbnails").
 */
async function insertBuffer(db: Queryable, companyId: string, bytes: Uint8Array, options: WriteOptions): Promise<WriteResult> {
  if (options.maxBytes !== undefined && bytes.length > options.maxBytes) return { ok: false, reason: 'too_large', sizeBytes: bytes.length };
  const id = objectId();
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const chunks: Buffer[] = [];
  for (let at = 0; at < buffer.length; at += CHUNK_BYTES) chunks.push(buffer.subarray(at, at + CHUNK_BYTES));
  const FIRST_CHUNK_PARAM = 6;
  const chunkRows = chunks.map((_, seq) => `($1, ${seq}, $${FIRST_CHUNK_PARAM + seq})`).join(', ');
  const { rows } = await db.query(prepared(
    `WITH blob AS (
       INSERT INTO blobs (id, company_id, content_type, size_bytes, sha256, complete) VALUES ($1, $2, $3, $4, $5, true) RETURNING created_at
     )${chunks.length ? `, chunks AS (INSERT INTO blob_chunks (blob_id, seq, data) VALUES ${chunkRows})` : ''}
     SELECT created_at FROM blob`,
    [id, companyId, options.contentType, bytes.length, sha256, ...chunks],
  ));
  return { ok: true, blob: { id, companyId, contentType: options.contentType, sizeBytes: bytes.length, sha256, createdAt: rows[0].created_at } };
}

/**
 * A blob as one object. The bytes are measured and hashed first (a buffer as
 * it is; a stream spooled to a temporary file), so a write over `maxBytes`
 * stops before anything is stored. Then the row (incomplete, with its key),
 * then the PUT: a crash after the upload leaves a row the hourly purge
 * deletes, and with it (trigger) the object.
 */
async function writeObject(s3: S3Client, db: Queryable, companyId: string, source: Source, options: WriteOptions): Promise<WriteResult> {
  const hash = createHash('sha256');
  if (source instanceof Uint8Array) {
    if (options.maxBytes !== undefined && source.length > options.maxBytes) return { ok: false, reason: 'too_large', sizeBytes: source.length };
    const sha256 = hash.update(source).digest('hex');
    return storeObject(s3, db, companyId, options.contentType, { buffer: Buffer.from(source.buffer, source.byteOffset, source.length) }, source.length, sha256);
  }
  const file = path.join(os.tmpdir(), `blob-${objectId()}`);
  const out = await open(file, 'wx', 0o600);
  try {
    let size = 0;
    for await (const piece of source) {
      size += piece.length;
      if (options.maxBytes !== undefined && size > options.maxBytes) return { ok: false, reason: 'too_large', sizeBytes: size };
      hash.update(piece);
      await out.write(piece);
    }
    await out.close();
    return await storeObject(s3, db, companyId, options.contentType, { file, size }, size, hash.digest('hex'));
  } finally {
    await out.close().catch(() => {});
    await unlink(file).catch(() => {});
  }
}

/** The row, the PUT (if it fails the row goes, its object queued in case the service kept any part, and the error is the caller's), the row completed. */
async function storeObject(s3: S3Client, db: Queryable, companyId: string, contentType: string, body: PutBody, size: number, sha256: string): Promise<WriteResult> {
  const id = objectId();
  const key = s3.key(`${companyId}/${id}`);
  await db.query('INSERT INTO blobs (id, company_id, content_type, object_key) VALUES ($1, $2, $3, $4)', [id, companyId, contentType, key]);
  try {
    await s3.put(key, body, { contentType, sha256 });
  } catch (error) {
    await db.query('DELETE FROM blobs WHERE id = $1', [id]).catch(() => {});
    throw error;
  }
  return complete(db, id, companyId, contentType, size, sha256);
}

async function complete(db: Queryable, id: string, companyId: string, contentType: string, size: number, sha256: string): Promise<WriteResult> {
  const { rows } = await db.query(
    'UPDATE blobs SET size_bytes = $2, sha256 = $3, complete = true WHERE id = $1 RETURNING created_at',
    [id, size, sha256],
  );
  return { ok: true, blob: { id, companyId, contentType, sizeBytes: size, sha256, createdAt: rows[0].created_at } };
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

