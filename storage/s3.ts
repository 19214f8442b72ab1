// A client for the part of the S3 API the blob store uses (PutObject,
// GetObject, DeleteObject), against AWS S3 or any S3-compatible service
// (MinIO, Cloudflare R2, Backblaze B2, Wasabi, DigitalOcean Spaces). Requests
// are signed with AWS Signature Version 4 by `aws4` (the signer the old
// `request` library and many SDK-free clients use; no dependencies) and sent
// with undici. The AWS SDK would do the same in ~100 packages and several MB.
//
// Every upload carries its SHA-256 (computed while the bytes came in) as
// `x-amz-content-sha256`: the service refuses a body that does not match
// what was signed, so a truncated upload cannot be stored as a blob.
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import aws4 from 'aws4';
import { Agent, request, type Dispatcher } from 'undici';
import type { S3Config } from '../lib/config.ts';

export type { S3Config };

/**
 * A refusal or failure of the service, with its HTTP status and S3's error
 * code (`NoSuchKey`, `AccessDenied`, `SignatureDoesNotMatch`…). The status is
 * `httpStatus`, not `status`: Koa and our error middleware read `status` as
 * the answer to give the client, and the bucket's 400 is not the client's fault.
 */
export class S3Error extends Error {
  readonly httpStatus: number;
  readonly code: string;
  constructor(operation: string, key: string, httpStatus: number, code: string, message: string) {
    super(`S3 ${operation} ${key}: ${httpStatus} ${code}${message ? ` (${message})` : ''}`);
    this.name = 'S3Error';
    this.httpStatus = httpStatus;
    this.code = code;
  }
}

export type PutBody = { buffer: Buffer } | { file: string; size: number };

const TIMEOUT_MS = 30_000;

export class S3Client {
  readonly #config: S3Config;
  readonly #origin: URL;
  readonly #agent: Dispatcher;

  /** `connect`: socket options of the agent (tests resolve a virtual-hosted bucket's name with `lookup`). */
  constructor(config: S3Config, connect?: Agent.Options['connect']) {
    this.#config = config;
    const endpoint = new URL(config.endpoint);
    this.#origin = config.pathStyle ? endpoint : new URL(`${endpoint.protocol}//${config.bucket}.${endpoint.host}`);
    this.#agent = new Agent({ connections: 32, headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS, keepAliveTimeout: 10_000, connect });
  }

  /** The key of an object named `name` under the configured prefix (what put/get/delete take). */
  key(name: string): string {
    return `${this.#config.prefix}${name}`;
  }

  async put(key: string, body: PutBody, options: { contentType: string; sha256: string }): Promise<void> {
    const size = 'buffer' in body ? body.buffer.length : body.size;
    const res = await this.#send('PUT', key, {
      'content-type': options.contentType,
      'content-length': String(size),
      'x-amz-content-sha256': options.sha256,
    }, 'buffer' in body ? body.buffer : createReadStream(body.file));
    await this.#expect(res, 'PutObject', key, [200]);
    await res.body.dump();
  }

  /** The object's bytes as a stream (the caller consumes or destroys it). */
  async stream(key: string): Promise<Readable> {
    const res = await this.#send('GET', key, {});
    await this.#expect(res, 'GetObject', key, [200]);
    return res.body;
  }

  async get(key: string): Promise<Buffer> {
    const res = await this.#send('GET', key, {});
    await this.#expect(res, 'GetObject', key, [200]);
    return Buffer.from(await res.body.arrayBuffer());
  }

  /** Idempotent, as S3's DeleteObject is: a key already gone is not an error. */
  async delete(key: string): Promise<void> {
    const res = await this.#send('DELETE', key, {});
    await this.#expect(res, 'DeleteObject', key, [200, 204, 404]);
    await res.body.dump();
  }

  close(): Promise<void> {
    return this.#agent.close();
  }

  #send(method: string, key: string, headers: Record<string, string>, body?: Buffer | Readable) {
    const path = `${this.#config.pathStyle ? `${this.#origin.pathname.replace(/\/$/, '')}/${this.#config.bucket}` : ''}/${key}`;
    // aws4 signs `x-amz-content-sha256` as given; without one (GET, DELETE) it signs the empty body's hash.
    const signed = aws4.sign(
      { host: this.#origin.host, path, method, service: 's3', region: this.#config.region, headers: { ...headers } },
      { accessKeyId: this.#config.accessKeyId, secretAccessKey: this.#config.secretAccessKey },
    );
    // Concatenated, not resolved with new URL(path, origin): resolution would
    // normalize the path after it was signed.
    return request(`${this.#origin.origin}${path}`, {
      method: method as Dispatcher.HttpMethod,
      headers: signed.headers as Record<string, string>,
      body,
      dispatcher: this.#agent,
    }).catch((error: Error & { code?: string }) => {
      // The bucket out of reach (refused, reset, timed out) is the blob store's outage, as its 5xx are:
      // never taken for the database's (their socket errors share the codes).
      throw new S3Error(method, key, 503, error.code ?? 'NetworkError', error.message);
    });
  }

  async #expect(res: Dispatcher.ResponseData, operation: string, key: string, ok: number[]): Promise<void> {
    if (ok.includes(res.statusCode)) return;
    const text = await res.body.text().catch(() => '');
    const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? 'UnknownError';
    const message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1] ?? '';
    throw new S3Error(operation, key, res.statusCode, code, message);
  }
}
