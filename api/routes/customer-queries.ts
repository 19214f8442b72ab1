// Customers' row and read (the SQL is db/tables.ts's, through standardRoutes): custom properties flattened
// to top-level keys, never over a field of the record (CUSTOMER_RESERVED).
import type { z } from 'zod';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import { flattenCustomProperties } from '../custom-properties.ts';
import { serializeAddress, type addressSchema } from './crm-fields.ts';
import { customerSchema } from './customer-schemas.ts';

export const CUSTOMER_RESERVED = new Set([...Object.keys(customerSchema.shape), 'custom_properties', 'object', 'company_id', 'metadata']);

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
    CUSTOMER_RESERVED,
  );
}
