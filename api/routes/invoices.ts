// Tax invoices (CFDI 4.0) of sales: module `invoicing` (403
// module_not_enabled without it) and scopes `*-invoices`. Shapes follow
// Facturapi's API. The request only records the invoice as `pending` and
// queues its stamping (worker/jobs/invoices.ts): the provider's answer turns
// it `valid` (with uuid, series, folio, stamp date, verification URL) or
// `failed` (with the provider's reason). docs/invoicing.md has the decisions.
// The document is built in invoice-document.ts, the SQL is in
// invoice-queries.ts and the shapes in invoice-schemas.ts.
import { objectIdField } from '../validation.ts';
import { z } from 'zod';
import { facturapiKeyOf, INVOICE_STATUSES } from '../../db/invoicing.ts';
import { findSale } from '../../db/money/sales.ts';
import { transactionRead, type Queryable } from '../../db/pool.ts';
import type { Config } from '../../lib/config.ts';
import { INVOICES } from '../../db/queues.ts';
import { invoicePdf } from '../../lib/cfdi/pdf.ts';
import { FacturapiProvider, ProviderRejected } from '../../lib/cfdi/providers.ts';
import { objectId } from '../../lib/objectid.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { paginationQuery } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { buildDocument } from './invoice-document.ts';
import { findComplementXml, findInvoice, hasPendingSubstitute, insertInvoice, isValidSibling, listInvoices, liveInvoicesOfSale, requestCancellation, serializeInvoice } from './invoice-queries.ts';
import { invoiceCancel, invoiceCreate, invoiceSchema } from './invoice-schemas.ts';

const TAG = 'Invoices';
const MODULE = 'invoicing';

const idParam = { id: 'id' } as const;

/** A download's filename in ASCII, for clients that do not read RFC 6266's filename* (which carries it whole). */
function asciiName(name: string): string {
  return name.normalize('NFD').replace(/[\u0300-\u036f]/g, '').replace(/[^\x20-\x7e]/g, '_');
}

/** A stamped document's XML or PDF from Facturapi, with the company's key; 503 service_unavailable when it cannot be had. */
async function fromFacturapi(config: Config, db: Queryable, companyId: string, providerId: string, format: 'xml' | 'pdf'): Promise<Buffer> {
  const facturapi = config.facturapi;
  if (!facturapi) throw new ApiError('service_unavailable', `Facturapi no está configurado en este servicio (FACTURAPI_KEY); el ${format.toUpperCase()} de este documento no se puede obtener.`);
  const key = await facturapiKeyOf(db, config, companyId);
  if (!key) throw new ApiError('service_unavailable', `La organización de la empresa en Facturapi no tiene llave para este modo (FACTURAPI_MODE); el ${format.toUpperCase()} de este documento no se puede obtener.`);
  return new FacturapiProvider({ baseUrl: facturapi.url, key }).download(providerId, format).catch((error) => {
    // A refusal (a 4xx of Facturapi's: the document not found there) is not an outage: retrying the
    // same download gets the same answer, so it is no 503 with Retry-After.
    if (error instanceof ProviderRejected) throw new ApiError('provider_error', `El proveedor no entregó el ${format.toUpperCase()}: ${error.message}`);
    throw new ApiError('service_unavailable', `El proveedor no entregó el ${format.toUpperCase()}: ${(error as Error).message}`);
  });
}

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
      const saved = await transactionRead(db, async (client) => {
        const sale = await findSale(client, companyId, params.id, true);
        if (!sale) throw new ApiError('not_found');
        const live = await liveInvoicesOfSale(client, sale.id);
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
        const document = await buildDocument(client, ctx.deps.config, sale, id, data, related);
        const provider = ctx.deps.config.facturapi ? 'facturapi' : 'development';
        await insertInvoice(client, { id, companyId, saleId: sale.id, provider, currency: sale.currency, document, substitutesId: data.substitutes_id ?? null });
        // The job runs after this transaction commits; its retries reuse the invoice id as the provider's idempotency key.
        await ctx.deps.jobs.send(client, INVOICES, { action: 'stamp', invoice_id: id });
        return (await findInvoice(client, companyId, id))!;
      }, serializeInvoice);
      return { data: saved };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/invoices',
    scope: 'read-invoices',
    module: MODULE,
    tag: TAG,
    summary: 'Lista facturas',
    query: paginationQuery.extend({ sale_id: objectIdField.optional(), status: z.enum(INVOICE_STATUSES).optional() }),
    response: invoiceSchema,
    list: true,
    status: 200,
    errors: ['module_not_enabled', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) => {
      const { sale_id, status, ...page } = query;
      return listInvoices(db, ctx.deps.totals, companyId, { sale_id, status }, page);
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
      const saved = await transactionRead(db, async (client) => {
        const invoice = await findInvoice(client, companyId, params.id, true);
        if (!invoice) throw new ApiError('not_found');
        if (invoice.status !== 'valid') throw validationFailed({ id: [`la factura está ${invoice.status}; solo una vigente se cancela`] });
        // A substitute being stamped cancels this one itself (motive 01, naming it); a manual cancellation
        // meanwhile would leave the two unlinked. Read after the lock, so a substitution committed first is seen.
        if (await hasPendingSubstitute(client, companyId, invoice.id)) throw validationFailed({ id: ['tiene una sustituta en timbrado; al timbrarse, esta se cancela con el motivo 01'] });
        if (data.motive === '01') {
          // Another valid invoice of the sale: the one being cancelled cannot be its own substitute.
          if (!(await isValidSibling(client, companyId, invoice, data.substitute_uuid ?? ''))) throw validationFailed({ substitute_uuid: ['el motivo 01 necesita el UUID de la factura vigente que la sustituye'] });
        } else if (data.substitute_uuid) throw validationFailed({ substitute_uuid: ['solo con el motivo 01'] });
        await requestCancellation(client, companyId, invoice.id, data.motive, data.substitute_uuid ?? null);
        await ctx.deps.jobs.send(client, INVOICES, { action: 'cancel', invoice_id: invoice.id });
        return (await findInvoice(client, companyId, invoice.id))!;
      }, serializeInvoice);
      return { data: saved };
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
      description: 'Una factura aún sin timbrar (pending o failed): 409 `invoice_not_stamped`. Con el proveedor de desarrollo, el documento dice que no tiene validez fiscal. El XML timbrado se guarda con la factura; el PDF de Facturapi se pide a Facturapi en cada descarga: si no responde, o no está configurado, 503 `service_unavailable` con `Retry-After`; si lo rechaza (no lo encuentra), 502 `provider_error`, que repetir no cambia.',
      params: idParam,
      status: 200,
      file: { mediaType: format === 'xml' ? 'application/xml' : 'application/pdf' },
      errors: ['invalid_id', 'not_found', 'module_not_enabled', 'invoice_not_stamped', 'service_unavailable', 'provider_error'],
      handler: async (ctx, { params, companyId, db }) => {
        const invoice = await findInvoice(db, companyId, params.id);
        if (!invoice) throw new ApiError('not_found');
        if (!invoice.uuid) {
          throw new ApiError('invoice_not_stamped', invoice.status === 'failed' ? `El proveedor rechazó esta factura (ver failure_reason); no tiene ${format.toUpperCase()}: solicita otra para la venta.` : undefined);
        }
        // A series may hold / or \ (F/A): the name keeps them as _, since a client writing the file would
        // read them as folders (and Koa's attachment keeps only what follows the last one).
        const name = `${(invoice.series ?? 'factura').replace(/[/\\]/g, '_')}-${invoice.folio ?? invoice.uuid}.${format}`;
        let body: Buffer;
        if (format === 'xml' && invoice.xml) {
          // Kept at the stamp, whichever the provider (Facturapi's since it is fetched then).
          body = Buffer.from(invoice.xml, 'utf8');
        } else if (invoice.provider === 'facturapi') {
          // Facturapi's PDF, and the XML of an invoice stamped before it was kept, come from Facturapi.
          body = await fromFacturapi(ctx.deps.config, db, companyId, invoice.provider_id!, format);
        } else body = format === 'xml' ? Buffer.from(invoice.xml ?? '', 'utf8') : await invoicePdf(invoice);
        // RFC 6266 (Koa's attachment, the content-disposition package): an ASCII filename, and filename*
        // in UTF-8 when the series has other characters, never a header Node refuses or a quote that ends it.
        ctx.attachment(name, { fallback: asciiName(name) });
        ctx.type = format === 'xml' ? 'application/xml; charset=utf-8' : 'application/pdf';
        return body;
      },
    }),
  ),
  defineRoute({
    method: 'GET',
    path: '/invoices/:id/payment-complements/:complement_id/xml',
    scope: 'read-invoices',
    module: MODULE,
    tag: TAG,
    summary: 'Descarga el XML timbrado de un complemento de pago',
    description:
      'El CFDI de pago (tipo P, Pagos 2.0) de un pago de una venta a crédito, que el emisor entrega a su cliente: uno por pago, en `payment_complements` de la factura. Aún sin timbrar (pending o failed): 409 `invoice_not_stamped`. Se guarda al timbrarse; el de un complemento timbrado por Facturapi antes de guardarse se pide a Facturapi (503 `service_unavailable` si no responde; 502 `provider_error` si lo rechaza).',
    params: { id: 'id', complement_id: 'id' },
    status: 200,
    file: { mediaType: 'application/xml' },
    errors: ['invalid_id', 'not_found', 'module_not_enabled', 'invoice_not_stamped', 'service_unavailable', 'provider_error'],
    handler: async (ctx, { params, companyId, db }) => {
      const complement = await findComplementXml(db, companyId, params.id, params.complement_id);
      if (!complement) throw new ApiError('not_found');
      if (!complement.uuid) {
        throw new ApiError('invoice_not_stamped', complement.status === 'failed' ? 'El proveedor rechazó este complemento de pago (ver failure_reason); no tiene XML.' : 'El complemento de pago aún no está timbrado.');
      }
      const body = complement.xml !== null ? Buffer.from(complement.xml, 'utf8') : await fromFacturapi(ctx.deps.config, db, companyId, complement.provider_id!, 'xml');
      ctx.attachment(`pago-${complement.uuid}.xml`);
      ctx.type = 'application/xml; charset=utf-8';
      return body;
    },
  }),
];
