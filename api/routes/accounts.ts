// Accounts at /accounts (scopes `*-accounts`): where money sits. One currency
// each (it never changes), an opening balance on an opening date, archived
// instead of deleted once money moved through it (409 account_in_use).
import { z } from 'zod';
import { transaction } from '../../db/pool.ts';
import { companyZone, companyZoneForWrite } from '../../db/companies.ts';
import { openingEntries, post, undo } from '../../db/money/ledger.ts';
import { assertOpenDates } from '../money/periods.ts';
import { ApiError } from '../errors.ts';
import { listMetaSchema } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { accountInUse, deleteAccount, findAccount, insertAccount, listAccounts, serializeAccount, today, updateAccount } from './account-queries.ts';
import { accountCreate, accountListQuery, accountSchema, accountUpdate } from './account-schemas.ts';
import { centsTotal } from './money-fields.ts';

const TAG = 'Accounts';
const idParam = { id: 'id' } as const;

export const accountRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/accounts',
    scope: 'read-accounts',
    tag: TAG,
    summary: 'Lista cuentas',
    description: '`meta.totals` suma los saldos por moneda de todas las cuentas que eligen los filtros (todas las páginas): `{"mxn": {"balance_cents", "accounts"}}`.',
    query: accountListQuery,
    response: accountSchema,
    list: true,
    meta: listMetaSchema.extend({ totals: z.record(z.string(), z.object({ balance_cents: centsTotal, accounts: z.number().int() })) }),
    status: 200,
    errors: ['invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) => {
      const { kind, currency: cur, archived, ...page } = query;
      return listAccounts(db, ctx.deps.totals, companyId, await companyZone(db, companyId), { kind, currency: cur, archived }, page);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/accounts',
    scope: 'create-accounts',
    tag: TAG,
    summary: 'Crea una cuenta',
    body: accountCreate,
    example: { name: 'BBVA empresa', kind: 'bank', currency: 'mxn', opening_balance_cents: 1500000, opening_on: '2026-01-01' },
    response: accountSchema,
    status: 201,
    errors: ['validation_failed', 'parameter_missing', 'period_locked', 'idempotency_key_reused'],
    handler: async (_ctx, { data, companyId, db }) => {
      const row = await transaction(db, async (client) => {
        // First, before any row lock (db/companies.ts).
        const zone = await companyZoneForWrite(client, companyId);
        const account = { ...data, opening_balance_cents: data.opening_balance_cents ?? 0, opening_on: data.opening_on ?? today(zone) };
        if (account.opening_balance_cents !== 0) await assertOpenDates(client, companyId, [account.opening_on]);
        const id = await insertAccount(client, companyId, account);
        await post(client, companyId, openingEntries({ id, ...account }));
        return (await findAccount(client, companyId, id, zone))!;
      });
      return { data: serializeAccount(row) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/accounts/:id',
    scope: 'read-accounts',
    tag: TAG,
    summary: 'Obtiene una cuenta',
    params: idParam,
    response: accountSchema,
    status: 200,
    errors: ['invalid_id', 'not_found'],
    handler: async (_ctx, { params, companyId, db }) => {
      const row = await findAccount(db, companyId, params.id, await companyZone(db, companyId));
      if (!row) throw new ApiError('not_found');
      return { data: serializeAccount(row) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/accounts/:id',
    scope: 'update-accounts',
    tag: TAG,
    summary: 'Actualiza una cuenta',
    description: 'La moneda no cambia. Cambiar el saldo inicial o su fecha respeta los meses cerrados (422 period_locked).',
    params: idParam,
    body: accountUpdate,
    example: { name: 'BBVA operación', archived: false },
    response: accountSchema,
    status: 200,
    errors: ['invalid_id', 'not_found', 'validation_failed', 'period_locked'],
    handler: async (_ctx, { params, data, companyId, db }) => {
      const row = await transaction(db, async (client) => {
        // First, before any row lock (db/companies.ts).
        const zone = await companyZoneForWrite(client, companyId);
        const before = await findAccount(client, companyId, params.id, zone, true);
        if (!before) throw new ApiError('not_found');
        const openingChanges = (data.opening_balance_cents !== undefined && data.opening_balance_cents !== Number(before.opening_balance_cents)) || (data.opening_on !== undefined && data.opening_on !== before.opening_on);
        if (openingChanges) {
          await assertOpenDates(client, companyId, [before.opening_on, data.opening_on ?? before.opening_on]);
        }
        await updateAccount(client, companyId, params.id, data);
        const after = (await findAccount(client, companyId, params.id, zone))!;
        if (!openingChanges) return after;
        // The opening moves in one post (ledger.ts).
        await post(client, companyId, [...undo(openingEntries(before)), ...openingEntries(after)]);
        // Read again: balance_cents comes from the ledger, which has the new opening only now.
        return (await findAccount(client, companyId, params.id, zone))!;
      });
      return { data: serializeAccount(row) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/accounts/:id',
    scope: 'delete-accounts',
    tag: TAG,
    summary: 'Elimina una cuenta sin movimientos',
    description: 'Una cuenta por la que ya pasó dinero (ingresos, gastos, pagos, devoluciones o transacciones recurrentes) no se elimina: 409 `account_in_use`; archívala con `archived: true`.',
    params: idParam,
    status: 204,
    errors: ['invalid_id', 'not_found', 'account_in_use', 'period_locked'],
    handler: async (_ctx, { params, companyId, db }) => {
      await transaction(db, async (client) => {
        // First, before any row lock (db/companies.ts).
        const zone = await companyZoneForWrite(client, companyId);
        const account = await findAccount(client, companyId, params.id, zone, true);
        if (!account) throw new ApiError('not_found');
        if (await accountInUse(client, companyId, params.id)) throw new ApiError('account_in_use');
        if (Number(account.opening_balance_cents) !== 0) await assertOpenDates(client, companyId, [account.opening_on]);
        await post(client, companyId, openingEntries(account), -1);
        await deleteAccount(client, companyId, params.id);
      });
      return undefined;
    },
  }),
];
