// The key's company as the REST API reads and edits it (contract: Company
// (singular)): profile fields only; plan, quotas, team size and modules are
// the operators' (api/admin/companies.ts).
import type { Queryable } from '../../db/pool.ts';
import { serializeCompanyRead, teamSize, type CompanyRow } from '../admin/companies.ts';
import { ApiError } from '../errors.ts';
import type { CompanyUpdate } from './company-schemas.ts';

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
