// MCP plans and quota (contract: Limits, "MCP quota"; DESIGN.md: plans).
// `free`: no MCP; `starter`: 500 tool calls per billing cycle; `enterprise`:
// the operator's `--mcp-quota`. A cycle is a calendar month from the
// company's anchor (its creation), so the counter resets every month on that
// day. Every tools/call counts, failed ones included; the count is exact
// under concurrency and across processes: one row per cycle, incremented by a
// single statement only while below the limit.
import type { Queryable } from '../../db/pool.ts';

export const STARTER_QUOTA = 500;

export type QuotaState = { limit: number; used: number; available: boolean; resets_at: string };
export type QuotaDecision = { ok: true } | { ok: false; data: QuotaState };

type CompanyPlan = { plan: string; mcp_quota: number | null; mcp_cycle_anchor: Date };

/** The cycle containing `now`: whole months from the anchor. */
export function cycleOf(anchor: Date, now = new Date()): { start: Date; end: Date } {
  const at = (n: number) => {
    const d = new Date(anchor);
    d.setUTCMonth(anchor.getUTCMonth() + n);
    return d;
  };
  let n = (now.getUTCFullYear() - anchor.getUTCFullYear()) * 12 + (now.getUTCMonth() - anchor.getUTCMonth());
  if (at(n) > now) n--;
  return { start: at(n), end: at(n + 1) };
}

function limitOf(company: CompanyPlan): number {
  if (company.plan === 'starter') return STARTER_QUOTA;
  if (company.plan === 'enterprise') return company.mcp_quota ?? 0;
  return 0;
}

/** Counts one tools/call, or says why it cannot run (-32004 with this data). */
export async function consumeCall(db: Queryable, companyId: string): Promise<QuotaDecision> {
  const { rows } = await db.query<CompanyPlan>('SELECT plan, mcp_quota, mcp_cycle_anchor FROM companies WHERE id = $1', [companyId]);
  const company = rows[0];
  const { start, end } = cycleOf(company.mcp_cycle_anchor);
  const limit = limitOf(company);
  const available = company.plan !== 'free';
  const { rows: counted } = await db.query<{ used: number }>(
    `INSERT INTO mcp_usage (company_id, cycle_start, used) SELECT $1, $2, 1 WHERE $3::int > 0
     ON CONFLICT (company_id, cycle_start) DO UPDATE SET used = mcp_usage.used + 1 WHERE mcp_usage.used < $3
     RETURNING used`,
    [companyId, start, limit],
  );
  if (available && counted[0]) return { ok: true };
  const { rows: usage } = await db.query<{ used: number }>('SELECT used FROM mcp_usage WHERE company_id = $1 AND cycle_start = $2', [companyId, start]);
  return { ok: false, data: { limit, used: usage[0]?.used ?? 0, available, resets_at: end.toISOString() } };
}

/** The last 25 invocations and the 24-hour success rate (`wsctl mcp activity`). */
export async function activity(db: Queryable, companyId: string) {
  const { rows: recent } = await db.query<{ tool: string; credential: string; ok: boolean; error_code: number | null; duration_ms: number; created_at: Date }>(
    'SELECT tool, credential, ok, error_code, duration_ms, created_at FROM mcp_calls WHERE company_id = $1 ORDER BY created_at DESC, id DESC LIMIT 25',
    [companyId],
  );
  const { rows: day } = await db.query<{ total: number; ok: number }>(
    `SELECT count(*)::int AS total, count(*) FILTER (WHERE ok)::int AS ok FROM mcp_calls WHERE company_id = $1 AND created_at > now() - interval '24 hours'`,
    [companyId],
  );
  const { total, ok } = day[0];
  return {
    recent: recent.map((r) => ({ ...r, created_at: r.created_at.toISOString() })),
    last_24h: { calls: total, succeeded: ok, success_rate: total ? ok / total : null },
  };
}
