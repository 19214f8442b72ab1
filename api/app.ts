// The Koa application: the middleware that applies to every request, then the
// routers (health, API, OpenAPI and reference page, admin tRPC).
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { createServer, type Server } from 'node:http';
import Router from '@koa/router';
import Koa from 'koa';
import type { QueryConfig } from 'pg';
import type { Pool } from '../db/pool.ts';
import type { Config } from '../lib/config.ts';
import { adminMiddleware } from './admin/koa.ts';
import { adminFileDownload } from './admin/files.ts';
import { KeyCache } from './auth/key-cache.ts';
import { authenticateSession, revokeSession, signInHandler } from './auth/sessions.ts';
import { koaBody } from 'koa-body';
import { ApiError } from './errors.ts';
import { log, logError } from '../lib/log.ts';
import { answerClientError, answerConnect, answerExpectation, requestMiddleware, httpsOnly, refusesPlainHttp } from './middleware/request.ts';
import { limitUnrouted } from './middleware/authenticate.ts';
import { rateLimit } from './middleware/rate-limit.ts';
import { apiCors } from './middleware/cors.ts';
import { RateLimiter } from './rate-limiter.ts';
import { ResponseCache } from './middleware/response-cache.ts';
import { openApiDocument } from './openapi/document.ts';
import { referencePage } from './openapi/reference-page.ts';
import { TotalsCache } from './pagination.ts';
import { JSON_TYPES, jsonContentType } from './middleware/body.ts';
import { continueOnFirstRead } from './middleware/unread-body.ts';
import { mountRoutes, type RouteDef } from './route.ts';
import { apiRoutes } from './routes/index.ts';
import { ActivityLog } from './mcp/activity-log.ts';
import { McpQuota } from './mcp/quota.ts';
import { mcpRouter } from './mcp/server.ts';
import { oauthRouter } from './oauth/routes.ts';
import { metricsRouter } from './metrics.ts';
import { mediaRouter } from './public-media.ts';
import { bookingHostMiddleware, bookingPageRouter } from './booking-page/routes.ts';
import { googleIntegrationRouter } from './integrations/google.ts';
import { createJobSender } from '../db/job-sender.ts';
import { loadDatabaseTimeZones } from '../db/time-zones.ts';
import { BlobStore } from '../storage/blobs.ts';
import type { ApiContextExtension, ApiRouter, ApiState, Deps } from './types.ts';

export type AppOptions = {
  config: Config;
  pool: Pool;
  databaseUrl: string;
  rateLimitPool?: Pool;
  /** The job sender's share of the connection budget (lib/connection-budget.ts); 2 when unset. */
  jobSenderConnections?: number;
  /** application_name of the connections createDeps opens (key-cache LISTEN, job sender). */
  applicationName?: (part: string) => string;
};

export async function createDeps(options: AppOptions): Promise<Deps> {
  await loadDatabaseTimeZones(options.pool);
  const keyCache = new KeyCache(options.databaseUrl, options.applicationName?.('listen'));
  await keyCache.start();
  return {
    config: options.config,
    pool: options.pool,
    keyCache,
    rateLimiter: new RateLimiter(options.rateLimitPool ?? options.pool, { leaseTimeoutMs: options.config.rateLimitLeaseTimeoutMs }),
    totals: new TotalsCache(),
    responseCache: new ResponseCache(),
    mcpActivity: new ActivityLog(options.pool),
    mcpQuota: new McpQuota(options.pool, keyCache),
    lifecycle: { draining: false },
    blobs: new BlobStore(options.config.s3),
    jobs: await createJobSender(options.databaseUrl, { max: options.jobSenderConnections, applicationName: options.applicationName?.('job-sender') }),
  };
}

export async function closeDeps(deps: Deps): Promise<void> {
  await deps.rateLimiter.close();
  await deps.mcpActivity.flush();
  await deps.mcpQuota.close();
  await deps.jobs.stop();
  await deps.keyCache.close();
  await deps.blobs.close();
}

const sessionBody = koaBody({ json: true, jsonTypes: JSON_TYPES, multipart: false, urlencoded: false, text: false, jsonLimit: '16kb' });

export type App = Koa<ApiState, ApiContextExtension>;

/** What a health or readiness probe waits for PostgreSQL's answer (platform probes time out at a few seconds). */
const PROBE_TIMEOUT_MS = 2_000;

/** The app; `routes` defaults to the API's route table (tests may add routes to exercise a rule). */
export function createApp(deps: Deps, routes: RouteDef[] = apiRoutes): App {
  const app: App = new Koa<ApiState, ApiContextExtension>();
  // Behind the platform router: X-Forwarded-* are read, but only the entries
  // the trusted hops appended (counted from the right), so a client cannot
  // pick its own address for the per-address limits by sending a header.
  app.proxy = deps.config.trustProxyHops > 0;
  app.maxIpsCount = deps.config.trustProxyHops;
  app.context.deps = deps;
  // Errors are rendered by requestMiddleware; Koa's own handler only sees
  // socket-level failures, which are not worth a stack trace per client.
  app.silent = true;

  // Every server of this app (web, npm start, tests, benches) answers unparseable requests in the contract's shape.
  // Node's own refusals of an HTTP/1.1 request without Host (400) and of an Expect other than
  // 100-continue (417) are bare; both are ours instead (requestMiddleware, answerExpectation).
  app.listen = ((...args: Parameters<Server['listen']>) => {
    const handle = app.callback();
    const server = createServer({ requireHostHeader: false }, handle);
    server.on('clientError', answerClientError);
    server.on('checkExpectation', answerExpectation);
    // Expect: 100-continue is answered 100 only once the body is read (continueOnFirstRead).
    server.on('checkContinue', (req, res) => {
      continueOnFirstRead(req, res);
      void handle(req, res);
    });
    server.on('connect', answerConnect);
    return server.listen(...args);
  }) as App['listen'];

  app.use(requestMiddleware());
  app.use(apiCors(refusesPlainHttp(deps.config.isProduction, deps.config.trustProxyHops)));
  app.use(httpsOnly(deps.config.isProduction, deps.config.trustProxyHops));
  const bookingHost = bookingHostMiddleware(deps.config);
  if (bookingHost) app.use(bookingHost);

  const root: ApiRouter = new Router<ApiState, ApiContextExtension>();
  // Liveness: the process answers and reaches PostgreSQL. Readiness: that, and
  // not stopping (a draining process finishes what it has but takes nothing
  // new). Each failure says why in the log line.
  const databaseAnswers = async (check: string) => {
    try {
      // Bounded: a database that hangs rather than refuses must fail the probe, not hang it.
      await deps.pool.query({ text: 'SELECT 1', query_timeout: PROBE_TIMEOUT_MS } as QueryConfig);
    } catch (error) {
      logError(`${check}.unhealthy`, error, { reason: 'database' });
      throw new ApiError('service_unavailable', 'La base de datos no responde.');
    }
  };
  root.get('/healthz', async (ctx) => {
    await databaseAnswers('health');
    ctx.body = { status: 'ok' };
  });
  root.get('/readyz', async (ctx) => {
    if (deps.lifecycle.draining) {
      log('ready.unhealthy', { reason: 'draining' });
      ctx.set('Retry-After', '5');
      throw new ApiError('service_unavailable', 'El proceso se está deteniendo.');
    }
    await databaseAnswers('ready');
    ctx.body = { status: 'ready' };
  });
  // 1.4 MB of JSON, the same for the process's life: serialized and gzipped once, revalidated by its ETag.
  let served: { json: Buffer; gzip: Buffer; etag: string } | undefined;
  root.get('/api/v1/openapi.json', (ctx) => {
    if (!served) {
      const json = Buffer.from(JSON.stringify(openApiDocument(deps.config)));
      served = { json, gzip: gzipSync(json), etag: `"${createHash('sha256').update(json).digest('base64url').slice(0, 27)}"` };
    }
    ctx.status = 200;
    const gzip = ctx.acceptsEncodings('gzip', 'identity') === 'gzip';
    // A strong ETag per representation (RFC 9110 §8.8.3): the gzipped bytes are another one.
    ctx.set('ETag', gzip ? `${served.etag.slice(0, -1)}-gzip"` : served.etag);
    ctx.set('Cache-Control', 'no-cache');
    ctx.vary('Accept-Encoding');
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    ctx.body = gzip ? served.gzip : served.json;
    ctx.type = 'application/json; charset=utf-8';
    if (gzip) ctx.set('Content-Encoding', 'gzip');
  });
  root.get(['/api/v1/docs', '/api/v1/reference'], (ctx) => {
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'");
    ctx.body = referencePage(deps.config);
  });
  root.all('/admin/trpc/*path', adminMiddleware(deps));
  root.get('/admin/files/:id', adminFileDownload(deps));
  root.post('/api/v1/user/sessions', jsonContentType, sessionBody, signInHandler);
  // Counted against the session's limit like every other /user route (docs/api.md, Rate limit).
  root.delete('/api/v1/user/sessions/current', authenticateSession(), rateLimit(deps.config.rateLimitPerMinute), async (ctx) => {
    await revokeSession(deps.pool, ctx.state.session!.sessionId);
    ctx.status = 204;
  });
  app.use(root.routes());
  app.use(mediaRouter(deps).routes());
  app.use(bookingPageRouter(deps).routes());
  app.use(googleIntegrationRouter(deps).routes());
  app.use(mcpRouter().routes());
  app.use(oauthRouter().routes());
  app.use(metricsRouter(deps).routes());

  const api: ApiRouter = new Router<ApiState, ApiContextExtension>({ prefix: '/api/v1' });
  mountRoutes(api, routes, deps.config.rateLimitPerMinute);
  app.use(api.routes());
  // A known path with another method: the router answers 405 (501 for a
  // method no route has) with the Allow header RFC 9110 requires and no body;
  // the contract's body is ours. An unknown path (nothing allowed) stays 404.
  app.use(async function methodNotAllowed(ctx, next) {
    await next();
    // The router's Allow (its OPTIONS and 405 answers, bodiless) leaves out OPTIONS, which every routed
    // path answers (RFC 9110 §10.2.1). A handler's own Allow (MCP's) is its own.
    const allow = ctx.response.get('Allow');
    if (allow && !ctx.body && !/\bOPTIONS\b/.test(allow)) ctx.set('Allow', `${allow}, OPTIONS`);
    const unrouted = ctx.body == null && (ctx.status === 404 || ctx.status === 405 || ctx.status === 501);
    if (unrouted && (ctx.path === '/api/v1' || ctx.path.startsWith('/api/v1/')) && !ctx.response.get('RateLimit-Limit')) await limitUnrouted(ctx);
    if ((ctx.status === 405 || ctx.status === 501) && ctx.body == null) {
      if (!ctx.response.get('Allow')) {
        ctx.remove('Allow');
        throw new ApiError('not_found');
      }
      throw new ApiError('method_not_allowed');
    }
  });
  app.use(api.allowedMethods());
  return app;
}

