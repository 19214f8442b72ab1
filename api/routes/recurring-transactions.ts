// Recurring transactions at /recurring-transactions (scopes
// `*-recurring_transactions`): an income or expense template repeated daily,
// weekly, monthly or yearly every `interval` units from `starts_on`, until
// `ends_on` or `ends_count`. The worker generates each due occurrence
// exactly once (db/money/recurring.ts, worker/jobs/recurring-transactions.ts).
// SQL of the routes: recurring-queries.ts; schemas: recurring-schemas.ts.
import { transaction } from '../../db/pool.ts';
import { recordEvent } from '../../db/events.ts';
import { RECURRING } from '../../db/queues.ts';
import { nextOccurrence, recurringEventData } from '../../db/money/recurring.ts';
import { companyZone } from '../../db/companies.ts';
import { objectId } from '../../lib/objectid.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { usableAccount } from './account-queries.ts';
import { answerExistingByRef, assertCustomer, assertRefFree, checkMetadata, EXISTING_BY_REF } from './money-fields.ts';
import { recurringCreate, recurringListQuery, recurringSchema, recurringUpdate } from './recurring-schemas.ts';
import { deleteRecurring, findRecurring, insertRecurring, listRecurring, lockRecurring, serializeRecurring, updateRecurringColumns } from './recurring-queries.ts';

const TAG = 'Recurring transactions';

/** Supplier fields belong to expenses, a customer to incomes (on create and on update); each misplaced field is named. */
function assertFieldsOfType(type: 'income' | 'expense', data: { supplier_name?: string | null; supplier_tax_id?: string | null; customer_id?: string | null }): void {
  const errors: Record<string, string[]> = {};
  if (type === 'income') for (const field of ['supplier_name', 'supplier_tax_id'] as const) if (data[field]) errors[field] = ['solo en gastos'];
  if (type === 'expense' && data.customer_id) errors.customer_id = ['solo en ingresos'];
  if (Object.keys(errors).length) throw validationFailed(errors);
}

const idParam = { id: 'id' } as const;
const RULES =
  'La ocurrencia n cae en starts_on + n × interval unidades (calculada desde starts_on, no desde la anterior): una mensual del 31 cae el último día de los meses cortos y vuelve al 31. ' +
  'Cada ocurrencia es un ingreso o gasto pagado con `recurring_id`, fechado a mediodía de su día en la zona de la empresa; se genera una sola vez aunque el worker reintente, ' +
  'haya dos workers o se ponga al día tras una caída. Una ocurrencia que cae en un mes cerrado se registra a mediodía del primer día del siguiente mes abierto. ' +
  'Eventos: recurring.created, recurring.occurrence_created (con `recurring_occurrence_on`), recurring.ended (al agotar ends_on o ends_count) y recurring.deactivated (active: false).';

export const recurringRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/recurring-transactions',
    scope: 'read-recurring_transactions',
    tag: TAG,
    summary: 'Lista transacciones recurrentes',
    query: recurringListQuery,
    response: recurringSchema,
    list: true,
    status: 200,
    errors: ['invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) => {
      const { type, active, ...page } = query;
      return listRecurring(db, ctx.deps.totals, companyId, { type, active }, page);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/recurring-transactions',
    scope: 'create-recurring_transactions',
    tag: TAG,
    summary: 'Crea una transacción recurrente',
    description: `${RULES} \`metadata.external_ref\` ya usada: se devuelve esa con 200 y no se crea nada.`,
    body: recurringCreate,
    example: { type: 'expense', account_id: '665f1c2a9b1e8a0012345678', amount_cents: 1200000, category: 'renta', frequency: 'monthly', starts_on: '2027-01-31', ends_count: 12 },
    response: recurringSchema,
    status: 201,
    alsoStatus: EXISTING_BY_REF,
    errors: ['validation_failed', 'parameter_missing', 'invalid_metadata', 'idempotency_key_reused'],
    handler: async (ctx, { data, companyId, db }) => {
      const metadata = checkMetadata(data.metadata);
      assertFieldsOfType(data.type, data);
      if (data.ends_on && data.ends_on < data.starts_on) throw validationFailed({ ends_on: ['no puede ser anterior a starts_on'] });
      const row = await transaction(db, async (client) => {
        const ref = { table: 'recurring_transactions', companyId, value: metadata.external_ref, readScope: 'read-recurring_transactions' } as const;
        const existing = await answerExistingByRef(ctx, client, ref, (id) => findRecurring(client, companyId, id));
        if (existing) return existing;
        const zone = await companyZone(client, companyId);
        const account = await usableAccount(client, companyId, zone, data.account_id);
        await assertCustomer(client, companyId, data.customer_id);
        const series = { starts_on: data.starts_on, frequency: data.frequency, interval: data.interval ?? 1, ends_on: data.ends_on ?? null, ends_count: data.ends_count ?? null };
        const next = nextOccurrence(series, 0);
        const id = objectId();
        await insertRecurring(client, {
          id,
          companyId,
          direction: data.type,
          accountId: account.id,
          amountCents: data.amount_cents,
          category: data.category ?? 'general',
          description: data.description ?? null,
          customerId: data.customer_id ?? null,
          supplierName: data.supplier_name ?? null,
          supplierTaxId: data.supplier_tax_id ?? null,
          frequency: series.frequency,
          interval: series.interval,
          startsOn: series.starts_on,
          endsOn: series.ends_on,
          endsCount: series.ends_count,
          nextOccurrenceOn: next,
          metadata,
        });
        const row = (await findRecurring(client, companyId, id))!;
        await recordEvent(client, companyId, 'recurring.created', recurringEventData(row));
        // Occurrences already due (starts_on today or earlier) are made by the worker now, not at its next round.
        await ctx.deps.jobs.send(client, RECURRING, { recurring_id: id });
        return row;
      });
      return { data: serializeRecurring(row) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/recurring-transactions/:id',
    scope: 'read-recurring_transactions',
    tag: TAG,
    summary: 'Obtiene una transacción recurrente',
    params: idParam,
    response: recurringSchema,
    status: 200,
    errors: ['invalid_id', 'not_found'],
    handler: async (_ctx, { params, companyId, db }) => {
      const row = await findRecurring(db, companyId, params.id);
      if (!row) throw new ApiError('not_found');
      return { data: serializeRecurring(row) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/recurring-transactions/:id',
    scope: 'update-recurring_transactions',
    tag: TAG,
    summary: 'Actualiza una transacción recurrente',
    description: 'Cambia las ocurrencias aún no generadas (las ya generadas no; durante una puesta al día larga, eso incluye las atrasadas que faltan). `active: false` la desactiva. Acortar `ends_on` o `ends_count` por debajo de lo ya generado la termina (recurring.ended). La periodicidad y `starts_on` no cambian: crea otra.',
    params: idParam,
    body: recurringUpdate,
    example: { amount_cents: 1300000, description: 'Renta con aumento' },
    response: recurringSchema,
    status: 200,
    errors: ['invalid_id', 'not_found', 'validation_failed', 'invalid_metadata', 'duplicate_reference'],
    handler: async (ctx, { params, data, companyId, db }) => {
      const row = await transaction(db, async (client) => {
        const r = await findRecurring(client, companyId, params.id, true);
        if (!r) throw new ApiError('not_found');
        if (data.active === true && !r.active) throw validationFailed({ active: ['una transacción terminada o desactivada no se reactiva; crea otra'] });
        // The same rules as on create: supplier fields belong to expenses, a customer to incomes.
        assertFieldsOfType(r.direction, data);
        const metadata = data.metadata === undefined ? undefined : checkMetadata(data.metadata, r.metadata);
        if (metadata) await assertRefFree(client, 'recurring_transactions', companyId, r.id, metadata.external_ref);
        await assertCustomer(client, companyId, data.customer_id);
        // As on create: the end is not before the start (shortening it below what was made still ends the series).
        if (data.ends_on && data.ends_on < String(r.starts_on)) throw validationFailed({ ends_on: ['no puede ser anterior a starts_on'] });
        const series = { ...r, ends_on: data.ends_on === undefined ? r.ends_on : data.ends_on, ends_count: data.ends_count === undefined ? r.ends_count : data.ends_count };
        const next = r.active ? nextOccurrence(series, r.occurrences_count) : null;
        const deactivating = data.active === false && r.active;
        const ending = r.active && !deactivating && next === null;
        const changes: Record<string, unknown> = { ...data, metadata: metadata === undefined ? undefined : JSON.stringify(metadata) };
        delete changes.active;
        if (r.active) Object.assign(changes, { next_occurrence_on: deactivating ? null : next, active: !deactivating && next !== null });
        if (ending) changes.ended_at = new Date();
        const entries = Object.entries(changes).filter(([, v]) => v !== undefined);
        // Nothing to change (`{}`, or `active: false` again on a series already over): answered as it is.
        if (entries.length) await updateRecurringColumns(client, companyId, r.id, entries);
        const after = (await findRecurring(client, companyId, r.id))!;
        if (deactivating) await recordEvent(client, companyId, 'recurring.deactivated', recurringEventData(after));
        if (ending) await recordEvent(client, companyId, 'recurring.ended', recurringEventData(after));
        return after;
      });
      return { data: serializeRecurring(row) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/recurring-transactions/:id',
    scope: 'delete-recurring_transactions',
    tag: TAG,
    summary: 'Elimina una transacción recurrente',
    description:
      'No genera más ocurrencias; los ingresos o gastos ya generados se quedan (con su `recurring_id`). ' +
      'Una activa envía recurring.deactivated (con `deleted: true`): deja de generar, como al desactivarla.',
    params: idParam,
    status: 204,
    errors: ['invalid_id', 'not_found'],
    handler: async (ctx, { params, companyId, db }) => {
      await transaction(db, async (client) => {
        // Locked first: a catch-up batch in progress finishes, then the series goes.
        const series = await lockRecurring(client, companyId, params.id);
        if (!series) throw new ApiError('not_found');
        await deleteRecurring(client, companyId, params.id);
        // Receivers learn that it stopped, as with active: false (an ended or switched-off one already told them).
        if (series.active) {
          await recordEvent(client, companyId, 'recurring.deactivated', recurringEventData({ ...series, active: false, next_occurrence_on: null }, { deleted: true }));
        }
      });
      return undefined;
    },
  }),
];
