// What money writes owe tax invoices (module `invoicing`): a payment of a
// deferred (PPD) sale whose invoice is stamped gets a payment complement,
// queued in the payment's transaction; payments the invoice did not see
// stamped get theirs at its stamp (worker/jobs/invoices.ts stamps both).
import { Credential } from '@nodecfdi/credentials/node';
import type { PaymentMethod } from '../lib/cfdi/catalogs.ts';
import type { CfdiDocument } from '../lib/cfdi/document.ts';
import type { Config } from '../lib/config.ts';
import { objectId } from '../lib/objectid.ts';
import { open } from '../lib/secret-box.ts';
import type { JobSender } from './job-sender.ts';
import type { Queryable } from './pool.ts';
import { INVOICES } from './queues.ts';
import type { Timestamp } from './timestamps.ts';

export const INVOICE_STATUSES = ['pending', 'valid', 'failed', 'cancellation_pending', 'cancelled'] as const;

/** An invoices row, as the API reads it and the worker stamps and cancels it. */
export type InvoiceRow = {
  id: string;
  company_id: string;
  sale_id: string;
  status: (typeof INVOICE_STATUSES)[number];
  provider: 'development' | 'facturapi';
  provider_id: string | null;
  uuid: string | null;
  series: string | null;
  folio: string | null;
  stamped_at: Timestamp | null;
  verification_url: string | null;
  failure_reason: string | null;
  payment_method: PaymentMethod;
  payment_form: string;
  cfdi_use: string;
  receiver: { rfc: string; legal_name: string; tax_regime: string; zip: string };
  currency: string;
  total_cents: string;
  document: CfdiDocument;
  xml: string | null;
  substitutes_id: string | null;
  substituted_by_id: string | null;
  cancellation_motive: string | null;
  cancellation_substitute_uuid: string | null;
  cancellation_requested_at: Timestamp | null;
  cancelled_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export async function enqueueComplementFor(
  db: Queryable,
  jobs: JobSender,
  sale: { company_id: string; id: string; payment_terms: string; total_cents: number | string; paid_cents: number | string },
  payment: { income_id: string; amount_cents: number; paid_at: string },
): Promise<void> {
  if (sale.payment_terms !== 'deferred') return;
  const { rows } = await db.query<{ id: string }>(`SELECT id FROM invoices WHERE sale_id = $1 AND status = 'valid' ORDER BY stamped_at DESC LIMIT 1`, [sale.id]);
  if (!rows[0]) return; // none stamped yet: the stamp queues it (enqueueComplementsOwed)
  await queueComplement(db, jobs, sale.company_id, rows[0].id, payment, Number(sale.total_cents) - Number(sale.paid_cents));
}

/**
 * At the stamp of a deferred sale's invoice, in its transaction, with the sale locked: a complement
 * for every payment of the sale that has none on any of its invoices not cancelled (a new invoice
 * after a cancellation declares every payment again: the cancelled one's complements went with it). Those are the payments
 * registered while the invoice was pending (enqueueComplementFor found nothing stamped; a provider
 * outage can make that hours) and those made before it was requested (the SAT asks a complement for
 * every payment of a PPD invoice, a partial payment received before it included). In the order they
 * were registered, each with the balance left before it. Returns how many were queued.
 */
export async function enqueueComplementsOwed(db: Queryable, jobs: JobSender, invoice: { id: string; company_id: string; sale_id: string }): Promise<number> {
  const { rows: sales } = await db.query<{ payment_terms: string; total_cents: string }>('SELECT payment_terms, total_cents FROM sales WHERE company_id = $1 AND id = $2', [
    invoice.company_id,
    invoice.sale_id,
  ]);
  if (sales[0]?.payment_terms !== 'deferred') return 0;
  const { rows: owed } = await db.query<{ id: string; amount_cents: string; paid_at: Date; paid_before: string }>(
    `SELECT p.id, p.amount_cents, p.paid_at, p.paid_before
       FROM (SELECT m.id, m.amount_cents, m.paid_at, m.created_at,
                    coalesce(sum(m.amount_cents) OVER (ORDER BY m.created_at, m.id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS paid_before
               FROM movements m WHERE m.company_id = $1 AND m.sale_id = $2 AND m.direction = 'income') p
      WHERE NOT EXISTS (SELECT 1 FROM invoice_payment_complements c JOIN invoices i ON i.id = c.invoice_id
                         WHERE i.sale_id = $2 AND c.income_id = p.id AND i.status <> 'cancelled')
      ORDER BY p.created_at, p.id`,
    [invoice.company_id, invoice.sale_id],
  );
  for (const payment of owed) {
    await queueComplement(
      db,
      jobs,
      invoice.company_id,
      invoice.id,
      { income_id: payment.id, amount_cents: Number(payment.amount_cents), paid_at: payment.paid_at },
      Number(sales[0].total_cents) - Number(payment.paid_before),
    );
  }
  return owed.length;
}

/**
 * SQL over `accounts`: the form (c_FormaPago) a payment complement declares for a sale's payment that does
 * not say, by the kind of account the money went into: cash 01, card 04, bank and other 03 (transfer).
 */
export const PAYMENT_FORM_BY_ACCOUNT_KIND = `CASE kind WHEN 'cash' THEN '01' WHEN 'card' THEN '04' ELSE '03' END`;

/** SQL: the form of a sale's payment as the sale shows it, over `movements m JOIN movement_payments p`: its own, else its account's. */
export const PAYMENT_FORM_OF_SALE_PAYMENT = `coalesce(m.payment_form, (SELECT ${PAYMENT_FORM_BY_ACCOUNT_KIND} FROM accounts WHERE id = p.account_id))`;

/** One complement of `invoiceId`, numbered after the invoice's others, and its stamp job. */
async function queueComplement(
  db: Queryable,
  jobs: JobSender,
  companyId: string,
  invoiceId: string,
  payment: { income_id: string; amount_cents: number; paid_at: string | Date },
  previousBalanceCents: number,
): Promise<void> {
  const { rows: count } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM invoice_payment_complements WHERE invoice_id = $1', [invoiceId]);
  const id = objectId();
  await db.query(
    `INSERT INTO invoice_payment_complements (id, company_id, invoice_id, income_id, amount_cents, installment, previous_balance_cents, paid_at, status)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending')`,
    [id, companyId, invoiceId, payment.income_id, payment.amount_cents, count[0].n + 1, previousBalanceCents, new Date(payment.paid_at)],
  );
  await jobs.send(db, INVOICES, { action: 'complement', complement_id: id });
}

/**
 * Which payment complement stamped or being stamped holds a payment (its income), if any: its own
 * ('own'), or a later payment's of the same sale ('later'), whose previous balance counts this one
 * (so deleting it would leave that stamped balance wrong). The tax authority holds the document.
 */
export async function issuedComplementOf(db: Queryable, incomeId: string): Promise<'own' | 'later' | null> {
  const { rows } = await db.query<{ own: boolean }>(
    `SELECT c.income_id = this.id AS own
       FROM movements this
       JOIN movements paid ON paid.sale_id = this.sale_id AND paid.direction = 'income'
                          AND (paid.created_at, paid.id) >= (this.created_at, this.id)
       JOIN invoice_payment_complements c ON c.income_id = paid.id AND c.status IN ('pending', 'valid')
      WHERE this.id = $1
      ORDER BY own DESC LIMIT 1`,
    [incomeId],
  );
  return rows[0] ? (rows[0].own ? 'own' : 'later') : null;
}

export type Emitter = { rfc: string; legal_name: string; tax_regime: string; zip: string; certificate_number: string; certificate_base64: string; credential: Credential; valid_to: Date };

/** The company's complete emitter data with its opened credential, or null (the API answers 422 no_emitter). */
export async function loadEmitter(db: Queryable, config: Config, companyId: string): Promise<Emitter | null> {
  const { rows } = await db.query<{ rfc: string; legal_name: string; tax_regime: string; zip: string; certificate_number: string; certificate_base64: string; key_enc: string; password_enc: string; valid_to: Date }>('SELECT * FROM company_tax_profiles WHERE company_id = $1', [companyId]);
  const row = rows[0];
  if (!row) return null;
  const key = open(config.encryptionKey, row.key_enc);
  const password = open(config.encryptionKey, row.password_enc);
  if (key === null || password === null) return null;
  try {
    const credential = Credential.create(Buffer.from(row.certificate_base64, 'base64').toString('binary'), Buffer.from(key, 'base64').toString('binary'), password);
    return { rfc: row.rfc, legal_name: row.legal_name, tax_regime: row.tax_regime, zip: row.zip, certificate_number: row.certificate_number, certificate_base64: row.certificate_base64, credential, valid_to: row.valid_to };
  } catch {
    return null;
  }
}

/**
 * The secret key of the company's Facturapi organization for the configured mode (FACTURAPI_MODE),
 * or null: no organization yet (a tax profile saved before Facturapi was configured), or its key
 * was taken in the other mode. The API answers 422 no_emitter; `wsctl company tax-profile` fixes it.
 */
export async function facturapiKeyOf(db: Queryable, config: Config, companyId: string): Promise<string | null> {
  if (!config.facturapi) return null;
  const { rows } = await db.query<{ mode: string | null; key_enc: string | null }>('SELECT mode, key_enc FROM facturapi_organizations WHERE company_id = $1', [companyId]);
  const row = rows[0];
  if (!row?.key_enc || row.mode !== config.facturapi.mode) return null;
  return open(config.encryptionKey, row.key_enc);
}
