// The request and response shapes of tax invoices (api/routes/invoices.ts):
// the SAT catalogs bound every coded field (lib/cfdi/catalogs.ts).
import { z } from 'zod';
import { CANCEL_MOTIVES, INCOME_CFDI_USES, PAYMENT_FORMS, PAYMENT_METHODS, TAX_REGIMES, ZIP } from '../../lib/cfdi/catalogs.ts';
import { INVOICE_STATUSES } from '../../db/invoicing.ts';
import { lineText, objectIdField, satProductKey, satUnitKey } from '../validation.ts';

export const invoiceSchema = z.object({
  id: z.string(),
  sale_id: z.string(),
  status: z.enum(INVOICE_STATUSES),
  provider: z.enum(['development', 'facturapi']),
  warning: z.string().nullable().describe('Presente con el proveedor de desarrollo: la factura no tiene validez fiscal'),
  uuid: z.string().nullable().describe('Folio fiscal, una vez timbrada'),
  series: z.string().nullable(),
  folio: z.string().nullable(),
  stamped_at: z.string().nullable(),
  verification_url: z.string().nullable(),
  failure_reason: z.string().nullable(),
  payment_method: z.enum(PAYMENT_METHODS),
  payment_form: z.enum(PAYMENT_FORMS),
  cfdi_use: z.enum(INCOME_CFDI_USES),
  receiver: z.object({ rfc: z.string(), legal_name: z.string(), tax_regime: z.string(), zip: z.string() }),
  currency: z.string(),
  total_cents: z.number().int(),
  substitutes_id: z.string().nullable(),
  substituted_by_id: z.string().nullable(),
  cancellation: z.object({ motive: z.string(), substitute_uuid: z.string().nullable(), requested_at: z.string().nullable(), cancelled_at: z.string().nullable() }).nullable(),
  payment_complements: z.array(z.object({ id: z.string(), income_id: z.string(), amount_cents: z.number().int(), installment: z.number().int(), status: z.enum(['pending', 'valid', 'failed']), uuid: z.string().nullable(), failure_reason: z.string().nullable() })),
  created_at: z.string(),
  updated_at: z.string(),
});

export const invoiceCreate = z.strictObject({
  cfdi_use: z.enum(INCOME_CFDI_USES).optional().describe('UsoCFDI del cliente; por defecto G03 (gastos en general); al público en general, S01. CP01 (pagos) y CN01 (nómina) son de otros tipos de CFDI'),
  payment_form: z.enum(PAYMENT_FORMS).optional().describe('c_FormaPago; en PUE por defecto la forma de los pagos de la venta (la del mayor importe), o 03 (transferencia) si no tiene pagos; en PPD siempre 99'),
  // Serie is [^|]{1,25} in the CFDI 4.0 schema (which collapses white space): signs such as F-A, on one
  // line, trimmed, something visible, no pipe.
  series: lineText(25)
    .min(1)
    .refine((v) => !v.includes('|'), 'sin | (esquema del CFDI 4.0)')
    .optional(),
  receiver: z
    .strictObject({
      tax_regime: z.string().refine((r) => !!TAX_REGIMES[r], 'fuera de c_RegimenFiscal').optional(),
      zip: z.string().regex(ZIP, 'código postal de 5 dígitos').optional(),
    })
    .optional()
    .describe('Datos fiscales del cliente que no guarda su ficha (régimen; código postal si su dirección no lo tiene)'),
  line_keys: z
    .array(z.strictObject({ product_key: satProductKey.optional(), unit_key: satUnitKey.optional() }))
    .max(200)
    .optional()
    .describe('Claves SAT por línea de la venta, en orden; por omisión las del producto (propiedades sat_product_key, sat_unit_key) o 01010101 y H87'),
  substitutes_id: objectIdField.optional().describe('Factura vigente de esta venta que la nueva sustituye (relación 04; la anterior se cancela con motivo 01 al timbrarse la nueva)'),
});

export type InvoiceCreate = z.infer<typeof invoiceCreate>;

export const invoiceCancel = z.strictObject({
  motive: z.enum(CANCEL_MOTIVES).describe('01 con sustituta (usa substitutes_id al facturar), 02 errores sin relación, 03 no se llevó a cabo, 04 nominativa en factura global'),
  // A UUID is case-insensitive; the SAT's folio fiscal is written in capitals, as stamped invoices hold it.
  substitute_uuid: z.string().trim().toUpperCase().optional().describe('Solo motivo 01: UUID de la factura vigente que la sustituye (en minúsculas también)'),
});
