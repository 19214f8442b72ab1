// What every part reads of a company row: its time zone, in which money
// dates, report days, calendar days and booking windows are read
// (operators change it: wsctl company update --timezone).
import type { Queryable } from './pool.ts';

export const DEFAULT_COMPANY_ZONE = 'America/Mexico_City';

export async function companyZone(db: Queryable, companyId: string): Promise<string> {
  const { rows } = await db.query<{ timezone: string }>('SELECT timezone FROM companies WHERE id = $1', [companyId]);
  return rows[0]?.timezone ?? DEFAULT_COMPANY_ZONE;
}
