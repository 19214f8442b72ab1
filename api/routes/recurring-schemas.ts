// Recurring transactions' zod schemas (docs/money.md, Recurring transactions): what a create and an
// update take (the template of every occurrence), what reads answer (serializeRecurring in
// recurring-queries.ts is typed by recurringSchema), and the list's filters.
import { z } from 'zod';
import { FREQUENCIES } from '../../db/money/recurring.ts';
import { paginationQuery, queryBoolean } from '../pagination.ts';
import { objectIdField, optionalText, rfc, text } from '../validation.ts';
import { cents, localDay, metadataInput, metadataSchema } from './money-fields.ts';

const template = {
  amount_cents: cents,
  category: text(100).min(1).optional().describe('Por defecto general'),
  description: optionalText(1000),
  customer_id: objectIdField.nullable().optional().describe('Solo ingresos'),
  supplier_name: optionalText(200).describe('Solo gastos'),
  supplier_tax_id: rfc.nullable().optional().describe('Solo gastos: RFC del proveedor (se guarda en mayúsculas)'),
  ends_on: localDay.nullable().optional().describe('Última fecha posible (incluida)'),
  ends_count: z.number().int().min(1).max(100_000).nullable().optional().describe('Cuántas ocurrencias en total'),
  metadata: metadataInput.optional(),
};
export const recurringCreate = z.strictObject({
  type: z.enum(['income', 'expense']).describe('Genera ingresos o gastos'),
  account_id: objectIdField,
  frequency: z.enum(FREQUENCIES),
  interval: z.number().int().min(1).max(366).optional().describe('Cada cuántas unidades de frequency; por defecto 1'),
  starts_on: localDay.describe('Primera ocurrencia'),
  ...template,
});
export const recurringUpdate = z.strictObject({ ...template, active: z.boolean().optional().describe('false la desactiva (recurring.deactivated); no se reactiva una terminada') }).partial();

export const recurringSchema = z.object({
  id: z.string(),
  type: z.enum(['income', 'expense']),
  account_id: z.string(),
  amount_cents: z.number().int(),
  currency: z.string(),
  category: z.string(),
  description: z.string().nullable(),
  customer_id: z.string().nullable(),
  supplier_name: z.string().nullable(),
  supplier_tax_id: z.string().nullable(),
  frequency: z.enum(FREQUENCIES),
  interval: z.number().int(),
  starts_on: z.string(),
  ends_on: z.string().nullable(),
  ends_count: z.number().int().nullable(),
  active: z.boolean(),
  ended_at: z.string().nullable(),
  next_occurrence_on: z.string().nullable(),
  occurrences_count: z.number().int(),
  metadata: metadataSchema,
  created_at: z.string(),
  updated_at: z.string(),
});

export const recurringListQuery = paginationQuery.extend({ type: z.enum(['income', 'expense']).optional(), active: queryBoolean.optional() });
