// The key's company as the REST API reads and edits it (contract: Company
// (singular)): profile fields only; plan, quotas, team size and modules are
// the operators' (api/admin/companies.ts, which builds on the row and the
// read serializer defined here).
import type { Queryable } from '../../db/pool.ts';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import type { Module } from '../auth/scopes.ts';
import { ApiError } from '../errors.ts';
import type { CompanyUpdate, companySchema } from './company-schemas.ts';
import { changesAny, setList } from '../../db/tables.ts';
import type { z } from 'zod';

export type Plan = 'free' | 'starter' | 'enterprise';

/** A `companies` row. */
export type CompanyRow = {
  timezone: string;
  id: string;
  name: string;
  slug: string;
  website: string | null;
  legal_name: string | null;
  logo_url: string | null;
  business_type: string | null;
  business_context: string | null;
  business_goals: string[];
  max_team_size: number;
  enabled_modules: Module[];
  plan: Plan;
  mcp_quota: number | null;
  response_cache: boolean;
  storage_quota_mb: number;
  created_at: Timestamp;
  updated_at: Timestamp;
};

/** The company as the API reads it (contract: Company (singular)), `team` from live memberships. */
export function serializeCompanyRead(row: CompanyRow, members: number): z.output<typeof companySchema> {
  return {
    id: row.id,
    name: row.name,
    slug: row.slug,
    website: row.website,
    legal_name: row.legal_name,
    logo_url: row.logo_url,
    business_type: row.business_type,
    business_context: row.business_context,
    business_goals: row.business_goals,
    team: { max_team_size: row.max_team_size, current_team_size: members, seats_available: Math.max(0, row.max_team_size - members) },
    enabled_modules: row.enabled_modules,
    timezone: row.timezone,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

/** Members of the company (memberships of people not soft-deleted). */
export async function teamSize(db: Queryable, companyId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM memberships m JOIN users u ON u.id = m.user_id AND u.deleted_at IS NULL WHERE m.company_id = $1',
    [companyId],
  );
  return rows[0].n;
}


export async function readCompany(db: Queryable, companyId: string) {
  const { rows } = await db.query<CompanyRow>('SELECT * FROM companies WHERE id = $1', [companyId]);
  if (!rows[0]) throw new ApiError('not_found');
  return serializeCompanyRead(rows[0], await teamSize(db, companyId));
}

export async function updateCompanyProfile(db: Queryable, companyId: string, data: CompanyUpdate) {
  const entries = Object.entries(data).filter(([, v]) => v !== undefined);
  if (entries.length) {
    // `updated_at` moves only when a field differs from what is stored.
    const names = entries.map(([k]) => k);
    await db.query(`UPDATE companies SET ${setList(names, 2)}, updated_at = now() WHERE id = $1${changesAny(names, 2)}`, [
      companyId,
      ...entries.map(([k, v]) => (k === 'business_goals' ? JSON.stringify(v) : v)),
    ]);
  }
  return readCompany(db, companyId);
}
