// What money writes owe tax invoices (module `invoicing`): a payment of a
// deferred (PPD) sale whose invoice is stamped gets a payment complement,
// queued in the payment's transaction (worker/jobs/invoices.ts stamps it).
import { Credential } from '@nodecfdi/credentials/node';
import type { Config } from '../lib/config.ts';
import { objectId } from '../lib/objectid.ts';
import { open } from '../lib/secret-box.ts';
import type { JobSender } from './job-sender.ts';
import type { Queryable } from './pool.ts';
import { INVOICES } from './queues.ts';

export async function enqueueComplementFor(
  db: Queryable,
  jobs: JobSender,
  sale: { company_id: string; id: string; payment_terms: string; total_cents: number | string; paid_cents: number | string },
  payment: { income_id: string; amount_cents: number; paid_at: string },
): Promise<void> {
  if (sale.payment_terms !== 'deferred') return;
  const { rows } = await db.query<{ id: string }>(`SELECT id FROM invoices WHERE sale_id = $1 AND status = 'valid' ORDER BY stamped_at DESC LIMIT 1`, [sale.id]);
  if (!rows[0]) return;
  const { rows: count } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM invoice_payment_complements WHERE invoice_id = $1', [rows[0].id]);
  const id = objectId();
  await db.query(
    `INSERT INTO invoice_payment_complements (id, company_id, invoice_id, income_id, amount_cents, installment, previous_balance_cents, paid_at, status)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending')`,
    [id, sale.company_id, rows[0].id, payment.income_id, payment.amount_cents, count[0].n + 1, Number(sale.total_cents) - Number(sale.paid_cents), new Date(payment.paid_at)],
  );
  await jobs.send(db, INVOICES, { action: 'complement', complement_id: id });
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
