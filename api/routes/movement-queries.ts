// SQL of incomes and expenses read by the routes (api/routes/movements.ts)
// and the MCP list tools: a movement as the API reads it (with its payments)
// and the list with its filters. Writes of the effects: db/money/movements.ts.
import { paymentsOf, type Direction, type MovementRow, type PaymentRow } from '../../db/money/movements.ts';
import type { Queryable } from '../../db/pool.ts';
import { iso } from '../../db/timestamps.ts';
import { listPage, searchWhere, type PaginationQuery, type TotalsCache } from '../pagination.ts';
import type { MovementRead } from './movement-schemas.ts';

/** An income's or expense's read; a movement with the payments given. */
export function serializeMovement(m: MovementRow, payments: PaymentRow[]): MovementRead {
  return {
    id: m.id,
    account_id: m.account_id,
    amount_cents: Number(m.amount_cents),
    paid_cents: Number(m.paid_cents),
    currency: m.currency,
    occurred_at: iso(m.occurred_at)!,
    category: m.category,
    description: m.description,
    ...(m.direction === 'income' ? { customer_id: m.customer_id, sale_id: m.sale_id } : { supplier_name: m.supplier_name, supplier_tax_id: m.supplier_tax_id }),
    status: m.status,
    due_on: m.due_on,
    paid_at: iso(m.paid_at),
    recurring_id: m.recurring_id,
    recurring_on: m.recurring_on ?? null,
    payments: payments.map((p) => ({ id: p.id, account_id: p.account_id, amount_cents: Number(p.amount_cents), paid_at: iso(p.paid_at)! })),
    metadata: m.metadata,
    created_at: iso(m.created_at)!,
    updated_at: iso(m.updated_at)!,
  };
}

/** A movement with its payments, read. */
export async function withPayments(db: Queryable, m: MovementRow) {
  return serializeMovement(m, await paymentsOf(db, m.id));
}

export type MovementFilters = {
  from?: string;
  to?: string;
  account_id?: string;
  status?: string;
  customer_id?: string;
  /** The supplier search's term (name or RFC contains), blank meaning none. */
  supplier?: string;
  category?: string;
};

export async function listMovements(db: Queryable, totals: TotalsCache, companyId: string, direction: Direction, filters: MovementFilters, page: PaginationQuery) {
  const supplier = filters.supplier?.trim() || undefined;
  const result = await listPage<MovementRow>(
    db,
    totals,
    {
      table: 'movements',
      columns: `*, to_char(due_on, 'YYYY-MM-DD') AS due_on, to_char(recurring_on, 'YYYY-MM-DD') AS recurring_on`,
      companyId,
      collection: (p) => [`direction = ${p.add(direction)}`],
      where: (p) => {
        const c: string[] = [];
        if (filters.from) c.push(`occurred_at >= ${p.add(filters.from)}::timestamptz`);
        if (filters.to) c.push(`occurred_at < ${p.add(filters.to)}::timestamptz`);
        if (filters.account_id) c.push(`account_id = ${p.add(filters.account_id)}`);
        if (filters.status) c.push(`status = ${p.add(filters.status)}`);
        if (filters.customer_id) c.push(`customer_id = ${p.add(filters.customer_id)}`);
        if (filters.category) c.push(`category = ${p.add(filters.category)}`);
        return [...c, ...searchWhere(supplier, ['supplier_name', 'supplier_tax_id'])(p)];
      },
      searching: !!supplier,
      serialize: (row) => serializeMovement(row, []),
    },
    page,
  );
  // Payments of the page's rows, one query.
  const ids = result.data.map((m) => (m as { id: string }).id);
  if (ids.length) {
    const { rows } = await db.query<PaymentRow>('SELECT * FROM movement_payments WHERE movement_id = ANY($1) ORDER BY paid_at, id', [ids]);
    for (const item of result.data as Array<ReturnType<typeof serializeMovement>>) {
      item.payments = rows.filter((p) => p.movement_id === item.id).map((p) => ({ id: p.id, account_id: p.account_id, amount_cents: Number(p.amount_cents), paid_at: iso(p.paid_at)! }));
    }
  }
  return result;
}
