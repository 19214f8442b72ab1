// Booking slots: one link open every day 08:00-20:00 (America/Mexico_City),
// 30-minute slots every 15 minutes, 10-minute buffers, a host who blocks
// bookings with their calendar, 500 busy calendar events and 100 bookings in
// the window; `GET /api/v1/booking-links/:id/slots` for a 60-day window, 50
// connections (and 4, for latency), against our web process (every middleware on) and against the
// floor (bench/floor/slots-floor.ts: bare node:http + pg, same queries, same
// slot function and JSON). Target (issue 15): p99 < 50 ms through the API,
// checked at 4 connections: at 50 on a 2-core machine the floor itself
// queues (each answer is ~1,300 slots, a few ms of CPU), so that case reports
// throughput as a ratio to the floor.
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { dropTenant, purgeLeftoverTenants, seedTenant, startOurApp, type OurApp } from '../lib/app.ts';
import { spawnNodeServer, type NodeChild } from '../lib/process.ts';
import { find, measureCases, type BenchContext, type Check, type Scenario, type ScenarioResult, type Target } from '../lib/scenario.ts';

const EVENTS = 500;
const BOOKINGS = 100;
const P99_TARGET_MS = 50;
/** Issue 20: every REST list at >= 0.9 of its bare floor. */
const LIST_RATIO_TARGET = 0.9;
const BIG_TABLES = ['bookings', 'calendar_events', 'booking_links'];

async function seed(ctx: BenchContext, companyId: string, userId: string): Promise<{ linkId: string; from: string; to: string }> {
  const prefix = randomBytes(4).toString('hex');
  const linkId = `${prefix}${'0'.repeat(16)}`;
  await ctx.db.pool.query(`UPDATE users SET settings_preferences = settings_preferences || '{"block_overlapping_bookings": true}' WHERE id = $1`, [userId]);
  await ctx.db.pool.query(
    `INSERT INTO booking_links (id, company_id, user_id, slug, title, duration_minutes, slot_interval_minutes, buffer_before_minutes, buffer_after_minutes,
                                minimum_notice_minutes, booking_window, timezone, weekly_hours)
     VALUES ($1, $2, $3, 'bench-' || $4, 'Bench', 30, 15, 10, 10, 0, '{"type": "rolling", "days": 90}', 'America/Mexico_City',
             '[{"days": [1, 2, 3, 4, 5, 6, 7], "start": "08:00", "end": "20:00"}]')`,
    [linkId, companyId, userId, prefix],
  );
  // 500 events of 45 minutes spread over the 60 days (about one every 3 hours, day and night).
  await ctx.db.pool.query(
    `INSERT INTO calendar_events (id, company_id, user_id, title, starts_at, ends_at)
     SELECT $3 || 'e' || lpad(to_hex(n), 15, '0'), $1, $2, 'Ocupado ' || n,
            t0 + n * interval '173 minutes', t0 + n * interval '173 minutes' + interval '45 minutes'
       FROM generate_series(1, $4::int) AS n, (SELECT date_trunc('day', now()) + interval '1 day' AS t0) base`,
    [companyId, userId, prefix, EVENTS],
  );
  // 100 confirmed bookings at 07:00 UTC (01:00 in Mexico City, outside the hours: they cost the reads, not the slots).
  await ctx.db.pool.query(
    `INSERT INTO bookings (id, company_id, booking_link_id, user_id, status, starts_at, ends_at, blocked, title, booker_name, booker_email, manage_token_digest, ical_uid)
     SELECT $4 || 'b' || lpad(to_hex(n), 15, '0'), $1, $2, $3, 'confirmed', s, s + interval '30 minutes', tstzrange(s - interval '10 minutes', s + interval '40 minutes'),
            'Bench', 'Visitante ' || n, 'v' || n || '@bench.example', $4 || 'digest' || n, $4 || 'uid' || n
       FROM generate_series(1, $5::int) AS n, LATERAL (SELECT date_trunc('day', now()) + n * interval '14 hours' + interval '7 hours' AS s) t`,
    [companyId, linkId, userId, prefix, BOOKINGS],
  );
  await ctx.db.pool.query('ANALYZE calendar_events');
  await ctx.db.pool.query('ANALYZE bookings');
  const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
  return { linkId, from: day(1), to: day(60) };
}

async function run(ctx: BenchContext): Promise<ScenarioResult> {
  await purgeLeftoverTenants(ctx, BIG_TABLES);
  const tenant = await seedTenant(ctx, 'Bench bookings');
  let ours: OurApp | null = null;
  let floor: NodeChild | null = null;
  try {
    const { rows: owner } = await ctx.db.pool.query<{ user_id: string }>('SELECT user_id FROM memberships WHERE company_id = $1', [tenant.companyId]);
    const { linkId, from, to } = await seed(ctx, tenant.companyId, owner[0].user_id);
    const path = `/api/v1/booking-links/${linkId}/slots?from=${from}&to=${to}&timezone=America/Mexico_City`;
    [ours, floor] = await Promise.all([
      startOurApp(ctx, 'bookings-ours'),
      spawnNodeServer({
        name: 'floor (bench/floor/slots-floor.ts)',
        script: 'bench/floor/slots-floor.ts',
        env: { DATABASE_URL: ctx.db.url, COMPANY_ID: tenant.companyId, PG_POOL_MAX: String(ctx.options.poolMax) },
      }),
    ]);
    const targets: Target[] = [
      { name: 'floor', url: floor.url, pid: floor.child.pid },
      { name: 'ours', url: ours.url, headers: { Authorization: `Bearer ${tenant.secret}` }, pid: ours.child.pid },
    ];
    const a = (await (await fetch(ours.url + path, { headers: targets[1].headers })).json()) as any;
    const b = (await (await fetch(floor.url + path)).json()) as any;
    if (!isDeepStrictEqual(a, b)) throw new Error(`ours and the floor disagree:\n${JSON.stringify(a).slice(0, 400)}\n${JSON.stringify(b).slice(0, 400)}`);
    const slotCount = a.data.days.reduce((n: number, d: any) => n + d.slots.length, 0);
    ctx.log(`60-day window ${from} .. ${to}: ${slotCount} free slots over ${a.data.days.length} days; ours and the floor return identical bodies`);
    // Throughput at the run's concurrency (50 connections), and the latency one
    // visitor sees when the host's page is not under a load test (4 connections).
    const cases = [
      { name: '60-day slot list, 500 busy events', path },
      { name: 'same, 4 connections (latency)', path, connections: 4 },
    ];
    const measurements = await measureCases(ctx, targets, cases);
    const m = (t: string, c = cases[0].name) => find(measurements, c, t).best;
    const ratio = m('ours').rps / m('floor').rps;
    const errors = measurements.reduce((n, x) => n + x.best.errors, 0);
    const latency = m('ours', cases[1].name).p99;
    const checks: Check[] = [
      { label: 'ours/floor req/s (issue 20)', target: `>= ${LIST_RATIO_TARGET}`, actual: ratio.toFixed(2), pass: ratio >= LIST_RATIO_TARGET },
      { label: 'ours p99 at 4 connections', target: `< ${P99_TARGET_MS} ms`, actual: `${latency.toFixed(1)} ms`, pass: latency < P99_TARGET_MS },
      { label: 'no errors or non-2xx', target: '0', actual: String(errors), pass: errors === 0 },
    ];
    const cpu = [m('ours').cpuUsPerRequest, m('floor').cpuUsPerRequest];
    return {
      name: 'bookings',
      description: `GET /booking-links/:id/slots for 60 days with ${EVENTS} busy events and ${BOOKINGS} bookings (${slotCount} slots)`,
      notes: ['ours = node api/server.ts with the whole chain on; floor = bench/floor/slots-floor.ts, same queries, slot function and JSON (checked equal)'],
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
    await dropTenant(ctx, tenant, BIG_TABLES).catch((error) => ctx.log(`cleanup failed: ${error}`));
  }
}

export const bookings: Scenario = {
  name: 'bookings',
  description: 'GET /api/v1/booking-links/:id/slots, a 60-day window with 500 busy events, ours vs a bare node:http + pg floor',
  run,
};
