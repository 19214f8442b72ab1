import type { ParameterizedContext } from 'koa';
import type { Pool } from '../db/pool.ts';
import type { Config } from '../lib/config.ts';
import type { AuthKey } from './auth/keys.ts';
import type { KeyCache } from './auth/key-cache.ts';
import type { RateLimiter } from './middleware/rate-limit.ts';
import type { TotalsCache } from './pagination.ts';
import type { ResponseCache } from './middleware/response-cache.ts';
import type { JobQueue } from '../worker/queues.ts';

/** Everything a request handler may need, built once per process. */
export type Deps = {
  config: Config;
  pool: Pool;
  keyCache: KeyCache;
  rateLimiter: RateLimiter;
  totals: TotalsCache;
  responseCache: ResponseCache;
  /** Sends background jobs (form post-actions) inside the caller's transaction. */
  jobs: JobQueue;
};

export type ApiState = {
  requestId: string;
  auth?: AuthKey;
};

export type ApiContext = ParameterizedContext<ApiState> & { deps: Deps };
