// Sales as writes with effects (with the caller's transaction): the row and
// its ledger entries, payments (each an income linked to the sale, with
// income.created and income.paid; the one that settles it also sale.paid,
// once), refunds (money out of an account, sale.refunded), and the undoing
// of a payment whose income is deleted.
import { objectId } from '../../lib/objectid.ts';
import { recordEvent } from '../events.ts';
import type { JobSender } from '../job-sender.ts';
import type { Queryable } from '../pool.ts';
import { iso, type Timestamp } from '../timestamps.ts';
import { post, refundEntries, saleEntries } from './ledger.ts';
import { insertMovement } from './movements.ts';
import { enqueueComplementFor } from '../invoicing.ts';

export const SALE_STATUSES = ['unpaid', 'partially_paid', 'paid', 'partially_refunded', 'refunded'] as const;
export type SaleStatus = (typeof SALE_STATUSES)[number];

export type SaleRow = {
  id: string;
  company_id: string;
  customer_id: string | null;
  currency: string;
  occurred_at: Timestamp;
  prices_include_vat: boolean;
  payment_terms: 'immediate' | 'deferred';
  line_items: Array<Record<string, unknown>>;
  subtotal_cents: string;
  tax_cents: string;
  total_cents: string;
  paid_cents: string;
  refunded_cents: string;
  settled_at: Timestamp | null;
  status: SaleStatus;
  description: string | null;
  metadata: Record<string, string>;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export function saleStatus(total: number, paid: number, refunded: number): SaleStatus {
  // `refunded` is a sale paid in full and all of it returned: one that still owes (paid 50, refunded 50 of
  // 100) keeps income in the books and a receivable, so it is partly refunded, and can be invoiced.
  if (refunded > 0) return refunded >= paid && paid >= total ? 'refunded' : 'partially_refunded';
  if (paid >= total) return 'paid';
  return paid > 0 ? 'partially_paid' : 'unpaid';
}

/** The `data` of sale events (contract, Events: "Example shape of a sale notification"). */
export function saleEventData(s: SaleRow, extra: Record<string, unknown> = {}) {
  return {
    object: 'sale',
    id: s.id,
    status: s.status,
    amount_cents: Number(s.total_cents),
    paid_cents: Number(s.paid_cents),
    refunded_cents: Number(s.refunded_cents),
    currency: s.currency,
    occurred_at: iso(s.occurred_at)!,
    metadata: s.metadata,
    ...extra,
  };
}

export async function findSale(db: Queryable, companyId: string, id: string, lock = false): Promise<SaleRow | null> {
  const { rows } = await db.query<SaleRow>(`SELECT * FROM sales WHERE company_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [companyId, id]);
  return rows[0] ?? null;
}

export type NewSale = {
  customer_id: string | null;
  currency: string;
  occurred_at: string;
  prices_include_vat: boolean;
  payment_terms: 'immediate' | 'deferred';
  line_items: Array<Record<string, unknown>>;
  subtotal_cents: number;
  tax_cents: number;
  total_cents: number;
  description: string | null;
  metadata: Record<string, string>;
};

export async function insertSale(db: Queryable, companyId: string, zone: string, sale: NewSale): Promise<SaleRow> {
  const { rows } = await db.query<SaleRow>(
    `INSERT INTO sales (id, company_id, customer_id, currency, occurred_at, prices_include_vat, payment_terms, line_items, subtotal_cents, tax_cents,
                        total_cents, status, description, metadata, settled_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, CASE WHEN $12 = 'paid' THEN now() END) RETURNING *`,
    [
      objectId(),
      companyId,
      sale.customer_id,
      sale.currency,
      new Date(sale.occurred_at),
      sale.prices_include_vat,
      sale.payment_terms,
      JSON.stringify(sale.line_items),
      sale.subtotal_cents,
      sale.tax_cents,
      sale.total_cents,
      saleStatus(sale.total_cents, 0, 0),
      sale.description,
      JSON.stringify(sale.metadata),
    ],
  );
  await post(db, companyId, saleEntries(rows[0], zone));
  await recordEvent(db, companyId, 'sale.created', saleEventData(rows[0]));
  // A sale of total 0 (free items) is settled from the start: its one sale.paid follows its sale.created,
  // as a paid income's income.paid follows its income.created.
  if (rows[0].status === 'paid') await recordEvent(db, companyId, 'sale.paid', saleEventData(rows[0]));
  return rows[0];
}

async function setAmounts(db: Queryable, s: SaleRow, paid: number, refunded: number, settledNow: boolean): Promise<SaleRow> {
  const { rows } = await db.query<SaleRow>(
    `UPDATE sales SET paid_cents = $3, refunded_cents = $4, status = $5, settled_at = CASE WHEN $6 THEN now() ELSE settled_at END, updated_at = now()
      WHERE company_id = $1 AND id = $2 RETURNING *`,
    [s.company_id, s.id, paid, refunded, saleStatus(Number(s.total_cents), paid, refunded), settledNow],
  );
  return rows[0];
}

/** A payment of a (locked) sale; the caller checked it fits in what is owed and the account's currency. */
export async function addSalePayment(
  db: Queryable,
  jobs: JobSender,
  zone: string,
  sale: SaleRow,
  payment: { account: { id: string; currency: string }; amount_cents: number; paid_at: string; payment_form?: string },
): Promise<SaleRow> {
  const income = await insertMovement(db, sale.company_id, zone, {
    direction: 'income',
    account: payment.account,
    amount_cents: payment.amount_cents,
    occurred_at: payment.paid_at,
    paid_at: payment.paid_at,
    status: 'paid',
    category: 'ventas',
    description: `Pago de la venta ${sale.id}`,
    customer_id: sale.customer_id,
    sale_id: sale.id,
    payment_form: payment.payment_form ?? null,
    // The sale's metadata, without external_ref (unique per income; the payment is not the sale).
    metadata: Object.fromEntries(Object.entries(sale.metadata).filter(([key]) => key !== 'external_ref')),
  });
  // A deferred sale already invoiced gets a payment complement for it (module invoicing).
  await enqueueComplementFor(db, jobs, sale, { income_id: income.id, amount_cents: payment.amount_cents, paid_at: payment.paid_at });
  const paid = Number(sale.paid_cents) + payment.amount_cents;
  const settles = paid >= Number(sale.total_cents) && sale.settled_at === null;
  const updated = await setAmounts(db, sale, paid, Number(sale.refunded_cents), settles);
  if (settles) await recordEvent(db, sale.company_id, 'sale.paid', saleEventData(updated));
  return updated;
}

/** A refund of a (locked) sale out of an account; the caller checked the amount against what was paid and not refunded. */
export async function addRefund(
  db: Queryable,
  zone: string,
  sale: SaleRow,
  refund: { account_id: string; amount_cents: number; reason: string | null; refunded_at: string },
): Promise<SaleRow> {
  const id = objectId();
  await db.query('INSERT INTO sale_refunds (id, company_id, sale_id, account_id, amount_cents, reason, refunded_at) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
    id,
    sale.company_id,
    sale.id,
    refund.account_id,
    refund.amount_cents,
    refund.reason,
    new Date(refund.refunded_at),
  ]);
  await post(db, sale.company_id, refundEntries(sale, refund, zone));
  const updated = await setAmounts(db, sale, Number(sale.paid_cents), Number(sale.refunded_cents) + refund.amount_cents, false);
  await recordEvent(db, sale.company_id, 'sale.refunded', saleEventData(updated, { refund_id: id, refund_cents: refund.amount_cents, reason: refund.reason ?? null }));
  return updated;
}

/**
 * A payment's income (`incomeId`) of the (locked) sale is deleted: the sale owes that amount again. Refused while refunds
 * need it: they would add up to more than what is left paid, or one would be dated before every payment
 * left (a refund is never earlier than the sale's first payment, as on its create).
 */
export async function revertSalePayment(db: Queryable, sale: SaleRow, incomeId: string, amount: number): Promise<void> {
  const paid = Number(sale.paid_cents) - amount;
  if (paid < Number(sale.refunded_cents)) throw new SaleRefundedError(sale.id, 'tiene devoluciones que ese pago cubre');
  if (Number(sale.refunded_cents) > 0) {
    const uncovered = await refundUncoveredAt(db, sale.company_id, sale.id, { withoutPayment: incomeId });
    if (uncovered) throw new SaleRefundedError(sale.id, `tiene devoluciones al ${uncovered.toISOString()} que los pagos anteriores a esa fecha no cubrirían sin ese pago`);
  }
  await setAmounts(db, sale, paid, Number(sale.refunded_cents), false);
}

/**
 * Money goes back only after it came in: at each refund's date, the sale's refunds up to then are at most
 * its payments up to then. The first refund date at which that would fail, with `refund` added or the
 * payment of income `withoutPayment` removed; null when it holds throughout.
 */
export async function refundUncoveredAt(
  db: Queryable,
  companyId: string,
  saleId: string,
  change: { refund?: { amount_cents: number; at: string }; withoutPayment?: string },
): Promise<Date | null> {
  const { rows } = await db.query<{ at: Date }>(
    `WITH paid AS (
       SELECT p.paid_at AS at, p.amount_cents AS amount FROM movements m JOIN movement_payments p ON p.movement_id = m.id
        WHERE m.company_id = $1 AND m.sale_id = $2 AND m.id IS DISTINCT FROM $3
     ), returned AS (
       SELECT refunded_at AS at, amount_cents AS amount FROM sale_refunds WHERE company_id = $1 AND sale_id = $2
       UNION ALL SELECT $4::timestamptz, $5::bigint WHERE $4::timestamptz IS NOT NULL
     )
     SELECT r.at FROM (SELECT DISTINCT at FROM returned) r
      WHERE (SELECT sum(amount) FROM returned WHERE at <= r.at) > (SELECT coalesce(sum(amount), 0) FROM paid WHERE at <= r.at)
      ORDER BY r.at LIMIT 1`,
    [companyId, saleId, change.withoutPayment ?? null, change.refund?.at ?? null, change.refund?.amount_cents ?? null],
  );
  return rows[0]?.at ?? null;
}

/** Deleting a sale's payment would leave its refunds without the payments they need. */
export class SaleRefundedError extends Error {
  readonly saleId: string;
  constructor(saleId: string, why: string) {
    super(`la venta ${saleId} ${why}; no se puede eliminar`);
    this.saleId = saleId;
  }
}

export async function refundsOf(db: Queryable, saleId: string) {
  const { rows } = await db.query<{ id: string; account_id: string; amount_cents: string; reason: string | null; refunded_at: Timestamp }>(
    'SELECT id, account_id, amount_cents, reason, refunded_at FROM sale_refunds WHERE sale_id = $1 ORDER BY refunded_at, id',
    [saleId],
  );
  return rows;
}
