import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createPool, type Pool } from '../db/pool.ts';
import { blobInfo, CHUNK_BYTES, deleteBlob, readBlob, readBlobBuffer, writeBlob } from '../storage/blobs.ts';
import { createTestDatabase } from './helpers/db.ts';
import { seedTenant } from './helpers/app.ts';

describe('blob storage in PostgreSQL', () => {
  let pool: Pool;
  let drop: () => Promise<void>;
  let companyId: string;
  before(async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    pool = createPool(db.url, 4);
    companyId = (await seedTenant(pool)).companyId;
  });
  after(async () => {
    await pool.end();
    await drop();
  });

  test('bytes written in pieces read back identical, across chunk boundaries', async () => {
    const bytes = randomBytes(CHUNK_BYTES * 2 + 1234);
    async function* pieces() {
      for (let i = 0; i < bytes.length; i += 10_000) yield bytes.subarray(i, i + 10_000);
    }
    const result = await writeBlob(pool, companyId, pieces(), { contentType: 'application/octet-stream' });
    assert.ok(result.ok);
    assert.equal(result.blob.sizeBytes, bytes.length);
    assert.deepEqual(await readBlobBuffer(pool, result.blob.id), bytes);
    const streamed: Buffer[] = [];
    for await (const chunk of readBlob(pool, result.blob.id)) streamed.push(chunk);
    assert.deepEqual(Buffer.concat(streamed), bytes);
    assert.equal((await blobInfo(pool, result.blob.id))?.sizeBytes, bytes.length);
    await deleteBlob(pool, result.blob.id);
    assert.equal(await blobInfo(pool, result.blob.id), null);
  });

  test('a write over maxBytes is refused and leaves nothing behind', async () => {
    const before = (await pool.query('SELECT count(*)::int AS n FROM blob_chunks')).rows[0].n;
    const result = await writeBlob(pool, companyId, randomBytes(CHUNK_BYTES + 10), { contentType: 'image/png', maxBytes: CHUNK_BYTES });
    assert.equal(result.ok, false);
    assert.equal((await pool.query('SELECT count(*)::int AS n FROM blob_chunks')).rows[0].n, before);
  });
});
