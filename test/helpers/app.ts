// Starts the real Koa app on a random port over a fresh database, and gives
// tests a tiny HTTP client plus tenant seeding through the admin functions.
import type { AddressInfo } from 'node:net';
import http, { createServer, type Server } from 'node:http';
import { createCompany, updateCompany, type Plan } from '../../api/admin/companies.ts';
import { issueKey } from '../../api/admin/keys.ts';
import { closeDeps, createApp, createDeps } from '../../api/app.ts';
import { undeclaredErrors } from '../../api/route.ts';
import { ALL_SCOPES } from '../../api/auth/scopes.ts';
import type { Deps } from '../../api/types.ts';
import { createPool, type Pool } from '../../db/pool.ts';
import { loadConfig, type Config } from '../../lib/config.ts';
import { createTestDatabase } from './db.ts';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';

export type TestApp = {
  url: string;
  baseUrl: string;
  databaseUrl: string;
  pool: Pool;
  deps: Deps;
  config: Config;
  close: () => Promise<void>;
};

/**
 * Tests deliver webhooks to receivers on 127.0.0.1, so the app (and a worker
 * started with its config) opts out of the SSRF guard, except under
 * NODE_ENV=production (which refuses the opt-out) or when the caller sets
 * ALLOW_PRIVATE_WEBHOOK_TARGETS itself (`''`: the default, guard on).
 */
/** A TCP port free on 127.0.0.1 right now (for a process that must be given its port). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

export async function startTestApp(
  env: Record<string, string> = {},
  /** `connectVia`: the URL the app connects to instead of the test database's own (a relay in front of it). */
  options: { connectVia?: (databaseUrl: string) => Promise<string> } = {},
): Promise<TestApp> {
  const db = await createTestDatabase();
  const appUrl = options.connectVia ? await options.connectVia(db.url) : db.url;
  // SITE_URL is the address the app really listens on (links it writes, the
  // OAuth issuer and the MCP 401's metadata URL must reach it), unless a test sets its own.
  // Production takes only an https root: the app behind a TLS proxy, as tests reach it with
  // X-Forwarded-Proto: https.
  const port = env.SITE_URL ? 0 : await freePort();
  const scheme = env.NODE_ENV === 'production' ? 'https' : 'http';
  const settings: Record<string, string> = { NODE_ENV: 'test', ADMIN_TOKEN, BOOKING_TOKEN_KEY: 'test-booking-token-key-0123456789abcdef', LOG_LEVEL: 'silent', DATABASE_URL: appUrl, ...(port ? { SITE_URL: `${scheme}://127.0.0.1:${port}` } : {}), ...env };
  if (!('ALLOW_PRIVATE_WEBHOOK_TARGETS' in env) && settings.NODE_ENV !== 'production') settings.ALLOW_PRIVATE_WEBHOOK_TARGETS = '1';
  const config = loadConfig(settings);
  const pool = createPool(appUrl, 10);
  const deps = await createDeps({ config, pool, databaseUrl: appUrl });
  const server: Server = createApp(deps).listen(port, '127.0.0.1');
  // As api/server.ts: idle connections live 65 s. With Node's 5 s a client reusing a pooled socket
  // just as the server closed it got ECONNRESET (seen once in CI after a 4 s tsc run in one test).
  server.keepAliveTimeout = 65_000;
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    baseUrl: `${url}/api/v1`,
    databaseUrl: db.url,
    pool,
    deps,
    config,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await closeDeps(deps);
      await pool.end();
      await db.drop();
      // A route answered an error code it does not declare: the OpenAPI document does not list it.
      if (undeclaredErrors.size) {
        const seen = [...undeclaredErrors];
        undeclaredErrors.clear();
        throw new Error(`routes answered error codes they do not declare (add them to the route's errors): ${seen.join('; ')}`);
      }
    },
  };
}

export type Tenant = { companyId: string; ownerId: string; key: string; keyId: string };

export async function seedTenant(
  pool: Pool,
  options: { name?: string; scopes?: string[]; modules?: string[]; origins?: string[]; plan?: Plan; rateLimitPerMinute?: number; responseCache?: boolean } = {},
): Promise<Tenant> {
  const { company, owner } = await createCompany(pool, {
    name: options.name ?? `Empresa ${Math.random().toString(36).slice(2, 8)}`,
    ownerEmail: `owner-${Math.random().toString(36).slice(2, 10)}@test.example`,
    modules: options.modules ?? [],
    plan: options.plan,
  });
  if (options.responseCache) await updateCompany(pool, company.id, { responseCache: true });
  const key = await issueKey(pool, {
    companyId: company.id,
    scopes: options.scopes ?? [...ALL_SCOPES],
    origins: options.origins,
    rateLimitPerMinute: options.rateLimitPerMinute,
  });
  return { companyId: company.id, ownerId: owner.id, key: key.secret, keyId: key.id };
}


export type Response<T = any> = { status: number; headers: Headers; body: T; text: string };

/** fetch with the key, JSON in and out. */
export async function request<T = any>(
  baseUrl: string,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; headers?: Record<string, string>; raw?: string } = {},
): Promise<Response<T>> {
  const headers: Record<string, string> = { ...(options.headers ?? {}) };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  const res = await fetch(baseUrl + path, { method, headers, body });
  return readAnswer<T>(res);
}

/** An answer's status, headers and text, and its body parsed when it is JSON. */
async function readAnswer<T>(res: globalThis.Response): Promise<Response<T>> {
  const text = await res.text();
  let parsed: unknown = undefined;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/** One file as a multipart upload (`POST`), as a browser or an SDK sends it; the answer as `request` gives it. */
export async function uploadFile<T = any>(
  baseUrl: string,
  key: string,
  path: string,
  file: { bytes: Buffer; field?: string; filename?: string; type?: string },
): Promise<Response<T>> {
  const form = new FormData();
  form.append(file.field ?? 'file', new Blob([new Uint8Array(file.bytes)], file.type ? { type: file.type } : {}), file.filename ?? 'file.bin');
  const res = await fetch(baseUrl + path, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  return readAnswer<T>(res);
}

/**
 * A request that sends a header more than once, as separate lines (fetch joins repeated names into
 * one line). `headers` values that are arrays are sent once per element.
 */
export function requestRepeatingHeaders(url: string, method: string, headers: Record<string, string | string[]>, body?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A client bound to one base URL and key. */
export function client(baseUrl: string, key?: string) {
  return {
    get: <T = any>(path: string, headers?: Record<string, string>) => request<T>(baseUrl, 'GET', path, { key, headers }),
    post: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => request<T>(baseUrl, 'POST', path, { key, body, headers }),
    patch: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => request<T>(baseUrl, 'PATCH', path, { key, body, headers }),
    put: <T = any>(path: string, body?: unknown, headers?: Record<string, string>) => request<T>(baseUrl, 'PUT', path, { key, body, headers }),
    delete: <T = any>(path: string, headers?: Record<string, string>) => request<T>(baseUrl, 'DELETE', path, { key, headers }),
  };
}
