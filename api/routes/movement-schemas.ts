// Incomes' and expenses' zod schemas (docs/money.md): one shape built for each direction, what a
// create, an update and a payment take, what reads answer, and the lists' filters.
import { z } from 'zod';
import type { Direction } from '../../db/money/movements.ts';
import { windowBound } from '../date-fields.ts';
import { paginationQuery, type PaginationQuery } from '../pagination.ts';
import { objectIdField, optionalText, rfc, text } from '../validation.ts';
import { cents, instant, localDay, metadataInput, metadataSchema } from './money-fields.ts';

/** The schemas of incomes (`income`) or expenses (`expense`): one shape, built for each. */
export function movementSchemas(direction: Direction) {
  const party =
    direction === 'income'
      ? { customer_id: objectIdField.nullable().optional().describe('Cliente de la empresa') }
      : {
          supplier_name: optionalText(200).describe('Proveedor'),
          supplier_tax_id: rfc.nullable().optional().describe('RFC del proveedor (en minúsculas también: se guarda en mayúsculas; XEXX010101000 para uno del extranjero)'),
        };
  const editable = {
    amount_cents: cents,
    occurred_at: instant.describe('Cuándo ocurrió; define su mes contable (zona de la empresa)'),
    category: text(100).min(1).optional().describe('Por defecto general'),
    description: optionalText(1000),
    due_on: localDay.nullable().optional().describe('Vencimiento de uno pendiente'),
    metadata: metadataInput.optional(),
    ...party,
  };
  const create = z.strictObject({
    account_id: objectIdField.describe('La cuenta; su moneda es la del movimiento'),
    ...editable,
    status: z.enum(['paid', 'pending']).optional().describe('paid (por defecto): se paga completo al crearlo; pending: a crédito'),
    paid_at: instant.optional().describe('Cuándo se pagó (solo paid); por defecto occurred_at'),
  });
  const update = z.strictObject(editable).partial();
  const read = z.object({
    id: z.string(),
    account_id: z.string(),
    amount_cents: z.number().int(),
    paid_cents: z.number().int(),
    currency: z.string(),
    occurred_at: z.string(),
    category: z.string(),
    description: z.string().nullable(),
    ...(direction === 'income' ? { customer_id: z.string().nullable(), sale_id: z.string().nullable().describe('La venta que este ingreso pagó') } : { supplier_name: z.string().nullable(), supplier_tax_id: z.string().nullable() }),
    status: z.enum(['paid', 'pending']),
    due_on: z.string().nullable(),
    paid_at: z.string().nullable().describe('Cuándo quedó pagado por completo'),
    recurring_id: z.string().nullable(),
    recurring_on: z.string().nullable().describe('El día que tocaba a la ocurrencia de una recurrente (YYYY-MM-DD; puede diferir de occurred_at si ese mes estaba cerrado); null si no viene de una'),
    payments: z.array(z.object({ id: z.string(), account_id: z.string(), amount_cents: z.number().int(), paid_at: z.string() })),
    metadata: metadataSchema,
    created_at: z.string(),
    updated_at: z.string(),
  });
  const listQuery = paginationQuery.extend({
    from: windowBound.optional().describe('Ocurridos desde este instante; un día YYYY-MM-DD es su medianoche en la zona de la empresa'),
    to: windowBound.optional().describe('Ocurridos antes de este instante; un día YYYY-MM-DD se incluye entero (zona de la empresa)'),
    account_id: objectIdField.optional(),
    status: z.enum(['paid', 'pending']).optional(),
    ...(direction === 'income'
      ? { customer_id: objectIdField.optional() }
      : {
          // The supplier search is the list's text search: `q` (alias `search`, then `supplier`), as every list's.
          q: z.string().trim().max(200).optional().describe('Búsqueda de texto en el nombre o RFC del proveedor (contiene); no distingue mayúsculas ni acentos'),
          search: z.string().trim().max(200).optional().describe('Alias de q'),
          supplier: z.string().trim().max(200).optional().describe('Alias de q (nombre o RFC del proveedor, contiene)'),
        }),
    category: z.string().max(100).optional(),
  });
  const payment = z.strictObject({
    amount_cents: cents,
    paid_at: instant.optional().describe('Por defecto ahora'),
    account_id: objectIdField.optional().describe('Por defecto la cuenta del movimiento; misma moneda'),
  });
  return { create, update, read, listQuery, payment };
}

/** An income's or an expense's read, as `read` of its direction describes it. */
export type MovementRead = z.output<ReturnType<typeof movementSchemas>['read']>;

/** The list query of either direction: incomes take `customer_id`, expenses the supplier search (`q`, `search`, `supplier`). */
export type MovementListQuery = PaginationQuery & {
  from?: string;
  to?: string;
  account_id?: string;
  status?: 'paid' | 'pending';
  category?: string;
  customer_id?: string;
  q?: string;
  search?: string;
  supplier?: string;
};
