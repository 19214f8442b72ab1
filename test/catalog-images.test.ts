import assert from 'node:assert/strict';
import http from 'node:http';
import { readdirSync, readlinkSync, realpathSync } from 'node:fs';
import os from 'node:os';
import { deflateSync, crc32 } from 'node:zlib';
import { waitFor } from './helpers/wait.ts';
import { after, before, describe, test } from 'node:test';
import sharp, { type SharpOptions } from 'sharp';
import { startWorker, type Worker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, uploadFile, type TestApp, type Tenant } from './helpers/app.ts';
import { zip64 as asZip64 } from './helpers/forms.ts';
import { animatedPng, pngChunk } from './helpers/png.ts';

const solid = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: { r: 200, g: 30, b: 30 } } });

async function samples() {
  return {
    png: await solid(64, 48).png().toBuffer(),
    jpeg: await solid(64, 48).jpeg().toBuffer(),
    webp: await solid(64, 48).webp().toBuffer(),
    avif: await solid(64, 48).avif().toBuffer(),
    gif: await solid(64, 48).gif().toBuffer(),
  };
}

/** A structurally valid PNG whose header claims width × height; the pixel data is whatever we say. */
function craftedPng(width: number, height: number, idat: Buffer): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  return Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), pngChunk('IHDR', ihdr), pngChunk('IDAT', idat), pngChunk('IEND', Buffer.alloc(0))]);
}

/** A zip archive of one stored (uncompressed) entry, as `zip -0` writes it; `commentBytes`: the comment length its end record declares (the bytes that follow it). */
function storedZip(name: string, content: string, commentBytes = 0): Buffer {
  const [file, data] = [Buffer.from(name), Buffer.from(content)];
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt32LE(crc32(data), 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(file.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt32LE(crc32(data), 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(file.length, 28);
  const [entries, directory] = [Buffer.concat([local, file, data]), Buffer.concat([central, file])];
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(entries.length, 16);
  end.writeUInt16LE(commentBytes, 20);
  return Buffer.concat([entries, directory, end]);
}



describe('catalog images: upload checks, storage, public URLs, worker thumbnails', () => {
  let app: TestApp;
  let tenant: Tenant;
  let api: ReturnType<typeof client>;
  let worker: Worker | undefined;
  let productId: string;
  let variantId: string;
  const up = (path: string, bytes: Buffer, filename = 'photo.png', field = 'file', type?: string) => uploadFile(app.baseUrl, tenant.key, path, { field, bytes, filename, type });

  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    api = client(app.baseUrl, tenant.key);
    const p = (await api.post('/products', { data: { name: 'Foto', sku: 'FOTO', prices_cents: { mxn: 100 }, variants: [{ name: 'V' }] } })).body.data;
    productId = p.id;
    variantId = p.variants[0].id;
  });
  after(async () => {
    await worker?.stop();
    await app.close();
  });

  test('JPEG, PNG, WebP, AVIF and GIF are accepted by their bytes, stored, and served with type, ETag and immutable caching', async () => {
    const images = await samples();
    const types = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp', avif: 'image/avif', gif: 'image/gif' } as const;
    for (const [format, bytes] of Object.entries(images)) {
      // The declared type and the name lie on purpose: only the bytes count.
      const res = await up(`/products/${productId}/image`, bytes, 'x.txt', format === 'png' ? 'image' : 'file', 'text/plain');
      assert.equal(res.status, 200, `${format}: ${res.text}`);
      assert.equal(res.body.data.id, productId);
      const url: string = res.body.data.image_url;
      assert.ok(url.startsWith(`${app.config.siteUrl}/media/`), url);
      const served = await fetch(url.replace(app.config.siteUrl, app.url));
      assert.equal(served.status, 200);
      assert.equal(served.headers.get('content-type'), types[format as keyof typeof types]);
      assert.equal(served.headers.get('x-content-type-options'), 'nosniff');
      assert.match(served.headers.get('cache-control') ?? '', /immutable/);
      assert.deepEqual(Buffer.from(await served.arrayBuffer()), bytes);
      const etag = served.headers.get('etag')!;
      const again = await fetch(url.replace(app.config.siteUrl, app.url), { headers: { 'if-none-match': etag } });
      assert.equal(again.status, 304);
      // `*` matches any current representation (RFC 9110 §13.1.2).
      assert.equal((await fetch(url.replace(app.config.siteUrl, app.url), { headers: { 'if-none-match': '*' } })).status, 304);
      // By date, when no tag is sent: at or after Last-Modified is 304, before it 200 (RFC 9110 §13.1.3).
      const modified = Date.parse(served.headers.get('last-modified')!);
      const since = (ms: number) => fetch(url.replace(app.config.siteUrl, app.url), { headers: { 'if-modified-since': new Date(ms).toUTCString() } }).then((r) => r.status);
      assert.deepEqual([await since(modified), await since(modified + 3_600_000), await since(modified - 1000)], [304, 304, 200]);
      // Public files are readable by a page's fetch() on another origin.
      assert.equal(served.headers.get('access-control-allow-origin'), '*');
    }
    // Replacing deleted the previous originals: only the last one is left.
    const { rows } = await app.pool.query(`SELECT count(*)::int AS n FROM media WHERE owner_id = $1`, [productId]);
    assert.equal(rows[0].n, 1);
    const detail = (await api.get('/products/FOTO')).body.data;
    assert.match(detail.image_url, /\/media\//);
    assert.equal(detail.thumbnail_url, null, 'no worker yet: the thumbnail is pending');
  });

  test('hostile files are refused with 422 validation_failed: text named .png, 20,000×20,000 PNG, truncated JPEG, too many frames, too big', async () => {
    const mediaCount = async () => (await app.pool.query(`SELECT count(*)::int AS n FROM media WHERE owner_id = $1`, [productId])).rows[0].n;
    const stored = await mediaCount();
    const text = await up(`/products/${productId}/image`, Buffer.from('hello, I am not a picture\n'.repeat(20)), 'evil.png', 'file', 'image/png');
    assert.equal(text.status, 422);
    assert.equal(text.body.error, 'validation_failed');
    assert.ok(text.body.errors.file);

    const bomb = craftedPng(20_000, 20_000, deflateSync(Buffer.alloc(60_001)));
    const bombRes = await up(`/products/${productId}/image`, bomb, 'bomb.png');
    assert.equal(bombRes.status, 422, bombRes.text);
    assert.match(bombRes.body.errors.file[0], /megapíxeles/);

    const jpeg = await sharp({ create: { width: 300, height: 300, channels: 3, noise: { type: 'gaussian', mean: 128, sigma: 30 } } } as SharpOptions).jpeg().toBuffer();
    const truncated = await up(`/products/${productId}/image`, jpeg.subarray(0, Math.floor(jpeg.length * 0.6)), 'cut.jpg');
    assert.equal(truncated.status, 422, truncated.text);
    assert.equal(truncated.body.error, 'validation_failed');
    assert.ok(truncated.body.errors.file?.[0], `a reason under errors.file: ${truncated.text}`);

    // 8 frames of 2,400 × 2,400: each frame is fine, together they are 46 megapixels.
    // Frames differ in colour: the GIF encoder merges identical consecutive frames.
    const parts = Array.from({ length: 8 }, (_, n) => ({ create: { width: 2400, height: 2400, channels: 3, background: { r: n * 30, g: 0, b: 255 - n * 30 } } }));
    const frames = await sharp(parts as never, { join: { animated: true } } as SharpOptions).gif({ effort: 1, colours: 16 }).toBuffer();
    assert.equal((await sharp(frames).metadata()).pages, 8);
    const animated = await up(`/products/${productId}/image`, frames, 'anim.gif');
    assert.equal(animated.status, 422, animated.text);
    assert.match(animated.body.errors.file[0], /cuadros/);

    const huge = Buffer.concat([await solid(10, 10).png().toBuffer(), Buffer.alloc(10 * 1024 * 1024 + 10)]);
    const big = await up(`/products/${productId}/image`, huge, 'big.png');
    assert.equal(big.status, 422, big.text);
    assert.match(big.body.errors.file?.[0] ?? '', /10 MB/);
    // Refused under the part it was sent in, as every other refusal is.
    const bigImage = await up(`/products/${productId}/image`, huge, 'big.png', 'image');
    assert.deepEqual(Object.keys(bigImage.body.errors ?? {}), ['image'], bigImage.text);

    const missing = await api.post(`/products/${productId}/image`, { data: {} });
    assert.equal(missing.status, 422, 'a JSON body carries no file');

    // Polyglots with a zip: appended (unzip reads an archive from the end), or hidden inside the image (a
    // PNG chunk holding an archive whose comment runs over the CRC and IEND after it): refused, named.
    for (const [format, image] of [['png', await solid(12, 12).png().toBuffer()], ['jpg', await solid(12, 12).jpeg().toBuffer()], ['webp', await solid(12, 12).webp().toBuffer()], ['gif', await solid(12, 12).gif().toBuffer()]] as const) {
      const zipped = await up(`/products/${productId}/image`, Buffer.concat([image, storedZip('x.sh', 'echo owned\n')]), `poly.${format}`);
      assert.deepEqual([zipped.status, zipped.body.errors?.file], [422, ['la imagen lleva un archivo comprimido (zip) al final: no se admite']], `${format} + zip: ${zipped.text}`);
    }
    const base = await solid(12, 12).png().toBuffer();
    const iend = base.subarray(base.length - 12);
    const hidden = storedZip('x.sh', 'echo owned\n', 4 + 12);
    const inside = Buffer.concat([base.subarray(0, base.length - 12), pngChunk('ziPp', hidden), iend]);
    const zippedInside = await up(`/products/${productId}/image`, inside, 'inside.png');
    assert.deepEqual([zippedInside.status, zippedInside.body.errors?.file], [422, ['la imagen lleva un archivo comprimido (zip) dentro: no se admite']], zippedInside.text);
    // Hidden with the rest of the image after it (no comment running over it): zip readers search the
    // file's last 66,000 bytes or so (unzip 6: 74,194 at most; the check searches 80 KB) for the archive's end and take it with "extra bytes" after it. A JPEG comment
    // segment right after SOI, and a PNG chunk before IDAT.
    const photo = await solid(300, 200).jpeg().toBuffer();
    const archive = storedZip('e.html', '<script>alert(1)</script>');
    const comment = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.alloc(2), archive]);
    comment.writeUInt16BE(archive.length + 2, 2);
    const inJpeg = await up(`/products/${productId}/image`, Buffer.concat([photo.subarray(0, 2), comment, photo.subarray(2)]), 'p.jpg');
    assert.deepEqual([inJpeg.status, inJpeg.body.errors?.file], [422, ['la imagen lleva un archivo comprimido (zip) dentro: no se admite']], inJpeg.text);
    // A zip64 (the end record says "see zip64"; the directory is found before the zip64 record) after a JPEG.
    const zip64 = await up(`/products/${productId}/image`, Buffer.concat([photo, asZip64(archive)]), 'z64.jpg');
    assert.deepEqual([zip64.status, zip64.body.errors?.file], [422, ['la imagen lleva un archivo comprimido (zip) al final: no se admite']], zip64.text);
    const inPng = await up(`/products/${productId}/image`, Buffer.concat([base.subarray(0, 33), pngChunk('ziPp', archive), base.subarray(33)]), 'p.png');
    assert.deepEqual([inPng.status, inPng.body.errors?.file], [422, ['la imagen lleva un archivo comprimido (zip) dentro: no se admite']], inPng.text);
    // The same with bytes after the image, which would be dropped: the image kept would still be an archive.
    const trailed = await up(`/products/${productId}/image`, Buffer.concat([inside, Buffer.from('SEFT-trailer')]), 'inside.png');
    assert.deepEqual([trailed.status, trailed.body.errors?.file], [422, ['la imagen lleva un archivo comprimido (zip) dentro: no se admite']], trailed.text);
    assert.equal(await mediaCount(), stored, 'nothing refused was stored');
  });

  test('what a file carries after the image\'s end is not kept (a camera\'s trailer, a script): the image alone is stored and served', async () => {
    const owner = (await api.post('/products', { data: { name: 'Cola', sku: 'COLA', prices_cents: { mxn: 100 } } })).body.data.id;
    try {
      // Samsung's camera writes a trailer after the JPEG's EOI; a motion photo, its video. A polyglot, another file.
      const samsung = Buffer.concat([Buffer.from('\x00\x00Image_UTC_Data1700000000000SEFH'), Buffer.alloc(300, 7), Buffer.from('SEFT')]);
      const script = Buffer.from('<script>alert(document.domain)</script>;');
      const images = [['jpg', await solid(12, 12).jpeg().toBuffer()], ['png', await solid(12, 12).png().toBuffer()], ['webp', await solid(12, 12).webp().toBuffer()], ['gif', await solid(12, 12).gif().toBuffer()]] as const;
      for (const [format, image] of images) {
        for (const [what, after] of [['a camera trailer', samsung], ['a script', script], ['padding', Buffer.alloc(200)]] as const) {
          const res = await up(`/products/${owner}/image`, Buffer.concat([image, after]), `cola.${format}`);
          assert.equal(res.status, 200, `${format} + ${what}: ${res.text}`);
          const served = Buffer.from(await (await fetch(res.body.data.image_url.replace(app.config.siteUrl, app.url))).arrayBuffer());
          assert.ok(served.equals(image), `${format} + ${what}: the image alone is served (${served.length} bytes, the image ${image.length})`);
        }
      }
    } finally {
      await api.delete(`/products/${owner}`);
    }
  });

  test('an AVIF carrying a trailer is stored without it; one cut short is refused as truncated', async () => {
    const owner = (await api.post('/products', { data: { name: 'Avif', sku: 'AVIF-T', prices_cents: { mxn: 100 } } })).body.data.id;
    try {
      const image = await solid(16, 16).avif().toBuffer();
      for (const after of [Buffer.from('SAMSUNG-TRAILER\x00\x01\x02'), Buffer.alloc(200), Buffer.from('<script>alert(1)</script>')]) {
        const res = await up(`/products/${owner}/image`, Buffer.concat([image, after]), 'a.avif');
        assert.equal(res.status, 200, res.text);
        const served = Buffer.from(await (await fetch(res.body.data.image_url.replace(app.config.siteUrl, app.url))).arrayBuffer());
        assert.ok(served.equals(image), `the image alone is served (${served.length} bytes, the image ${image.length})`);
      }
      const cut = await up(`/products/${owner}/image`, image.subarray(0, image.length - 20), 'a.avif');
      assert.deepEqual([cut.status, cut.body.errors?.file], [422, ['la imagen está truncada o dañada']], cut.text);
    } finally {
      await api.delete(`/products/${owner}`);
    }
  });

  test('an animated PNG is taken as a PNG (its first frame is the thumbnail); its frames count toward the animation limits', async () => {
    const owner = (await api.post('/products', { data: { name: 'Apng', sku: 'APNG-1', prices_cents: { mxn: 100 } } })).body.data.id;
    try {
      const apng = animatedPng(await solid(40, 30).png().toBuffer(), 2);
      const res = await up(`/products/${owner}/image`, apng, 'anim.png');
      assert.equal(res.status, 200, res.text);
      const served = await fetch(res.body.data.image_url.replace(app.config.siteUrl, app.url));
      assert.equal(served.headers.get('content-type'), 'image/png');
      assert.ok(Buffer.from(await served.arrayBuffer()).equals(apng), 'stored as sent, frames included');
      // 400 frames declared: over the 300 the GIFs are held to.
      const many = await up(`/products/${owner}/image`, animatedPng(await solid(40, 30).png().toBuffer(), 2, 400), 'many.png');
      assert.deepEqual([many.status, many.body.errors?.file], [422, ['la animación supera 300 cuadros']], many.text);
    } finally {
      await api.delete(`/products/${owner}`);
    }
  });

  test('two files in one upload are 422 and leave no temp file open behind (formidable\'s maxFiles left one per request)', async () => {
    // Descriptors of this process (the app runs in it) open on files in the temp directory, where formidable writes parts.
    const tmp = realpathSync(os.tmpdir());
    const openTemp = () => readdirSync('/proc/self/fd').filter((fd) => {
      try {
        return readlinkSync(`/proc/self/fd/${fd}`).startsWith(`${tmp}/`);
      } catch {
        return false; // closed while listing
      }
    }).length;
    const before = openTemp();
    const png = await solid(20, 20).png().toBuffer();
    for (let n = 0; n < 5; n++) {
      const form = new FormData();
      form.append('image', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'a.png');
      form.append(n % 2 ? 'file' : 'other', new Blob([new Uint8Array(Buffer.alloc(200_000, n))], { type: 'image/png' }), 'b.png');
      const res = await fetch(`${app.baseUrl}/products/${productId}/image`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}` }, body: form });
      const body = (await res.json()) as any;
      assert.equal(res.status, 422);
      assert.deepEqual(body.errors, { image: ['se acepta un solo archivo de hasta 10 MB'] });
    }
    await waitFor(() => openTemp() <= before, 5_000, 'every temp file of the refused uploads closed');
  });

  test('text parts beside the file: a few are ignored; more than 20, or past 64 KB, are 422 saying so (not that the file is too big)', async () => {
    const png = await solid(20, 20).png().toBuffer();
    // Refused before the file part is read: the error is under the route's first file field (`file`; `image` is its alias).
    const upload = async (parts: number, size = 10) => {
      const form = new FormData();
      for (let i = 0; i < parts; i++) form.append(`campo${i}`, 'x'.repeat(size));
      form.append('image', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'a.png');
      const res = await fetch(`${app.baseUrl}/products/${productId}/image`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}` }, body: form });
      return { status: res.status, body: (await res.json()) as any };
    };
    assert.equal((await upload(5)).status, 200);
    const many = await upload(100);
    assert.deepEqual([many.status, many.body.error, many.body.errors], [422, 'validation_failed', { file: ['el cuerpo lleva más de 20 campos de texto; envía solo el archivo'] }]);
    // Parts written by hand: [Content-Disposition parameters, Content-Type or null, bytes].
    const raw = async (parts: Array<[string, string | null, Buffer]>) => {
      const boundary = `b${Date.now()}`;
      const body = Buffer.concat([
        ...parts.flatMap(([disposition, type, bytes]) => [Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; ${disposition}\r\n${type ? `Content-Type: ${type}\r\n` : ''}\r\n`), bytes, Buffer.from('\r\n')]),
        Buffer.from(`--${boundary}--\r\n`),
      ]);
      const res = await fetch(`${app.baseUrl}/products/${productId}/image`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, 'content-type': `multipart/form-data; boundary=${boundary}` }, body });
      return { status: res.status, body: (await res.json()) as any };
    };
    // A part is read by its file name, as the forms' parser reads it: one without a Content-Type (RFC 7578 allows
    // it; Python requests sends none) is the file, and one named only by RFC 5987's filename* too.
    const photo = await solid(200, 200).png({ compressionLevel: 0 }).toBuffer();
    assert.ok(photo.length > 64 * 1024);
    const untyped = await raw([['name="image"; filename="a.png"', null, photo]]);
    assert.equal(untyped.status, 200, JSON.stringify(untyped.body));
    assert.match(untyped.body.data.image_url, /\/a\.png$/);
    const extended = await raw([[`name="image"; filename*=UTF-8''foto%20ni%C3%B1o.png`, null, photo]]);
    assert.equal(extended.status, 200, JSON.stringify(extended.body));
    assert.match(decodeURIComponent(extended.body.data.image_url), /foto.ni[ñn]o\.png$/);
    const latin1 = await raw([[`name="image"; filename*=ISO-8859-1''ni%F1a.png`, null, photo]]);
    assert.equal(latin1.status, 200, JSON.stringify(latin1.body));
    assert.match(decodeURIComponent(latin1.body.data.image_url), /ni[ñn]a\.png$/);
    // An empty file name is no file: a browser's empty file input beside the image, or a caption sent with one.
    for (const [type, bytes] of [['application/octet-stream', Buffer.alloc(0)], [null, Buffer.from('hola')]] as const) {
      const res = await raw([['name="otra"; filename=""', type, bytes], ['name="image"; filename="b.png"', 'image/png', png]]);
      assert.equal(res.status, 200, `${type}: ${JSON.stringify(res.body)}`);
    }
    const big = await upload(2, 40 * 1024);
    assert.equal(big.status, 422);
    // Under `file`, or `image` when the file part had begun before the refusal.
    assert.deepEqual(Object.values(big.body.errors), [['los campos de texto del cuerpo pasan de 64 KB; envía solo el archivo']]);
  });

  test('images count against the storage quota: one that does not fit is 422 and nothing is kept; a replacement gives the old bytes back', async () => {
    const small = await seedTenant(app.pool);
    await app.pool.query('UPDATE companies SET storage_quota_mb = 1 WHERE id = $1', [small.companyId]);
    const smallApi = client(app.baseUrl, small.key);
    const product = async (name: string) => (await smallApi.post('/products', { data: { name, prices_cents: { mxn: 100 } } })).body.data.id as string;
    // ~600 KB each: noise does not compress.
    const noise = () => sharp({ create: { width: 460, height: 440, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 60 } } }).png().toBuffer();
    const [a, b] = [await product('A'), await product('B')];
    const first = await uploadFile(app.baseUrl, small.key, `/products/${a}/image`, { bytes: await noise(), filename: 'a.png' });
    assert.equal(first.status, 200, first.text);
    const stored = async () => (await app.pool.query('SELECT count(*)::int AS n FROM blobs WHERE company_id = $1', [small.companyId])).rows[0].n;
    const before = await stored();
    const refused = await uploadFile(app.baseUrl, small.key, `/products/${b}/image`, { bytes: await noise(), filename: 'b.png' });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error, 'validation_failed');
    assert.match(refused.body.errors.file[0], /agotado/);
    assert.equal((await smallApi.get(`/products/${b}`)).body.data.image_url, null);
    assert.equal(await stored(), before, 'the refused bytes are not kept');
    const replaced = await uploadFile(app.baseUrl, small.key, `/products/${a}/image`, { bytes: await noise(), filename: 'a2.png' });
    assert.equal(replaced.status, 200, replaced.text);
  });

  test('Idempotency-Key: an image body past 100 KB is 413 idempotency_body_too_large, chunked (no Content-Length) too', async () => {
    const big = await sharp({ create: { width: 700, height: 700, channels: 3, background: '#808080', noise: { type: 'gaussian' as const, mean: 128, sigma: 40 } } }).jpeg({ quality: 95 }).toBuffer();
    assert.ok(big.length > 150 * 1024, `a body past 100 KB (${big.length})`);
    /** A multipart upload sent in chunks, as a streaming client sends it: no Content-Length. */
    const chunked = (bytes: Buffer, key: string) =>
      new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }>((resolve, reject) => {
        const boundary = `----chunked${key}`;
        const target = new URL(`${app.baseUrl}/products/${productId}/image`);
        const req = http.request(target, {
          method: 'POST',
          headers: { authorization: `Bearer ${tenant.key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'idempotency-key': key, 'transfer-encoding': 'chunked' },
        });
        req.on('error', reject);
        req.on('response', (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString() || 'null') }));
        });
        req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`);
        for (let i = 0; i < bytes.length; i += 16 * 1024) req.write(bytes.subarray(i, i + 16 * 1024));
        req.end(`\r\n--${boundary}--\r\n`);
      });
    const refused = await chunked(big, `big-${Date.now()}`);
    assert.equal(refused.status, 413);
    assert.equal(refused.body.error, 'idempotency_body_too_large');
    const small = (await samples()).jpeg;
    const key = `small-${Date.now()}`;
    const first = await chunked(small, key);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const replay = await chunked(small, key);
    assert.equal(replay.status, 200);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    // Without the key, the same large image streams in as before.
    assert.equal((await up(`/products/${productId}/image`, big, 'grande.jpg')).status, 200);
    // Two small files under the key are still "one file only" (422), not a body too large.
    const two = await new Promise<{ status: number; body: any }>((resolve, reject) => {
      const boundary = '----twofiles';
      const req = http.request(new URL(`${app.baseUrl}/products/${productId}/image`), {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.key}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'idempotency-key': `two-${Date.now()}`, 'transfer-encoding': 'chunked' },
      });
      req.on('error', reject);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString()) }));
      });
      for (const name of ['a.jpg', 'b.jpg']) {
        req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: image/jpeg\r\n\r\n`);
        req.write(small);
        req.write('\r\n');
      }
      req.end(`--${boundary}--\r\n`);
    });
    assert.equal(two.status, 422, JSON.stringify(two.body));
    assert.equal(two.body.error, 'validation_failed');
  });

  test('Idempotency-Key on an upload is bound to the file and its name: the same bytes named otherwise are idempotency_key_reused', async () => {
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#08f' } }).png().toBuffer();
    const key = `nombre-${Date.now()}`;
    const send = (filename: string) => {
      const form = new FormData();
      form.append('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), filename);
      return fetch(`${app.baseUrl}/products/${productId}/image`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, 'idempotency-key': key }, body: form });
    };
    const first = await send('uno.png');
    assert.equal(first.status, 200);
    const url = ((await first.json()) as any).data.image_url as string;
    assert.match(url, /\/uno\.png$/);
    const renamed = await send('dos.png');
    assert.deepEqual([renamed.status, ((await renamed.json()) as any).error], [422, 'idempotency_key_reused']);
    const again = await send('uno.png');
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(((await again.json()) as any).data.image_url, url);
  });

  test('another company cannot upload to or delete our images (404)', async () => {
    const other = await seedTenant(app.pool);
    const png = (await samples()).png;
    const res = await uploadFile(app.baseUrl, other.key, `/products/${productId}/image`, { bytes: png, filename: 'a.png' });
    assert.equal(res.status, 404);
    const del = await client(app.baseUrl, other.key).delete(`/products/${productId}/image`);
    assert.equal(del.status, 404);
    const variant = await uploadFile(app.baseUrl, other.key, `/products/${productId}/variants/${variantId}/image`, { bytes: png, filename: 'a.png' });
    assert.equal(variant.status, 404);
  });

  test('the worker makes thumbnails: EXIF orientation applied, metadata stripped, within 400×400, for products, variants, brands and categories', async () => {
    // 600×300 pixels stored sideways: EXIF orientation 6 means "rotate 90° clockwise to display".
    const rotated = await sharp({ create: { width: 600, height: 300, channels: 3, background: '#0a0' } })
      .jpeg()
      .withMetadata({ orientation: 6, exif: { IFD0: { Copyright: 'secret-gps-owner' } } })
      .toBuffer();
    const product = await up(`/products/${productId}/image`, rotated, 'Foto Girada.JPG');
    assert.equal(product.status, 200, product.text);
    assert.match(product.body.data.image_url, /foto-girada\.jpg$/);
    const variant = await up(`/products/${productId}/variants/${variantId}/image`, (await samples()).webp, 'v.webp');
    assert.equal(variant.status, 200, variant.text);
    assert.equal(variant.body.data.variant_id, variantId);
    const brand = (await api.post('/brands', { data: { name: 'Marca' } })).body.data;
    const logo = await up(`/brands/${brand.slug}/logo`, (await samples()).png, 'logo.png', 'logo');
    assert.equal(logo.status, 200, logo.text);
    // A logo stored sideways reports the dimensions it is shown at (EXIF orientation applied), as its thumbnail is made.
    const sideways = (await api.post('/brands', { data: { name: 'Marca girada' } })).body.data;
    const turned = await up(`/brands/${sideways.slug}/logo`, rotated, 'girada.jpg', 'logo');
    assert.equal(turned.status, 200, turned.text);
    assert.deepEqual([turned.body.data.logo.width, turned.body.data.logo.height], [300, 600]);
    assert.match(logo.body.data.logo_url, /\/media\//);
    assert.equal(logo.body.data.logo.content_type, 'image/png');
    const category = (await api.post('/product-categories', { data: { name: 'Cat' } })).body.data;
    const catImage = await up(`/product-categories/${category.id}/image`, await solid(50, 50).gif({ loop: 0 }).toBuffer(), 'c.gif');
    assert.equal(catImage.status, 200, catImage.text);

    worker ??= await startWorker(app.config, app.pool, app.databaseUrl);
    const p = await waitFor(async () => {
      const d = (await api.get(`/products/${productId}`)).body.data;
      return d.thumbnail_url && d.variants[0].thumbnail_url ? d : null;
    });
    const thumb = await fetch(p.thumbnail_url.replace(app.config.siteUrl, app.url));
    assert.equal(thumb.headers.get('content-type'), 'image/webp');
    const meta = await sharp(Buffer.from(await thumb.arrayBuffer())).metadata();
    assert.equal(meta.format, 'webp');
    assert.deepEqual([meta.width, meta.height], [200, 400], 'rotated upright, then fitted in 400×400');
    assert.equal(meta.exif, undefined, 'EXIF stripped');
    assert.equal(meta.orientation, undefined);
    const b = await waitFor(async () => (await api.get(`/brands/${brand.id}`)).body.data.logo.thumbnail_url);
    assert.match(b, /logo-thumb\.webp$/);
    await waitFor(async () => (await api.get(`/product-categories/${category.id}`)).body.data.thumbnail_url);
  });

  test('a record written back as read (its own image_url, logo_url, logo) keeps its uploaded images and thumbnails', async () => {
    const made = (await api.post('/products', { data: { name: 'Devuelta', sku: 'DEVUELTA', prices_cents: { mxn: 100 }, variants: [{ name: 'Roja' }] } })).body.data;
    const brand = (await api.post('/brands', { data: { name: 'Marca devuelta' } })).body.data;
    const category = (await api.post('/product-categories', { data: { name: 'Cat devuelta' } })).body.data;
    const { png } = await samples();
    for (const [path, field] of [
      [`/products/${made.id}/image`, 'file'],
      [`/products/${made.id}/variants/${made.variants[0].id}/image`, 'file'],
      [`/brands/${brand.id}/logo`, 'logo'],
      [`/product-categories/${category.id}/image`, 'file'],
    ]) assert.equal((await up(path, png, 'foto.png', field)).status, 200, path);
    worker ??= await startWorker(app.config, app.pool, app.databaseUrl);
    const read = await waitFor(async () => {
      const p = (await api.get(`/products/${made.id}`)).body.data;
      const b = (await api.get(`/brands/${brand.id}`)).body.data;
      const c = (await api.get(`/product-categories/${category.id}`)).body.data;
      return p.thumbnail_url && p.variants[0].thumbnail_url && b.logo.thumbnail_url && c.thumbnail_url ? { p, b, c } : null;
    }, 20_000, 'every thumbnail made');
    const served = async (url: string) => (await fetch(url.replace(app.config.siteUrl, app.url))).status;

    const p = await api.patch(`/products/${made.id}`, {
      data: { name: 'Devuelta 2', image_url: read.p.image_url, variants: [{ id: read.p.variants[0].id, name: 'Roja 2', image_url: read.p.variants[0].image_url }] },
    });
    assert.equal(p.status, 200, p.text);
    assert.deepEqual([p.body.data.image_url, p.body.data.thumbnail_url], [read.p.image_url, read.p.thumbnail_url]);
    assert.deepEqual([p.body.data.variants[0].image_url, p.body.data.variants[0].thumbnail_url], [read.p.variants[0].image_url, read.p.variants[0].thumbnail_url]);
    const b = await api.patch(`/brands/${brand.id}`, { data: { name: 'Marca devuelta 2', logo_url: read.b.logo_url, logo: read.b.logo } });
    assert.equal(b.status, 200, b.text);
    assert.deepEqual(b.body.data.logo, read.b.logo);
    const c = await api.patch(`/product-categories/${category.id}`, { data: { image_url: read.c.image_url } });
    assert.equal(c.status, 200, c.text);
    assert.deepEqual([c.body.data.thumbnail_url, c.body.data.updated_at], [read.c.thumbnail_url, read.c.updated_at], 'no change at all');
    for (const url of [read.p.image_url, read.p.thumbnail_url, read.p.variants[0].image_url, read.p.variants[0].thumbnail_url, read.b.logo.url, read.b.logo.thumbnail_url, read.c.image_url, read.c.thumbnail_url]) {
      assert.equal(await served(url), 200, url);
    }
    // The upload's URL under another name (the name is for people: the token names the file) keeps it too;
    // the record's own thumbnail, which replacing the upload would delete, is 422 and changes nothing.
    const renamed = (url: string) => url.replace(/[^/]+$/, 'otro-nombre.png');
    const p2 = await api.patch(`/products/${made.id}`, { data: { image_url: renamed(read.p.image_url), variants: [{ id: read.p.variants[0].id, image_url: renamed(read.p.variants[0].image_url) }] } });
    assert.equal(p2.status, 200, p2.text);
    assert.deepEqual([p2.body.data.image_url, p2.body.data.thumbnail_url, p2.body.data.variants[0].thumbnail_url], [read.p.image_url, read.p.thumbnail_url, read.p.variants[0].thumbnail_url]);
    const b2 = await api.patch(`/brands/${brand.id}`, { data: { logo_url: renamed(read.b.logo.url) } });
    assert.deepEqual([b2.status, b2.body.data.logo], [200, { ...read.b.logo, url: read.b.logo.url }], b2.text);
    // With a trailing slash, which the media route answers as the same file.
    const slashed = await api.patch(`/products/${made.id}`, { data: { image_url: `${read.p.image_url}/` } });
    assert.deepEqual([slashed.status, slashed.body.data.image_url, slashed.body.data.thumbnail_url], [200, read.p.image_url, read.p.thumbnail_url], slashed.text);
    const ownThumbnails = [
      [`/products/${made.id}`, { image_url: `${read.p.thumbnail_url}/` }, 'image_url'],
      [`/products/${made.id}`, { image_url: read.p.thumbnail_url }, 'image_url'],
      [`/products/${made.id}`, { variants: [{ id: read.p.variants[0].id, image_url: read.p.variants[0].thumbnail_url }] }, 'variants.0.image_url'],
      [`/brands/${brand.id}`, { logo_url: read.b.logo.thumbnail_url }, 'logo_url'],
      [`/product-categories/${category.id}`, { image_url: read.c.thumbnail_url }, 'image_url'],
    ] as const;
    for (const [path, data, field] of ownThumbnails) {
      const res = await api.patch(path, { data });
      assert.deepEqual([res.status, res.body.error, Object.keys(res.body.errors ?? {})], [422, 'validation_failed', [field]], `${path} ${res.text}`);
    }
    for (const url of [read.p.image_url, read.p.thumbnail_url, read.p.variants[0].image_url, read.p.variants[0].thumbnail_url, read.b.logo.url, read.b.logo.thumbnail_url, read.c.image_url, read.c.thumbnail_url]) {
      assert.equal(await served(url), 200, `still served: ${url}`);
    }
    // Another URL still replaces (and deletes) the upload.
    const replaced = await api.patch(`/product-categories/${category.id}`, { data: { image_url: 'https://cdn.example/otra.png' } });
    assert.deepEqual([replaced.body.data.image_url, replaced.body.data.thumbnail_url], ['https://cdn.example/otra.png', null]);
    assert.equal(await served(read.c.image_url), 404);
    assert.equal((await api.delete(`/products/${made.id}`)).status, 204, 'leaves no product media to the tests after');
  });

  test('an image that cannot be decoded is marked failed once, without retries, and its original stays served', async () => {
    worker ??= await startWorker(app.config, app.pool, app.databaseUrl); // started by the thumbnails test when the file runs whole
    const corrupt = craftedPng(32, 32, Buffer.from('this is not zlib data at all, sorry'));
    const res = await up(`/products/${productId}/image`, corrupt, 'corrupt.png');
    assert.equal(res.status, 200, 'the header is fine: only decoding tells');
    const media = await waitFor(async () => {
      const { rows } = await app.pool.query(`SELECT status, error FROM media WHERE owner_id = $1`, [productId]);
      return rows[0]?.status === 'failed' ? rows[0] : null;
    });
    assert.ok(media.error);
    const served = await fetch(res.body.data.image_url.replace(app.config.siteUrl, app.url));
    assert.equal(served.status, 200);
    assert.deepEqual(Buffer.from(await served.arrayBuffer()), corrupt);
    assert.equal((await api.get(`/products/${productId}`)).body.data.thumbnail_url, null);
  });

  test('a transient failure retries with backoff and the thumbnail arrives once storage is back; the original is never touched', async () => {
    await worker?.stop();
    worker = undefined;
    const png = await solid(300, 200).png().toBuffer();
    const res = await up(`/products/${productId}/image`, png, 'retry.png');
    assert.equal(res.status, 200);
    const { rows } = await app.pool.query(`SELECT original_blob_id FROM media WHERE owner_id = $1`, [productId]);
    const blobId = rows[0].original_blob_id;
    // Simulate storage that cannot be read: the chunks are away for a while.
    await app.pool.query('CREATE TABLE parked_chunks AS SELECT * FROM blob_chunks WHERE blob_id = $1', [blobId]);
    await app.pool.query('DELETE FROM blob_chunks WHERE blob_id = $1', [blobId]);
    worker = await startWorker(app.config, app.pool, app.databaseUrl);
    await waitFor(async () => {
      const { rows: jobs } = await app.pool.query(`SELECT state, retry_count FROM pgboss.job WHERE name = 'thumbnail' AND data->>'media_id' = (SELECT id FROM media WHERE owner_id = $1)`, [productId]);
      return jobs[0]?.state === 'retry' && jobs[0].retry_count >= 1;
    });
    await app.pool.query('INSERT INTO blob_chunks SELECT * FROM parked_chunks');
    await app.pool.query('DROP TABLE parked_chunks');
    // The retry made due now rather than at the end of its backoff (5 s, 10 s …, db/queues.ts THUMBNAIL).
    await app.pool.query(`UPDATE pgboss.job SET start_after = now() WHERE name = 'thumbnail' AND state = 'retry' AND data->>'media_id' = (SELECT id FROM media WHERE owner_id = $1)`, [productId]);
    const url = await waitFor(async () => (await api.get(`/products/${productId}`)).body.data.thumbnail_url, 40_000);
    assert.match(url, /retry-thumb\.webp$/);
    const served = await fetch(res.body.data.image_url.replace(app.config.siteUrl, app.url));
    assert.deepEqual(Buffer.from(await served.arrayBuffer()), png);
  });

  test('a worker stopped while thumbnails are in flight finishes and settles them (no job left active); a new worker makes the rest', async () => {
    await worker?.stop();
    worker = undefined;
    const ids: string[] = [];
    for (let n = 0; n < 10; n++) {
      const made = (await api.post('/products', { data: { name: `Lote ${n}`, sku: `LOTE-${n}`, prices_cents: { mxn: 100 } } })).body.data;
      assert.equal((await up(`/products/${made.id}/image`, await solid(1600 + n, 1200).png().toBuffer(), `lote-${n}.png`)).status, 200);
      ids.push(made.id);
    }
    const states = async () =>
      (await app.pool.query(`SELECT m.status, j.state FROM media m JOIN pgboss.job j ON j.name = 'thumbnail' AND j.data->>'media_id' = m.id WHERE m.owner_id = ANY($1)`, [ids])).rows;
    worker = await startWorker(app.config, app.pool, app.databaseUrl);
    await waitFor(async () => (await states()).some((row) => row.status === 'ready'));
    await worker.stop();
    worker = undefined;
    const stopped = await states();
    assert.equal(stopped.length, 10);
    assert.deepEqual(stopped.filter((row) => row.state === 'active'), [], 'every fetched job was settled before stop resolved');
    for (const row of stopped) assert.equal(row.status === 'ready', row.state === 'completed', `media ${row.status} with its job ${row.state}`);
    worker = await startWorker(app.config, app.pool, app.databaseUrl);
    await waitFor(async () => (await states()).every((row) => row.status === 'ready'), 60_000);
    for (const id of ids) assert.match((await api.get(`/products/${id}`)).body.data.thumbnail_url, /lote-\d+-thumb\.webp$/);
    for (const id of ids) assert.equal((await api.delete(`/products/${id}`)).status, 204, 'leaves no product media to the tests after');
  });

  test('DELETE removes the image and its files; the old URLs answer 404; deleting the product removes its media', async () => {
    // An image and its thumbnail on the product, and one on its variant (the tests before leave them too).
    worker ??= await startWorker(app.config, app.pool, app.databaseUrl);
    assert.equal((await up(`/products/${productId}/image`, await solid(300, 200).png().toBuffer(), 'borrar.png')).status, 200);
    assert.equal((await up(`/products/${productId}/variants/${variantId}/image`, (await samples()).png, 'v.png')).status, 200);
    const before = await waitFor(async () => {
      const d = (await api.get(`/products/${productId}`)).body.data;
      return d.thumbnail_url && d;
    }, 20_000, 'the thumbnail of the image to delete');
    const res = await api.delete(`/products/${productId}/image`);
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data, { id: productId, image_url: null, thumbnail_url: null });
    assert.equal((await fetch(before.image_url.replace(app.config.siteUrl, app.url))).status, 404);
    assert.equal((await fetch(before.thumbnail_url.replace(app.config.siteUrl, app.url))).status, 404);
    const v = await api.delete(`/products/${productId}/variants/${variantId}/image`);
    assert.deepEqual(v.body.data, { id: productId, variant_id: variantId, image_url: null, thumbnail_url: null });

    await up(`/products/${productId}/variants/${variantId}/image`, (await samples()).png, 'v.png');
    assert.equal((await api.delete(`/products/${productId}`)).status, 204);
    const { rows } = await app.pool.query(`SELECT count(*)::int AS n FROM media WHERE owner_type IN ('product', 'variant') AND company_id = $1`, [tenant.companyId]);
    assert.equal(rows[0].n, 0);
  });

  test('DELETE /brands/:id/logo answers 200 with the brand (logo_url and logo null) and DELETE /product-categories/:id/image with {id, image_url: null, thumbnail_url: null}; files gone; another company gets 404', async () => {
    const png = (await samples()).png;
    const brand = (await api.post('/brands', { data: { name: 'Logo a borrar' } })).body.data;
    const logo = await up(`/brands/${brand.id}/logo`, png, 'logo.png', 'logo');
    assert.equal(logo.status, 200, logo.text);
    const category = (await api.post('/product-categories', { data: { name: 'Imagen a borrar' } })).body.data;
    const image = await up(`/product-categories/${category.slug}/image`, png, 'cat.png');
    assert.equal(image.status, 200, image.text);

    const other = client(app.baseUrl, (await seedTenant(app.pool)).key);
    assert.equal((await other.delete(`/brands/${brand.id}/logo`)).status, 404);
    assert.equal((await other.delete(`/product-categories/${category.id}/image`)).status, 404);

    const brandRes = await api.delete(`/brands/${brand.slug}/logo`);
    assert.equal(brandRes.status, 200, brandRes.text);
    assert.equal(brandRes.body.data.id, brand.id);
    assert.equal(brandRes.body.data.logo_url, null);
    assert.equal(brandRes.body.data.logo, null);
    assert.equal(brandRes.body.data.name, 'Logo a borrar', 'the whole brand, as the other brand routes answer');
    assert.equal((await api.get(`/brands/${brand.id}`)).body.data.logo_url, null);

    const catRes = await api.delete(`/product-categories/${category.id}/image`);
    assert.equal(catRes.status, 200, catRes.text);
    assert.deepEqual(catRes.body.data, { id: category.id, image_url: null, thumbnail_url: null });
    const after = (await api.get(`/product-categories/${category.id}`)).body.data;
    assert.equal(after.image_url, null);
    assert.equal(after.thumbnail_url, null);

    for (const url of [logo.body.data.logo_url, image.body.data.image_url]) {
      assert.equal((await fetch(url.replace(app.config.siteUrl, app.url))).status, 404, url);
    }
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM media WHERE owner_id = ANY($1)', [[brand.id, category.id]]);
    assert.equal(rows[0].n, 0, 'media rows and their blobs are deleted');
    // Deleting when there is no image is still 200 with nulls.
    assert.equal((await api.delete(`/product-categories/${category.id}/image`)).status, 200);
  });

  test('a DELETE of an image that is not there answers 200 with nulls and writes nothing: updated_at stays', async () => {
    const bare = (await api.post('/products', { data: { name: 'Sin foto', sku: 'SIN-FOTO', prices_cents: { mxn: 100 } } })).body.data;
    const brand = (await api.post('/brands', { data: { name: 'Sin logo' } })).body.data;
    const del = await api.delete(`/products/${bare.id}/image`);
    assert.deepEqual([del.status, del.body.data], [200, { id: bare.id, image_url: null, thumbnail_url: null }]);
    assert.equal((await api.get(`/products/${bare.id}`)).body.data.updated_at, bare.updated_at);
    const logo = await api.delete(`/brands/${brand.id}/logo`);
    assert.equal(logo.status, 200);
    assert.equal(logo.body.data.updated_at, brand.updated_at);
    await api.delete(`/products/${bare.id}`);
  });

  test('a product deleted while one of its variants\' images uploads takes that image with it: no image outlives its owner, none stays served', async () => {
    const png = (await samples()).png;
    const urls: string[] = [];
    // The delete sent from 0 to 24 ms after the upload, so that some land while the upload writes.
    for (let round = 0; round < 50; round++) {
      const made = (await api.post('/products', { data: { name: `Carrera ${round}`, prices_cents: { mxn: 100 }, variants: [{ name: 'Única' }] } })).body.data;
      const [uploaded, deleted] = await Promise.all([
        uploadFile(app.baseUrl, tenant.key, `/products/${made.id}/variants/${made.variants[0].id}/image`, { bytes: png, filename: `carrera-${round}.png` }),
        new Promise((resolve) => setTimeout(resolve, round % 25)).then(() => api.delete(`/products/${made.id}`)),
      ]);
      assert.equal(deleted.status, 204);
      // The upload either came first (its image then went with the product) or found its variant gone.
      assert.ok(uploaded.status === 200 || uploaded.status === 404, `${uploaded.status} ${uploaded.text}`);
      if (uploaded.status === 200) urls.push(uploaded.body.data.image_url);
    }
    const { rows } = await app.pool.query(
      `SELECT m.id FROM media m WHERE m.company_id = $1 AND m.owner_type = 'variant' AND NOT EXISTS (SELECT 1 FROM product_variants v WHERE v.id = m.owner_id)`,
      [tenant.companyId],
    );
    assert.deepEqual(rows, [], 'images of variants that no longer exist');
    for (const url of urls) assert.equal((await fetch(url)).status, 404, url);
  });

  test('the media route serves only catalog media, never other blobs', async () => {
    const { rows } = await app.pool.query(
      `INSERT INTO blobs (id, company_id, content_type, size_bytes, sha256, complete) VALUES ('0123456789abcdef01234567', $1, 'application/pdf', 0, 'x', true) RETURNING id`,
      [tenant.companyId],
    );
    assert.equal((await fetch(`${app.url}/media/${rows[0].id}/private.pdf`)).status, 404);
    assert.equal((await fetch(`${app.url}/media/not-an-id/x.png`)).status, 404);
  });

  test('media URLs carry 128 random bits, not a countable id: the blob id of a served image is not a URL', async () => {
    const images = await samples();
    const product = (await api.post('/products', { data: { name: 'Ficha', prices_cents: { mxn: 100 } } })).body.data;
    const urls: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await up(`/products/${product.id}/image`, images.png);
      assert.equal(res.status, 200, res.text);
      urls.push(res.body.data.image_url);
    }
    const tokens = urls.map((url) => /\/media\/([^/]+)\//.exec(url)![1]);
    for (const token of tokens) assert.match(token, /^[0-9a-f]{32}$/);
    assert.equal(new Set(tokens).size, 3);
    const last = urls.at(-1)!.replace(app.config.siteUrl, app.url);
    assert.equal((await fetch(last)).status, 200);
    // The same file by its blob id (what the URL used to carry) is not served.
    const { rows } = await app.pool.query('SELECT original_blob_id FROM media WHERE original_token = $1', [tokens.at(-1)]);
    assert.equal((await fetch(`${app.url}/media/${rows[0].original_blob_id}/photo.png`)).status, 404);
    // Neither is a neighbouring token: an upper-case or truncated spelling is 404 too.
    assert.equal((await fetch(last.replace(tokens.at(-1)!, tokens.at(-1)!.toUpperCase()))).status, 404);
    assert.equal((await fetch(last.replace(tokens.at(-1)!, tokens.at(-1)!.slice(0, 24)))).status, 404);
  });
});
