// Sales at /sales (scopes `*-sales`): line items with VAT per line
// (lib/vat.ts), totals computed by the service, payments that record
// incomes linked to the sale, and refunds. Writes of the effects:
// db/money/sales.ts. Decisions (rounding, statuses, events): docs/money.md.
// Shapes in sale-schemas.ts, the SQL of reads in sale-queries.ts. A sale's invoice
// (POST /sales/:id/invoice) is with the invoices, in invoices.ts.
import { objectIdField } from '../validation.ts';
import { z } from 'zod';
import { transactionRead, type Queryable } from '../../db/pool.ts';
import { companyZoneForWrite, windowInstants } from '../../db/companies.ts';
import { post, saleEntries, undo } from '../../db/money/ledger.ts';
import { addRefund, addSalePayment, findSale, insertSale, refundUncoveredAt, SALE_STATUSES, type SaleRow } from '../../db/money/sales.ts';
import { saleAmounts, type VatRate } from '../../lib/vat.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { assertOpen } from '../money/periods.ts';
import { listPage, paginationQuery } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { usableAccount } from './account-queries.ts';
import { answerExistingByRef, assertCustomer, assertRefFree, checkMetadata, EXISTING_BY_REF, refTaken } from './money-fields.ts';
import { windowBound } from '../date-fields.ts';
import { firstPaymentAt, hasLiveInvoice, productExists, serializeSale, updateSaleColumns } from './sale-queries.ts';
import { lineItem, saleCreate, salePayment, saleRefund, saleSchema, saleUpdate } from './sale-schemas.ts';

const TAG = 'Sales';

/** A line's rate as lib/vat.ts reads it: exempt, none (no rate given), or the percent. */
function vatRateOfLine(line: z.infer<typeof lineItem>): VatRate {
  if (line.vat_exempt) return 'exempt';
  if (line.vat_rate === undefined || line.vat_rate === null) return 'none';
  return String(line.vat_rate) as VatRate;
}

async function accountFor(db: Queryable, companyId: string, zone: string, sale: SaleRow, accountId: string) {
  const account = await usableAccount(db, companyId, zone, accountId);
  if (account.currency !== sale.currency) throw validationFailed({ account_id: [`la cuenta es en ${account.currency} y la venta en ${sale.currency}`] });
  return account;
}

const idParam = { id: 'id' } as const;
const listQuery = paginationQuery.extend({
  customer_id: objectIdField.optional(),
  status: z.enum(SALE_STATUSES).optional(),
  from: windowBound.optional().describe('Ocurridas desde este instante; un día YYYY-MM-DD es su medianoche en la zona de la empresa'),
  to: windowBound.optional().describe('Ocurridas antes de este instante; un día YYYY-MM-DD se incluye entero (zona de la empresa)'),
});

const TAX_RULES =
  'Cada línea: cantidad (hasta tres decimales) × precio unitario, redondeado al centavo (mitad lejos de cero), menos el descuento; ' +
  'el IVA de la línea se calcula sobre eso y se redondea igual; la venta suma sus líneas. Con `prices_include_vat` el importe de la línea es el total y ' +
  'el subtotal es total × 100 / (100 + tasa), redondeado igual. Ejemplo: 3 × 333 al 16 % = 999 + 159.84 → 160 de IVA, total 1159.';

export const saleRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/sales',
    scope: 'read-sales',
    tag: TAG,
    summary: 'Lista ventas',
    query: listQuery,
    response: saleSchema,
    list: true,
    status: 200,
    errors: ['invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) => {
      const { customer_id, status, ...rest } = query;
      const { from, to, ...page } = await windowInstants(db, companyId, rest);
      const result = await listPage<SaleRow>(db, ctx.deps.totals, {
        table: 'sales',
        columns: '*',
        companyId,
        where: (p) => [
          ...(customer_id ? [`customer_id = ${p.add(customer_id)}`] : []),
          ...(status ? [`status = ${p.add(status)}`] : []),
          ...(from ? [`occurred_at >= ${p.add(from)}::timestamptz`] : []),
          ...(to ? [`occurred_at < ${p.add(to)}::timestamptz`] : []),
        ],
        serialize: (row) => row,
      }, page);
      return { data: await Promise.all((result.data as SaleRow[]).map((row) => serializeSale(db, row))), meta: result.meta };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/sales',
    scope: 'create-sales',
    tag: TAG,
    summary: 'Registra una venta',
    description: `Los totales los calcula el servicio. ${TAX_RULES} Evento \`sale.created\`. \`metadata.external_ref\` ya usada: se devuelve esa venta con 200 y no se crea nada.`,
    body: saleCreate,
    example: { customer_id: null, currency: 'mxn', occurred_at: '2026-11-20T17:00:00Z', line_items: [{ description: 'Consultoría', quantity: 2, unit_price_cents: 150000, vat_rate: 16 }], metadata: { external_ref: 'venta-2001' } },
    response: saleSchema,
    status: 201,
    alsoStatus: EXISTING_BY_REF,
    errors: ['validation_failed', 'parameter_missing', 'invalid_metadata', 'period_locked', 'idempotency_key_reused'],
    handler: async (ctx, { data, companyId, db }) => {
      const metadata = checkMetadata(data.metadata);
      const includeVat = data.prices_include_vat ?? false;
      const amounts = saleAmounts(data.line_items.map((l) => ({ ...l, vat_rate: vatRateOfLine(l) })), includeVat);
      amounts.lines.forEach((line, i) => {
        if (line.amount_cents < 0) throw validationFailed({ [`line_items.${i}.discount_cents`]: ['el descuento pasa del importe de la línea'] });
      });
      if (amounts.total_cents > Number.MAX_SAFE_INTEGER) throw validationFailed({ line_items: ['el total pasa de 2^53 − 1 centavos'] });
      const saved = await transactionRead(db, async (client) => {
        // First, before any row lock (db/companies.ts).
        const zone = await companyZoneForWrite(client, companyId);
        const ref = { table: 'sales', companyId, value: metadata.external_ref, readScope: 'read-sales' } as const;
        const existing = await answerExistingByRef(ctx, client, ref, (id) => findSale(client, companyId, id));
        if (existing) return existing;
        await assertCustomer(client, companyId, data.customer_id);
        for (const [i, line] of data.line_items.entries()) {
          if (line.product_id && !(await productExists(client, companyId, line.product_id))) {
            throw validationFailed({ [`line_items.${i}.product_id`]: ['no existe en la empresa'] });
          }
        }
        const occurredAt = data.occurred_at ?? new Date().toISOString();
        await assertOpen(client, companyId, zone, [occurredAt]);
        return insertSale(client, companyId, zone, {
          customer_id: data.customer_id ?? null,
          currency: data.currency,
          occurred_at: occurredAt,
          prices_include_vat: includeVat,
          payment_terms: data.payment_terms ?? 'immediate',
          line_items: data.line_items.map((l, i) => ({
            description: l.description,
            product_id: l.product_id ?? null,
            quantity: l.quantity,
            unit_price_cents: l.unit_price_cents,
            vat_rate: l.vat_rate ?? null,
            vat_exempt: l.vat_exempt ?? false,
            discount_cents: l.discount_cents ?? 0,
            subtotal_cents: amounts.lines[i].subtotal_cents,
            tax_cents: amounts.lines[i].tax_cents,
            total_cents: amounts.lines[i].total_cents,
          })),
          subtotal_cents: amounts.subtotal_cents,
          tax_cents: amounts.tax_cents,
          total_cents: amounts.total_cents,
          description: data.description ?? null,
          metadata,
        }).catch(refTaken);
      }, serializeSale);
      return { data: saved };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/sales/:id',
    scope: 'read-sales',
    tag: TAG,
    summary: 'Obtiene una venta',
    params: idParam,
    response: saleSchema,
    status: 200,
    errors: ['invalid_id', 'not_found'],
    handler: async (_ctx, { params, companyId, db }) => {
      const row = await findSale(db, companyId, params.id);
      if (!row) throw new ApiError('not_found');
      return { data: await serializeSale(db, row) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/sales/:id',
    scope: 'update-sales',
    tag: TAG,
    summary: 'Actualiza una venta',
    description: 'Cliente, fecha, condiciones de pago, descripción y metadata (combinada con la guardada). Las líneas, la moneda y los montos no cambian. Una venta fechada en un mes cerrado (o una fecha nueva en uno) no cambia: 422 `period_locked`; `payment_terms` no cambia mientras la venta tenga una factura vigente (422); una `external_ref` de otra venta: 409 `duplicate_reference`.',
    params: idParam,
    body: saleUpdate,
    example: { description: 'Pedido web 2001' },
    response: saleSchema,
    status: 200,
    errors: ['invalid_id', 'not_found', 'validation_failed', 'invalid_metadata', 'duplicate_reference', 'period_locked'],
    handler: async (_ctx, { params, data, companyId, db }) => {
      const saved = await transactionRead(db, async (client) => {
        // First, before any row lock (db/companies.ts).
        const zone = await companyZoneForWrite(client, companyId);
        const sale = await findSale(client, companyId, params.id, true);
        if (!sale) throw new ApiError('not_found');
        const metadata = data.metadata === undefined ? undefined : checkMetadata(data.metadata, sale.metadata);
        if (metadata) await assertRefFree(client, 'sales', companyId, sale.id, metadata.external_ref);
        await assertCustomer(client, companyId, data.customer_id);
        // A closed month refuses every change of a sale dated in it (money.md), not only a new date.
        await assertOpen(client, companyId, zone, [sale.occurred_at, data.occurred_at]);
        // The stamped invoice says PUE or PPD, and payment complements follow it: the terms are fixed while it is live.
        if (data.payment_terms !== undefined && data.payment_terms !== sale.payment_terms) {
          if (await hasLiveInvoice(client, companyId, sale.id)) throw validationFailed({ payment_terms: ['la venta tiene una factura vigente que dice su forma de pago; cancélala antes de cambiarla'] });
        }
        if (data.occurred_at) {
          const first = await firstPaymentAt(client, companyId, sale.id);
          if (first && Date.parse(data.occurred_at) > first.getTime()) throw validationFailed({ occurred_at: ['no puede ser posterior a su primer pago'] });
        }
        const changes = Object.entries({ ...data, metadata: metadata === undefined ? undefined : JSON.stringify(metadata) }).filter(([, v]) => v !== undefined);
        const updated = await updateSaleColumns(client, companyId, sale.id, changes);
        if (!updated) return sale; // nothing changed: nothing written, updated_at stays
        // Its lines move to the new day in one post (ledger.ts).
        if (data.occurred_at) await post(client, companyId, [...undo(saleEntries(sale, zone)), ...saleEntries(updated, zone)]);
        return updated;
      }, serializeSale);
      return { data: saved };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/sales/:id/payments',
    scope: 'update-sales',
    tag: TAG,
    summary: 'Registra un pago de la venta',
    description:
      'Crea un ingreso pagado ligado a la venta (`income.created` e `income.paid`) en una cuenta de la misma moneda. El pago que la liquida envía `sale.paid`, una sola vez. ' +
      'Pagar más de lo que se debe es 422. Una venta a plazos con tres pagos produce tres `income.paid` y un `sale.paid`.',
    params: idParam,
    body: salePayment,
    example: { account_id: '665f1c2a9b1e8a0012345678', amount_cents: 348000, paid_at: '2026-11-21T17:00:00Z' },
    response: saleSchema,
    status: 201,
    errors: ['invalid_id', 'not_found', 'validation_failed', 'period_locked', 'idempotency_key_reused'],
    handler: async (ctx, { params, data, companyId, db }) => {
      const saved = await transactionRead(db, async (client) => {
        // First, before any row lock (db/companies.ts).
        const zone = await companyZoneForWrite(client, companyId);
        const sale = await findSale(client, companyId, params.id, true);
        if (!sale) throw new ApiError('not_found');
        const owed = Number(sale.total_cents) - Number(sale.paid_cents);
        if (data.amount_cents > owed) throw validationFailed({ amount_cents: [owed === 0 ? 'la venta ya está pagada' : `excede lo que se debe (${owed})`] });
        const account = await accountFor(client, companyId, zone, sale, data.account_id);
        const paidAt = data.paid_at ?? new Date().toISOString();
        if (Date.parse(paidAt) < new Date(sale.occurred_at).getTime()) throw validationFailed({ paid_at: ['no puede ser anterior a la venta'] });
        await assertOpen(client, companyId, zone, [paidAt]);
        return addSalePayment(client, ctx.deps.jobs, zone, sale, { account, amount_cents: data.amount_cents, paid_at: paidAt, payment_form: data.payment_form });
      }, serializeSale);
      return { data: saved };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/sales/:id/refunds',
    scope: 'update-sales',
    tag: TAG,
    summary: 'Registra una devolución',
    description: 'Sale dinero de una cuenta de la misma moneda; hasta lo pagado menos lo ya devuelto (422 si pasa), con `refunded_at` no anterior al primer pago de la venta y sin devolver a una fecha más de lo pagado hasta ella (422). Evento `sale.refunded`.',
    params: idParam,
    body: saleRefund,
    example: { account_id: '665f1c2a9b1e8a0012345678', amount_cents: 50000, reason: 'Producto defectuoso' },
    response: saleSchema,
    status: 201,
    errors: ['invalid_id', 'not_found', 'validation_failed', 'period_locked', 'idempotency_key_reused'],
    handler: async (ctx, { params, data, companyId, db }) => {
      const saved = await transactionRead(db, async (client) => {
        // First, before any row lock (db/companies.ts).
        const zone = await companyZoneForWrite(client, companyId);
        const sale = await findSale(client, companyId, params.id, true);
        if (!sale) throw new ApiError('not_found');
        const refundable = Number(sale.paid_cents) - Number(sale.refunded_cents);
        if (data.amount_cents > refundable) throw validationFailed({ amount_cents: [`se puede devolver hasta ${refundable}`] });
        const account = await accountFor(client, companyId, zone, sale, data.account_id);
        const refundedAt = data.refunded_at ?? new Date().toISOString();
        // Money goes back after it came in: not before the sale's first payment (so never before the sale),
        // and never more than was paid by the refund's date (nor by a later refund's, with this one added).
        const first = await firstPaymentAt(client, companyId, sale.id);
        if (first && Date.parse(refundedAt) < first.getTime()) throw validationFailed({ refunded_at: [`no puede ser anterior al primer pago de la venta (${first.toISOString()})`] });
        const uncovered = await refundUncoveredAt(client, companyId, sale.id, { refund: { amount_cents: data.amount_cents, at: refundedAt } });
        if (uncovered) {
          throw validationFailed({ refunded_at: [`al ${uncovered.toISOString()} lo devuelto superaría lo pagado hasta entonces: fecha la devolución después del pago que la cubre`] });
        }
        await assertOpen(client, companyId, zone, [refundedAt]);
        return addRefund(client, zone, sale, { account_id: account.id, amount_cents: data.amount_cents, reason: data.reason ?? null, refunded_at: refundedAt });
      }, serializeSale);
      return { data: saved };
    },
  }),
];
