// SQL of recurring transactions read and written by the routes
// (api/routes/recurring-transactions.ts): a series as the API reads it (with
// its account's currency), the list, and the rows of a create, a PATCH and a
// delete. The occurrences are made by the worker (db/money/recurring.ts).
import { RECURRING_SELECT, type RecurringRow } from '../../db/money/recurring.ts';
import type { Queryable } from '../../db/pool.ts';
import { iso } from '../../db/timestamps.ts';
import { listPage, type PaginationQuery, type TotalsCache } from '../pagination.ts';
import { refTaken } from './money-fields.ts';
import { changesAny, setList } from '../../db/tables.ts';
import type { z } from 'zod';
import type { recurringSchema } from './recurring-schemas.ts';

/** A series with its account's currency, as the API reads it. */
export type RecurringRead = RecurringRow & { currency: string };
const SELECT_READ = `SELECT r.*, to_char(r.starts_on, 'YYYY-MM-DD') AS starts_on, to_char(r.ends_on, 'YYYY-MM-DD') AS ends_on,
  to_char(r.next_occurrence_on, 'YYYY-MM-DD') AS next_occurrence_on, a.currency FROM recurring_transactions r JOIN accounts a ON a.id = r.account_id`;

export function serializeRecurring(r: RecurringRead): z.output<typeof recurringSchema> {
  return {
    id: r.id,
    type: r.direction,
    account_id: r.account_id,
    amount_cents: Number(r.amount_cents),
    currency: r.currency,
    category: r.category,
    description: r.description,
    customer_id: r.customer_id,
    supplier_name: r.supplier_name,
    supplier_tax_id: r.supplier_tax_id,
    frequency: r.frequency,
    interval: r.interval,
    starts_on: r.starts_on,
    ends_on: r.ends_on,
    ends_count: r.ends_count,
    active: r.active,
    ended_at: iso(r.ended_at),
    next_occurrence_on: r.next_occurrence_on,
    occurrences_count: r.occurrences_count,
    metadata: r.metadata,
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  };
}

export async function findRecurring(db: Queryable, companyId: string, id: string, lock = false): Promise<RecurringRead | null> {
  const { rows } = await db.query<RecurringRead>(`${SELECT_READ} WHERE r.company_id = $1 AND r.id = $2${lock ? ' FOR UPDATE OF r' : ''}`, [companyId, id]);
  return rows[0] ?? null;
}

/** A page of the company's series, by type and switch. */
export function listRecurring(db: Queryable, totals: TotalsCache, companyId: string, filters: { type?: string; active?: boolean }, page: PaginationQuery) {
  return listPage<RecurringRead>(
    db,
    totals,
    {
      table: 'recurring_transactions',
      columns: `*, to_char(starts_on, 'YYYY-MM-DD') AS starts_on, to_char(ends_on, 'YYYY-MM-DD') AS ends_on, to_char(next_occurrence_on, 'YYYY-MM-DD') AS next_occurrence_on,
                (SELECT currency FROM accounts a WHERE a.id = recurring_transactions.account_id) AS currency`,
      companyId,
      where: (p) => [...(filters.type ? [`direction = ${p.add(filters.type)}`] : []), ...(filters.active !== undefined ? [`active = ${p.add(filters.active)}`] : [])],
      serialize: serializeRecurring,
    },
    page,
  );
}

export type RecurringInsert = {
  id: string;
  companyId: string;
  direction: 'income' | 'expense';
  accountId: string;
  amountCents: number;
  category: string;
  description: string | null;
  customerId: string | null;
  supplierName: string | null;
  supplierTaxId: string | null;
  frequency: string;
  interval: number;
  startsOn: string;
  endsOn: string | null;
  endsCount: number | null;
  nextOccurrenceOn: string | null;
  metadata: Record<string, string>;
};

/** Inserts a series, active while it has a next occurrence (a taken external_ref is 409). */
export async function insertRecurring(db: Queryable, r: RecurringInsert): Promise<void> {
  await db
    .query(
      `INSERT INTO recurring_transactions (id, company_id, direction, account_id, amount_cents, category, description, customer_id, supplier_name, supplier_tax_id,
                                           frequency, interval, starts_on, ends_on, ends_count, next_occurrence_on, active, metadata)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
      [r.id, r.companyId, r.direction, r.accountId, r.amountCents, r.category, r.description, r.customerId, r.supplierName, r.supplierTaxId,
        r.frequency, r.interval, r.startsOn, r.endsOn, r.endsCount, r.nextOccurrenceOn, r.nextOccurrenceOn !== null, JSON.stringify(r.metadata)],
    )
    .catch(refTaken);
}

/** Writes the columns given of a series, and moves `updated_at`, only when one differs from what is stored (a taken external_ref is 409). */
export async function updateRecurringColumns(db: Queryable, companyId: string, id: string, entries: Array<[string, unknown]>): Promise<void> {
  const names = entries.map(([k]) => k);
  await db
    .query(`UPDATE recurring_transactions SET ${setList(names, 3)}, updated_at = now() WHERE company_id = $1 AND id = $2${changesAny(names, 3)}`, [companyId, id, ...entries.map(([, v]) => v)])
    .catch(refTaken);
}

/** The series locked, as the worker reads it (a catch-up batch in progress finishes first), or null. */
export async function lockRecurring(db: Queryable, companyId: string, id: string): Promise<RecurringRow | null> {
  const { rows } = await db.query<RecurringRow>(`${RECURRING_SELECT} WHERE company_id = $1 AND id = $2 FOR UPDATE`, [companyId, id]);
  return rows[0] ?? null;
}

export async function deleteRecurring(db: Queryable, companyId: string, id: string): Promise<void> {
  await db.query('DELETE FROM recurring_transactions WHERE company_id = $1 AND id = $2', [companyId, id]);
}
