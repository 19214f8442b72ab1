// Accounts' zod schemas (docs/money.md, Accounts): what a create and an update take, what reads answer
// (serializeAccount in account-queries.ts is typed by accountSchema), and the list's filters.
import { z } from 'zod';
import { paginationQuery, queryBoolean } from '../pagination.ts';
import { centsTotal, currency, localDay, signedCents } from './money-fields.ts';
import { text } from '../validation.ts';

export const ACCOUNT_KINDS = ['cash', 'bank', 'card', 'other'] as const;

const fields = {
  name: text(200).min(1),
  kind: z.enum(ACCOUNT_KINDS).describe('cash, bank, card u other'),
  opening_balance_cents: signedCents.optional().describe('Saldo inicial en centavos (puede ser negativo: una tarjeta con deuda); por defecto 0'),
  opening_on: localDay.optional().describe('Fecha del saldo inicial; por defecto hoy en la zona de la empresa'),
};
export const accountCreate = z.strictObject({ ...fields, currency: currency.describe('ISO 4217 en minúsculas; no cambia después') });
export const accountUpdate = z.strictObject({ ...fields, archived: z.boolean().optional().describe('Una cuenta archivada no recibe movimientos nuevos') }).partial();

export const accountSchema = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(ACCOUNT_KINDS),
  currency: z.string(),
  opening_balance_cents: z.number().int(),
  opening_on: z.string(),
  balance_cents: centsTotal.describe('Saldo inicial + ingresos cobrados − gastos pagados − devoluciones, hasta hoy (exacto hasta 2^53 − 1)'),
  archived: z.boolean(),
  created_at: z.string(),
  updated_at: z.string(),
});

export const accountListQuery = paginationQuery.extend({
  kind: z.enum(ACCOUNT_KINDS).optional(),
  currency: currency.optional(),
  archived: queryBoolean.optional().describe('true o false'),
});
