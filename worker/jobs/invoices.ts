// Tax invoices in the worker (queue invoices): stamping, cancelling and
// payment complements through the configured provider (lib/cfdi/providers.ts).
// The provider call happens outside any transaction; its result and the
// event are written together. A provider outage is thrown, so pg-boss
// retries with backoff (db/queues.ts); a refusal marks the document `failed`
// with the provider's reason. Stamping twice is impossible: a job that finds
// the invoice no longer pending does nothing, and the provider's idempotency
// key is the invoice id.
import type { Job } from 'pg-boss';
import { companyZone } from '../../db/companies.ts';
import { recordEvent } from '../../db/events.ts';
import { enqueueComplementsOwed, facturapiKeyOf, loadEmitter, PAYMENT_FORM_BY_ACCOUNT_KIND, type InvoiceRow } from '../../db/invoicing.ts';
import { findSale } from '../../db/money/sales.ts';
import { transaction, type Pool, type Queryable } from '../../db/pool.ts';
import { INVOICES, type InvoiceJob } from '../../db/queues.ts';
import { DevelopmentProvider, FacturapiProvider, ProviderRejected, type InvoiceProvider, type Signer } from '../../lib/cfdi/providers.ts';
import type { CfdiDocument } from '../../lib/cfdi/document.ts';
import type { Config } from '../../lib/config.ts';
import type { JobDefinition, WorkerDeps } from './types.ts';

type Invoice = InvoiceRow;

/** The provider an invoice was asked of; Facturapi with the key of the company's own organization (null: none, the document fails as no_emitter). */
async function providerFor(pool: Pool, config: Config, name: 'development' | 'facturapi', companyId: string): Promise<InvoiceProvider | null> {
  if (name === 'facturapi') {
    // A refusal, not an outage: retrying cannot bring the key back. A stamp fails and a cancellation
    // returns to valid, each with this reason, as when the company has no organization (NO_ORGANIZATION).
    if (!config.facturapi) throw new ProviderRejected('la factura se pidió a Facturapi, pero FACTURAPI_KEY ya no está configurada en el servicio');
    const key = await facturapiKeyOf(pool, config, companyId);
    return key ? new FacturapiProvider({ baseUrl: config.facturapi.url, key }) : null;
  }
  return new DevelopmentProvider();
}

const NO_ORGANIZATION = 'la empresa no tiene organización emisora en Facturapi para este modo (no_emitter): vuelve a guardar sus datos fiscales con wsctl company tax-profile';

async function signerOf(pool: Pool, config: Config, companyId: string): Promise<Signer | null> {
  const emitter = await loadEmitter(pool, config, companyId);
  if (!emitter) return null;
  return { number: emitter.certificate_number, certificateBase64: emitter.certificate_base64, sign: (data) => emitter.credential.sign(data) };
}

/** An invoice event's data: the invoice, and its sale's metadata (the client's own references, as the sale's events carry them). */
async function eventData(db: Queryable, inv: Invoice, extra: Record<string, unknown> = {}) {
  const { rows } = await db.query<{ metadata: Record<string, string> }>('SELECT metadata FROM sales WHERE id = $1', [inv.sale_id]);
  return {
    object: 'invoice',
    id: inv.id,
    sale_id: inv.sale_id,
    status: inv.status,
    uuid: inv.uuid,
    amount_cents: Number(inv.total_cents),
    currency: inv.currency,
    metadata: rows[0]?.metadata ?? {},
    ...extra,
  };
}

async function load(pool: Pool, id: string): Promise<Invoice | null> {
  const { rows } = await pool.query<Invoice>('SELECT * FROM invoices WHERE id = $1', [id]);
  return rows[0] ?? null;
}

async function stamp(deps: WorkerDeps, id: string): Promise<void> {
  const { pool, config, jobs } = deps;
  const invoice = await load(pool, id);
  if (!invoice || invoice.status !== 'pending') return;
  const signer = await signerOf(pool, config, invoice.company_id);
  const fail = (reason: string) => pool.query(`UPDATE invoices SET status = 'failed', failure_reason = $2, updated_at = now() WHERE id = $1 AND status = 'pending'`, [id, reason.slice(0, 1000)]);
  if (!signer) return void (await fail('la empresa ya no tiene datos fiscales completos (no_emitter)'));
  const provider = await providerFor(pool, config, invoice.provider, invoice.company_id);
  if (!provider) return void (await fail(NO_ORGANIZATION));
  let result;
  try {
    result = await provider.emit(invoice.document, signer);
  } catch (error) {
    if (error instanceof ProviderRejected) return void (await fail(error.message));
    throw error;
  }
  await transaction(pool, async (client) => {
    // The sale first (the order every writer of a sale and its invoices takes): a payment registered
    // concurrently either commits before this, and gets its complement below, or finds the invoice valid.
    await findSale(client, invoice.company_id, invoice.sale_id, true);
    const { rows } = await client.query<Invoice>(
      `UPDATE invoices SET status = 'valid', provider_id = $2, uuid = $3, series = $4, folio = $5, stamped_at = $6, verification_url = $7, xml = $8, failure_reason = NULL, updated_at = now()
        WHERE id = $1 AND status = 'pending' RETURNING *`,
      [id, result.provider_id, result.uuid, result.series, result.folio, new Date(result.stamped_at), result.verification_url, result.xml],
    );
    const stamped = rows[0];
    if (!stamped) return;
    await recordEvent(client, stamped.company_id, 'invoice.emitted', await eventData(client, stamped));
    await enqueueComplementsOwed(client, jobs, stamped);
    if (stamped.substitutes_id) {
      // The old invoice is cancelled with motive 01, naming this one.
      const { rows: old } = await client.query<Invoice>(
        `UPDATE invoices SET substituted_by_id = $2, status = 'cancellation_pending', cancellation_motive = '01', cancellation_substitute_uuid = $3,
                cancellation_requested_at = now(), updated_at = now() WHERE id = $1 AND status = 'valid' RETURNING *`,
        [stamped.substitutes_id, stamped.id, stamped.uuid],
      );
      if (old[0]) {
        await recordEvent(client, stamped.company_id, 'invoice.substituted', await eventData(client, stamped, { substituted_uuid: old[0].uuid, substituted_id: old[0].id }));
        await jobs.send(client, INVOICES, { action: 'cancel', invoice_id: old[0].id });
      }
    }
  });
}

async function cancel(deps: WorkerDeps, id: string, poll: boolean): Promise<void> {
  const { pool, config, jobs } = deps;
  const invoice = await load(pool, id);
  if (!invoice || invoice.status !== 'cancellation_pending') return;
  let outcome;
  try {
    const provider = await providerFor(pool, config, invoice.provider, invoice.company_id);
    if (!provider) throw new ProviderRejected(NO_ORGANIZATION);
    outcome = await provider.cancel({ provider_id: invoice.provider_id!, uuid: invoice.uuid! }, invoice.cancellation_motive!, invoice.cancellation_substitute_uuid, { poll });
  } catch (error) {
    if (error instanceof ProviderRejected) {
      // The SAT or the provider refused: the invoice stays valid, with the reason. A deferred sale's
      // payments made while the cancellation was pending found no valid invoice and got no complement:
      // they get theirs now, the sale locked first as at the stamp (a payment committing meanwhile
      // either is among them or finds the invoice valid).
      await transaction(pool, async (client) => {
        await findSale(client, invoice.company_id, invoice.sale_id, true);
        const { rows } = await client.query<Invoice>(
          `UPDATE invoices SET status = 'valid', failure_reason = $2, updated_at = now() WHERE id = $1 AND status = 'cancellation_pending' RETURNING *`,
          [id, `cancelación rechazada: ${error.message}`.slice(0, 1000)],
        );
        if (rows[0]) await enqueueComplementsOwed(client, jobs, rows[0]);
      });
      return;
    }
    throw error;
  }
  if (outcome === 'pending') {
    // The receiver must accept it (SAT rules, 72 hours to answer): see how it stands in a minute.
    await jobs.send(pool, INVOICES, { action: 'cancel', invoice_id: id, poll: true }, { startAfter: 60 });
    return;
  }
  await transaction(pool, async (client) => {
    const { rows } = await client.query<Invoice>(
      `UPDATE invoices SET status = 'cancelled', cancelled_at = now(), failure_reason = NULL, updated_at = now() WHERE id = $1 AND status = 'cancellation_pending' RETURNING *`,
      [id],
    );
    if (rows[0]) await recordEvent(client, rows[0].company_id, 'invoice.cancelled', await eventData(client, rows[0], { motive: rows[0].cancellation_motive }));
  });
}

type Complement = { id: string; invoice_id: string; income_id: string; amount_cents: string; installment: number; previous_balance_cents: string; paid_at: Date; status: string; payment_form: string };

async function complement(deps: WorkerDeps, id: string): Promise<void> {
  const { pool, config } = deps;
  // How the payment was made: as its income says, else by the kind of account it went into.
  const { rows } = await pool.query<Complement>(
    `SELECT c.*, coalesce(m.payment_form, (SELECT ${PAYMENT_FORM_BY_ACCOUNT_KIND} FROM accounts a WHERE a.id = m.account_id), '03') AS payment_form
       FROM invoice_payment_complements c LEFT JOIN movements m ON m.id = c.income_id WHERE c.id = $1`,
    [id],
  );
  const c = rows[0];
  if (!c || c.status !== 'pending') return;
  const invoice = (await load(pool, c.invoice_id))!;
  const signer = await signerOf(pool, config, invoice.company_id);
  const fail = (reason: string) => pool.query(`UPDATE invoice_payment_complements SET status = 'failed', failure_reason = $2, updated_at = now() WHERE id = $1`, [id, reason.slice(0, 1000)]);
  if (!signer || !invoice.uuid) return void (await fail('sin datos fiscales o sin factura timbrada'));
  const base = invoice.document;
  const doc: CfdiDocument = {
    ...base,
    invoice_id: c.id,
    type: 'P',
    series: null,
    folio: null,
    issued_at: new Date().toISOString(),
    zone: await companyZone(pool, invoice.company_id),
    payment_form: null,
    payment_method: null,
    cfdi_use: 'CP01',
    global: null,
    related: null,
    lines: [{ product_key: '84111506', unit_key: 'ACT', description: 'Pago', quantity: 1, unit_price_cents: 0, unit_price_with_tax_cents: null, amount_cents: 0, discount_cents: 0, tax: { rate: null, exempt: false, base_cents: 0, tax_cents: 0 } }],
    subtotal_cents: 0,
    discount_cents: 0,
    total_cents: 0,
    payment: {
      paid_at: c.paid_at.toISOString(),
      payment_form: c.payment_form,
      amount_cents: Number(c.amount_cents),
      related_uuid: invoice.uuid,
      installment: c.installment,
      previous_balance_cents: Number(c.previous_balance_cents),
      currency: invoice.currency,
    },
  };
  const provider = await providerFor(pool, config, invoice.provider, invoice.company_id);
  if (!provider) return void (await fail(NO_ORGANIZATION));
  let result;
  try {
    result = await provider.emit(doc, signer);
  } catch (error) {
    if (error instanceof ProviderRejected) return void (await fail(error.message));
    throw error;
  }
  await transaction(pool, async (client) => {
    const { rowCount } = await client.query(
      `UPDATE invoice_payment_complements SET status = 'valid', provider_id = $2, uuid = $3, stamped_at = $4, xml = $5, updated_at = now() WHERE id = $1 AND status = 'pending'`,
      [id, result.provider_id, result.uuid, new Date(result.stamped_at), result.xml],
    );
    if (rowCount) {
      await recordEvent(client, invoice.company_id, 'invoice.payment_complement_added', await eventData(client, invoice, { complement_id: id, complement_uuid: result.uuid, payment_cents: Number(c.amount_cents), installment: c.installment }));
    }
  });
}

/**
 * Invoices and complements still pending whose job is gone: its retries ran out during a long outage
 * (15 tries over about 7 hours), or its last try expired or died with the worker. Each gets a new
 * job, so nothing stays pending for good. Never stamped twice: a stamp looks the invoice up by its
 * `external_id` before it posts. Left alone for an hour after their last change, so a job that is
 * merely waiting for its turn is not doubled. Runs every hour (the queue's cron).
 */
export async function reconcile({ pool, jobs }: Pick<WorkerDeps, 'pool' | 'jobs'>): Promise<number> {
  const live = `SELECT 1 FROM pgboss.job j WHERE j.name = '${INVOICES.name}' AND j.state IN ('created', 'retry', 'active')`;
  const { rows } = await pool.query<{ kind: 'stamp' | 'cancel' | 'complement'; id: string }>(
    `SELECT CASE status WHEN 'pending' THEN 'stamp' ELSE 'cancel' END AS kind, id FROM invoices
      WHERE status IN ('pending', 'cancellation_pending') AND updated_at < now() - interval '1 hour'
        AND NOT EXISTS (${live} AND j.data->>'invoice_id' = invoices.id)
     UNION ALL
     SELECT 'complement', id FROM invoice_payment_complements
      WHERE status = 'pending' AND updated_at < now() - interval '1 hour'
        AND NOT EXISTS (${live} AND j.data->>'complement_id' = invoice_payment_complements.id)
     LIMIT 1000`,
  );
  for (const { kind, id } of rows) {
    await jobs.send(pool, INVOICES, kind === 'complement' ? { action: 'complement', complement_id: id } : kind === 'stamp' ? { action: 'stamp', invoice_id: id } : { action: 'cancel', invoice_id: id });
  }
  return rows.length;
}

export const invoices: JobDefinition<InvoiceJob> = {
  queue: INVOICES,
  work: { batchSize: 1, pollingIntervalSeconds: 0.5 },
  cron: '23 * * * *',
  async handler(deps, batch: Job<InvoiceJob | Record<string, never>>[]) {
    for (const { data } of batch) {
      // The hourly run of the cron carries no action.
      if (!('action' in data)) await reconcile(deps);
      else if (data.action === 'complement') await complement(deps, data.complement_id);
      else if (data.action === 'stamp') await stamp(deps, data.invoice_id);
      else await cancel(deps, data.invoice_id, data.poll === true);
    }
  },
};
