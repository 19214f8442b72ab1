// Who stamps invoices: a provider interface with two implementations.
// - FacturapiProvider: Facturapi's REST API v2 (lib/cfdi/facturapi.ts) with
//   the secret key of the company's own organization, its idempotency from
//   our invoice id (`external_id` and the body's `idempotency_key`, and a
//   lookup by `external_id` before any retry).
// - DevelopmentProvider: well-formed CFDI 4.0 XML with a fake stamp, marked
//   as not valid for tax (lib/cfdi/xml.ts); what `npm start` uses.
// Errors: ProviderUnavailable (outages: retried with backoff) and
// ProviderRejected (the provider refused the document: the invoice fails with
// its reason).
import { createHash } from 'node:crypto';
import { cents, type CfdiDocument } from './document.ts';
import { facturapiRequest, ProviderRejected, ProviderUnavailable } from './facturapi.ts';
import { cfdiXml, type Stamp } from './xml.ts';
import { logProblem } from '../log.ts';

export { ProviderRejected, ProviderUnavailable };

export type StampResult = { provider_id: string; uuid: string; series: string | null; folio: string | null; stamped_at: string; verification_url: string | null; xml: string | null };

export interface InvoiceProvider {
  readonly name: 'development' | 'facturapi';
  /** Stamps the document; calling it again for the same invoice returns the same stamp. */
  emit(doc: CfdiDocument, signer: Signer): Promise<StampResult>;
  /**
   * Asks for the cancellation, or (`poll`: a request already made came back pending) how it stands:
   * `pending` while the receiver has not answered; ProviderRejected once the receiver refused.
   */
  cancel(invoice: { provider_id: string; uuid: string }, motive: string, substituteUuid: string | null, options?: { poll?: boolean }): Promise<'cancelled' | 'pending'>;
  download(providerId: string, format: 'xml' | 'pdf'): Promise<Buffer>;
}

/** What signs a development document: the company's CSD (number, certificate, key). */
export type Signer = { number: string; certificateBase64: string; sign: (data: string) => string };

const SAT_URL = 'https://verificacfdi.facturaelectronica.sat.gob.mx/default.aspx';

export function verificationUrl(uuid: string, issuer: string, receiver: string, totalCents: number, seal: string): string {
  return `${SAT_URL}?id=${uuid}&re=${issuer}&rr=${receiver}&tt=${cents(totalCents)}&fe=${seal.slice(-8)}`;
}

export class DevelopmentProvider implements InvoiceProvider {
  readonly name = 'development' as const;

  async emit(doc: CfdiDocument, signer: Signer): Promise<StampResult> {
    // Deterministic per invoice: a retry makes the same UUID.
    const hash = createHash('sha256').update(`dev-stamp:${doc.invoice_id}`).digest('hex').toUpperCase();
    const uuid = `${hash.slice(0, 8)}-${hash.slice(8, 12)}-4${hash.slice(13, 16)}-A${hash.slice(17, 20)}-${hash.slice(20, 32)}`;
    const seal = Buffer.from(signer.sign(`||4.0|${doc.invoice_id}|${doc.issued_at}|${doc.total_cents}|${doc.receiver.rfc}||`), 'binary').toString('base64');
    const stamp: Stamp = { uuid, stamped_at: new Date().toISOString(), sat_certificate: '00000000000000000000', cfd_seal: seal, sat_seal: Buffer.from(`sello de prueba ${uuid}`).toString('base64'), pac_rfc: 'SPR190613I52' };
    const xml = cfdiXml(doc, stamp, { number: signer.number, base64: signer.certificateBase64 });
    // As a certified provider would: a document that breaks a rule of Anexo 20 is refused, not stamped,
    // so what passes here in development is what a PAC would take.
    // Loaded on first use, in the worker (the web process never stamps). Imported statically here, so
    // evaluated in the middle of the web's module graph, it left the customers list at 359–378 µs of CPU
    // per request against 281–295 without it, or with the same module imported first (docs/bench.md,
    // fourth session of 2026-11-29; why the order matters is not known).
    const { validateCfdi } = await import('./anexo20.ts');
    const violations = validateCfdi(xml);
    if (violations.length) throw new ProviderRejected(`Documento rechazado: ${violations.map((v) => `${v.rule}: ${v.message}`).join('; ')}`);
    return { provider_id: `dev_${doc.invoice_id}`, uuid, series: doc.series, folio: doc.folio, stamped_at: stamp.stamped_at, verification_url: verificationUrl(uuid, doc.issuer.rfc, doc.receiver.rfc, doc.total_cents, seal), xml };
  }

  async cancel(): Promise<'cancelled'> {
    return 'cancelled';
  }

  async download(): Promise<Buffer> {
    throw new Error('the development provider keeps its documents in the database');
  }
}

/**
 * Whether Facturapi, sent the prices before VAT, stamps the sale's total. It adds each line's VAT unrounded
 * and rounds the sum once; the sale rounds each line's VAT to the cent (docs/money.md). The two agree on
 * most sales, not on every one with several lines: ten lines of 3 × 0.72 are 25.10 in the sale (0.35 of VAT
 * each) and 25.06 summed first (3.456). A sum that ends on half a cent counts as not agreeing.
 */
export function totalBeforeVatAgrees(doc: Pick<CfdiDocument, 'lines' | 'total_cents'>): boolean {
  // Hundredths of a cent: each line's net amount × (100 + rate), an integer.
  const sum = doc.lines.reduce((n, l) => n + (l.amount_cents - l.discount_cents) * (100 + (l.tax.exempt || l.tax.base_cents === 0 ? 0 : (l.tax.rate ?? 0))), 0);
  return sum % 100 !== 50 && Math.round(sum / 100) === doc.total_cents;
}

type FacturapiInvoice = { id: string; uuid: string; status: string; total?: number; series?: string | null; folio_number?: number | string | null; stamp?: { date?: string }; verification_url?: string; cancellation_status?: string };

export class FacturapiProvider implements InvoiceProvider {
  readonly name = 'facturapi' as const;
  private readonly baseUrl: string;
  private readonly key: string;

  /** `key`: the secret key of the company's organization, which Facturapi issues the invoice under. */
  constructor(options: { baseUrl: string; key: string }) {
    this.baseUrl = options.baseUrl;
    this.key = options.key;
  }

  private call<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, raw = false): Promise<T> {
    return facturapiRequest<T>(this.baseUrl, this.key, method, path, body === undefined ? undefined : { json: body }, raw);
  }

  private result(inv: FacturapiInvoice): StampResult {
    return {
      provider_id: inv.id,
      uuid: inv.uuid,
      series: inv.series ?? null,
      folio: inv.folio_number === null || inv.folio_number === undefined ? null : String(inv.folio_number),
      stamped_at: inv.stamp?.date ?? new Date().toISOString(),
      verification_url: inv.verification_url ?? null,
      xml: null,
    };
  }

  /** The request body of Facturapi's POST /v2/invoices. */
  static body(doc: CfdiDocument): Record<string, unknown> {
    const customer = { legal_name: doc.receiver.legal_name, tax_id: doc.receiver.rfc, tax_system: doc.receiver.tax_regime, address: { zip: doc.receiver.zip } };
    if (doc.type === 'P') {
      const p = doc.payment!;
      return {
        type: 'P',
        customer,
        external_id: doc.invoice_id,
        idempotency_key: `ws-${doc.invoice_id}`,
        complements: [{ type: 'pago', data: [{ payment_form: p.payment_form, date: p.paid_at, related_documents: [{ uuid: p.related_uuid, amount: Number(cents(p.amount_cents)), installment: p.installment, last_balance: Number(cents(p.previous_balance_cents)), taxes: [] }] }] }],
      };
    }
    // Prices before VAT only where Facturapi's own sum gives the sale's total (totalBeforeVatAgrees) from
    // exactly the prices sent: a fractional quantity's price is its amount ÷ quantity to 6 decimals, a hair
    // off the amount, and VAT added to a sum near half a cent turns that hair into a cent (347.85 × 11.76 at
    // 16 %: 4745.24 in the sale, 4745.23 stamped). With VAT, each line's total is what is summed: the hair
    // (and Facturapi's own 6-decimal rounding of quantity × price) stays under half a cent below about 9,999 units in all.
    const withVat = doc.lines.some((l) => l.unit_price_with_tax_cents != null || !Number.isInteger(l.quantity)) || !totalBeforeVatAgrees(doc);
    return {
      type: 'I',
      customer,
      external_id: doc.invoice_id,
      idempotency_key: `ws-${doc.invoice_id}`,
      use: doc.cfdi_use,
      payment_form: doc.payment_form,
      payment_method: doc.payment_method,
      currency: doc.currency.toUpperCase(),
      ...(doc.series ? { series: doc.series } : {}),
      ...(doc.global ? { global: { periodicity: ({ '01': 'day', '02': 'week', '03': 'fortnight', '04': 'month', '05': 'two_months' } as const)[doc.global.periodicity], months: doc.global.months, year: doc.global.year } } : {}),
      ...(doc.related ? { related_documents: [{ relationship: doc.related.relation, documents: doc.related.uuids }] } : {}),
      items: doc.lines.map((l) => ({
        quantity: l.quantity,
        // With VAT: the discount is in the line's total already (the price below).
        discount: withVat ? 0 : Number(cents(l.discount_cents)),
        product: {
          description: l.description,
          product_key: l.product_key,
          unit_key: l.unit_key,
          // Before VAT: the line's unit price; with a fractional quantity, the amount ÷ quantity Facturapi
          // multiplies back to our rounded amount exactly (its own rounding of quantity × price could differ
          // by a cent). With VAT: the line's total ÷ quantity and `tax_included`, so Facturapi takes the VAT
          // out of each line's total and the CFDI's total is the sale's (docs/invoicing.md, "Lines").
          ...(withVat
            ? { price: Number(((l.unit_price_with_tax_cents ?? (l.tax.base_cents + l.tax.tax_cents) / l.quantity) / 100).toFixed(6)), tax_included: true }
            : { price: Number(((Number.isInteger(l.quantity) ? l.unit_price_cents : l.amount_cents / l.quantity) / 100).toFixed(6)), tax_included: false }),
          // A line whose tax base is 0 is not subject to tax (01), as in our own XML (lib/cfdi/xml.ts).
          ...(l.tax.base_cents > 0
            ? { taxability: '02', taxes: l.tax.exempt ? [{ type: 'IVA', factor: 'Exento' }] : [{ type: 'IVA', rate: (l.tax.rate ?? 0) / 100 }] }
            : { taxability: '01', taxes: [] }),
        },
      })),
    };
  }

  async emit(doc: CfdiDocument): Promise<StampResult> {
    // A retry after an answer we never got: the first attempt may have stamped it, or may still be
    // stamping it (`pending`: asked again later, never posted twice). `failed` or `draft` documents
    // stamp nothing; the POST's `idempotency_key` guards what is left.
    const found = await this.call<{ data: FacturapiInvoice[] }>('GET', `/invoices?external_id=${encodeURIComponent(doc.invoice_id)}`);
    if (found.data?.some((inv) => inv.status === 'pending')) throw new ProviderUnavailable('Facturapi aún está timbrando esta factura');
    const stamped =
      found.data?.find((inv) => inv.status === 'valid') ??
      (await this.call<FacturapiInvoice>('POST', '/invoices', FacturapiProvider.body(doc)));
    // `202` with `status: pending` and no UUID: Facturapi kept it after an intermittent error and goes on
    // stamping in the background; the retry finds it by external_id. `failed`: it gave up.
    if (stamped.status === 'pending') throw new ProviderUnavailable('Facturapi aún está timbrando esta factura');
    if (stamped.status !== 'valid' || !stamped.uuid) throw new ProviderRejected(`Facturapi no la timbró (estado ${stamped.status})`);
    // The CFDI is stamped either way: a total other than the sale's is said, for the operator to look at.
    if (doc.type === 'I' && typeof stamped.total === 'number' && Math.round(stamped.total * 100) !== doc.total_cents) {
      logProblem('invoice.stamped_total_differs', { invoice_id: doc.invoice_id, provider_id: stamped.id, stamped_cents: Math.round(stamped.total * 100), sale_cents: doc.total_cents });
    }
    // The stamped XML is the legal document: kept with the invoice, so its download never depends on
    // Facturapi being up (or still configured). Not fetched yet (an outage just after the stamp): the
    // retry finds the invoice by external_id above and fetches it then.
    let xml: string;
    try {
      xml = (await this.download(stamped.id, 'xml')).toString('utf8');
    } catch (error) {
      if (error instanceof ProviderUnavailable) throw error;
      throw new ProviderUnavailable(`Facturapi no entregó el XML timbrado: ${(error as Error).message}`);
    }
    return { ...this.result(stamped), xml };
  }

  /**
   * Facturapi answers a cancellation the receiver must accept with `cancellation_status: pending`
   * (the invoice still `valid`); the receiver's answer shows later on the invoice: `accepted` (status
   * `canceled`), `rejected`, or `expired`. So a poll reads the invoice (GET) and does not ask again:
   * a second DELETE would be a second request to the receiver. A request that is already pending is
   * not made again either (a job run twice, or requeued after it was lost).
   */
  async cancel(invoice: { provider_id: string }, motive: string, substituteUuid: string | null, options: { poll?: boolean } = {}): Promise<'cancelled' | 'pending'> {
    const path = `/invoices/${encodeURIComponent(invoice.provider_id)}`;
    const current = await this.call<FacturapiInvoice>('GET', path);
    const known = FacturapiProvider.cancellation(current, options.poll === true);
    if (known) return known;
    const query = new URLSearchParams({ motive, ...(substituteUuid ? { substitution: substituteUuid } : {}) });
    return FacturapiProvider.cancellation(await this.call<FacturapiInvoice>('DELETE', `${path}?${query}`), true) ?? 'pending';
  }

  /** Where an invoice's cancellation stands; null when nothing is asked (or, unless `answered` counts, was refused before). */
  private static cancellation(inv: FacturapiInvoice, answered: boolean): 'cancelled' | 'pending' | null {
    // `verifying`: the SAT received the request and is validating it; Facturapi goes on asking.
    if (inv.cancellation_status === 'pending' || inv.cancellation_status === 'verifying') return 'pending';
    if (inv.status === 'canceled') return 'cancelled';
    if (!answered) return null;
    if (inv.cancellation_status === 'rejected') throw new ProviderRejected('el receptor rechazó la cancelación');
    if (inv.cancellation_status === 'expired') throw new ProviderRejected('la solicitud de cancelación venció sin que el SAT la aplicara');
    return null;
  }

  download(providerId: string, format: 'xml' | 'pdf'): Promise<Buffer> {
    return this.call<Buffer>('GET', `/invoices/${encodeURIComponent(providerId)}/${format}`, undefined, true);
  }
}

