// `wsctl period close|open --company --year --month` (DESIGN.md, CLI contract).
import type { Pool } from '../../db/pool.ts';
import { closePeriod, openPeriod, firstClosed } from '../../db/money/periods.ts';
import { ApiError } from '../errors.ts';

async function requireCompany(pool: Pool, companyId: string): Promise<void> {
  if (!(await pool.query('SELECT 1 FROM companies WHERE id = $1', [companyId])).rowCount) throw new ApiError('not_found', 'La empresa no existe.');
}

export async function setPeriod(pool: Pool, input: { companyId: string; year: number; month: number; closed: boolean }) {
  await requireCompany(pool, input.companyId);
  if (input.closed) await closePeriod(pool, input.companyId, input.year, input.month);
  else await openPeriod(pool, input.companyId, input.year, input.month);
  const closed = await firstClosed(pool, input.companyId, [{ year: input.year, month: input.month }]);
  return { company_id: input.companyId, year: input.year, month: input.month, status: closed ? ('closed' as const) : ('open' as const) };
}
