// Closed accounting months (table accounting_periods): what the API refuses
// writes into (api/money/periods.ts, 422 period_locked) and what the
// recurring worker moves occurrences out of.
import { transaction, type Pool, type Queryable } from '../pool.ts';

/**
 * A write checks a month and commits under a shared lock on it, and a close or reopen changes it
 * under the exclusive one: a close waits for the writes already past their check to commit, and a
 * write after it waits for the close, then finds the month closed. Without it a write that checked
 * just before a close committed just after it, changing the closed month (a concurrency review).
 */
const monthLock = (companyId: string, year: number, month: number) => `${companyId}:period:${year}-${month}`;

/** Shared locks, for the rest of the transaction, on the months a write touches (taken in order). */
export async function lockMonthsShared(db: Queryable, companyId: string, months: Array<{ year: number; month: number }>): Promise<void> {
  const keys = [...new Set(months.map((m) => monthLock(companyId, m.year, m.month)))].sort();
  if (keys.length) await db.query('SELECT pg_advisory_xact_lock_shared(hashtextextended(k, 0)) FROM unnest($1::text[]) AS k', [keys]);
}

/** The earliest of these months that is closed, or null. */
export async function firstClosed(db: Queryable, companyId: string, months: Array<{ year: number; month: number }>): Promise<{ year: number; month: number } | null> {
  if (!months.length) return null;
  const { rows } = await db.query<{ year: number; month: number }>(
    `SELECT year, month FROM accounting_periods WHERE company_id = $1 AND (year, month) IN (SELECT * FROM unnest($2::int[], $3::int[])) ORDER BY year, month LIMIT 1`,
    [companyId, months.map((m) => m.year), months.map((m) => m.month)],
  );
  return rows[0] ?? null;
}

/** Closes a month once the writes into it already under way have committed (monthLock). */
export async function closePeriod(pool: Pool, companyId: string, year: number, month: number): Promise<void> {
  await transaction(pool, async (db) => {
    await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [monthLock(companyId, year, month)]);
    await db.query('INSERT INTO accounting_periods (company_id, year, month) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [companyId, year, month]);
  });
}

export async function openPeriod(pool: Pool, companyId: string, year: number, month: number): Promise<void> {
  await transaction(pool, async (db) => {
    await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [monthLock(companyId, year, month)]);
    await db.query('DELETE FROM accounting_periods WHERE company_id = $1 AND year = $2 AND month = $3', [companyId, year, month]);
  });
}

export async function closedPeriods(db: Queryable, companyId: string): Promise<Array<{ year: number; month: number; closed_at: Date }>> {
  const { rows } = await db.query('SELECT year, month, closed_at FROM accounting_periods WHERE company_id = $1 ORDER BY year DESC, month DESC', [companyId]);
  return rows;
}
