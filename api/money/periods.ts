// Accounting periods (docs/money.md): a closed month of the company (months
// read in its time zone) refuses every create, update or delete whose money
// date, before or after the change, falls in it: 422 period_locked with
// `year` and `month`. Operators close and reopen months with `wsctl period`.
// Call these inside the write's transaction: the month's shared lock lasts until it commits.
import type { Queryable } from '../../db/pool.ts';
import { firstClosed, lockMonthsShared } from '../../db/money/periods.ts';
import { localMonth } from '../../lib/local-dates.ts';
import { ApiError } from '../errors.ts';

/** Refuses when any of these instants (read in the company's zone) falls in a closed month. */
export async function assertOpen(db: Queryable, companyId: string, zone: string, instants: Array<Date | string | null | undefined>): Promise<void> {
  const months = new Map<string, { year: number; month: number }>();
  for (const at of instants) {
    if (at === null || at === undefined) continue;
    const m = localMonth(new Date(at).getTime(), zone);
    months.set(`${m.year}-${m.month}`, m);
  }
  await refuseClosed(db, companyId, months);
}

/** The same for local dates (`YYYY-MM-DD`: an account's opening date). */
export async function assertOpenDates(db: Queryable, companyId: string, dates: string[]): Promise<void> {
  const months = new Map<string, { year: number; month: number }>();
  for (const date of dates) {
    const [year, month] = date.split('-').map(Number);
    months.set(`${year}-${month}`, { year, month });
  }
  await refuseClosed(db, companyId, months);
}

/** Takes the months' shared locks (held to the write's commit, so a close waits for it), then checks them. */
async function refuseClosed(db: Queryable, companyId: string, months: Map<string, { year: number; month: number }>): Promise<void> {
  await lockMonthsShared(db, companyId, [...months.values()]);
  const closed = await firstClosed(db, companyId, [...months.values()]);
  if (closed) {
    const { year, month } = closed;
    throw new ApiError('period_locked', `El periodo ${year}-${String(month).padStart(2, '0')} está cerrado.`, { year, month });
  }
}
