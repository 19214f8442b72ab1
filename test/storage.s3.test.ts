// The app and the worker with BLOB_STORE=s3, against the S3 stand-in over
// HTTP: a product image is stored as an object and served from it, the
// worker's thumbnail goes to the bucket too, and an image replaced is deleted
// from the bucket by the worker's housekeeping job (a real pg-boss job).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { S3_ATTEMPTS } from '../storage/s3.ts';
import { startWorker, type Worker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, uploadFile, type TestApp, type Tenant } from './helpers/app.ts';
import { startS3StandIn, type S3StandIn } from './helpers/s3-stand-in.ts';
import { waitFor } from './helpers/wait.ts';
import * as files from './helpers/forms.ts';

const upload = (app: TestApp, key: string, path: string, bytes: Buffer) => uploadFile(app.baseUrl, key, path, { bytes, filename: 'photo.jpg', type: 'image/jpeg' });

describe('blobs in an S3-compatible bucket (BLOB_STORE=s3), end to end', () => {
  let s3: S3StandIn;
  let app: TestApp;
  let tenant: Tenant;
  let worker: Worker | undefined;
  before(async () => {
    s3 = await startS3StandIn();
    app = await startTestApp(s3.env('e2e/'));
    tenant = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
  });
  after(async () => {
    await worker?.stop();
    await app.close();
    await s3.close();
  });

  test('an image is an object of the bucket, served at its public URL; its thumbnail too; a replaced one is deleted from the bucket by the worker', async () => {
    const api = client(app.baseUrl, tenant.key);
    const product = (await api.post('/products', { data: { name: 'Foto', sku: 'S3-FOTO', prices_cents: { mxn: 100 } } })).body.data;
    const photo = await sharp({ create: { width: 900, height: 600, channels: 3, background: { r: 20, g: 120, b: 200 } } }).jpeg().toBuffer();
    const first = await upload(app, tenant.key, `/products/${product.id}/image`, photo);
    assert.equal(first.status, 200, JSON.stringify(first.body));

    const { rows: [original] } = await app.pool.query(
      `SELECT b.id, b.object_key, (SELECT count(*)::int FROM blob_chunks c WHERE c.blob_id = b.id) AS chunks
         FROM media m JOIN blobs b ON b.id = m.original_blob_id WHERE m.owner_id = $1`,
      [product.id],
    );
    assert.equal(original.object_key, `e2e/${tenant.companyId}/${original.id}`);
    assert.equal(original.chunks, 0, 'no bytes in PostgreSQL');
    assert.deepEqual(s3.objects.get(original.object_key)?.body, photo);
    const served = await fetch(first.body.data.image_url.replace(app.config.siteUrl, app.url));
    assert.equal(served.status, 200);
    assert.equal(served.headers.get('content-type'), 'image/jpeg');
    assert.equal(Number(served.headers.get('content-length')), photo.length);
    assert.deepEqual(Buffer.from(await served.arrayBuffer()), photo);

    worker = await startWorker(app.config, app.pool, app.databaseUrl);
    const detail = await waitFor(async () => {
      const d = (await api.get(`/products/${product.id}`)).body.data;
      return d.thumbnail_url ? d : null;
    });
    const thumb = await fetch(detail.thumbnail_url.replace(app.config.siteUrl, app.url));
    assert.equal(thumb.status, 200);
    const meta = await sharp(Buffer.from(await thumb.arrayBuffer())).metadata();
    assert.ok(meta.width! <= 400 && meta.height! <= 400, `${meta.width}×${meta.height}`);
    const { rows: [thumbBlob] } = await app.pool.query(`SELECT b.object_key FROM media m JOIN blobs b ON b.id = m.thumbnail_blob_id WHERE m.owner_id = $1`, [product.id]);
    assert.ok(s3.objects.has(thumbBlob.object_key), 'the thumbnail is an object of the bucket');

    // Replacing the image deletes the old media's rows at once and its objects at the next housekeeping run.
    const second = await upload(app, tenant.key, `/products/${product.id}/image`, await sharp(photo).rotate(90).jpeg().toBuffer());
    assert.equal(second.status, 200);
    // The rows go with the request (the objects wait for the purge; the hourly schedule may run it first).
    const { rows: [gone] } = await app.pool.query('SELECT count(*)::int AS n FROM blobs WHERE object_key = ANY($1)', [[original.object_key, thumbBlob.object_key]]);
    assert.equal(gone.n, 0);
    await worker.boss.send('purge-expired', {});
    // The job deletes the objects, then their queue rows: wait for both.
    const queued = async () => (await app.pool.query('SELECT count(*)::int AS n FROM blob_object_deletions')).rows[0].n as number;
    await waitFor(async () => !s3.objects.has(original.object_key) && !s3.objects.has(thumbBlob.object_key) && (await queued()) === 0);
    // The tests below run without a worker (as each does alone): nothing else reads or purges the bucket meanwhile.
    await worker.stop();
    worker = undefined;
  });

  test('an image over the storage quota is refused before a byte reaches the bucket', async () => {
    const small = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    await app.pool.query('UPDATE companies SET storage_quota_mb = 1 WHERE id = $1', [small.companyId]);
    const api = client(app.baseUrl, small.key);
    const product = (await api.post('/products', { data: { name: 'Grande', prices_cents: { mxn: 100 } } })).body.data;
    // ~1.2 MB of noise: more than the whole quota.
    const big = await sharp({ create: { width: 700, height: 600, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).png().toBuffer();
    assert.ok(big.length > 1024 * 1024, String(big.length));
    const puts = s3.requests.filter((r) => r.method === 'PUT').length;
    const refused = await upload(app, small.key, `/products/${product.id}/image`, big);
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.match(refused.body.errors.file[0], /agotado/);
    assert.equal(s3.requests.filter((r) => r.method === 'PUT').length, puts, 'no PUT to the bucket');
    // Another company's product: 404, nothing written either.
    const foreign = await upload(app, tenant.key, `/products/${product.id}/image`, big);
    assert.equal(foreign.status, 404);
    assert.equal(s3.requests.filter((r) => r.method === 'PUT').length, puts);
  });

  test('form files stream to the bucket (spooled, hashed, checked by their bytes); a refused one is deleted from it', async () => {
    const form = await files.createFormViaAdmin(app.url, tenant.companyId, files.sampleFormFile({ slug: 'contacto-s3' }));
    const post = async (name: string, bytes: Buffer) => {
      const body = new FormData();
      body.append('data[answers][email]', 'ana@example.com');
      body.append('data[answers][name]', 'Ana');
      body.append('files[cv]', new Blob([new Uint8Array(bytes)]), name);
      const res = await fetch(`${app.baseUrl}/forms/${form.id}/submissions`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}` }, body });
      return { status: res.status, body: (await res.json()) as any };
    };
    const pdf = files.pdf(600_000);
    const ok = await post('cv.pdf', pdf);
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
    assert.equal(ok.body.data.files[0].content_type, 'application/pdf');
    const { rows: [stored] } = await app.pool.query(
      `SELECT object_key FROM blobs WHERE company_id = $1 AND sha256 = $2 AND complete`,
      [tenant.companyId, createHash('sha256').update(pdf).digest('hex')],
    );
    assert.deepEqual(s3.objects.get(stored.object_key)?.body, pdf);

    // Hostile: a Windows executable named .pdf is refused by its bytes, read back from the bucket.
    const objects = s3.objects.size;
    const puts = s3.requests.filter((r) => r.method === 'PUT').length;
    const refused = await post('cv.pdf', files.exe());
    assert.equal(refused.status, 422);
    assert.equal(refused.body.error, 'validation_failed');
    const { rows: [queued] } = await app.pool.query('SELECT count(*)::int AS n FROM blob_object_deletions');
    assert.equal(s3.requests.filter((r) => r.method === 'PUT').length, puts + 1, 'the file was uploaded, then checked');
    // Its object is queued for deletion, and the purge deletes it.
    assert.equal(queued.n, 1);
    assert.equal(s3.objects.size, objects + 1, 'still in the bucket until the purge');
    await app.deps.blobs.purgeObjects(app.pool);
    assert.equal(s3.objects.size, objects);
  });

  test('the bucket failing: 503 service_unavailable with Retry-After when it is down, 500 internal_error (not the client\'s 400) when it refuses; no blob left', async () => {
    const api = client(app.baseUrl, tenant.key);
    const product = (await api.post('/products', { data: { name: 'Caída', sku: 'S3-DOWN', prices_cents: { mxn: 100 } } })).body.data;
    const photo = await sharp({ create: { width: 64, height: 64, channels: 3, background: { r: 1, g: 2, b: 3 } } }).jpeg().toBuffer();
    const { rows: [before] } = await app.pool.query('SELECT count(*)::int AS n FROM blobs');
    // A 503 now and then is retried by the client (storage.test.ts); one on every attempt reaches the caller.
    s3.fail('PUT', 503, 'SlowDown', S3_ATTEMPTS);
    const down = await fetch(`${app.baseUrl}/products/${product.id}/image`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}` }, body: (() => { const f = new FormData(); f.append('file', new Blob([new Uint8Array(photo)]), 'a.jpg'); return f; })() });
    assert.equal(down.status, 503);
    assert.equal(down.headers.get('retry-after'), '2');
    assert.equal(((await down.json()) as any).error, 'service_unavailable');
    s3.fail('PUT', 400, 'AuthorizationHeaderMalformed');
    const refused = await upload(app, tenant.key, `/products/${product.id}/image`, photo);
    assert.equal(refused.status, 500);
    assert.equal(refused.body.error, 'internal_error');
    assert.doesNotMatch(refused.body.message, /S3|AuthorizationHeaderMalformed/);
    const { rows: [afterwards] } = await app.pool.query('SELECT count(*)::int AS n FROM blobs');
    assert.equal(afterwards.n, before.n);
    assert.equal((await api.get(`/products/${product.id}`)).body.data.image_url, null);
    // A public media URL whose object cannot be read: an answer the client can retry, not a cut connection after a 200.
    const stored = await upload(app, tenant.key, `/products/${product.id}/image`, photo);
    assert.equal(stored.status, 200, JSON.stringify(stored.body));
    // No worker runs here (the first test stops its own): the faults below are the visitor's alone.
    const { rows: [original] } = await app.pool.query(
      `SELECT b.object_key FROM products p JOIN media m ON m.id = p.image_media_id JOIN blobs b ON b.id = m.original_blob_id WHERE p.id = $1`,
      [product.id],
    );
    s3.fail('GET', 500, 'InternalError', S3_ATTEMPTS, original.object_key);
    const unreadable = await fetch(stored.body.data.image_url.replace(app.config.siteUrl, app.url));
    assert.equal(unreadable.status, 503);
    assert.equal(((await unreadable.json()) as any).error, 'service_unavailable');
    const readable = await fetch(stored.body.data.image_url.replace(app.config.siteUrl, app.url));
    assert.deepEqual(Buffer.from(await readable.arrayBuffer()), photo);
  });

  test('visitors who hang up after the first bytes of a large image end the reads from the bucket; the service can still read and write it', async () => {
    const api = client(app.baseUrl, tenant.key);
    const product = (await api.post('/products', { data: { name: 'Grande', sku: 'S3-GRANDE', prices_cents: { mxn: 100 } } })).body.data;
    // Noise does not compress: about 6 MB of PNG, more than the sockets between the stand-in and the app buffer.
    const big = await sharp(Buffer.from(Array.from({ length: 1400 * 1400 * 3 }, () => Math.floor(Math.random() * 256))), { raw: { width: 1400, height: 1400, channels: 3 } }).png().toBuffer();
    const stored = await uploadFile(app.baseUrl, tenant.key, `/products/${product.id}/image`, { bytes: big, filename: 'grande.png' });
    assert.equal(stored.status, 200, stored.text);
    const url = new URL(stored.body.data.image_url.replace(app.config.siteUrl, app.url));
    // Each reads the first bytes of the answer, then closes the connection (a tab closed, a scroll away).
    const hangUp = () =>
      new Promise<number>((resolve, reject) => {
        const req = http.get(url, (res) => {
          res.once('data', () => {
            req.destroy();
            resolve(res.statusCode!);
          });
        });
        req.on('error', (error) => (req.destroyed ? undefined : reject(error)));
      });
    for (let round = 0; round < 4; round++) assert.deepEqual(await Promise.all(Array.from({ length: 20 }, hangUp)), Array(20).fill(200));
    // Each hang-up ends its read from the bucket: no answer is left half-sent, holding a connection.
    await waitFor(() => s3.openDownloads() === 0, 20_000, 'every read from the bucket ended');
    // A whole read and an upload still go through.
    const whole = await fetch(url, { signal: AbortSignal.timeout(30_000) });
    assert.equal(whole.status, 200);
    assert.equal(Buffer.from(await whole.arrayBuffer()).length, big.length);
    const photo = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#0a0' } }).png().toBuffer();
    const again = await uploadFile(app.baseUrl, tenant.key, `/products/${product.id}/image`, { bytes: photo, filename: 'chica.png' });
    assert.equal(again.status, 200, again.text);
  });
});
