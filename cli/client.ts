// Where the admin endpoint is and how to authenticate to it (DESIGN.md, CLI
// contract): `--url`, else ADMIN_URL, else http://localhost:$PORT; the token
// from ADMIN_TOKEN, else DATA_DIR/admin-token (what `npm start` generates in
// development). Resolved lazily, so `--help` works without a token.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createTRPCClient, httpLink } from '@trpc/client';
import type { inferRouterOutputs } from '@trpc/server';
import type { AdminRouter } from '../api/admin/router.ts';
import { CliError } from './output.ts';

export type AdminClient = ReturnType<typeof createTRPCClient<AdminRouter>>;
/** What each procedure returns, e.g. `Outputs['company']['show']`. */
export type Outputs = inferRouterOutputs<AdminRouter>;

const TRPC_PATH = '/admin/trpc';

/** The service root the operator gave (or the default), without a trailing slash. */
export function resolveUrl(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (!flag && !env.ADMIN_URL && env.PORT && !/^\d{1,5}$/.test(env.PORT)) {
    throw new CliError(`invalid PORT "${env.PORT}": wsctl calls http://localhost:$PORT unless --url or ADMIN_URL gives the service's URL`);
  }
  const raw = flag || env.ADMIN_URL || `http://localhost:${env.PORT || 3000}`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliError(`invalid admin URL "${raw}" (expected e.g. http://localhost:3000)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError(`invalid admin URL "${raw}": use http or https`);
  // Accept both the service root and the full endpoint, so a pasted /admin/trpc URL works too.
  return url.toString().replace(/\/+$/, '').replace(/\/admin\/trpc$/, '');
}

export function resolveToken(env: NodeJS.ProcessEnv = process.env): string {
  if (env.ADMIN_TOKEN) return env.ADMIN_TOKEN;
  const file = path.resolve(env.DATA_DIR || './.data', 'admin-token');
  let token: string;
  try {
    token = readFileSync(file, 'utf8').trim();
  } catch {
    throw new CliError(`no admin token: set ADMIN_TOKEN or create ${file}`);
  }
  if (!token) throw new CliError(`no admin token: ${file} is empty`);
  return token;
}

/** The longest WSCTL_TIMEOUT_SECONDS taken: a day. */
export const MAX_TIMEOUT_SECONDS = 86_400;

/**
 * How long a call waits for the server's answer: 60 s, or WSCTL_TIMEOUT_SECONDS. A server that takes
 * the connection and never answers would otherwise hold a script for undici's 5 minutes.
 */
export function resolveTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.WSCTL_TIMEOUT_SECONDS;
  if (raw === undefined || raw === '') return 60_000;
  // At most a day: Node's timers hold about 24.8 days, past which a wait fires at once.
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < 1 || Number(raw) > MAX_TIMEOUT_SECONDS) {
    throw new CliError(`invalid WSCTL_TIMEOUT_SECONDS "${raw}" (expected whole seconds, from 1 to ${MAX_TIMEOUT_SECONDS})`);
  }
  return Number(raw) * 1000;
}

/** Where and how to reach the admin endpoints, for a call that is not a tRPC procedure (a file download). */
export type AdminEndpoint = { url: string; token: string; timeoutMs: number };

export function createAdminClient(options: { url?: string }): { api: AdminClient; url: string; endpoint: AdminEndpoint } {
  const url = resolveUrl(options.url);
  const token = resolveToken();
  const timeoutMs = resolveTimeoutMs();
  const api = createTRPCClient<AdminRouter>({
    // One request per call (no batching): a CLI makes one call at a time and
    // plain requests keep server logs and errors one-to-one with commands.
    links: [
      httpLink({
        url: url + TRPC_PATH,
        headers: { authorization: `Bearer ${token}` },
        fetch: (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) }),
      }),
    ],
  });
  return { api, url, endpoint: { url, token, timeoutMs } };
}
