import type { ActivityLog } from './mcp/activity-log.ts';
import type { McpQuota } from './mcp/quota.ts';
import type { Router, RouterMiddleware } from '@koa/router';
import type { Middleware, ParameterizedContext } from 'koa';
import type { Client, Pool } from '../db/pool.ts';
import type { Config } from '../lib/config.ts';
import type { AuthKey } from './auth/keys.ts';
import type { SessionAuth } from './auth/sessions.ts';
import type { KeyCache } from './auth/key-cache.ts';
import type { RateLimiter } from './rate-limiter.ts';
import type { TotalsCache } from './pagination.ts';
import type { ResponseCache } from './middleware/response-cache.ts';
import type { JobSender } from '../db/job-sender.ts';
import type { UploadedFile } from './route.ts';
import type { BlobStore } from '../storage/blobs.ts';

/** Everything a request handler may need, built once per process. */
export type Deps = {
  config: Config;
  pool: Pool;
  keyCache: KeyCache;
  rateLimiter: RateLimiter;
  totals: TotalsCache;
  responseCache: ResponseCache;
  /** Enqueues pg-boss jobs inside the caller's transaction. */
  jobs: JobSender;
  /** Uploaded bytes: PostgreSQL or an S3-compatible bucket (storage/blobs.ts). */
  blobs: BlobStore;
  /** MCP tools/call records, written in batches (api/mcp/activity-log.ts). */
  mcpActivity: ActivityLog;
  /** The MCP quota counter: exact near the limit, batched far from it (api/mcp/quota.ts). */
  mcpQuota: McpQuota;
  /** Set when the process is stopping: GET /readyz answers 503 so the router stops sending traffic. */
  lifecycle: { draining: boolean };
};

/** A credential field of an answer that the idempotency store withholds (api/middleware/idempotency.ts). */
export type CredentialField = 'manage_url' | 'secret';

export type ApiState = {
  requestId: string;
  auth?: AuthKey;
  /** Set on `/user/...` routes, authenticated by a user session. */
  session?: SessionAuth;
  /** Set by the multipart body parser of upload routes. */
  upload?: UploadedFile;
  /** The credential of an MCP request (api/mcp/server.ts). */
  mcpCredential?: { companyId: string; scopes: string[]; label: string; allowedOrigins: string[] };
  /** The transaction of an Idempotency-Key request (api/middleware/idempotency.ts); handlers get it as `db`. */
  db?: Client;
  /**
   * Fields of the answer's `data` that are credentials (a booking's `manage_url`, a webhook endpoint's `secret`), set by the handler
   * that answers them: the stored answer of an Idempotency-Key holds them withheld, rebuilt on replay.
   */
  withheld?: readonly CredentialField[];
  /**
   * A status other than the route's, set by a handler (a create that finds
   * the record its `metadata.external_ref` names answers 200, not 201).
   */
  status?: number;
};

/** What the app adds to Koa's context: the process deps (api/app.ts sets them once). */
export type ApiContextExtension = { deps: Deps };

/** The context of every request: Koa's, typed with our state and deps. */
export type ApiContext = ParameterizedContext<ApiState, ApiContextExtension>;
export type ApiMiddleware = Middleware<ApiState, ApiContextExtension>;
/** Middleware mounted on a router: the context also has `params`. */
export type ApiRouteMiddleware = RouterMiddleware<ApiState, ApiContextExtension>;
export type ApiRouter = Router<ApiState, ApiContextExtension>;
