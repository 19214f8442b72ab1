// GET /metrics in Prometheus text format (prom-client), for
// `Authorization: Bearer $METRICS_TOKEN`; without METRICS_TOKEN the route does
// not exist (404), a wrong token is 401. The web process's own series
// (requests by route and status, their latency, rate-limit refusals, its pool)
// are counted in process; the worker's work is read from PostgreSQL at scrape
// time (queue depth and oldest job per queue, webhook deliveries and endpoint
// health, thumbnails, form post-actions), so one scrape of any web process
// reports both and the worker needs no port of its own.
import { secretMatches } from '../lib/secret-compare.ts';
import Router from '@koa/router';
import type { QueryConfig } from 'pg';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Pool } from '../db/pool.ts';
import { ALL_QUEUES } from '../db/queues.ts';
import { ApiError } from './errors.ts';
import { POST_ACTIONS } from './forms/submissions.ts';
import { DELIVERY_STATUSES } from './routes/webhook-endpoint-schemas.ts';
import { authorizationOf, bearerToken } from './middleware/authenticate.ts';
import { WrongTokenThrottle } from './middleware/wrong-token.ts';
import type { ApiContext, ApiContextExtension, ApiRouter, ApiState, Deps } from './types.ts';

export const registry = new Registry();

const httpRequests = new Counter({ name: 'http_requests_total', help: 'Requests answered, by route, method and status', labelNames: ['route', 'method', 'status'], registers: [registry] });
const httpDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time to answer a request, by route',
  labelNames: ['route', 'method'],
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [registry],
});
const rateLimitRefusals = new Counter({ name: 'rate_limit_refusals_total', help: 'Requests refused with 429 (every limit: API keys, admin, sign-in, OAuth)', registers: [registry] });

/** Called once per request by the request middleware: the route is the pattern matched, never the raw path. */
export function observeRequest(ctx: ApiContext, seconds: number): void {
  const route = (ctx as unknown as { _matchedRoute?: string | RegExp })._matchedRoute;
  const label = typeof route === 'string' ? route : 'unmatched';
  httpRequests.inc({ route: label, method: ctx.method, status: String(ctx.status) });
  httpDuration.observe({ route: label, method: ctx.method }, seconds);
  // Counted here, whichever limit refused it: the API keys', the admin endpoint's, sign-in's, OAuth's.
  if (ctx.status === 429) rateLimitRefusals.inc();
}

let pool: Pool | null = null;

/** What a scrape waits for PostgreSQL: a hung database must not hang the scrape (Prometheus gives up at 10 s). */
const DATABASE_READ_TIMEOUT_MS = 2_000;

function read<Row extends Record<string, unknown>>(text: string): Promise<{ rows: Row[] }> {
  return pool!.query<Row>({ text, query_timeout: DATABASE_READ_TIMEOUT_MS } as QueryConfig);
}

function gauge(name: string, help: string, labelNames: string[], collect: (g: Gauge) => Promise<void>): void {
  new Gauge({ name, help, labelNames, registers: [registry], async collect() { if (pool) await collect(this); } });
}

/**
 * A gauge read from PostgreSQL at scrape time. When the database cannot be read (down, or hung past
 * DATABASE_READ_TIMEOUT_MS) its series are left out of this scrape and `database_up` is 0, while the
 * process's own series (requests, refusals, pool) are still served: they are what shows the outage.
 */
function databaseGauge(name: string, help: string, labelNames: string[], collect: (g: Gauge) => Promise<void>): void {
  gauge(name, help, labelNames, async (g) => {
    try {
      await collect(g);
    } catch {
      g.reset();
    }
  });
}

// First: the pool as it was before this scrape's own queries (the gauges below) took its connections;
// registered later, it counted the scrape's reads as requests waiting.
gauge('db_pool_connections', 'Connections of this web process request pool, by state', ['state'], async (g) => {
  g.set({ state: 'total' }, pool!.totalCount);
  g.set({ state: 'idle' }, pool!.idleCount);
  g.set({ state: 'waiting' }, pool!.waitingCount);
});

gauge('database_up', 'Whether this scrape read PostgreSQL (0: the series read from it are missing from this scrape)', [], async (g) => {
  g.set(await read('SELECT 1').then(() => 1, () => 0));
});

// Every known label value is reported, 0 included: a series that vanishes when nothing is counted has no
// data for an alert or a dashboard to read (max(queue_oldest_job_age_seconds) must be 0 on an idle system).
// The thumbnail and post-action states are the CHECKs of migrations 010 and 045.
const THUMBNAIL_STATUSES = ['pending', 'ready', 'failed'];
const POST_ACTION_STATUSES = ['pending', 'sending', 'done', 'failed'];

// Webhook deliveries are a queue of their own (the dispatcher claims them from webhook_deliveries, no
// pg-boss job each): reported under the queue name they had, `webhook-delivery`, so dashboards and
// alerts on the two queue series keep covering them. Waiting: scheduled, not claimed, to an endpoint
// that is on (a write that fanned out while its endpoint was being paused can leave one scheduled on an
// endpoint that is off until the hourly purge clears it: not work the worker is behind on).
const WEBHOOK_QUEUE = `SELECT 'webhook-delivery' AS name, %s FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id AND e.active
   WHERE d.next_attempt_at IS NOT NULL AND d.status IN ('pending', 'failed') AND (d.leased_until IS NULL OR d.leased_until <= now())`;

// The service's queues (db/queues.ts), not pg-boss's own (`__pgboss__send-it`, its scheduler's).
const OUR_QUEUES = `q.name IN (${ALL_QUEUES.map((q) => `'${q.name}'`).join(', ')})`;

databaseGauge('queue_jobs', 'Jobs waiting in each pg-boss queue, and webhook deliveries waiting for an attempt (queue="webhook-delivery")', ['queue'], async (g) => {
  g.reset();
  const { rows } = await read<{ name: string; n: number }>(
    `SELECT q.name, count(j.id)::int AS n FROM pgboss.queue q
       LEFT JOIN pgboss.job j ON j.name = q.name AND j.state IN ('created', 'retry') WHERE ${OUR_QUEUES} GROUP BY q.name
     UNION ALL ${WEBHOOK_QUEUE.replace('%s', 'count(*)::int AS n')}`,
  );
  for (const r of rows) g.set({ queue: r.name }, r.n);
});
// Counted from when the job became due (`start_after`, a delivery's `next_attempt_at`), not from when it
// was made: a retry made at a failure with a 6 h delay is not 6 h late the moment it comes due.
databaseGauge('queue_oldest_job_age_seconds', 'How long the longest-waiting due job has been due, per queue (0 when none is waiting)', ['queue'], async (g) => {
  g.reset();
  const { rows } = await read<{ name: string; age: number }>(
    `SELECT q.name, coalesce(extract(epoch FROM now() - min(j.start_after)), 0)::float AS age FROM pgboss.queue q
       LEFT JOIN pgboss.job j ON j.name = q.name AND j.state IN ('created', 'retry') AND j.start_after <= now() WHERE ${OUR_QUEUES} GROUP BY q.name
     UNION ALL ${WEBHOOK_QUEUE.replace('%s', 'coalesce(extract(epoch FROM now() - min(d.next_attempt_at) FILTER (WHERE d.next_attempt_at <= now())), 0)::float AS age')}`,
  );
  for (const r of rows) g.set({ queue: r.name }, r.age);
});
databaseGauge('webhook_deliveries', 'Webhook deliveries of the last 24 hours by status', ['status'], async (g) => {
  g.reset();
  for (const status of DELIVERY_STATUSES) g.set({ status }, 0);
  const { rows } = await read<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE created_at > now() - interval '24 hours' GROUP BY status`);
  for (const r of rows) g.set({ status: r.status }, r.n);
});
databaseGauge('webhook_endpoints', 'Webhook endpoints by health', ['health'], async (g) => {
  const { rows } = await read<{ active: number; paused: number; disabled: number; failing: number }>(
    `SELECT count(*) FILTER (WHERE active)::int AS active,
            count(*) FILTER (WHERE NOT active AND disabled_at IS NULL)::int AS paused,
            count(*) FILTER (WHERE disabled_at IS NOT NULL)::int AS disabled,
            count(*) FILTER (WHERE active AND consecutive_failures > 0)::int AS failing
       FROM webhook_endpoints`,
  );
  for (const [health, n] of Object.entries(rows[0])) g.set({ health }, n);
});
databaseGauge('thumbnails', 'Media items by thumbnail status', ['status'], async (g) => {
  g.reset();
  for (const status of THUMBNAIL_STATUSES) g.set({ status }, 0);
  const { rows } = await read<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM media GROUP BY status');
  for (const r of rows) g.set({ status: r.status }, r.n);
});
databaseGauge('form_post_actions', 'Form post-actions of the last 24 hours by action and status', ['action', 'status'], async (g) => {
  g.reset();
  for (const action of POST_ACTIONS) for (const status of POST_ACTION_STATUSES) g.set({ action, status }, 0);
  const { rows } = await read<{ action: string; status: string; n: number }>(
    `SELECT a.action, a.status, count(*)::int AS n FROM form_submission_actions a JOIN form_submissions s ON s.id = a.submission_id
      WHERE s.created_at > now() - interval '24 hours' GROUP BY a.action, a.status`,
  );
  for (const r of rows) g.set({ action: r.action, status: r.status }, r.n);
});

/** The /metrics route, or none when METRICS_TOKEN is unset. */
export function metricsRouter(deps: Deps): ApiRouter {
  const router: ApiRouter = new Router<ApiState, ApiContextExtension>();
  const token = deps.config.metricsToken;
  if (!token) return router;
  pool = deps.pool;
  // Wrong tokens are throttled per address as the admin endpoint's are (api/middleware/wrong-token.ts).
  const throttle = new WrongTokenThrottle('metrics');
  router.get('/metrics', async (ctx) => {
    const blocked = throttle.blockedSeconds(ctx);
    if (blocked) {
      ctx.set('Retry-After', String(blocked));
      throw new ApiError('rate_limited', 'Demasiados tokens de métricas rechazados desde esta dirección; reintenta tras Retry-After segundos.');
    }
    if (!secretMatches(bearerToken(authorizationOf(ctx)), token)) {
      const refusedFor = await throttle.failed(ctx, deps);
      if (refusedFor) {
        ctx.set('Retry-After', String(refusedFor));
        throw new ApiError('rate_limited', 'Demasiados tokens de métricas rechazados desde esta dirección; reintenta tras Retry-After segundos.');
      }
      throw new ApiError('invalid_key', 'El token de métricas no es válido.');
    }
    ctx.type = registry.contentType;
    ctx.body = await registry.metrics();
  });
  return router;
}
