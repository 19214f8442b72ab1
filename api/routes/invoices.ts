// Tax invoices (CFDI 4.0) of sales: module `invoicing` (403
// module_not_enabled without it) and scopes `*-invoices`. Shapes follow
// Facturapi's API. The request only records the invoice as `pending` and
// queues its stamping (worker/jobs/invoices.ts): the provider's answer turns
// it `valid` (with uuid, series, folio, stamp date, verification URL) or
// `failed` (with the provider's reason). docs/invoicing.md has the decisions.
import { z } from 'zod';
import { loadEmitter } from '../../db/invoicing.ts';
import { findSale, type SaleRow } from '../../db/money/sales.ts';
import { transaction, type Queryable } from '../../db/pool.ts';
import { INVOICES } from '../../db/queues.ts';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import { CANCEL_MOTIVES, CFDI_USES, DEFAULT_PRODUCT_KEY, DEFAULT_UNIT_KEY, PAYMENT_FORMS, PRODUCT_KEY, PUBLIC_RFC, regimeFitsRfc, TAX_REGIMES, UNIT_KEY, useFitsRegime } from '../../lib/cfdi/catalogs.ts';
import type { CfdiDocument, ConceptLine } from '../../lib/cfdi/document.ts';
import { invoicePdf } from '../../lib/cfdi/pdf.ts';
import { FacturapiProvider } from '../../lib/cfdi/providers.ts';
import { localMonth } from '../../lib/local-dates.ts';
import { objectId } from '../../lib/objectid.ts';
import { Rfc } from '@nodecfdi/rfc';
import { companyZone } from '../../db/money/ledger.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { listPage, paginationQuery } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { objectIdString } from './money-fields.ts';
import type { ApiContext } from '../types.ts';

const TAG = 'Invoices';
const MODULE = 'invoicing';
const STATUSES = ['pending', 'valid', 'failed', 'cancellation_pending', 'cancelled'] as const;
export const DEV_WARNING = 'Timbrada por el proveedor de desarrollo: sin validez fiscal. Configura FACTURAPI_KEY para timbrar de verdad.';

export type InvoiceRow = {
  id: string;
  company_id: string;
  sale_id: string;
  status: (typeof STATUSES)[number];
  provider: 'development' | 'facturapi';
  provider_id: string | null;
  uuid: string | null;
  series: string | null;
  folio: string | null;
  stamped_at: Timestamp | null;
  verification_url: string | null;
  failure_reason: string | null;
  payment_method: 'PUE' | 'PPD';
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

export const invoiceSchema = z.object({
  id: z.string(),
  sale_id: z.string(),
  status: z.enum(STATUSES),
  provider: z.enum(['development', 'facturapi']),
  warning: z.string().nullable().describe('Presente con el proveedor de desarrollo: la factura no tiene validez fiscal'),
  uuid: z.string().nullable().describe('Folio fiscal, una vez timbrada'),
  series: z.string().nullable(),
  folio: z.string().nullable(),
  stamped_at: z.string().nullable(),
  verification_url: z.string().nullable(),
  failure_reason: z.string().nullable(),
  payment_method: z.enum(['PUE', 'PPD']),
  payment_form: z.string(),
  cfdi_use: z.string(),
  receiver: z.object({ rfc: z.string(), legal_name: z.string(), tax_regime: z.string(), zip: z.string() }),
  currency: z.string(),
  total_cents: z.number().int(),
  substitutes_id: z.string().nullable(),
  substituted_by_id: z.string().nullable(),
  cancellation: z.object({ motive: z.string(), substitute_uuid: z.string().nullable(), requested_at: z.string().nullable(), cancelled_at: z.string().nullable() }).nullable(),
  payment_complements: z.array(z.object({ id: z.string(), income_id: z.string(), amount_cents: z.number().int(), installment: z.number().int(), status: z.string(), uuid: z.string().nullable(), failure_reason: z.string().nullable() })),
  created_at: z.string(),
  updated_at: z.string(),
});

async function serializeInvoice(db: Queryable, row: InvoiceRow) {
  const { rows: complements } = await db.query<{ id: string; income_id: string; amount_cents: string; installment: number; status: string; uuid: string | null; failure_reason: string | null }>(
    'SELECT id, income_id, amount_cents, installment, status, uuid, failure_reason FROM invoice_payment_complements WHERE invoice_id = $1 ORDER BY installment',
    [row.id],
  );
  return {
    id: row.id,
    sale_id: row.sale_id,
    status: row.status,
    provider: row.provider,
    warning: row.provider === 'development' ? DEV_WARNING : null,
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

const invoiceCreate = z.strictObject({
  cfdi_use: z.enum(CFDI_USES).optional().describe('UsoCFDI del cliente; por defecto G03 (gastos en general); al público en general, S01'),
  payment_form: z.enum(PAYMENT_FORMS).optional().describe('c_FormaPago; por defecto 03 (transferencia) en PUE; en PPD siempre 99'),
  series: z.string().regex(/^[A-Za-z0-9]{1,25}$/).optional(),
  receiver: z
    .strictObject({
      tax_regime: z.string().refine((r) => !!TAX_REGIMES[r], 'fuera de c_RegimenFiscal').optional(),
      zip: z.string().regex(/^\d{5}$/, 'código postal de 5 dígitos').optional(),
    })
    .optional()
    .describe('Datos fiscales del cliente que no guarda su ficha (régimen; código postal si su dirección no lo tiene)'),
  line_keys: z
    .array(z.strictObject({ product_key: z.string().regex(PRODUCT_KEY, 'ClaveProdServ de 8 dígitos').optional(), unit_key: z.string().regex(UNIT_KEY, 'ClaveUnidad del SAT').optional() }))
    .max(200)
    .optional()
    .describe('Claves SAT por línea de la venta, en orden; por omisión las del producto (propiedades sat_product_key, sat_unit_key) o 01010101 y H87'),
  substitutes_id: objectIdString.optional().describe('Factura vigente de esta venta que la nueva sustituye (relación 04; la anterior se cancela con motivo 01 al timbrarse la nueva)'),
});

const invoiceCancel = z.strictObject({
  motive: z.enum(CANCEL_MOTIVES).describe('01 con sustituta (usa substitutes_id al facturar), 02 errores sin relación, 03 no se llevó a cabo, 04 nominativa en factura global'),
  substitute_uuid: z.string().optional().describe('Solo motivo 01: UUID de la factura vigente que la sustituye'),
});

type Customer = { id: string; name: string; legal_name: string | null; tax_id: string | null; address: { postal_code?: string } | null; custom_properties: Record<string, unknown> };

/** The CFDI of a sale, or the contract's 422 that says why not. */
async function buildDocument(db: Queryable, ctx: ApiContext, sale: SaleRow, invoiceId: string, input: z.infer<typeof invoiceCreate>, relatedUuid: string | null): Promise<CfdiDocument> {
  const emitter = await loadEmitter(db, ctx.deps.config, sale.company_id);
  if (!emitter) throw new ApiError('no_emitter');
  if (emitter.valid_to.getTime() < Date.now()) throw new ApiError('no_emitter', 'El certificado de sello digital (CSD) de la empresa venció.');
  const lines = sale.line_items as Array<{ description: string; product_id: string | null; quantity: number; unit_price_cents: number; vat_rate: number | null; vat_exempt: boolean; discount_cents: number; subtotal_cents: number; tax_cents: number }>;
  // c_FormaPago 99 ("por definir") is PPD's alone (CFDI 4.0, Anexo 20): a sale paid at once says how it was paid.
  if (sale.payment_terms !== 'deferred' && input.payment_form === '99') {
    throw validationFailed({ payment_form: ['99 (por definir) es solo para ventas a crédito (PPD); una venta de contado (PUE) dice cómo se pagó'] });
  }
  if (input.line_keys && input.line_keys.length > lines.length) {
    throw validationFailed({ line_keys: [`la venta tiene ${lines.length} línea(s); se recibieron claves para ${input.line_keys.length}`] });
  }
  const untaxed = lines.findIndex((l) => !l.vat_exempt && (l.vat_rate === null || l.vat_rate === undefined));
  if (untaxed >= 0) throw new ApiError('sale_without_tax', `La línea ${untaxed + 1} de la venta no tiene tratamiento de IVA (tasa 16, 8 o 0, o exenta).`);
  let receiver: CfdiDocument['receiver'];
  let global: CfdiDocument['global'] = null;
  let cfdiUse = input.cfdi_use ?? 'G03';
  if (sale.customer_id) {
    const { rows } = await db.query<Customer>('SELECT id, name, legal_name, tax_id, address, custom_properties FROM customers WHERE company_id = $1 AND id = $2', [sale.company_id, sale.customer_id]);
    const customer = rows[0];
    const rfc = customer?.tax_id?.trim().toUpperCase();
    if (!customer || !rfc) throw new ApiError('customer_no_rfc');
    if (!Rfc.isValid(rfc)) throw new ApiError('customer_no_rfc', `El RFC del cliente (${rfc}) no es válido.`);
    const regime = input.receiver?.tax_regime ?? (customer.custom_properties?.tax_regime as string | undefined);
    const zip = input.receiver?.zip ?? customer.address?.postal_code;
    const errors: Record<string, string[]> = {};
    if (!regime || !TAX_REGIMES[regime]) errors['receiver.tax_regime'] = ['el régimen fiscal del cliente es obligatorio (c_RegimenFiscal)'];
    // What the SAT's receiver rules refuse at stamping, refused here: a regime of the other kind of person, a use the regime does not admit.
    else if (!regimeFitsRfc(regime, rfc)) errors['receiver.tax_regime'] = [`el régimen ${regime} no aplica a una persona ${rfc.length === 12 ? 'moral (RFC de 12 caracteres)' : 'física (RFC de 13 caracteres)'}`];
    else if (!useFitsRegime(cfdiUse, regime)) errors.cfdi_use = [`el uso ${cfdiUse} no admite el régimen ${regime} del receptor (c_UsoCFDI)`];
    if (!zip || !/^\d{5}$/.test(zip)) errors['receiver.zip'] = ['el código postal fiscal del cliente es obligatorio'];
    if (Object.keys(errors).length) throw validationFailed(errors);
    receiver = { rfc, legal_name: (customer.legal_name ?? customer.name).toUpperCase(), tax_regime: regime!, zip: zip! };
  } else {
    // The general public: a global invoice (CFDI 4.0: XAXX010101000, régimen 616, uso S01, InformacionGlobal of the sale's month).
    const zone = await companyZone(db, sale.company_id);
    const month = localMonth(new Date(sale.occurred_at).getTime(), zone);
    receiver = { rfc: PUBLIC_RFC, legal_name: 'PUBLICO EN GENERAL', tax_regime: '616', zip: emitter.zip };
    global = { periodicity: '04', months: String(month.month).padStart(2, '0'), year: month.year };
    cfdiUse = 'S01';
  }
  const { rows: products } = await db.query<{ id: string; custom_properties: Record<string, unknown> }>(
    'SELECT id, custom_properties FROM products WHERE company_id = $1 AND id = ANY($2)',
    [sale.company_id, lines.map((l) => l.product_id).filter(Boolean)],
  );
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
      description: l.description,
      quantity: l.quantity,
      // The sale's own unit price, before VAT; with VAT-included prices the pre-VAT price of the line
      // (amount ÷ quantity, 6 decimals in the XML) is what Cantidad × ValorUnitario must give.
      unit_price_cents: sale.prices_include_vat ? (l.subtotal_cents + discount) / l.quantity : l.unit_price_cents,
      amount_cents: l.subtotal_cents + discount,
      discount_cents: discount,
      tax: { rate: l.vat_exempt ? null : l.vat_rate, exempt: l.vat_exempt, base_cents: l.subtotal_cents, tax_cents: l.tax_cents },
    };
  });
  const method = sale.payment_terms === 'deferred' ? 'PPD' : 'PUE';
  return {
    invoice_id: invoiceId,
    type: 'I',
    series: input.series ?? null,
    folio: null,
    issued_at: new Date().toISOString(),
    currency: sale.currency,
    payment_form: method === 'PPD' ? '99' : (input.payment_form ?? '03'),
    payment_method: method,
    cfdi_use: cfdiUse,
    issuer: { rfc: emitter.rfc, legal_name: emitter.legal_name, tax_regime: emitter.tax_regime, zip: emitter.zip },
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

const idParam = { id: 'id' } as const;

export const invoiceRoutes: RouteDef[] = [
  defineRoute({
    method: 'POST',
    path: '/sales/:id/invoice',
    scope: 'create-invoices',
    module: MODULE,
    tag: TAG,
    summary: 'Factura una venta (CFDI 4.0)',
    description:
      'Registra la factura como `pending` y la timbra en segundo plano; después queda `valid` (con `uuid`, serie, folio, fecha de timbrado y URL de verificación, evento `invoice.emitted`) o `failed` (con la razón del proveedor). ' +
      'Receptor: el cliente de la venta (su RFC es `tax_id`; sin él, 422 `customer_no_rfc`); su régimen debe corresponder al tipo de persona del RFC (12 caracteres: moral; 13: física) y `cfdi_use` debe admitir ese régimen (c_UsoCFDI), si no 422 `validation_failed`; sin cliente, el público en general (XAXX010101000, régimen 616, uso S01, factura global del mes). ' +
      'Método de pago PUE para una venta `immediate`, PPD (forma 99) para una `deferred`. Una línea sin tratamiento de IVA: 422 `sale_without_tax`. ' +
      'Sin datos fiscales completos de la empresa: 422 `no_emitter`. Una venta con factura vigente: 422 `already_invoiced` (sustitúyela con `substitutes_id`). Dos solicitudes a la vez para una venta dejan una sola factura.',
    params: idParam,
    body: invoiceCreate,
    bodyOptional: true,
    example: { cfdi_use: 'G03', payment_form: '03', receiver: { tax_regime: '601', zip: '64000' } },
    response: invoiceSchema,
    status: 201,
    errors: ['invalid_id', 'not_found', 'module_not_enabled', 'no_emitter', 'customer_no_rfc', 'sale_without_tax', 'already_invoiced', 'validation_failed', 'idempotency_key_reused'],
    handler: async (ctx, { params, data, companyId, db }) => {
      const row = await transaction(db, async (client) => {
        const sale = await findSale(client, companyId, params.id, true);
        if (!sale) throw new ApiError('not_found');
        const { rows: live } = await client.query<InvoiceRow>(`SELECT * FROM invoices WHERE sale_id = $1 AND status IN ('pending', 'valid', 'cancellation_pending') ORDER BY created_at`, [sale.id]);
        let related: string | null = null;
        if (data.substitutes_id) {
          const listed = live.find((i) => i.id === data.substitutes_id && i.status === 'valid' && !i.substituted_by_id);
          // Locked and read again: a cancellation committed meanwhile leaves it no longer valid (see the cancel route).
          const old = listed && (await findInvoice(client, companyId, listed.id, true));
          if (!old || old.status !== 'valid') throw validationFailed({ substitutes_id: ['no es una factura vigente de esta venta'] });
          if (live.some((i) => i.substitutes_id === old.id)) throw new ApiError('already_invoiced', 'Esa factura ya tiene una sustituta en proceso.');
          related = old.uuid;
        } else if (live.length) {
          throw new ApiError('already_invoiced');
        }
        const id = objectId();
        const doc = await buildDocument(client, ctx, sale, id, data, related);
        await client.query(
          `INSERT INTO invoices (id, company_id, sale_id, status, provider, payment_method, payment_form, cfdi_use, receiver, currency, total_cents, document, substitutes_id)
           VALUES ($1, $2, $3, 'pending', $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
          [id, companyId, sale.id, ctx.deps.config.facturapi ? 'facturapi' : 'development', doc.payment_method, doc.payment_form, doc.cfdi_use, JSON.stringify(doc.receiver), sale.currency, doc.total_cents, JSON.stringify(doc), data.substitutes_id ?? null],
        );
        // The job runs after this transaction commits; its retries reuse the invoice id as the provider's idempotency key.
        await ctx.deps.jobs.send(client, INVOICES, { action: 'stamp', invoice_id: id });
        return (await findInvoice(client, companyId, id))!;
      });
      return { data: await serializeInvoice(db, row) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/invoices',
    scope: 'read-invoices',
    module: MODULE,
    tag: TAG,
    summary: 'Lista facturas',
    query: paginationQuery.extend({ sale_id: objectIdString.optional(), status: z.enum(STATUSES).optional() }),
    response: invoiceSchema,
    list: true,
    status: 200,
    errors: ['module_not_enabled', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) => {
      const { sale_id, status, ...page } = query;
      const result = await listPage<InvoiceRow>(db, ctx.deps.totals, {
        table: 'invoices',
        columns: '*',
        companyId,
        where: (p) => [...(sale_id ? [`sale_id = ${p.add(sale_id)}`] : []), ...(status ? [`status = ${p.add(status)}`] : [])],
        serialize: (row) => row,
      }, page);
      return { data: await Promise.all((result.data as InvoiceRow[]).map((row) => serializeInvoice(db, row))), meta: result.meta };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/invoices/:id',
    scope: 'read-invoices',
    module: MODULE,
    tag: TAG,
    summary: 'Obtiene una factura',
    params: idParam,
    response: invoiceSchema,
    status: 200,
    errors: ['invalid_id', 'not_found', 'module_not_enabled'],
    handler: async (_ctx, { params, companyId, db }) => {
      const row = await findInvoice(db, companyId, params.id);
      if (!row) throw new ApiError('not_found');
      return { data: await serializeInvoice(db, row) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/invoices/:id/cancel',
    scope: 'update-invoices',
    module: MODULE,
    tag: TAG,
    summary: 'Cancela una factura ante el SAT',
    description:
      'Con el motivo del SAT: 01 (con una sustituta vigente: `substitute_uuid`), 02, 03 o 04. La factura pasa a `cancellation_pending` y, cuando el proveedor confirma, a `cancelled` (evento `invoice.cancelled`). ' +
      'Solo una factura `valid` se cancela (otra: 422 validation_failed), y no mientras se timbra su sustituta (422 validation_failed: al timbrarse, la sustituta la cancela con el motivo 01).',
    params: idParam,
    body: invoiceCancel,
    example: { motive: '02' },
    response: invoiceSchema,
    status: 200,
    errors: ['invalid_id', 'not_found', 'module_not_enabled', 'validation_failed'],
    handler: async (ctx, { params, data, companyId, db }) => {
      const row = await transaction(db, async (client) => {
        const invoice = await findInvoice(client, companyId, params.id, true);
        if (!invoice) throw new ApiError('not_found');
        if (invoice.status !== 'valid') throw validationFailed({ id: [`la factura está ${invoice.status}; solo una vigente se cancela`] });
        // A substitute being stamped cancels this one itself (motive 01, naming it); a manual cancellation
        // meanwhile would leave the two unlinked. Read after the lock, so a substitution committed first is seen.
        const { rows: substitute } = await client.query(`SELECT 1 FROM invoices WHERE company_id = $1 AND substitutes_id = $2 AND status = 'pending'`, [companyId, invoice.id]);
        if (substitute.length) throw validationFailed({ id: ['tiene una sustituta en timbrado; al timbrarse, esta se cancela con el motivo 01'] });
        if (data.motive === '01') {
          // Another valid invoice of the sale: the one being cancelled cannot be its own substitute.
          const { rows } = await client.query('SELECT 1 FROM invoices WHERE company_id = $1 AND sale_id = $2 AND uuid = $3 AND status = $4 AND id <> $5', [companyId, invoice.sale_id, data.substitute_uuid ?? '', 'valid', invoice.id]);
          if (!rows.length) throw validationFailed({ substitute_uuid: ['el motivo 01 necesita el UUID de la factura vigente que la sustituye'] });
        } else if (data.substitute_uuid) throw validationFailed({ substitute_uuid: ['solo con el motivo 01'] });
        await client.query(
          `UPDATE invoices SET status = 'cancellation_pending', cancellation_motive = $3, cancellation_substitute_uuid = $4, cancellation_requested_at = now(), updated_at = now()
            WHERE company_id = $1 AND id = $2`,
          [companyId, invoice.id, data.motive, data.substitute_uuid ?? null],
        );
        await ctx.deps.jobs.send(client, INVOICES, { action: 'cancel', invoice_id: invoice.id });
        return (await findInvoice(client, companyId, invoice.id))!;
      });
      return { data: await serializeInvoice(db, row) };
    },
  }),
  ...(['xml', 'pdf'] as const).map((format) =>
    defineRoute({
      method: 'GET',
      path: `/invoices/:id/${format}`,
      scope: 'read-invoices',
      module: MODULE,
      tag: TAG,
      summary: format === 'xml' ? 'Descarga el XML timbrado' : 'Descarga la representación impresa (PDF)',
      description: 'Una factura aún sin timbrar (pending o failed): 409 `invoice_not_stamped`. Con el proveedor de desarrollo, el documento dice que no tiene validez fiscal.',
      params: idParam,
      status: 200,
      errors: ['invalid_id', 'not_found', 'module_not_enabled', 'invoice_not_stamped'],
      handler: async (ctx, { params, companyId, db }) => {
        const invoice = await findInvoice(db, companyId, params.id);
        if (!invoice) throw new ApiError('not_found');
        if (!invoice.uuid) throw new ApiError('invoice_not_stamped');
        const name = `${invoice.series ?? 'factura'}-${invoice.folio ?? invoice.uuid}.${format}`;
        let body: Buffer;
        if (invoice.provider === 'facturapi' && ctx.deps.config.facturapi) {
          body = await new FacturapiProvider({ baseUrl: ctx.deps.config.facturapi.url, key: ctx.deps.config.facturapi.key }).download(invoice.provider_id!, format).catch((error) => {
            throw new ApiError('service_unavailable', `El proveedor no entregó el ${format.toUpperCase()}: ${(error as Error).message}`);
          });
        } else body = format === 'xml' ? Buffer.from(invoice.xml ?? '', 'utf8') : await invoicePdf(invoice);
        ctx.set('Content-Disposition', `attachment; filename="${name}"`);
        ctx.set('X-Content-Type-Options', 'nosniff');
        ctx.type = format === 'xml' ? 'application/xml; charset=utf-8' : 'application/pdf';
        return body;
      },
    }),
  ),
];
