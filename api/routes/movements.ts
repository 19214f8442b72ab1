// Incomes at /incomes (scopes `*-incomes`) and expenses at /expenses
// (`*-expenses`): one shape, built twice. An income or expense is `paid` (one
// payment of the whole amount into / out of its account when created) or
// `pending` (on credit, with `due_on`), then paid in one or more payments
// (`POST /incomes/:id/payments`, partial ones included). Deleting reverts
// every effect, the sale it paid included. Money dates respect closed months
// (422 period_locked). Writes of the effects: db/money/movements.ts; reads:
// movement-queries.ts; schemas: movement-schemas.ts.
import { transaction, transactionRead } from '../../db/pool.ts';
import { companyZoneForWrite, windowInstants } from '../../db/companies.ts';
import { addPayment, changeMovement, findMovement, insertMovement, paymentsOf, removeMovement, type Direction } from '../../db/money/movements.ts';
import { issuedComplementOf } from '../../db/invoicing.ts';
import { findSale, revertSalePayment, SaleRefundedError } from '../../db/money/sales.ts';
import { localDate } from '../../lib/local-dates.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { assertOpen } from '../money/periods.ts';
import { searchTerm } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { usableAccount } from './account-queries.ts';
import { answerExistingByRef, assertCustomer, assertRefFree, checkMetadata, EXISTING_BY_REF, refTaken } from './money-fields.ts';
import { listMovements, withPayments } from './movement-queries.ts';
import { movementSchemas, type MovementListQuery } from './movement-schemas.ts';


/** A due date is the day of the record or later, in the company's zone (an invoice is not due before it is issued). */
function assertDueAfter(dueOn: string | null | undefined, occurredAt: string | Date, zone: string): void {
  if (!dueOn) return;
  const day = localDate(new Date(occurredAt).getTime(), zone);
  if (dueOn < day) throw validationFailed({ due_on: [`no puede ser anterior al día de occurred_at (${day})`] });
}

export function movementRoutes(direction: Direction): RouteDef[] {
  const plural = direction === 'income' ? 'incomes' : 'expenses';
  const path = `/${plural}`;
  const TAG = direction === 'income' ? 'Incomes' : 'Expenses';
  const noun = direction === 'income' ? 'un ingreso' : 'un gasto';
  const { create, update, read, listQuery, payment } = movementSchemas(direction);
  const idParam = { id: 'id' } as const;
  const events = direction === 'income' ? ' Eventos: `income.created` al crearlo, `income.paid` por cada pago (también el del alta de uno pagado), `income.deleted` al eliminarlo.' : '';

  return [
    defineRoute({
      method: 'GET',
      path,
      scope: `read-${plural}`,
      tag: TAG,
      summary: `Lista ${plural === 'incomes' ? 'ingresos' : 'gastos'}`,
      description: '`from`/`to` filtran por `occurred_at` ([from, to)); un día YYYY-MM-DD se lee en la zona de la empresa: `from` desde su medianoche, `to` incluido entero.',
      query: listQuery,
      response: read,
      list: true,
      status: 200,
      errors: ['invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
      handler: async (ctx, { query, companyId, db }) => {
        // One type for both directions' queries (incomes filter by customer, expenses search suppliers).
        const { from, to, account_id, status, category, customer_id, q, search, supplier, ...page } = query as MovementListQuery;
        const window = await windowInstants(db, companyId, { from, to });
        const term = searchTerm({ q, search }) || supplier || undefined;
        return listMovements(db, ctx.deps.totals, companyId, direction, { ...window, account_id, status, category, customer_id, supplier: term }, page);
      },
    }),
    defineRoute({
      method: 'POST',
      path,
      scope: `create-${plural}`,
      tag: TAG,
      summary: `Registra ${noun}`,
      description:
        `La moneda es la de la cuenta. \`metadata.external_ref\` ya usada por otro registro: se devuelve ese registro con 200 y no se crea nada.${events}`,
      body: create,
      example: { account_id: '665f1c2a9b1e8a0012345678', amount_cents: 125000, occurred_at: '2026-11-20T17:00:00Z', category: direction === 'income' ? 'servicios' : 'renta', description: direction === 'income' ? 'Asesoría noviembre' : 'Renta de oficina', metadata: { external_ref: 'pedido-1001' } },
      response: read,
      status: 201,
      alsoStatus: EXISTING_BY_REF,
      errors: ['validation_failed', 'parameter_missing', 'invalid_metadata', 'period_locked', 'idempotency_key_reused'],
      handler: async (ctx, { data, companyId, db }) => {
        const metadata = checkMetadata(data.metadata);
        const saved = await transactionRead(db, async (client) => {
          // First, before any row lock (db/companies.ts).
          const zone = await companyZoneForWrite(client, companyId);
          const ref = { table: 'movements', companyId, value: metadata.external_ref, readScope: `read-${plural}`, direction } as const;
          const existing = await answerExistingByRef(ctx, client, ref, (id) => findMovement(client, companyId, direction, id));
          if (existing) return existing;
          const account = await usableAccount(client, companyId, zone, data.account_id);
          await assertCustomer(client, companyId, (data as { customer_id?: string | null }).customer_id);
          const status = data.status ?? 'paid';
          if (status === 'pending' && data.paid_at) throw validationFailed({ paid_at: ['solo para uno pagado'] });
          // Not dropped in silence: a due date belongs to one on credit.
          if (status === 'paid' && data.due_on) throw validationFailed({ due_on: ['solo para uno pendiente (status pending)'] });
          if (data.paid_at && Date.parse(data.paid_at) < Date.parse(data.occurred_at)) throw validationFailed({ paid_at: ['no puede ser anterior a occurred_at'] });
          assertDueAfter(data.due_on, data.occurred_at, zone);
          await assertOpen(client, companyId, zone, [data.occurred_at, status === 'paid' ? (data.paid_at ?? data.occurred_at) : null]);
          return insertMovement(client, companyId, zone, { ...(data as any), direction, account, status, metadata }).catch(refTaken);
        }, withPayments);
        return { data: saved };
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${path}/:id`,
      scope: `read-${plural}`,
      tag: TAG,
      summary: `Obtiene ${noun}`,
      params: idParam,
      response: read,
      status: 200,
      errors: ['invalid_id', 'not_found'],
      handler: async (_ctx, { params, companyId, db }) => {
        const row = await findMovement(db, companyId, direction, params.id);
        if (!row) throw new ApiError('not_found');
        return { data: await withPayments(db, row) };
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: `${path}/:id`,
      scope: `update-${plural}`,
      tag: TAG,
      summary: `Actualiza ${noun}`,
      description:
        'La cuenta no cambia. `amount_cents` no baja de lo ya pagado. `metadata` se combina con la guardada (null o "" borra una clave); una `external_ref` de otro registro: 409 `duplicate_reference`. Si la fecha actual o la nueva caen en un mes cerrado: 422 `period_locked`.',
      params: idParam,
      body: update,
      example: { description: 'Corrección', metadata: { centro_costos: 'ventas' } },
      response: read,
      status: 200,
      errors: ['invalid_id', 'not_found', 'validation_failed', 'invalid_metadata', 'duplicate_reference', 'period_locked'],
      handler: async (_ctx, { params, data, companyId, db }) => {
        const saved = await transactionRead(db, async (client) => {
          // First, before any row lock (db/companies.ts).
          const zone = await companyZoneForWrite(client, companyId);
          const m = await findMovement(client, companyId, direction, params.id, true);
          if (!m) throw new ApiError('not_found');
          const metadata = data.metadata === undefined ? undefined : checkMetadata(data.metadata, m.metadata);
          if (metadata) await assertRefFree(client, 'movements', companyId, m.id, metadata.external_ref, { direction });
          await assertCustomer(client, companyId, (data as { customer_id?: string | null }).customer_id);
          if (data.amount_cents !== undefined && data.amount_cents < Number(m.paid_cents)) throw validationFailed({ amount_cents: [`no puede ser menor que lo pagado (${m.paid_cents})`] });
          // As on create: a due date belongs to one on credit; on one fully paid it is refused, not stored.
          if (data.due_on && m.status === 'paid' && (data.amount_cents ?? Number(m.amount_cents)) <= Number(m.paid_cents)) throw validationFailed({ due_on: ['solo para uno pendiente; este ya está pagado'] });
          // A sale's payment keeps its amount and date; the values as stored, sent back, change nothing.
          const changed = {
            amount_cents: data.amount_cents !== undefined && data.amount_cents !== Number(m.amount_cents),
            occurred_at: data.occurred_at !== undefined && Date.parse(data.occurred_at) !== new Date(m.occurred_at).getTime(),
          };
          if (m.sale_id && (changed.amount_cents || changed.occurred_at)) {
            // Named under the field that would change (both when both would).
            const why = 'el pago de una venta no cambia de monto ni fecha; elimínalo y registra otro (si ya tiene complemento de pago emitido, registra una devolución de la venta)';
            throw validationFailed(Object.fromEntries((['amount_cents', 'occurred_at'] as const).filter((field) => changed[field]).map((field) => [field, [why]])));
          }
          if (data.occurred_at) {
            const firstPayment = (await paymentsOf(client, m.id))[0];
            if (firstPayment && Date.parse(data.occurred_at) > new Date(firstPayment.paid_at).getTime()) throw validationFailed({ occurred_at: ['no puede ser posterior a su primer pago'] });
          }
          if (data.due_on !== undefined || data.occurred_at !== undefined) assertDueAfter(data.due_on === undefined ? m.due_on : data.due_on, data.occurred_at ?? m.occurred_at, zone);
          await assertOpen(client, companyId, zone, [m.occurred_at, data.occurred_at]);
          return changeMovement(client, zone, m, { ...data, metadata }).catch(refTaken);
        }, withPayments);
        return { data: saved };
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${path}/:id`,
      scope: `delete-${plural}`,
      tag: TAG,
      summary: `Elimina ${noun}`,
      description: `Revierte sus efectos: saldos de las cuentas, reportes${direction === 'income' ? ' y, si pagó una venta, lo pagado de esa venta' : ''}. Si su fecha o la de alguno de sus pagos cae en un mes cerrado: 422 \`period_locked\`.${direction === 'income' ? ' El pago de una venta con complemento de pago (CFDI) emitido o en timbrado no se elimina, ni el que cuenta en el saldo anterior del complemento emitido de un pago posterior: 409 \`payment_complement_issued\`; registra una devolución de la venta.' : ''}${events}`,
      params: idParam,
      status: 204,
      errors: ['invalid_id', 'not_found', 'period_locked', 'validation_failed', ...(direction === 'income' ? (['payment_complement_issued'] as const) : [])],
      handler: async (ctx, { params, companyId, db }) => {
        await transaction(db, async (client) => {
          // First, before any row lock (db/companies.ts).
          const zone = await companyZoneForWrite(client, companyId);
          const m = await findMovement(client, companyId, direction, params.id, true);
          if (!m) throw new ApiError('not_found');
          const payments = await paymentsOf(client, m.id);
          await assertOpen(client, companyId, zone, [m.occurred_at, ...payments.map((p) => p.paid_at)]);
          if (m.sale_id) {
            // A payment whose CFDI payment complement is stamped (or being stamped) stays: the tax
            // authority holds a document for it, and deleting the payment would leave the complements
            // adding up to more than the invoice once it is paid again. A refund undoes it instead.
            // The sale first: an invoice stamped meanwhile queues the complements its payments are owed
            // under the sale's lock (db/invoicing.ts), so the check below sees any it queued for this one.
            const sale = await findSale(client, companyId, m.sale_id, true);
            const issued = await issuedComplementOf(client, m.id);
            if (issued === 'own') throw new ApiError('payment_complement_issued');
            if (issued === 'later') {
              throw new ApiError('payment_complement_issued', 'El complemento de pago (CFDI) emitido de un pago posterior cuenta este pago en su saldo anterior; no se elimina: registra una devolución de la venta.');
            }
            if (sale) await revertSalePayment(client, sale, m.id, Number(m.paid_cents)).catch((error) => {
              if (error instanceof SaleRefundedError) throw validationFailed({ id: [error.message] });
              throw error;
            });
          }
          await removeMovement(client, zone, m);
        });
        return undefined;
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${path}/:id/payments`,
      scope: `update-${plural}`,
      tag: TAG,
      summary: `Registra un pago de ${noun} pendiente`,
      description: `Parcial o por el resto: más de lo que falta es 422; \`paid_at\` no antes de \`occurred_at\`. Queda \`paid\` cuando lo pagado llega al monto.${direction === 'income' ? ' Cada pago envía `income.paid`.' : ''}`,
      params: idParam,
      body: payment,
      example: { amount_cents: 50000, paid_at: '2026-11-25T18:00:00Z' },
      response: read,
      status: 201,
      errors: ['invalid_id', 'not_found', 'validation_failed', 'period_locked', 'idempotency_key_reused'],
      handler: async (ctx, { params, data, companyId, db }) => {
        const saved = await transactionRead(db, async (client) => {
          // First, before any row lock (db/companies.ts).
          const zone = await companyZoneForWrite(client, companyId);
          const m = await findMovement(client, companyId, direction, params.id, true);
          if (!m) throw new ApiError('not_found');
          if (m.sale_id) throw validationFailed({ amount_cents: ['es el pago de una venta; registra pagos en POST /sales/:id/payments'] });
          const left = Number(m.amount_cents) - Number(m.paid_cents);
          if (data.amount_cents > left) throw validationFailed({ amount_cents: [left === 0 ? 'ya está pagado' : `falta pagar ${left}`] });
          const account = await usableAccount(client, companyId, zone, data.account_id ?? m.account_id);
          if (account.currency !== m.currency) throw validationFailed({ account_id: [`la cuenta es en ${account.currency} y el movimiento en ${m.currency}`] });
          const paidAt = data.paid_at ?? new Date().toISOString();
          if (Date.parse(paidAt) < new Date(m.occurred_at).getTime()) throw validationFailed({ paid_at: ['no puede ser anterior a occurred_at'] });
          await assertOpen(client, companyId, zone, [paidAt]);
          return addPayment(client, zone, m, { account_id: account.id, amount_cents: data.amount_cents, paid_at: paidAt });
        }, withPayments);
        return { data: saved };
      },
    }),
  ];
}

export const incomeRoutes = movementRoutes('income');
export const expenseRoutes = movementRoutes('expense');
