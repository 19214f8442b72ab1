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

/** Statuses worth another attempt: the service's own failures (SlowDown, InternalError), and 503 for a network failure. */
const RETRIED = new Set([500, 502, 503, 504]);

const TIMEOUT_MS = 30_000;
/** Attempts of one call when the service answers 500/502/503/504 or cannot be reached (AWS asks clients to retry these). */
export const S3_ATTEMPTS = 3;
const RETRY_BASE_MS = 100;

export class S3Client {
  readonly #config: S3Config;
  readonly #origin: URL;
  /** Uploads, whole reads and deletes: short calls. */
  readonly #agent: Dispatcher;
  /**
   * Streamed reads (public media downloads): their sockets are held as long as the visitor reads, so
   * slow or stalled downloads get a pool of their own and never hold up uploads, thumbnails or deletes.
   */
  readonly #streams: Dispatcher;

  /** `connect`: socket options of the agents (tests resolve a virtual-hosted bucket's name with `lookup`). */
  constructor(config: S3Config, connect?: Agent.Options['connect']) {
    this.#config = config;
    const endpoint = new URL(config.endpoint);
    this.#origin = config.pathStyle ? endpoint : new URL(`${endpoint.protocol}//${config.bucket}.${endpoint.host}`);
    this.#agent = new Agent({ connections: 32, headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS, keepAliveTimeout: 10_000, connect });
    this.#streams = new Agent({ connections: 256, headersTimeout: TIMEOUT_MS, bodyTimeout: TIMEOUT_MS, keepAliveTimeout: 10_000, connect });
  }

  /** The key of an object named `name` under the configured prefix (what put/get/delete take). */
  key(name: string): string {
    return `${this.#config.prefix}${name}`;
  }

  async put(key: string, body: PutBody, options: { contentType: string; sha256: string }): Promise<void> {
    const size = 'buffer' in body ? body.buffer.length : body.size;
    const headers = { 'content-type': options.contentType, 'content-length': String(size), 'x-amz-content-sha256': options.sha256 };
    // A file is read again from its start on each attempt.
    const res = await this.#call('PutObject', 'PUT', key, headers, [200], this.#agent, () => ('buffer' in body ? body.buffer : createReadStream(body.file)));
    await res.body.dump();
  }

  /** The object's bytes as a stream (the caller consumes or destroys it). */
  async stream(key: string): Promise<Readable> {
    return (await this.#call('GetObject', 'GET', key, {}, [200], this.#streams)).body;
  }

  async get(key: string): Promise<Buffer> {
    const res = await this.#call('GetObject', 'GET', key, {}, [200], this.#agent);
    return Buffer.from(await res.body.arrayBuffer());
  }

  /**
   * Idempotent, as S3's DeleteObject is: a key already gone is not an error. S3 answers 204 for a
   * missing key; a `404 NoSuchKey` (some compatible services) is taken as gone too, but no other 404:
   * `NoSuchBucket` (a mistyped S3_BUCKET) must keep the object queued, not drop it as deleted.
   */
  async delete(key: string): Promise<void> {
    try {
      const res = await this.#call('DeleteObject', 'DELETE', key, {}, [200, 204], this.#agent);
      await res.body.dump();
    } catch (error) {
      if (error instanceof S3Error && error.httpStatus === 404 && error.code === 'NoSuchKey') return;
      throw error;
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.#agent.close(), this.#streams.close()]);
  }

  /** One operation, retried with backoff (100 ms, 400 ms) while the service answers 5xx or the connection fails (refused, reset), not after a timeout. PUT, GET and DELETE are idempotent, so a retry repeats nothing. */
  async #call(operation: string, method: string, key: string, headers: Record<string, string>, ok: number[], agent: Dispatcher, body?: () => Buffer | Readable): Promise<Dispatcher.ResponseData> {
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await this.#send(method, key, headers, body?.(), agent);
        await this.#expect(res, operation, key, ok);
        return res;
      } catch (error) {
        // Not a timeout: a web request would wait 30 s more per attempt, past what a router allows.
        const timedOut = error instanceof S3Error && /TIMEOUT|TIMEDOUT/.test(error.code);
        if (!(error instanceof S3Error) || !RETRIED.has(error.httpStatus) || timedOut || attempt >= S3_ATTEMPTS) throw error;
        await new Promise((resolve) => setTimeout(resolve, RETRY_BASE_MS * 4 ** (attempt - 1)));
      }
    }
  }

  #send(method: string, key: string, headers: Record<string, string>, body: Buffer | Readable | undefined, agent: Dispatcher) {
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
      dispatcher: agent,
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
