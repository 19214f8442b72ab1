// `wsctl period close|open --company --year --month` (DESIGN.md, CLI contract).
import type { Pool } from '../../db/pool.ts';
import { closePeriod, openPeriod, firstClosed } from '../../db/money/periods.ts';
import { requireCompany } from './exists.ts';

export async function setPeriod(pool: Pool, input: { companyId: string; year: number; month: number; closed: boolean }) {
  await requireCompany(pool, input.companyId);
  if (input.closed) await closePeriod(pool, input.companyId, input.year, input.month);
  else await openPeriod(pool, input.companyId, input.year, input.month);
  const closed = await firstClosed(pool, input.companyId, [{ year: input.year, month: input.month }]);
  return { company_id: input.companyId, year: input.year, month: input.month, status: closed ? ('closed' as const) : ('open' as const) };
}
