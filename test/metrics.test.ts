// GET /metrics (Prometheus text, prom-client): absent without METRICS_TOKEN,
// 401 with a wrong token, and with the right one the web's own series
// (requests by route pattern and status, latency, pool, rate-limit refusals)
// and the worker's work read from PostgreSQL (queues, deliveries, endpoints).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createBoss } from '../db/boss.ts';
import { ALL_QUEUES, PURGE_EXPIRED } from '../db/queues.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';

const TOKEN = 'metrics-token-0123456789';

describe('metrics', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp({ METRICS_TOKEN: TOKEN });
  });
  after(() => app.close());

  test('without METRICS_TOKEN the route does not exist', async () => {
    const plain = await startTestApp();
    try {
      const res = await fetch(`${plain.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      assert.equal(res.status, 404);
    } finally {
      await plain.close();
    }
  });

  test('a wrong token is 401; the right one gets the series, routes labelled by pattern, never by raw path', async () => {
    const anonymous = await fetch(`${app.url}/metrics`);
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer realm="api"', 'a 401 carries its challenge (RFC 9110)');
    assert.equal((await fetch(`${app.url}/metrics`, { headers: { authorization: 'Bearer wrong-token-000000000' } })).status, 401);
    // A pg-boss that schedules (the worker's) makes its own queue, which is not the service's.
    const scheduler = createBoss(app.databaseUrl, { supervise: false, schedule: true, max: 1 });
    await scheduler.start();
    await scheduler.stop({ graceful: false });
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 1 });
    const api = client(app.baseUrl, t.key);
    const created = await api.post('/customers', { data: { name: 'Medida' } });
    assert.equal((await api.get(`/customers/${created.body.data.id}`)).status, 429, 'the second request of a 1/min key is refused');
    const other = await seedTenant(app.pool);
    const endpoint = await client(app.baseUrl, other.key).post('/webhook-endpoints', { data: { url: 'https://hooks.example.com/m', enabled_events: ['*'] } });
    assert.equal(endpoint.status, 201, endpoint.text);
    const res = await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await res.text();
    assert.match(text, /http_requests_total\{route="\/api\/v1\/customers",method="POST",status="201"\} \d+/);
    assert.match(text, /http_requests_total\{route="\/api\/v1\/customers\/:id",method="GET",status="429"\} \d+/);
    assert.ok(!text.includes(created.body.data.id), 'ids never become labels');
    assert.match(text, /http_request_duration_seconds_bucket\{le="0\.05",route="\/api\/v1\/customers",method="POST"\} \d+/);
    assert.match(text, /rate_limit_refusals_total [1-9]\d*/);
    assert.match(text, /db_pool_connections\{state="total"\} \d+/);
    // Nothing else is running: the scrape's own reads are not counted as requests waiting for a connection.
    assert.match(text, /^db_pool_connections\{state="waiting"\} 0$/m);
    assert.match(text, /webhook_endpoints\{health="active"\} [1-9]\d*/);
    assert.match(text, /# TYPE queue_jobs gauge/);
    assert.match(text, /# TYPE queue_oldest_job_age_seconds gauge/);
    // Every queue and known status has its series, 0 included: an alert on the oldest job's age has data on an idle system.
    assert.match(text, /^queue_jobs\{queue="thumbnail"\} \d+$/m);
    // The service's queues only, as docs/operations.md lists them: not pg-boss's own scheduler queue.
    const queues = new Set([...text.matchAll(/^queue_(?:jobs|oldest_job_age_seconds)\{queue="([^"]+)"\}/gm)].map((m) => m[1]));
    assert.deepEqual([...queues].sort(), [...ALL_QUEUES.map((q) => q.name), 'webhook-delivery'].sort());
    assert.match(text, /^queue_oldest_job_age_seconds\{queue="webhook-delivery"\} [\d.e+-]+$/m);
    assert.match(text, /^form_post_actions\{action="notify_team",status="failed"\} \d+$/m);
    assert.match(text, /^webhook_deliveries\{status="exhausted"\} \d+$/m);
    assert.match(text, /# TYPE form_post_actions gauge/);
  });

  test('rate_limit_refusals_total counts every 429, the admin endpoint\'s throttle of wrong tokens too', async () => {
    const refusals = async () => {
      const text = await (await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
      return Number(/^rate_limit_refusals_total (\S+)$/m.exec(text)?.[1]);
    };
    const before = await refusals();
    let throttled = 0;
    for (let i = 0; i < 15; i++) {
      const res = await fetch(`${app.url}/admin/trpc/company.list`, { headers: { authorization: 'Bearer not-the-admin-token-0000' } });
      await res.body?.cancel();
      if (res.status === 429) throttled++;
    }
    assert.ok(throttled >= 4, `${throttled} refusals with 429`);
    assert.equal(await refusals(), before + throttled);
  });

  test('the oldest job\'s age counts from when it became due: a retry made 6 hours ago, due 30 s ago, is 30 s late', async () => {
    const id = await app.deps.jobs.send(app.pool, PURGE_EXPIRED, {});
    assert.ok(id);
    await app.pool.query(`UPDATE pgboss.job SET created_on = now() - interval '6 hours', start_after = now() - interval '30 seconds' WHERE name = $1 AND id = $2`, [PURGE_EXPIRED.name, id]);
    const text = await (await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
    const age = Number(new RegExp(`^queue_oldest_job_age_seconds\\{queue="${PURGE_EXPIRED.name}"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    assert.ok(age >= 30 && age < 300, `age ${age}`);
  });
  test('webhook deliveries waiting for an attempt are the queue "webhook-delivery": counted, and aged from when they came due', async () => {
    // No worker runs in this file: a delivery stays waiting.
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    assert.equal((await api.post('/webhook-endpoints', { data: { url: 'https://hooks.example.com/q', enabled_events: ['customer.created'] } })).status, 201);
    const scrape = async () => {
      const text = await (await fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
      const value = (name: string) => Number(new RegExp(`^${name}\\{queue="webhook-delivery"\\} (\\S+)$`, 'm').exec(text)?.[1]);
      return { waiting: value('queue_jobs'), age: value('queue_oldest_job_age_seconds') };
    };
    const before = await scrape();
    const created = await api.post('/customers', { data: { name: 'En cola' } });
    assert.equal(created.status, 201);
    const { rows } = await app.pool.query(
      `UPDATE webhook_deliveries SET next_attempt_at = now() - interval '90 seconds', created_at = now() - interval '3 hours'
        WHERE company_id = $1 RETURNING id`,
      [t.companyId],
    );
    assert.equal(rows.length, 1);
    const after = await scrape();
    assert.equal(after.waiting, before.waiting + 1);
    assert.ok(after.age >= 90 && after.age < 600, `age ${after.age}`);
    // Claimed (an attempt in flight): no longer waiting.
    await app.pool.query(`UPDATE webhook_deliveries SET leased_until = now() + interval '40 seconds' WHERE id = $1`, [rows[0].id]);
    assert.equal((await scrape()).waiting, before.waiting);
    // Scheduled on an endpoint that is off (a write that fanned out while it was being paused): not work
    // the worker is behind on, so neither counted nor aged.
    await app.pool.query(`UPDATE webhook_deliveries SET leased_until = NULL WHERE id = $1`, [rows[0].id]);
    assert.equal((await scrape()).waiting, before.waiting + 1);
    await app.pool.query(`UPDATE webhook_endpoints SET active = false WHERE company_id = $1`, [t.companyId]);
    const paused = await scrape();
    assert.equal(paused.waiting, before.waiting);
    assert.ok(paused.age < 90, `age ${paused.age}`);
  });
});

describe('metrics: wrong tokens are throttled per address', () => {
  let app: TestApp;
  before(async () => {
    // Behind one proxy, so each request names its client address (X-Forwarded-For).
    app = await startTestApp({ METRICS_TOKEN: TOKEN, TRUST_PROXY_HOPS: '1' });
  });
  after(() => app.close());

  test('past 10 wrong tokens a minute the address is refused with 429, the right token included; another address is not', async () => {
    const scrape = (token: string, address: string) =>
      fetch(`${app.url}/metrics`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': address } });
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) {
      const res = await scrape(`wrong-token-${i}-0000000000`, '203.0.113.7');
      await res.body?.cancel();
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [...Array(10).fill(401), 429]);
    const refused = await scrape(TOKEN, '203.0.113.7');
    assert.equal(refused.status, 429, 'guessing cannot go on through the 429s: the right token waits too');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    assert.equal(((await refused.json()) as { error: string }).error, 'rate_limited');
    const other = await scrape(TOKEN, '203.0.113.8');
    assert.equal(other.status, 200, 'another address scrapes');
    await other.body?.cancel();
  });
});
