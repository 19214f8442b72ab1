// Reports at scale: one company with 1,000,000 movements (incomes and
// expenses over three years, 80 % paid, in three accounts and five
// categories) and their 800,000 payments; each report through the API
// (GET /reports/balance-sheet, /income-statement, /cash-flow over a year), 4
// connections. Target (issue 16): every report p99 < 200 ms. A report reads
// the daily ledger (a few rows per day, account and category), so it costs
// the same at a million movements as at a thousand; the "naive" case
// computes the income statement straight from the movements, for scale.
import { randomBytes } from 'node:crypto';
import { rebuildLedger } from '../../db/money/rebuild.ts';
import { dropTenant, purgeLeftoverTenants, seedTenant, startOurApp, type OurApp } from '../lib/app.ts';
import { withoutTriggers } from '../lib/database.ts';
import { find, measureCases, type BenchContext, type Check, type Scenario, type ScenarioResult, type Target } from '../lib/scenario.ts';

const COUNT = Number(process.env.BENCH_MOVEMENTS || 1_000_000);
const P99_TARGET_MS = 200;
const BIG_TABLES = ['ledger_daily', 'movement_payments', 'movements', 'accounts'];

async function load(ctx: BenchContext, companyId: string): Promise<void> {
  const prefix = randomBytes(4).toString('hex');
  const started = performance.now();
  await withoutTriggers(ctx.db, async (client) => {
    await client.query(
      `INSERT INTO accounts (id, company_id, name, kind, currency, opening_balance_cents, opening_on)
       SELECT $2 || 'a' || lpad(n::text, 15, '0'), $1, 'Cuenta ' || n, 'bank', 'mxn', 1000000, '2024-01-01' FROM generate_series(1, 3) n`,
      [companyId, prefix],
    );
    await client.query(
      `INSERT INTO movements (id, company_id, direction, account_id, amount_cents, paid_cents, currency, occurred_at, category, status, paid_at)
       SELECT $2 || 'm' || lpad(to_hex(n), 15, '0'), $1, CASE WHEN n % 3 = 0 THEN 'expense' ELSE 'income' END,
              $2 || 'a' || lpad((1 + n % 3)::text, 15, '0'), 100 + (n::bigint * 7919) % 500000,
              CASE WHEN n % 5 = 0 THEN 0 ELSE 100 + (n::bigint * 7919) % 500000 END, 'mxn',
              timestamptz '2024-01-01 12:00:00+00' + (n % 1095) * interval '1 day' + (n % 600) * interval '1 minute',
              (ARRAY['servicios', 'ventas', 'renta', 'nomina', 'otros'])[1 + n % 5],
              CASE WHEN n % 5 = 0 THEN 'pending' ELSE 'paid' END,
              CASE WHEN n % 5 = 0 THEN NULL ELSE timestamptz '2024-01-01 12:00:00+00' + (n % 1095) * interval '1 day' + (n % 600) * interval '1 minute' END
         FROM generate_series(1, $3::int) n`,
      [companyId, prefix, COUNT],
    );
    await client.query(
      `INSERT INTO movement_payments (id, company_id, movement_id, account_id, amount_cents, paid_at)
       SELECT $2 || 'p' || substr(id, 10), $1, id, account_id, amount_cents, paid_at FROM movements WHERE company_id = $1 AND status = 'paid'`,
      [companyId, prefix],
    );
    await rebuildLedger(client, companyId);
  });
  await ctx.db.pool.query('ANALYZE ledger_daily');
  const { rows } = await ctx.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger_daily WHERE company_id = $1', [companyId]);
  ctx.log(`loaded ${COUNT.toLocaleString('en')} movements and their payments, ledger rebuilt (${rows[0].n.toLocaleString('en')} daily rows) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

async function run(ctx: BenchContext): Promise<ScenarioResult> {
  await purgeLeftoverTenants(ctx, BIG_TABLES);
  const tenant = await seedTenant(ctx, 'Bench money');
  let ours: OurApp | null = null;
  try {
    await load(ctx, tenant.companyId);
    ours = await startOurApp(ctx, 'money-ours');
    const auth = { Authorization: `Bearer ${tenant.secret}` };
    const cases = [
      { name: 'balance sheet as of the last day', path: '/api/v1/reports/balance-sheet?as_of=2026-12-31', connections: 4 },
      { name: 'income statement, one year', path: '/api/v1/reports/income-statement?start_on=2025-01-01&end_on=2025-12-31', connections: 4 },
      { name: 'cash flow, one year', path: '/api/v1/reports/cash-flow?start_on=2025-01-01&end_on=2025-12-31', connections: 4 },
    ];
    for (const c of cases) {
      const res = await fetch(ours.url + c.path, { headers: auth });
      if (res.status !== 200) throw new Error(`${c.path}: ${res.status} ${await res.text()}`);
    }
    const sheet = ((await (await fetch(ours.url + cases[0].path, { headers: auth })).json()) as any).data.currencies[0];
    if (sheet.assets.total_cents !== sheet.liabilities.total_cents + sheet.equity.total_cents) throw new Error('the balance sheet does not balance');
    // For scale: the same income statement computed from the movements themselves.
    const started = performance.now();
    await ctx.db.pool.query(
      `SELECT direction, category, sum(amount_cents) FROM movements WHERE company_id = $1 AND occurred_at >= '2025-01-01' AND occurred_at < '2026-01-01' GROUP BY 1, 2`,
      [tenant.companyId],
    );
    const naiveMs = performance.now() - started;
    ctx.log(`the same income statement straight from the movements takes ${naiveMs.toFixed(0)} ms (one query, warm)`);
    const targets: Target[] = [{ name: 'ours', url: ours.url, headers: auth, pid: ours.child.pid }];
    const measurements = await measureCases(ctx, targets, cases);
    const errors = measurements.reduce((n, x) => n + x.best.errors, 0);
    const checks: Check[] = [
      ...cases.map((c) => {
        const p99 = find(measurements, c.name, 'ours').best.p99;
        return { label: `${c.name} p99`, target: `< ${P99_TARGET_MS} ms`, actual: `${p99.toFixed(1)} ms`, pass: p99 < P99_TARGET_MS };
      }),
      { label: 'no errors or non-2xx', target: '0', actual: String(errors), pass: errors === 0 },
    ];
    return {
      name: 'money',
      description: `reports of a company with ${COUNT.toLocaleString('en')} movements (4 connections)`,
      notes: [`the income statement computed from the movements directly: ${naiveMs.toFixed(0)} ms per query`],
      measurements,
      ratios: [],
      checks,
    };
  } finally {
    await ours?.stop();
    await dropTenant(ctx, tenant, BIG_TABLES).catch((error) => ctx.log(`cleanup failed: ${error}`));
  }
}

export const money: Scenario = {
  name: 'money',
  description: 'GET /reports/* for a company with 1,000,000 movements (target: p99 < 200 ms each)',
  run,
};
