// Customers (contract: Customers and leads). Fields: name, email, phone (fixed
// by DESIGN.md), legal_name and tax_id (for invoicing: the RFC), address,
// notes, tags, and custom properties flattened on read.
import { z } from 'zod';
import { contactCreatedData } from '../../db/contacts.ts';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import { customPropertiesWrite, flattenCustomProperties } from '../custom-properties.ts';
import { standardRoutes } from './standard-routes.ts';
import { optionalText, rfc } from '../validation.ts';
import { addressRead, addressSchema, CONTACT_SEARCH, contactFields, serializeAddress, timestamps } from './crm-fields.ts';

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

const RESERVED = new Set([...Object.keys(customerSchema.shape), 'custom_properties', 'object', 'company_id', 'metadata']);

export type CustomerRow = {
  id: string;
  company_id: string;
  name: string;
  email: string | null;
  phone: string | null;
  legal_name: string | null;
  tax_id: string | null;
  address: z.infer<typeof addressSchema> | null;
  notes: string | null;
  tags: string[];
  custom_properties: Record<string, unknown>;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export function serializeCustomer(row: CustomerRow): z.output<typeof customerSchema> {
  return flattenCustomProperties(
    {
      id: row.id,
      name: row.name,
      email: row.email,
      phone: row.phone,
      legal_name: row.legal_name,
      tax_id: row.tax_id,
      address: serializeAddress(row.address),
      notes: row.notes,
      tags: row.tags,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
    },
    row.custom_properties,
    RESERVED,
  );
}

export const customerRoutes = standardRoutes({
  table: 'customers',
  jsonColumns: new Set(['address', 'custom_properties']),
  path: '/customers',
  scopeResource: 'customers',
  tag: 'Customers',
  singular: 'un cliente',
  plural: 'los clientes',
  createSchema: customerCreate,
  updateSchema: customerUpdate,
  responseSchema: customerSchema,
  example: {
    name: 'Comercial del Norte',
    email: 'compras@norte.example',
    phone: '+52 81 5555 0000',
    tax_id: 'CNO010101AB1',
    address: { line1: 'Av. Constitución 100', city: 'Monterrey', state: 'NL', postal_code: '64000', country: 'MX' },
    tags: ['mayoreo'],
    custom_properties: [{ key: 'nivel', value: 'oro' }],
  },
  serialize: serializeCustomer,
  reserved: RESERVED,
  searchExpression: CONTACT_SEARCH,
  createdEvent: {
    name: 'customer.created',
    data: (row) => contactCreatedData('customers', row),
  },
});
