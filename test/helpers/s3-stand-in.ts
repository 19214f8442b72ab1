// A local stand-in for the part of the S3 API the blob store uses, over real
// HTTP, path-style (`/<bucket>/<key>`) or virtual-hosted (`Host:
// <bucket>.<anything>`, `/<key>`): PutObject, GetObject, DeleteObject,
// with S3's XML error bodies (NoSuchKey, NoSuchBucket, AccessDenied,
// SignatureDoesNotMatch, XAmzContentSHA256Mismatch, MissingContentLength).
//
// It checks every request's AWS Signature Version 4 with its own
// implementation of the algorithm (AWS docs, "Create a signed AWS API
// request"), not with the client's signer, and checks the body against the
// signed `x-amz-content-sha256`, so a client that signs wrongly or sends other
// bytes than it signed fails here as it would against AWS. Objects live in
// memory. Used by the tests and by `npm run bench -- catalog` with BENCH_BLOB_STORE=s3.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type StoredObject = { body: Buffer; contentType: string };

export type S3StandIn = {
  url: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  objects: Map<string, StoredObject>;
  requests: Array<{ method: string; key: string; status: number }>;
  /** The next `times` requests of `method` answer `status` with S3 error `code`. */
  /** The next `times` requests of `method` (to `key` only, when given) answer `status` with S3's error `code`. */
  fail: (method: string, status: number, code: string, times?: number, key?: string) => void;
  /** GetObject answers still being sent: their connection held by a reader that has not read them to the end. */
  openDownloads: () => number;
  /** Environment for the app's config (lib/config.ts) pointing BLOB_STORE at this stand-in. */
  env: (prefix?: string) => Record<string, string>;
  close: () => Promise<void>;
};

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data, 'utf8').digest();
const sha256Hex = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');

function errorXml(code: string, message: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
}

/** Verifies the Authorization header of a SigV4 request; returns the error code, or null when the signature holds. */
function checkSignature(req: IncomingMessage, path: string, query: string, keys: { accessKeyId: string; secretAccessKey: string; region: string }): string | null {
  const auth = req.headers.authorization ?? '';
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return 'AccessDenied';
  const [, accessKeyId, date, region, signedHeaders, signature] = m;
  if (accessKeyId !== keys.accessKeyId) return 'InvalidAccessKeyId';
  if (region !== keys.region) return 'AuthorizationHeaderMalformed';
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  if (!amzDate.startsWith(date)) return 'AccessDenied';
  const names = signedHeaders.split(';');
  if (!names.includes('host') || !names.includes('x-amz-date') || !names.includes('x-amz-content-sha256')) return 'AccessDenied';
  const canonicalHeaders = names.map((name) => `${name}:${String(req.headers[name] ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  const canonicalQuery = query
    ? query.split('&').map((p) => p.split('=')).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v = '']) => `${k}=${v}`).join('&')
    : '';
  const canonicalRequest = [req.method, path, canonicalQuery, canonicalHeaders, signedHeaders, String(req.headers['x-amz-content-sha256'])].join('\n');
  const scope = `${date}/${region}/s3/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${keys.secretAccessKey}`, date), region), 's3'), 'aws4_request');
  const expected = createHmac('sha256', signingKey).update(stringToSign).digest();
  return timingSafeEqual(expected, Buffer.from(signature, 'hex')) ? null : 'SignatureDoesNotMatch';
}

export async function startS3StandIn(options: { bucket?: string; region?: string; accessKeyId?: string; secretAccessKey?: string; port?: number } = {}): Promise<S3StandIn> {
  const bucket = options.bucket ?? 'workspace-test';
  const keys = { accessKeyId: options.accessKeyId ?? 'AKIASTANDIN0000000001', secretAccessKey: options.secretAccessKey ?? 'stand-in-secret-key-0123456789abcdefghij', region: options.region ?? 'us-east-1' };
  const objects = new Map<string, StoredObject>();
  const requests: S3StandIn['requests'] = [];
  const faults: Array<{ method: string; status: number; code: string; times: number; key?: string }> = [];
  let streaming = 0;

  const answer = (res: ServerResponse, req: IncomingMessage, key: string, status: number, body?: string | Buffer, headers: Record<string, string> = {}) => {
    requests.push({ method: req.method!, key, status });
    res.writeHead(status, body === undefined ? headers : { 'content-type': 'application/xml', ...headers });
    res.end(body);
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const [rawPath, query = ''] = (req.url ?? '/').split('?');
    const host = String(req.headers.host ?? '');
    const m = host.startsWith(`${bucket}.`) ? /^\/()(.+)$/.exec(rawPath)?.with(1, bucket) : /^\/([^/]+)\/(.+)$/.exec(rawPath);
    const key = m ? decodeURIComponent(m[2]) : '';
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const denied = checkSignature(req, rawPath, query, keys);
    if (denied) return answer(res, req, key, 403, errorXml(denied, 'The request signature we calculated does not match the signature you provided.'));
    if (!m) return answer(res, req, key, 400, errorXml('InvalidRequest', 'Expected /<bucket>/<key>, or /<key> with Host: <bucket>.…'));
    if (m[1] !== bucket) return answer(res, req, key, 404, errorXml('NoSuchBucket', 'The specified bucket does not exist'));
    const fault = faults.find((f) => f.times > 0 && f.method === req.method && (f.key === undefined || f.key === key));
    if (fault) {
      fault.times--;
      return answer(res, req, key, fault.status, errorXml(fault.code, 'Injected by the test'));
    }
    if (req.method === 'PUT') {
      if (req.headers['content-length'] === undefined) return answer(res, req, key, 411, errorXml('MissingContentLength', 'You must provide the Content-Length HTTP header.'));
      if (req.headers['x-amz-content-sha256'] !== sha256Hex(body)) {
        return answer(res, req, key, 400, errorXml('XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed."));
      }
      objects.set(key, { body, contentType: String(req.headers['content-type'] ?? 'binary/octet-stream') });
      return answer(res, req, key, 200, undefined, { etag: `"${createHash('md5').update(body).digest('hex')}"` });
    }
    if (req.method === 'GET') {
      const object = objects.get(key);
      if (!object) return answer(res, req, key, 404, errorXml('NoSuchKey', 'The specified key does not exist.'));
      requests.push({ method: 'GET', key, status: 200 });
      // Open until the body is all sent or the client (the app) drops the connection.
      streaming++;
      res.once('close', () => streaming--);
      res.writeHead(200, { 'content-type': object.contentType, 'content-length': object.body.length });
      return res.end(object.body);
    }
    if (req.method === 'DELETE') {
      objects.delete(key);
      return answer(res, req, key, 204);
    }
    return answer(res, req, key, 405, errorXml('MethodNotAllowed', 'The specified method is not allowed against this resource.'));
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error) => {
      res.writeHead(500);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    bucket,
    ...keys,
    objects,
    requests,
    fail: (method, status, code, times = 1, key) => faults.push({ method, status, code, times, key }),
    openDownloads: () => streaming,
    env: (prefix = '') => ({
      BLOB_STORE: 's3',
      S3_ENDPOINT: url,
      S3_BUCKET: bucket,
      S3_REGION: keys.region,
      S3_ACCESS_KEY_ID: keys.accessKeyId,
      S3_SECRET_ACCESS_KEY: keys.secretAccessKey,
      ...(prefix ? { S3_PREFIX: prefix } : {}),
    }),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
