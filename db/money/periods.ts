// Closed accounting months (table accounting_periods): what the API refuses
// writes into (api/money/periods.ts, 422 period_locked) and what the
// recurring worker moves occurrences out of.
import type { Queryable } from '../pool.ts';

/** The earliest of these months that is closed, or null. */
export async function firstClosed(db: Queryable, companyId: string, months: Array<{ year: number; month: number }>): Promise<{ year: number; month: number } | null> {
  if (!months.length) return null;
  const { rows } = await db.query<{ year: number; month: number }>(
    `SELECT year, month FROM accounting_periods WHERE company_id = $1 AND (year, month) IN (SELECT * FROM unnest($2::int[], $3::int[])) ORDER BY year, month LIMIT 1`,
    [companyId, months.map((m) => m.year), months.map((m) => m.month)],
  );
  return rows[0] ?? null;
}

export async function closePeriod(db: Queryable, companyId: string, year: number, month: number): Promise<void> {
  await db.query('INSERT INTO accounting_periods (company_id, year, month) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [companyId, year, month]);
}

export async function openPeriod(db: Queryable, companyId: string, year: number, month: number): Promise<void> {
  await db.query('DELETE FROM accounting_periods WHERE company_id = $1 AND year = $2 AND month = $3', [companyId, year, month]);
}

export async function closedPeriods(db: Queryable, companyId: string): Promise<Array<{ year: number; month: number; closed_at: Date }>> {
  const { rows } = await db.query('SELECT year, month, closed_at FROM accounting_periods WHERE company_id = $1 ORDER BY year DESC, month DESC', [companyId]);
  return rows;
}
