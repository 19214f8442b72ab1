// SQL of tax invoices (api/routes/invoices.ts): the invoice row and its read
// (with its payment complements), the sale's live invoices, the writes of a
// request and of a cancellation, and what the CFDI reads of customers and
// products. The worker's stamping is in worker/jobs/invoices.ts.
import { PAYMENT_FORM_OF_SALE_PAYMENT, type InvoiceRow } from '../../db/invoicing.ts';
import type { CfdiDocument } from '../../lib/cfdi/document.ts';
import type { Queryable } from '../../db/pool.ts';
import { iso } from '../../db/timestamps.ts';
import { listPage, type PaginationQuery, type TotalsCache } from '../pagination.ts';

export const INVOICE_DEV_WARNING = 'Timbrada por el proveedor de desarrollo: sin validez fiscal. Configura FACTURAPI_KEY para timbrar de verdad.';

export async function serializeInvoice(db: Queryable, row: InvoiceRow) {
  const { rows: complements } = await db.query<{ id: string; income_id: string; amount_cents: string; installment: number; status: string; uuid: string | null; failure_reason: string | null }>(
    'SELECT id, income_id, amount_cents, installment, status, uuid, failure_reason FROM invoice_payment_complements WHERE invoice_id = $1 ORDER BY installment',
    [row.id],
  );
  return {
    id: row.id,
    sale_id: row.sale_id,
    status: row.status,
    provider: row.provider,
    warning: row.provider === 'development' ? INVOICE_DEV_WARNING : null,
    uuid: row.uuid,
    series: row.series,
    folio: row.folio,
    stamped_at: iso(row.stamped_at),
    verification_url: row.verification_url,
    failure_reason: row.failure_reason,
    payment_method: row.payment_method,
    payment_form: row.payment_form,
    cfdi_use: row.cfdi_use,
    receiver: row.receiver,
    currency: row.currency,
    total_cents: Number(row.total_cents),
    substitutes_id: row.substitutes_id,
    substituted_by_id: row.substituted_by_id,
    cancellation: row.cancellation_motive
      ? { motive: row.cancellation_motive, substitute_uuid: row.cancellation_substitute_uuid, requested_at: iso(row.cancellation_requested_at), cancelled_at: iso(row.cancelled_at) }
      : null,
    payment_complements: complements.map((c) => ({ ...c, amount_cents: Number(c.amount_cents) })),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

export async function findInvoice(db: Queryable, companyId: string, id: string, lock = false): Promise<InvoiceRow | null> {
  const { rows } = await db.query<InvoiceRow>(`SELECT * FROM invoices WHERE company_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [companyId, id]);
  return rows[0] ?? null;
}

/** The sale's invoices that block a new one (pending, valid, being cancelled), oldest first. */
export async function liveInvoicesOfSale(db: Queryable, saleId: string): Promise<InvoiceRow[]> {
  const { rows } = await db.query<InvoiceRow>(`SELECT * FROM invoices WHERE sale_id = $1 AND status IN ('pending', 'valid', 'cancellation_pending') ORDER BY created_at, id`, [saleId]);
  return rows;
}

/** Records a requested invoice as pending, with the document the worker will stamp. */
export async function insertInvoice(
  db: Queryable,
  invoice: { id: string; companyId: string; saleId: string; provider: 'development' | 'facturapi'; currency: string; document: CfdiDocument; substitutesId: string | null },
): Promise<void> {
  const doc = invoice.document;
  await db.query(
    // The series asked for is the invoice's from the start (the stamp writes the provider's, the same one).
    `INSERT INTO invoices (id, company_id, sale_id, status, provider, payment_method, payment_form, cfdi_use, receiver, currency, total_cents, document, substitutes_id, series)
     VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
    [invoice.id, invoice.companyId, invoice.saleId, invoice.provider, doc.payment_method, doc.payment_form, doc.cfdi_use, JSON.stringify(doc.receiver), invoice.currency, doc.total_cents, JSON.stringify(doc), invoice.substitutesId, doc.series],
  );
}

/** Whether a substitute of this invoice is still being stamped. */
export async function hasPendingSubstitute(db: Queryable, companyId: string, invoiceId: string): Promise<boolean> {
  const { rowCount } = await db.query(`SELECT 1 FROM invoices WHERE company_id = $1 AND substitutes_id = $2 AND status = 'pending'`, [companyId, invoiceId]);
  return (rowCount ?? 0) > 0;
}

/** Whether another valid invoice of the sale has this UUID (the substitute a motive-01 cancellation names). */
export async function isValidSibling(db: Queryable, companyId: string, invoice: { id: string; sale_id: string }, uuid: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM invoices WHERE company_id = $1 AND sale_id = $2 AND uuid = $3 AND status = $4 AND id <> $5', [companyId, invoice.sale_id, uuid, 'valid', invoice.id]);
  return (rowCount ?? 0) > 0;
}

/** Marks a valid invoice as being cancelled, with the SAT motive (the worker asks the provider). */
export async function requestCancellation(db: Queryable, companyId: string, invoiceId: string, motive: string, substituteUuid: string | null): Promise<void> {
  await db.query(
    `UPDATE invoices SET status = 'cancellation_pending', cancellation_motive = $3, cancellation_substitute_uuid = $4, cancellation_requested_at = now(),
            failure_reason = NULL, updated_at = now()
      WHERE company_id = $1 AND id = $2`,
    [companyId, invoiceId, motive, substituteUuid],
  );
}

/** A page of the company's invoices, read with their complements. */
export async function listInvoices(db: Queryable, totals: TotalsCache, companyId: string, filters: { sale_id?: string; status?: string }, page: PaginationQuery) {
  const result = await listPage<InvoiceRow>(
    db,
    totals,
    {
      table: 'invoices',
      columns: '*',
      companyId,
      where: (p) => [...(filters.sale_id ? [`sale_id = ${p.add(filters.sale_id)}`] : []), ...(filters.status ? [`status = ${p.add(filters.status)}`] : [])],
      serialize: (row) => row,
    },
    page,
  );
  return { data: await Promise.all((result.data as InvoiceRow[]).map((row) => serializeInvoice(db, row))), meta: result.meta };
}

export type InvoiceCustomer = { id: string; name: string; legal_name: string | null; tax_id: string | null; address: { postal_code?: string } | null; custom_properties: Record<string, unknown> };

/**
 * How a sale was paid, as c_FormaPago: the form that paid the largest amount (the SAT's guide to
 * CFDI 4.0, FormaPago with several forms), each payment's own or its account's (cash 01, card 04,
 * else 03), as the sale shows them; null before any payment.
 */
export async function paidFormOf(db: Queryable, companyId: string, saleId: string): Promise<string | null> {
  const { rows } = await db.query<{ payment_form: string }>(
    `SELECT ${PAYMENT_FORM_OF_SALE_PAYMENT} AS payment_form
       FROM movements m JOIN movement_payments p ON p.movement_id = m.id
      WHERE m.company_id = $1 AND m.sale_id = $2
      GROUP BY 1 ORDER BY sum(p.amount_cents) DESC, min(p.paid_at) LIMIT 1`,
    [companyId, saleId],
  );
  return rows[0]?.payment_form ?? null;
}

/** The sale's customer as the CFDI reads it, or null. */
export async function customerForInvoice(db: Queryable, companyId: string, customerId: string): Promise<InvoiceCustomer | null> {
  const { rows } = await db.query<InvoiceCustomer>('SELECT id, name, legal_name, tax_id, address, custom_properties FROM customers WHERE company_id = $1 AND id = $2', [companyId, customerId]);
  return rows[0] ?? null;
}

/** The custom properties of the sale's products, where the SAT keys of a line may be (sat_product_key, sat_unit_key). */
export async function productPropertiesOf(db: Queryable, companyId: string, productIds: string[]): Promise<Array<{ id: string; custom_properties: Record<string, unknown> }>> {
  const { rows } = await db.query<{ id: string; custom_properties: Record<string, unknown> }>('SELECT id, custom_properties FROM products WHERE company_id = $1 AND id = ANY($2)', [companyId, productIds]);
  return rows;
}

/** A stamped payment complement's XML as kept at its stamp, with what its download needs; null when not this invoice's. */
export async function findComplementXml(db: Queryable, companyId: string, invoiceId: string, complementId: string) {
  const { rows } = await db.query<{ uuid: string | null; xml: string | null; provider_id: string | null; status: string; provider: string }>(
    `SELECT c.uuid, c.xml, c.provider_id, c.status, i.provider
       FROM invoice_payment_complements c JOIN invoices i ON i.id = c.invoice_id
      WHERE c.company_id = $1 AND c.invoice_id = $2 AND c.id = $3`,
    [companyId, invoiceId, complementId],
  );
  return rows[0] ?? null;
}
