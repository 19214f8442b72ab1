// SQL of sales read by the routes (api/routes/sales.ts): a sale as the API
// reads it (with its payments and refunds), its first payment, whether a
// product or a live invoice exists, and a sale's editable columns. The money
// effects (payments, refunds, the ledger) are db/money/sales.ts.
import type { z } from 'zod';
import { PAYMENT_FORM_OF_SALE_PAYMENT } from '../../db/invoicing.ts';
import { refundsOf, type SaleRow } from '../../db/money/sales.ts';
import type { Queryable } from '../../db/pool.ts';
import { iso } from '../../db/timestamps.ts';
import { refTaken } from './money-fields.ts';
import type { lineRead } from './sale-schemas.ts';
import { changesAny, setList } from '../../db/tables.ts';

/** When the sale's first payment was made; null while it has none. A new sale date may not be after it, nor a refund before it. */
export async function firstPaymentAt(db: Queryable, companyId: string, saleId: string): Promise<Date | null> {
  const { rows } = await db.query<{ at: Date | null }>(
    'SELECT min(p.paid_at) AS at FROM movements m JOIN movement_payments p ON p.movement_id = m.id WHERE m.company_id = $1 AND m.sale_id = $2',
    [companyId, saleId],
  );
  return rows[0]?.at ?? null;
}

export async function serializeSale(db: Queryable, s: SaleRow) {
  const { rows: payments } = await db.query<{ id: string; amount_cents: string; paid_at: Date; account_id: string; payment_form: string }>(
    `SELECT m.id, p.amount_cents, p.paid_at, p.account_id, ${PAYMENT_FORM_OF_SALE_PAYMENT} AS payment_form
       FROM movements m JOIN movement_payments p ON p.movement_id = m.id
      WHERE m.company_id = $1 AND m.sale_id = $2 ORDER BY p.paid_at, p.id`,
    [s.company_id, s.id],
  );
  const refunds = await refundsOf(db, s.id);
  return {
    id: s.id,
    customer_id: s.customer_id,
    currency: s.currency,
    occurred_at: iso(s.occurred_at)!,
    prices_include_vat: s.prices_include_vat,
    payment_terms: s.payment_terms,
    line_items: s.line_items as z.infer<typeof lineRead>[],
    subtotal_cents: Number(s.subtotal_cents),
    tax_cents: Number(s.tax_cents),
    total_cents: Number(s.total_cents),
    paid_cents: Number(s.paid_cents),
    refunded_cents: Number(s.refunded_cents),
    amount_due_cents: Number(s.total_cents) - Number(s.paid_cents),
    status: s.status,
    description: s.description,
    payments: payments.map((p) => ({ income_id: p.id, account_id: p.account_id, amount_cents: Number(p.amount_cents), paid_at: iso(p.paid_at)!, payment_form: p.payment_form })),
    refunds: refunds.map((r) => ({ id: r.id, account_id: r.account_id, amount_cents: Number(r.amount_cents), reason: r.reason, refunded_at: iso(r.refunded_at)! })),
    metadata: s.metadata,
    created_at: iso(s.created_at)!,
    updated_at: iso(s.updated_at)!,
  };
}

/** Whether the product exists in the company (a sale line may name one). */
export async function productExists(db: Queryable, companyId: string, productId: string): Promise<boolean> {
  return ((await db.query('SELECT 1 FROM products WHERE company_id = $1 AND id = $2', [companyId, productId])).rowCount ?? 0) > 0;
}

/** Whether the sale has an invoice that is pending, valid or being cancelled. */
export async function hasLiveInvoice(db: Queryable, companyId: string, saleId: string): Promise<boolean> {
  const { rowCount } = await db.query(`SELECT 1 FROM invoices WHERE company_id = $1 AND sale_id = $2 AND status IN ('pending', 'valid', 'cancellation_pending') LIMIT 1`, [companyId, saleId]);
  return (rowCount ?? 0) > 0;
}

/**
 * Writes the editable columns given (customer, date, terms, description, metadata as JSON) and moves
 * `updated_at`, only when one of them differs from what is stored; answers the row written, or null when
 * nothing changed.
 */
export async function updateSaleColumns(db: Queryable, companyId: string, saleId: string, changes: Array<[string, unknown]>): Promise<SaleRow | null> {
  if (!changes.length) return null;
  const names = changes.map(([k]) => k);
  const { rows } = await db
    .query<SaleRow>(
      `UPDATE sales SET ${setList(names, 3)}, updated_at = now() WHERE company_id = $1 AND id = $2${changesAny(names, 3)} RETURNING *`,
      [companyId, saleId, ...changes.map(([, v]) => v)],
    )
    .catch(refTaken);
  return rows[0] ?? null;
}
