import assert from 'node:assert/strict';
import { isDatabaseUnavailable, toApiError } from '../api/middleware/request.ts';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { createPool, type Pool } from '../db/pool.ts';
import { loadConfig } from '../lib/config.ts';
import { blobInfo, BlobStore, CHUNK_BYTES, deleteBlob } from '../storage/blobs.ts';
import { S3_ATTEMPTS, S3Client, S3Error } from '../storage/s3.ts';
import { createTestDatabase } from './helpers/db.ts';
import { seedTenant } from './helpers/app.ts';
import { startS3StandIn, type S3StandIn } from './helpers/s3-stand-in.ts';

async function* pieces(bytes: Buffer, size = 10_000) {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function readAll(stream: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of stream) parts.push(chunk);
  return Buffer.concat(parts);
}

const count = async (pool: Pool, sql: string, values: unknown[] = []) => (await pool.query<{ n: number }>(sql, values)).rows[0].n;

describe('blob storage', () => {
  let pool: Pool;
  let drop: () => Promise<void>;
  let companyId: string;
  let s3: S3StandIn;
  let postgres: BlobStore;
  let bucket: BlobStore;
  before(async () => {
    const db = await createTestDatabase();
    drop = db.drop;
    pool = createPool(db.url, 4);
    companyId = (await seedTenant(pool)).companyId;
    s3 = await startS3StandIn();
    postgres = new BlobStore(null);
    bucket = new BlobStore(loadConfig({ NODE_ENV: 'test', ...s3.env('ws/') }).s3);
  });
  after(async () => {
    await bucket.close();
    await s3.close();
    await pool.end();
    await drop();
  });

  for (const which of ['postgres', 's3'] as const) {
    const store = () => (which === 'postgres' ? postgres : bucket);

    test(`${which}: bytes written in pieces read back identical (buffer and stream), across chunk boundaries`, async () => {
      const bytes = randomBytes(CHUNK_BYTES * 2 + 1234);
      const result = await store().write(pool, companyId, pieces(bytes), { contentType: 'application/octet-stream' });
      assert.ok(result.ok);
      assert.equal(result.blob.sizeBytes, bytes.length);
      assert.equal(result.blob.sha256, createHash('sha256').update(bytes).digest('hex'));
      assert.deepEqual(await store().readBuffer(pool, result.blob.id), bytes);
      assert.deepEqual(await readAll(store().read(pool, result.blob.id)), bytes);
      assert.equal((await blobInfo(pool, result.blob.id))?.sizeBytes, bytes.length);
      await deleteBlob(pool, result.blob.id);
      assert.equal(await blobInfo(pool, result.blob.id), null);
      await store().purgeObjects(pool);
      assert.equal(s3.objects.has(`ws/${companyId}/${result.blob.id}`), false);
    });

    test(`${which}: a buffer written whole (an image, a thumbnail) reads back identical, across chunk boundaries and empty`, async () => {
      for (const bytes of [randomBytes(CHUNK_BYTES * 2 + 1234), randomBytes(CHUNK_BYTES), Buffer.alloc(0)]) {
        const result = await store().write(pool, companyId, bytes, { contentType: 'image/webp' });
        assert.ok(result.ok);
        assert.equal(result.blob.sizeBytes, bytes.length);
        assert.equal(result.blob.sha256, createHash('sha256').update(bytes).digest('hex'));
        assert.deepEqual(await store().readBuffer(pool, result.blob.id), bytes);
        assert.deepEqual(await readAll(store().read(pool, result.blob.id)), bytes);
        const info = await blobInfo(pool, result.blob.id);
        assert.equal(info?.sizeBytes, bytes.length, 'the row is complete');
        assert.equal(info?.contentType, 'image/webp');
        if (which === 'postgres') {
          const { rows } = await pool.query('SELECT seq, length(data) AS n FROM blob_chunks WHERE blob_id = $1 ORDER BY seq', [result.blob.id]);
          assert.deepEqual(rows.map((r) => r.n), bytes.length ? [...Array(Math.ceil(bytes.length / CHUNK_BYTES)).keys()].map((i) => Math.min(CHUNK_BYTES, bytes.length - i * CHUNK_BYTES)) : []);
        }
      }
    });

    test(`${which}: a write over maxBytes is refused and leaves nothing behind`, async () => {
      const chunks = await count(pool, 'SELECT count(*)::int AS n FROM blob_chunks');
      const rows = await count(pool, 'SELECT count(*)::int AS n FROM blobs');
      const objects = s3.objects.size;
      const queued = await count(pool, 'SELECT count(*)::int AS n FROM blob_object_deletions');
      for (const source of [randomBytes(CHUNK_BYTES + 10), pieces(randomBytes(CHUNK_BYTES + 10))]) {
        const result = await store().write(pool, companyId, source, { contentType: 'image/png', maxBytes: CHUNK_BYTES });
        assert.equal(result.ok, false);
      }
      assert.equal(await count(pool, 'SELECT count(*)::int AS n FROM blob_chunks'), chunks);
      assert.equal(await count(pool, 'SELECT count(*)::int AS n FROM blobs'), rows);
      assert.equal(s3.objects.size, objects, 'nothing uploaded');
      assert.equal(await count(pool, 'SELECT count(*)::int AS n FROM blob_object_deletions'), queued, 'nothing to delete either');
    });
  }

  test('s3: the bytes are one object under the prefix, signed and hashed; no chunk rows', async () => {
    const bytes = randomBytes(700_000);
    const result = await bucket.write(pool, companyId, pieces(bytes, 65_536), { contentType: 'application/pdf' });
    assert.ok(result.ok);
    const key = `ws/${companyId}/${result.blob.id}`;
    assert.deepEqual(s3.objects.get(key)?.body, bytes);
    assert.equal(s3.objects.get(key)?.contentType, 'application/pdf');
    assert.equal((await pool.query('SELECT object_key FROM blobs WHERE id = $1', [result.blob.id])).rows[0].object_key, key);
    assert.equal(await count(pool, 'SELECT count(*)::int AS n FROM blob_chunks WHERE blob_id = $1', [result.blob.id]), 0);
  });

  test('s3: deleting queues the object in the same transaction; purgeObjects deletes it from the bucket', async () => {
    const a = await bucket.write(pool, companyId, randomBytes(1000), { contentType: 'image/png' });
    const b = await bucket.write(pool, companyId, randomBytes(1000), { contentType: 'image/png' });
    assert.ok(a.ok && b.ok);
    const keyA = `ws/${companyId}/${a.blob.id}`;
    const keyB = `ws/${companyId}/${b.blob.id}`;
    // A delete that rolls back queues nothing.
    const client = await pool.connect();
    await client.query('BEGIN');
    await deleteBlob(client, a.blob.id);
    await client.query('ROLLBACK');
    client.release();
    assert.equal(await count(pool, 'SELECT count(*)::int AS n FROM blob_object_deletions'), 0);

    await deleteBlob(pool, a.blob.id);
    assert.equal(await count(pool, 'SELECT count(*)::int AS n FROM blob_object_deletions WHERE object_key = $1', [keyA]), 1);
    assert.ok(s3.objects.has(keyA), 'the object stays until the purge');
    assert.deepEqual(await bucket.purgeObjects(pool), { deleted: 1, failed: 0 });
    assert.equal(s3.objects.has(keyA), false);
    assert.ok(s3.objects.has(keyB), 'only the deleted blob');
    assert.equal(await count(pool, 'SELECT count(*)::int AS n FROM blob_object_deletions'), 0);
    // A process without the S3 store leaves the queue alone.
    await deleteBlob(pool, b.blob.id);
    assert.deepEqual(await postgres.purgeObjects(pool), { deleted: 0, failed: 0 });
    assert.equal(await count(pool, 'SELECT count(*)::int AS n FROM blob_object_deletions'), 1);
    // A refusal of the service keeps the key queued (and does not throw); the next run deletes it.
    s3.fail('DELETE', 403, 'AccessDenied');
    assert.deepEqual(await bucket.purgeObjects(pool), { deleted: 0, failed: 1 });
    assert.ok(s3.objects.has(keyB));
    assert.equal(await count(pool, 'SELECT count(*)::int AS n FROM blob_object_deletions WHERE object_key = $1', [keyB]), 1);
    // A mistyped bucket answers 404 NoSuchBucket: that is no deletion, the key stays queued for the right one.
    const c = await bucket.write(pool, companyId, randomBytes(1000), { contentType: 'image/png' });
    assert.ok(c.ok);
    const keyC = `ws/${companyId}/${c.blob.id}`;
    await deleteBlob(pool, c.blob.id);
    const misnamed = new BlobStore(loadConfig({ NODE_ENV: 'test', ...s3.env('ws/'), S3_BUCKET: 'workspace-tset' }).s3);
    try {
      assert.deepEqual(await misnamed.purgeObjects(pool), { deleted: 0, failed: 2 });
    } finally {
      await misnamed.close();
    }
    assert.ok(s3.objects.has(keyC), 'the object is still in the bucket');
    assert.equal(await count(pool, 'SELECT count(*)::int AS n FROM blob_object_deletions WHERE object_key = $1', [keyC]), 1, 'still queued');
    assert.deepEqual(await bucket.purgeObjects(pool), { deleted: 2, failed: 0 });
    assert.equal(s3.objects.has(keyB), false);
    assert.equal(s3.objects.has(keyC), false);
  });

  test('s3: a company deleted with its blobs queues every object', async () => {
    const other = (await seedTenant(pool)).companyId;
    const written = await Promise.all([1, 2, 3].map(() => bucket.write(pool, other, randomBytes(100), { contentType: 'image/png' })));
    await pool.query('DELETE FROM companies WHERE id = $1', [other]);
    assert.deepEqual(await bucket.purgeObjects(pool), { deleted: 3, failed: 0 });
    for (const w of written) assert.ok(w.ok && !s3.objects.has(`ws/${other}/${w.blob.id}`));
  });

  test('switching stores: blobs written to PostgreSQL stay readable through an S3-configured store, and the other way the error says why', async () => {
    const bytes = randomBytes(CHUNK_BYTES + 5);
    const inPostgres = await postgres.write(pool, companyId, bytes, { contentType: 'image/png' });
    assert.ok(inPostgres.ok);
    assert.deepEqual(await bucket.readBuffer(pool, inPostgres.blob.id), bytes);
    assert.deepEqual(await readAll(bucket.read(pool, inPostgres.blob.id)), bytes);
    const inBucket = await bucket.write(pool, companyId, bytes, { contentType: 'image/png' });
    assert.ok(inBucket.ok);
    await assert.rejects(postgres.readBuffer(pool, inBucket.blob.id), /stored in an S3 bucket.*BLOB_STORE=s3/);
  });

  test('s3: refusals of the service surface with their S3 code, and a failed upload leaves no blob row', async () => {
    const rows = await count(pool, 'SELECT count(*)::int AS n FROM blobs');
    // A 503 SlowDown or 500 InternalError now and then is retried (AWS asks clients to): the write goes through.
    const puts = () => s3.requests.filter((r) => r.method === 'PUT').length;
    let before = puts();
    s3.fail('PUT', 503, 'SlowDown');
    s3.fail('PUT', 500, 'InternalError');
    const retried = await bucket.write(pool, companyId, randomBytes(100), { contentType: 'image/png' });
    assert.ok(retried.ok);
    assert.equal(puts() - before, S3_ATTEMPTS, 'two refusals, then the PUT that was stored');
    assert.equal(await count(pool, 'SELECT count(*)::int AS n FROM blobs'), rows + 1);
    await deleteBlob(pool, retried.blob.id);
    // Refused on every attempt: the error surfaces with its code, and no blob row is left. A 4xx is not retried.
    before = puts();
    s3.fail('PUT', 503, 'SlowDown', S3_ATTEMPTS);
    await assert.rejects(bucket.write(pool, companyId, randomBytes(100), { contentType: 'image/png' }), (error: unknown) => {
      assert.ok(error instanceof S3Error);
      assert.equal(error.httpStatus, 503);
      assert.equal(error.code, 'SlowDown');
      return true;
    });
    assert.equal(puts() - before, S3_ATTEMPTS);
    assert.equal(await count(pool, 'SELECT count(*)::int AS n FROM blobs'), rows);

    // Hostile: a wrong secret is refused by the signature check, not by luck.
    const forged = new BlobStore(loadConfig({ NODE_ENV: 'test', ...s3.env(), S3_SECRET_ACCESS_KEY: 'not-the-secret-0123456789abcdefghijkl' }).s3);
    try {
      await assert.rejects(forged.write(pool, companyId, randomBytes(100), { contentType: 'image/png' }), (error: unknown) => error instanceof S3Error && error.code === 'SignatureDoesNotMatch');
    } finally {
      await forged.close();
    }
    // The bucket out of reach (connection refused): the blob store's outage, never taken for the database's.
    const unreachable = new BlobStore(loadConfig({ NODE_ENV: 'test', ...s3.env(), S3_ENDPOINT: 'http://127.0.0.1:9' }).s3);
    try {
      const error = await unreachable.write(pool, companyId, randomBytes(100), { contentType: 'image/png' }).catch((e) => e);
      assert.ok(error instanceof S3Error, String(error));
      assert.equal(error.httpStatus, 503);
      assert.equal(isDatabaseUnavailable(error), false);
      assert.match(toApiError(error)!.message, /almacenamiento de archivos/);
    } finally {
      await unreachable.close();
    }
    const missing = await bucket.write(pool, companyId, randomBytes(100), { contentType: 'image/png' });
    assert.ok(missing.ok);
    s3.objects.delete(`ws/${companyId}/${missing.blob.id}`);
    await assert.rejects(bucket.readBuffer(pool, missing.blob.id), (error: unknown) => error instanceof S3Error && error.code === 'NoSuchKey' && error.httpStatus === 404);
  });

  test('s3: virtual-hosted addressing (the AWS default): the bucket in the host name, the key alone in the signed path', async () => {
    const config = loadConfig({ NODE_ENV: 'test', ...s3.env('vh/'), S3_ENDPOINT: s3.url.replace('127.0.0.1', 'localhost'), S3_FORCE_PATH_STYLE: '0' }).s3!;
    // `<bucket>.localhost` does not resolve here: the agent's lookup sends every name to the stand-in.
    const lookup = ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) =>
      options?.all ? callback(null, [{ address: '127.0.0.1', family: 4 }]) : callback(null, '127.0.0.1', 4)) as never;
    const client = new S3Client(config, { lookup });
    try {
      const body = randomBytes(5000);
      const key = client.key('c/virtual');
      await client.put(key, { buffer: body }, { contentType: 'image/png', sha256: createHash('sha256').update(body).digest('hex') });
      assert.deepEqual(s3.objects.get('vh/c/virtual')?.body, body);
      assert.deepEqual(await client.get(key), body);
      await client.delete(key);
      assert.equal(s3.objects.has('vh/c/virtual'), false);
    } finally {
      await client.close();
    }
  });

  test('configuration: BLOB_STORE=s3 needs its bucket and keys; a bad value stops start-up', () => {
    assert.equal(loadConfig({ NODE_ENV: 'test' }).s3, null);
    assert.throws(() => loadConfig({ NODE_ENV: 'test', BLOB_STORE: 'gcs' }), /BLOB_STORE debe ser postgres o s3/);
    assert.throws(() => loadConfig({ NODE_ENV: 'test', BLOB_STORE: 's3', S3_ACCESS_KEY_ID: 'a', S3_SECRET_ACCESS_KEY: 'b' }), /S3_BUCKET es obligatoria/);
    // Hostile prefixes and buckets: a path that would be normalized after signing, or another host.
    for (const prefix of ['../x', 'a/../', './a', '/evil.example/', 'a//b', 'a/.hidden', 'x?y', 'a b']) {
      assert.throws(() => loadConfig({ NODE_ENV: 'test', ...s3.env(), S3_PREFIX: prefix }), /S3_PREFIX/, prefix);
    }
    for (const bucket of ['evil.example/x', 'A', 'a..b', 'ab', 'x'.repeat(64), 'b@evil']) {
      assert.throws(() => loadConfig({ NODE_ENV: 'test', ...s3.env(), S3_BUCKET: bucket }), /S3_BUCKET/, bucket);
    }
    assert.equal(loadConfig({ NODE_ENV: 'test', ...s3.env(), S3_PREFIX: 'ws-prod/v1.2/' }).s3?.prefix, 'ws-prod/v1.2/');
    const aws = loadConfig({ NODE_ENV: 'test', BLOB_STORE: 's3', S3_BUCKET: 'workspace-files', S3_REGION: 'eu-west-1', S3_ACCESS_KEY_ID: 'a', S3_SECRET_ACCESS_KEY: 's' }).s3;
    assert.deepEqual({ endpoint: aws?.endpoint, pathStyle: aws?.pathStyle }, { endpoint: 'https://s3.eu-west-1.amazonaws.com', pathStyle: false });
    assert.equal(loadConfig({ NODE_ENV: 'test', ...s3.env() }).s3?.pathStyle, true);
    // A bucket name with dots matches no AWS certificate as a host name: path-style unless told otherwise.
    const dotted = { NODE_ENV: 'test', BLOB_STORE: 's3', S3_BUCKET: 'files.example.com', S3_ACCESS_KEY_ID: 'a', S3_SECRET_ACCESS_KEY: 's' };
    assert.equal(loadConfig(dotted).s3?.pathStyle, true);
    assert.equal(loadConfig({ ...dotted, S3_FORCE_PATH_STYLE: '0' }).s3?.pathStyle, false);
    // An endpoint with a path (a proxy) cannot take the bucket in its host name: refused, not lost.
    assert.throws(() => loadConfig({ NODE_ENV: 'test', ...s3.env(), S3_ENDPOINT: 'https://proxy.example/storage', S3_FORCE_PATH_STYLE: '0' }), /S3_ENDPOINT con una ruta/);
    assert.equal(loadConfig({ NODE_ENV: 'test', ...s3.env(), S3_ENDPOINT: 'https://proxy.example/storage' }).s3?.pathStyle, true);
  });
});
