// MCP vs REST on the same data and the same process: `tools/call
// list_customers` (25 per page) through POST /api/mcp/v1 against
// `GET /api/v1/customers?limit=25`, 10,000 customers, 50 connections. The MCP
// call does what REST does (key lookup, scope, the same list query and
// serializer) plus JSON-RPC, the quota increment and the activity row of
// every call. Target (issue 18): MCP req/s >= 0.8 of REST.
import { randomBytes } from 'node:crypto';
import { updateCompany } from '../../api/admin/companies.ts';
import { dropTenant, purgeLeftoverTenants, seedTenant, startOurApp, type OurApp } from '../lib/app.ts';
import { withoutTriggers } from '../lib/database.ts';
import { find, measureCases, type BenchContext, type Check, type Scenario, type ScenarioResult, type Target } from '../lib/scenario.ts';

const COUNT = 10_000;
const RATIO_TARGET = 0.8;
const CALL = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_customers', arguments: { per_page: 25 } } });

async function run(ctx: BenchContext): Promise<ScenarioResult> {
  await purgeLeftoverTenants(ctx, ['customers', 'mcp_calls']);
  const tenant = await seedTenant(ctx, 'Bench mcp');
  let ours: OurApp | null = null;
  try {
    await updateCompany(ctx.db.pool, tenant.companyId, { plan: 'enterprise', mcpQuota: 1_000_000_000 });
    const prefix = randomBytes(4).toString('hex');
    await withoutTriggers(ctx.db, (client) =>
      client.query(
        `INSERT INTO customers (id, company_id, name, email, phone, created_at, updated_at)
         SELECT $2 || lpad(to_hex(n), 16, '0'), $1, 'Cliente ' || n, 'cliente' || n || '@bench.example', '+52 81 ' || lpad(n::text, 8, '0'),
                now() - n * interval '1 second', now() - n * interval '1 second'
           FROM generate_series(1, $3::int) AS n`,
        [tenant.companyId, prefix, COUNT],
      ),
    );
    await ctx.db.pool.query('ANALYZE customers');
    ours = await startOurApp(ctx, 'mcp-ours');
    const auth = { Authorization: `Bearer ${tenant.secret}` };
    const mcpHeaders = { 'Content-Type': 'application/json', Accept: 'application/json', 'MCP-Protocol-Version': '2025-06-18' };
    // Both answer the same 25 customers.
    const rest = (await (await fetch(`${ours.url}/api/v1/customers?limit=25`, { headers: auth })).json()) as any;
    const mcp = (await (await fetch(`${ours.url}/api/mcp/v1`, { method: 'POST', headers: { ...auth, ...mcpHeaders }, body: CALL })).json()) as any;
    const restIds = rest.data.map((c: any) => c.id).join();
    const mcpIds = mcp.result?.structuredContent?.customers?.map((c: any) => c.id).join();
    if (restIds !== mcpIds) throw new Error(`REST and MCP disagree: ${restIds.slice(0, 80)} vs ${String(mcpIds).slice(0, 80)} (${JSON.stringify(mcp).slice(0, 300)})`);
    ctx.log('GET /customers?limit=25 and tools/call list_customers {per_page: 25} answer the same 25 customers');
    const targets: Target[] = [{ name: 'ours', url: ours.url, headers: auth, pid: ours.child.pid }];
    const cases = [
      { name: 'REST GET /customers?limit=25', path: '/api/v1/customers?limit=25' },
      { name: 'MCP tools/call list_customers', path: '/api/mcp/v1', method: 'POST', body: CALL, headers: mcpHeaders },
    ];
    const measurements = await measureCases(ctx, targets, cases);
    const m = (c: string) => find(measurements, c, 'ours').best;
    const ratio = m(cases[1].name).rps / m(cases[0].name).rps;
    const errors = measurements.reduce((n, x) => n + x.best.errors, 0);
    const checks: Check[] = [
      { label: 'MCP/REST req/s', target: `>= ${RATIO_TARGET}`, actual: ratio.toFixed(2), pass: ratio >= RATIO_TARGET },
      { label: 'no errors or non-2xx', target: '0', actual: String(errors), pass: errors === 0 },
    ];
    const cpu = [m(cases[1].name).cpuUsPerRequest, m(cases[0].name).cpuUsPerRequest];
    return {
      name: 'mcp',
      description: `tools/call list_customers vs GET /customers, ${COUNT.toLocaleString('en')} customers, one process`,
      notes: ['both through node api/server.ts with the whole chain on; MCP also counts the call against the quota and records it'],
      measurements,
      ratios: [
        { label: 'MCP/REST req/s', value: ratio },
        ...(cpu[0] !== null && cpu[1] !== null ? [{ label: `CPU per request MCP/REST (${cpu[0]} vs ${cpu[1]} µs)`, value: cpu[0]! / cpu[1]! }] : []),
      ],
      checks,
    };
  } finally {
    await ours?.stop();
    await dropTenant(ctx, tenant, ['customers', 'mcp_calls']).catch((error) => ctx.log(`cleanup failed: ${error}`));
  }
}

export const mcp: Scenario = {
  name: 'mcp',
  description: 'POST /api/mcp/v1 tools/call list_customers vs GET /api/v1/customers on the same data (target >= 0.8)',
  run,
};
