// Calendar range list: 100,000 events of one host (one every 2 hours, about
// 23 years), `GET /api/v1/calendar/events?user_id=&from=&to=` for one week in
// the middle of that history, 50 connections, against our web process (every
// middleware on) and against the floor (bench/floor/calendar-floor.ts: bare
// node:http + pg, same SQL and JSON). Targets (issue): ours/floor req/s >= 0.8;
// p99 < 50 ms; issue 20: >= 0.9 for every REST list.
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { dropTenant, purgeLeftoverTenants, seedTenant, startOurApp, type OurApp } from '../lib/app.ts';
import { withoutTriggers } from '../lib/database.ts';
import { spawnNodeServer, type NodeChild } from '../lib/process.ts';
import { find, measureCases, type BenchContext, type Check, type Scenario, type ScenarioResult, type Target } from '../lib/scenario.ts';

const COUNT = Number(process.env.BENCH_EVENTS || 100_000);
const RATIO_TARGET = 0.8;
const LIST_RATIO_TARGET = 0.9;
const P99_TARGET_MS = 50;

async function loadEvents(ctx: BenchContext, companyId: string, userId: string): Promise<{ from: string; to: string }> {
  const prefix = randomBytes(4).toString('hex');
  const started = performance.now();
  await withoutTriggers(ctx.db, async (client) => {
    await client.query(
      `INSERT INTO calendar_events (id, company_id, user_id, title, starts_at, ends_at, kind, attendees, created_at, updated_at)
       SELECT $3 || lpad(to_hex(n), 16, '0'), $1, $2, 'Evento ' || n,
              t0 - n * interval '2 hours', t0 - n * interval '2 hours' + interval '45 minutes',
              (ARRAY['event', 'meeting', 'task'])[1 + n % 3],
              jsonb_build_array(jsonb_build_object('name', 'Invitado ' || n, 'email', 'inv' || n || '@bench.example')),
              t0 - n * interval '1 second', t0 - n * interval '1 second'
         FROM generate_series(1, $4::int) AS n, (SELECT date_trunc('hour', now()) AS t0) base`,
      [companyId, userId, prefix, COUNT],
    );
  });
  await ctx.db.pool.query('ANALYZE calendar_events');
  ctx.log(`loaded ${COUNT.toLocaleString('en')} events in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const { rows } = await ctx.db.pool.query<{ mid: Date }>(
    `SELECT starts_at AS mid FROM calendar_events WHERE company_id = $1 ORDER BY starts_at OFFSET $2 LIMIT 1`,
    [companyId, Math.floor(COUNT / 2)],
  );
  const from = rows[0].mid;
  return { from: from.toISOString(), to: new Date(from.getTime() + 7 * 86_400_000).toISOString() };
}

async function run(ctx: BenchContext): Promise<ScenarioResult> {
  await purgeLeftoverTenants(ctx, ['calendar_events']);
  const tenant = await seedTenant(ctx, 'Bench calendar');
  let ours: OurApp | null = null;
  let floor: NodeChild | null = null;
  try {
    const { rows: owner } = await ctx.db.pool.query<{ user_id: string }>('SELECT user_id FROM memberships WHERE company_id = $1', [tenant.companyId]);
    const userId = owner[0].user_id;
    const window = await loadEvents(ctx, tenant.companyId, userId);
    const path = `/api/v1/calendar/events?limit=25&user_id=${userId}&from=${encodeURIComponent(window.from)}&to=${encodeURIComponent(window.to)}`;
    [ours, floor] = await Promise.all([
      startOurApp(ctx, 'calendar-ours'),
      spawnNodeServer({
        name: 'floor (bench/floor/calendar-floor.ts)',
        script: 'bench/floor/calendar-floor.ts',
        env: { DATABASE_URL: ctx.db.url, COMPANY_ID: tenant.companyId, PG_POOL_MAX: String(ctx.options.poolMax) },
      }),
    ]);
    const targets: Target[] = [
      { name: 'floor', url: floor.url, pid: floor.child.pid },
      { name: 'ours', url: ours.url, headers: { Authorization: `Bearer ${tenant.secret}` }, pid: ours.child.pid },
    ];
    const a = await (await fetch(ours.url + path, { headers: targets[1].headers })).json() as any;
    const b = await (await fetch(floor.url + path)).json() as any;
    if (!isDeepStrictEqual(a, b)) throw new Error(`ours and the floor disagree:\n${JSON.stringify(a).slice(0, 400)}\n${JSON.stringify(b).slice(0, 400)}`);
    if (a.data.length !== 25) throw new Error(`expected a full page in the window, got ${a.data.length}`);
    ctx.log(`a one-week window (${window.from} .. ${window.to}): ours and the floor return identical bodies`);
    const cases = [{ name: 'one-week window of one host', path }];
    const measurements = await measureCases(ctx, targets, cases);
    const m = (t: string) => find(measurements, cases[0].name, t).best;
    const ratio = m('ours').rps / m('floor').rps;
    const errors = measurements.reduce((n, x) => n + x.best.errors, 0);
    const checks: Check[] = [
      { label: 'ours/floor req/s', target: `>= ${RATIO_TARGET}`, actual: ratio.toFixed(2), pass: ratio >= RATIO_TARGET },
      { label: 'ours/floor req/s (issue 20)', target: `>= ${LIST_RATIO_TARGET}`, actual: ratio.toFixed(2), pass: ratio >= LIST_RATIO_TARGET },
      { label: 'ours p99', target: `< ${P99_TARGET_MS} ms`, actual: `${m('ours').p99.toFixed(1)} ms`, pass: m('ours').p99 < P99_TARGET_MS },
      { label: 'no errors or non-2xx', target: '0', actual: String(errors), pass: errors === 0 },
    ];
    const cpu = [m('ours').cpuUsPerRequest, m('floor').cpuUsPerRequest];
    return {
      name: 'calendar',
      description: `GET /calendar/events for a one-week window of one host with ${COUNT.toLocaleString('en')} events`,
      notes: ['ours = node api/server.ts with the whole chain on; floor = bench/floor/calendar-floor.ts, same SQL and JSON (checked equal)'],
      measurements,
      ratios: [
        { label: 'ours/floor req/s', value: ratio },
        ...(cpu[0] !== null && cpu[1] !== null ? [{ label: `CPU per request ours/floor (${cpu[0]} vs ${cpu[1]} µs)`, value: cpu[0]! / cpu[1]! }] : []),
      ],
      checks,
    };
  } finally {
    await ours?.stop();
    await floor?.stop();
    await dropTenant(ctx, tenant, ['calendar_events']).catch((error) => ctx.log(`cleanup failed: ${error}`));
  }
}

export const calendar: Scenario = {
  name: 'calendar',
  description: 'GET /api/v1/calendar/events, a one-week window of one host with 100,000 events, ours vs a bare node:http + pg floor',
  run,
};
