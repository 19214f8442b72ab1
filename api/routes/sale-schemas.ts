// The request and response shapes of sales (api/routes/sales.ts).
import { z } from 'zod';
import { SALE_STATUSES } from '../../db/money/sales.ts';
import { cents, currency, instant, metadataInput, metadataSchema } from './money-fields.ts';
import { objectIdField, optionalText, text } from '../validation.ts';
import { PAID_FORMS, PAYMENT_FORMS } from '../../lib/cfdi/catalogs.ts';


export const lineItem = z
  .strictObject({
    description: text(1000).min(1),
    product_id: objectIdField.nullable().optional().describe('Producto del catálogo (opcional)'),
    quantity: z
      .number()
      .positive()
      .max(1_000_000)
      .refine((q) => Number.isInteger(Math.round(q * 1000)) && Math.abs(q * 1000 - Math.round(q * 1000)) < 1e-6, 'hasta tres decimales')
      // Said, not published as multipleOf 0.001: validators compute that in binary floating point and refuse 1.005.
      .describe('Cantidad: mayor que 0, hasta 1,000,000, con hasta tres decimales (1.25, 0.001); más decimales es 422'),
    unit_price_cents: z.number().int('centavos enteros').min(0).max(Number.MAX_SAFE_INTEGER),
    vat_rate: z.union([z.literal(16), z.literal(8), z.literal(0)]).nullable().optional().describe('IVA: 16, 8 o 0 (%)'),
    vat_exempt: z.boolean().optional().describe('Exento de IVA (sin vat_rate)'),
    discount_cents: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  })
  .refine((l) => !(l.vat_exempt && l.vat_rate !== undefined && l.vat_rate !== null), { message: 'una línea exenta no lleva vat_rate', path: ['vat_rate'] });

export const saleCreate = z.strictObject({
  customer_id: objectIdField.nullable().optional().describe('Cliente; sin él, la venta es al público en general'),
  currency,
  occurred_at: instant.optional().describe('Por defecto ahora'),
  prices_include_vat: z.boolean().optional().describe('Si unit_price_cents ya incluye el IVA; por defecto false'),
  payment_terms: z.enum(['immediate', 'deferred']).optional().describe('immediate (PUE) o deferred (PPD); por defecto immediate'),
  line_items: z.array(lineItem).min(1).max(200),
  description: optionalText(1000),
  metadata: metadataInput.optional(),
});
export const saleUpdate = z
  .strictObject({
    customer_id: objectIdField.nullable().optional(),
    occurred_at: instant.optional(),
    payment_terms: z.enum(['immediate', 'deferred']).optional(),
    description: optionalText(1000),
    metadata: metadataInput.optional(),
  })
  .describe('Las líneas y la moneda no cambian; registra otra venta');
export const salePayment = z.strictObject({
  account_id: objectIdField,
  amount_cents: cents,
  paid_at: instant.optional().describe('Por defecto ahora'),
  payment_form: z
    .enum(PAID_FORMS)
    .optional()
    .describe('Cómo se pagó (c_FormaPago del SAT, sin 99), lo que declara su complemento de pago (CFDI). Por defecto según la cuenta: 01 efectivo (`cash`), 04 tarjeta (`card`), 03 transferencia (`bank`, `other`)'),
});
export const saleRefund = z.strictObject({ account_id: objectIdField, amount_cents: cents, reason: optionalText(1000), refunded_at: instant.optional().describe('Por defecto ahora') });

export const lineRead = z.object({
  description: z.string(),
  product_id: z.string().nullable(),
  quantity: z.number(),
  unit_price_cents: z.number().int(),
  vat_rate: z.number().int().nullable(),
  vat_exempt: z.boolean(),
  discount_cents: z.number().int(),
  subtotal_cents: z.number().int(),
  tax_cents: z.number().int(),
  total_cents: z.number().int(),
});
export const saleSchema = z.object({
  id: z.string(),
  customer_id: z.string().nullable(),
  currency: z.string(),
  occurred_at: z.string(),
  prices_include_vat: z.boolean(),
  payment_terms: z.enum(['immediate', 'deferred']),
  line_items: z.array(lineRead),
  subtotal_cents: z.number().int(),
  tax_cents: z.number().int(),
  total_cents: z.number().int(),
  paid_cents: z.number().int(),
  refunded_cents: z.number().int(),
  amount_due_cents: z.number().int().describe('total − pagado'),
  status: z.enum(SALE_STATUSES),
  description: z.string().nullable(),
  payments: z.array(z.object({ income_id: z.string(), account_id: z.string(), amount_cents: z.number().int(), paid_at: z.string(), payment_form: z.enum(PAYMENT_FORMS).describe('c_FormaPago: el enviado, o el que toca a la cuenta') })),
  refunds: z.array(z.object({ id: z.string(), account_id: z.string(), amount_cents: z.number().int(), reason: z.string().nullable(), refunded_at: z.string() })),
  metadata: metadataSchema,
  created_at: z.string(),
  updated_at: z.string(),
});
