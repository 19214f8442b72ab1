// The daily ledger recomputed from the records, in one statement: what the
// incremental entries (db/money/ledger.ts) must always equal. Used when a
// company's time zone changes (its days move), to repair, and to load
// benchmark data. test/money.test.ts checks that a rebuild changes nothing.
import type { Queryable } from '../pool.ts';

export async function rebuildLedger(db: Queryable, companyId: string): Promise<void> {
  await db.query('DELETE FROM ledger_daily WHERE company_id = $1', [companyId]);
  await db.query(
    `WITH z AS (SELECT timezone AS tz FROM companies WHERE id = $1),
     e AS (
       SELECT currency, opening_on AS day, 'opening' AS line, id AS key, opening_balance_cents AS amount FROM accounts WHERE company_id = $1
       UNION ALL
       SELECT currency, (occurred_at AT TIME ZONE z.tz)::date, direction, category, amount_cents FROM movements, z WHERE company_id = $1 AND sale_id IS NULL
       UNION ALL
       SELECT currency, (occurred_at AT TIME ZONE z.tz)::date, CASE direction WHEN 'income' THEN 'receivable' ELSE 'payable' END,
              CASE direction WHEN 'income' THEN 'incomes' ELSE 'expenses' END, amount_cents
         FROM movements, z WHERE company_id = $1 AND sale_id IS NULL
       UNION ALL
       SELECT m.currency, (p.paid_at AT TIME ZONE z.tz)::date, CASE m.direction WHEN 'income' THEN 'cash_in' ELSE 'cash_out' END, p.account_id, p.amount_cents
         FROM movement_payments p JOIN movements m ON m.id = p.movement_id, z WHERE p.company_id = $1
       UNION ALL
       SELECT m.currency, (p.paid_at AT TIME ZONE z.tz)::date, CASE m.direction WHEN 'income' THEN 'receivable' ELSE 'payable' END,
              CASE WHEN m.direction = 'expense' THEN 'expenses' WHEN m.sale_id IS NOT NULL THEN 'sales' ELSE 'incomes' END, -p.amount_cents
         FROM movement_payments p JOIN movements m ON m.id = p.movement_id, z WHERE p.company_id = $1
       UNION ALL
       SELECT currency, (occurred_at AT TIME ZONE z.tz)::date, 'sale', 'sales', total_cents FROM sales, z WHERE company_id = $1
       UNION ALL
       SELECT currency, (occurred_at AT TIME ZONE z.tz)::date, 'receivable', 'sales', total_cents FROM sales, z WHERE company_id = $1
       UNION ALL
       SELECT s.currency, (r.refunded_at AT TIME ZONE z.tz)::date, 'cash_out', r.account_id, r.amount_cents FROM sale_refunds r JOIN sales s ON s.id = r.sale_id, z WHERE r.company_id = $1
       UNION ALL
       SELECT s.currency, (r.refunded_at AT TIME ZONE z.tz)::date, 'refund', 'sales', r.amount_cents FROM sale_refunds r JOIN sales s ON s.id = r.sale_id, z WHERE r.company_id = $1
     )
     INSERT INTO ledger_daily (company_id, currency, day, line, key, amount_cents)
     SELECT $1, currency, day, line, key, sum(amount) FROM e GROUP BY currency, day, line, key HAVING sum(amount) <> 0`,
    [companyId],
  );
}
