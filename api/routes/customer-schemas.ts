// Customers' zod schemas (contract: Customers and leads): what a create and an update take, and what a
// read answers (serializeCustomer in customer-queries.ts is typed by customerSchema).
import { z } from 'zod';
import { customPropertiesWrite } from '../custom-properties.ts';
import { optionalText, rfc } from '../validation.ts';
import { addressRead, addressSchema, contactFields, serializeAddress, timestamps } from './crm-fields.ts';

const customerFields = {
  ...contactFields,
  legal_name: optionalText(300).describe('Razón social para facturación'),
  tax_id: rfc
    .nullable()
    .optional()
    .describe('RFC del cliente; necesario para facturar a su nombre (en minúsculas también: se guarda en mayúsculas)'),
  // Stored as it is read (every key, or null for an empty one), so a PATCH that reads back the same
  // writes nothing (`{line1: "x"}` and `{line1: "x", city: null}`, `{}` and null are one value each).
  address: addressSchema.nullable().optional().transform((address) => (address === undefined ? undefined : serializeAddress(address))),
  custom_properties: customPropertiesWrite.optional(),
};

export const customerCreate = z.strictObject(customerFields);
export const customerUpdate = z.strictObject(customerFields).partial();

export const customerSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    legal_name: z.string().nullable(),
    tax_id: z.string().nullable(),
    address: addressRead.nullable().describe('Todas las claves, null las no dadas'),
    notes: z.string().nullable(),
    tags: z.array(z.string()),
    ...timestamps,
  })
  .catchall(z.unknown())
  .describe('Cliente; las propiedades personalizadas aparecen como claves adicionales');
