// The CFDI 4.0 document of a sale (lib/cfdi/document.ts): the emitter's tax
// profile, the receiver (the customer with its RFC, regime and postal code, or
// the general public in a global invoice), one concept per line with its SAT
// keys and VAT, PUE or PPD by the sale's payment terms. Every rule the SAT
// would refuse at stamping is answered here as the contract's 422.
import { Rfc } from '@nodecfdi/rfc';
import { facturapiKeyOf, loadEmitter } from '../../db/invoicing.ts';
import { companyZone } from '../../db/companies.ts';
import type { SaleRow } from '../../db/money/sales.ts';
import type { Queryable } from '../../db/pool.ts';
import { DEFAULT_PRODUCT_KEY, DEFAULT_UNIT_KEY, FOREIGN_RFC, PRODUCT_KEY, PUBLIC_RFC, regimeMismatch, TAX_REGIMES, UNIT_KEY, useFitsRegime, ZIP } from '../../lib/cfdi/catalogs.ts';
import { cfdiText, type CfdiDocument, type ConceptLine } from '../../lib/cfdi/document.ts';
import type { Config } from '../../lib/config.ts';
import { localMonth } from '../../lib/local-dates.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { customerForInvoice, paidFormOf, productPropertiesOf } from './invoice-queries.ts';
import type { InvoiceCreate } from './invoice-schemas.ts';

/** Emisor/@Nombre and Receptor/@Nombre in the CFDI 4.0 schema. */
const EMITTER_NAME = /^[^|]{1,254}$/;

/**
 * The customer's custom property `tax_regime` as c_RegimenFiscal writes it: a key is digits, so `605`
 * stored as a number is "605" (compared with the catalogs as text, and sent as text). Anything else is none.
 */
function regimeProperty(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isInteger(value) && value >= 0) return String(value);
  return typeof value === 'string' ? value.trim() : undefined;
}

/** The CFDI of a sale, or the contract's 422 that says why not. */
export async function buildDocument(db: Queryable, config: Config, sale: SaleRow, invoiceId: string, input: InvoiceCreate, relatedUuid: string | null): Promise<CfdiDocument> {
  const emitter = await loadEmitter(db, config, sale.company_id);
  if (!emitter) throw new ApiError('no_emitter');
  // Emisor/@Nombre is [^|]{1,254} (CFDI 4.0 schema); profiles saved before wsctl checked it.
  if (!EMITTER_NAME.test(cfdiText(emitter.legal_name))) {
    throw new ApiError('no_emitter', 'La razón social del emisor tiene más de 254 caracteres o un |, que el esquema del CFDI 4.0 no admite: corrígela con wsctl company tax-profile.');
  }
  if (emitter.valid_to.getTime() < Date.now()) throw new ApiError('no_emitter', 'El certificado de sello digital (CSD) de la empresa venció.');
  if (config.facturapi && !(await facturapiKeyOf(db, config, sale.company_id))) {
    throw new ApiError('no_emitter', 'La empresa no tiene organización emisora en Facturapi: sus datos fiscales se guardaron antes de configurar Facturapi, o en el otro modo (FACTURAPI_MODE); vuelve a guardarlos con wsctl company tax-profile.');
  }
  const lines = sale.line_items as Array<{ description: string; product_id: string | null; quantity: number; unit_price_cents: number; vat_rate: number | null; vat_exempt: boolean; discount_cents: number; subtotal_cents: number; tax_cents: number }>;
  // c_FormaPago 99 ("por definir") is PPD's alone (CFDI 4.0, Anexo 20): a sale paid at once says how it was paid.
  if (sale.payment_terms !== 'deferred' && input.payment_form === '99') {
    throw validationFailed({ payment_form: ['99 (por definir) es solo para ventas a crédito (PPD); una venta de contado (PUE) dice cómo se pagó'] });
  }
  if (input.line_keys && input.line_keys.length > lines.length) {
    throw validationFailed({ line_keys: [`la venta tiene ${lines.length} línea(s); se recibieron claves para ${input.line_keys.length}`] });
  }
  // A sale refunded whole has no income left to declare, and the service issues no credit note (CFDI
  // de egreso) to cancel one out: an income invoice for it would declare money the company gave back.
  if (sale.status === 'refunded') {
    throw validationFailed({ status: ['la venta se devolvió completa: no queda ingreso que facturar (una devolución parcial se factura por el total de la venta)'] });
  }
  // The CFDI states amounts in the sale's currency at the day's exchange rate (TipoCambio), which the
  // service does not take: a certified provider would refuse TipoCambio 1 for another currency.
  if (sale.currency !== 'mxn') throw validationFailed({ currency: [`solo se facturan ventas en mxn; esta venta es en ${sale.currency}`] });
  // A credit sale's invoice says 99 ("por definir"): how each payment was made goes in its complement.
  if (sale.payment_terms === 'deferred' && input.payment_form !== undefined && input.payment_form !== '99') {
    throw validationFailed({ payment_form: ['una venta a crédito (PPD) se factura con 99 (por definir): la forma de cada pago va en su complemento'] });
  }
  // Descripcion is required, [^|]{1,1000}: a description of only control characters or blanks has none left.
  const blank = lines.findIndex((l) => cfdiText(l.description) === '');
  if (blank >= 0) throw validationFailed({ [`line_items.${blank}.description`]: ['la descripción de la línea queda vacía en el CFDI (Descripcion es obligatoria): corrígela en la venta'] });
  const untaxed = lines.findIndex((l) => !l.vat_exempt && (l.vat_rate === null || l.vat_rate === undefined));
  if (untaxed >= 0) throw new ApiError('sale_without_tax', `La línea ${untaxed + 1} de la venta no tiene tratamiento de IVA (tasa 16, 8 o 0, o exenta).`);
  let receiver: CfdiDocument['receiver'];
  let global: CfdiDocument['global'] = null;
  let cfdiUse = input.cfdi_use ?? 'G03';
  const zone = await companyZone(db, sale.company_id);
  const customer = sale.customer_id ? await customerForInvoice(db, sale.company_id, sale.customer_id) : null;
  const rfc = customer?.tax_id?.trim().toUpperCase();
  if (sale.customer_id && !customer) {
    throw new ApiError('customer_no_rfc', `El cliente de la venta (${sale.customer_id}) fue eliminado: asigna la venta a un cliente con RFC (PATCH /sales/${sale.id} {"data": {"customer_id": …}}).`);
  }
  if (sale.customer_id && !rfc) throw new ApiError('customer_no_rfc');
  if (rfc === FOREIGN_RFC) {
    throw new ApiError('customer_no_rfc', `El RFC del cliente es el genérico de residentes en el extranjero (${FOREIGN_RFC}), cuya factura lleva su residencia fiscal y número de registro, que el servicio no toma todavía.`);
  }
  if (rfc && rfc !== PUBLIC_RFC) {
    if (!Rfc.isValid(rfc)) throw new ApiError('customer_no_rfc', `El RFC del cliente (${rfc}) no es válido.`);
    const regime = input.receiver?.tax_regime ?? regimeProperty(customer!.custom_properties?.tax_regime);
    const zip = input.receiver?.zip ?? customer!.address?.postal_code;
    const errors: Record<string, string[]> = {};
    if (!regime || !TAX_REGIMES[regime]) errors['receiver.tax_regime'] = ['el régimen fiscal del cliente es obligatorio (c_RegimenFiscal)'];
    // What the SAT's receiver rules refuse at stamping, refused here: a regime of the other kind of person, a use the regime does not admit.
    else if (regimeMismatch(regime, rfc)) errors['receiver.tax_regime'] = [regimeMismatch(regime, rfc)!];
    else if (!useFitsRegime(cfdiUse, regime)) errors.cfdi_use = [`el uso ${cfdiUse} no admite el régimen ${regime} del receptor (c_UsoCFDI)`];
    if (!zip) errors['receiver.zip'] = ['el código postal fiscal del cliente es obligatorio'];
    else if (!ZIP.test(zip)) errors['receiver.zip'] = [`el código postal fiscal del cliente (${zip}) debe ser de 5 dígitos`];
    // The receiver's name as the SAT registers it: Nombre is [^|]{1,254} in the CFDI 4.0 schema (the
    // pipe separates the fields of the cadena original). A name is not ours to alter: the SAT compares it
    // with the one registered for the RFC, so the customer's legal_name is corrected instead.
    const legalName = cfdiText(customer!.legal_name ?? customer!.name).toUpperCase();
    if (legalName.includes('|') || legalName.length > 254) {
      errors['customer.legal_name'] = ['la razón social del receptor (legal_name del cliente) tiene hasta 254 caracteres y ningún | (esquema del CFDI 4.0)'];
    }
    if (Object.keys(errors).length) throw validationFailed(errors);
    receiver = { rfc, legal_name: legalName, tax_regime: regime!, zip: zip! };
  } else {
    // The general public: no customer, or one whose RFC is the generic XAXX010101000 (a walk-in buyer's
    // record), which the SAT reads as the public: a global invoice whatever the name.
    // A global invoice covers what the general public paid: the SAT's guide for it (Anexo 20, CFDI
    // global) takes PUE only, so a sale on credit is invoiced to a customer, with its payment complements.
    const errors: Record<string, string[]> = {};
    if (input.receiver !== undefined) errors.receiver = ['una factura al público en general no lleva datos del receptor (XAXX010101000, régimen 616, el código postal del emisor)'];
    if (input.cfdi_use !== undefined && input.cfdi_use !== 'S01') errors.cfdi_use = ['una factura al público en general lleva el uso S01 (sin efectos fiscales)'];
    if (Object.keys(errors).length) throw validationFailed(errors);
    if (sale.payment_terms === 'deferred') {
      throw validationFailed({ customer_id: ['una venta a crédito (PPD) se factura a un cliente con RFC: la factura global al público en general es solo de contado (PUE)'] });
    }
    // The general public: a global invoice (CFDI 4.0: XAXX010101000, régimen 616, uso S01, InformacionGlobal of the sale's month).
    const month = localMonth(new Date(sale.occurred_at).getTime(), zone);
    receiver = { rfc: PUBLIC_RFC, legal_name: 'PUBLICO EN GENERAL', tax_regime: '616', zip: emitter.zip };
    global = { periodicity: '04', months: String(month.month).padStart(2, '0'), year: month.year };
    cfdiUse = 'S01';
  }
  const products = await productPropertiesOf(db, sale.company_id, lines.map((l) => l.product_id).filter((id): id is string => !!id));
  const concepts: ConceptLine[] = lines.map((l, i) => {
    const product = products.find((p) => p.id === l.product_id);
    const given = input.line_keys?.[i];
    const productKey = given?.product_key ?? (product?.custom_properties?.sat_product_key as string | undefined) ?? DEFAULT_PRODUCT_KEY;
    const unitKey = given?.unit_key ?? (product?.custom_properties?.sat_unit_key as string | undefined) ?? DEFAULT_UNIT_KEY;
    // VAT-included prices fold their discount into the net amount.
    const discount = sale.prices_include_vat ? 0 : l.discount_cents;
    return {
      product_key: PRODUCT_KEY.test(productKey) ? productKey : DEFAULT_PRODUCT_KEY,
      unit_key: UNIT_KEY.test(unitKey) ? unitKey : DEFAULT_UNIT_KEY,
      // Descripcion is [^|]{1,1000} in the CFDI 4.0 schema: a pipe (a field separator of the cadena original) becomes a slash.
      description: cfdiText(l.description).replaceAll('|', '/'),
      quantity: l.quantity,
      // The sale's own unit price, before VAT; with VAT-included prices the pre-VAT price of the line
      // (amount ÷ quantity, 6 decimals in the XML) is what Cantidad × ValorUnitario must give.
      unit_price_cents: sale.prices_include_vat ? (l.subtotal_cents + discount) / l.quantity : l.unit_price_cents,
      unit_price_with_tax_cents: sale.prices_include_vat ? (l.subtotal_cents + l.tax_cents) / l.quantity : null,
      amount_cents: l.subtotal_cents + discount,
      discount_cents: discount,
      tax: { rate: l.vat_exempt ? null : l.vat_rate, exempt: l.vat_exempt, base_cents: l.subtotal_cents, tax_cents: l.tax_cents },
    };
  });
  const method = sale.payment_terms === 'deferred' ? 'PPD' : 'PUE';
  // PUE says how the sale was paid: the form sent, else the form of its payments (the largest
  // amount's), else 03 (transfer) for a sale not paid yet.
  const paymentForm = method === 'PPD' ? '99' : (input.payment_form ?? (await paidFormOf(db, sale.company_id, sale.id)) ?? '03');
  return {
    invoice_id: invoiceId,
    type: 'I',
    series: input.series ?? null,
    folio: null,
    issued_at: new Date().toISOString(),
    zone,
    currency: sale.currency,
    payment_form: paymentForm,
    payment_method: method,
    cfdi_use: cfdiUse,
    issuer: { rfc: emitter.rfc, legal_name: cfdiText(emitter.legal_name), tax_regime: emitter.tax_regime, zip: emitter.zip },
    receiver,
    global,
    lines: concepts,
    subtotal_cents: concepts.reduce((n, c) => n + c.amount_cents, 0),
    discount_cents: concepts.reduce((n, c) => n + c.discount_cents, 0),
    total_cents: Number(sale.total_cents),
    related: relatedUuid ? { relation: '04', uuids: [relatedUuid] } : null,
    payment: null,
  };
}
