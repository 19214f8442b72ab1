// The key's company as the REST API reads and edits it (contract: Company
// (singular)): profile fields only; plan, quotas, team size and modules are
// the operators' (api/admin/companies.ts).
import type { Queryable } from '../../db/pool.ts';
import { iso } from '../../db/timestamps.ts';
import { teamSize, type CompanyRow } from '../admin/companies.ts';
import { ApiError } from '../errors.ts';
import type { CompanyUpdate } from './company-schemas.ts';

export function serializeCompanyRead(row: CompanyRow, members: number) {
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
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

export async function readCompany(db: Queryable, companyId: string) {
  const { rows } = await db.query<CompanyRow>('SELECT * FROM companies WHERE id = $1', [companyId]);
  if (!rows[0]) throw new ApiError('not_found');
  return serializeCompanyRead(rows[0], await teamSize(db, companyId));
}

export async function updateCompanyProfile(db: Queryable, companyId: string, data: CompanyUpdate) {
  const entries = Object.entries(data).filter(([, v]) => v !== undefined);
  if (entries.length) {
    const sets = entries.map(([k], i) => `${k} = $${i + 2}`);
    await db.query(`UPDATE companies SET ${sets.join(', ')}, updated_at = now() WHERE id = $1`, [
      companyId,
      ...entries.map(([k, v]) => (k === 'business_goals' ? JSON.stringify(v) : v)),
    ]);
  }
  return readCompany(db, companyId);
}
