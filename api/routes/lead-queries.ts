// Leads' row and read (the SQL is db/tables.ts's, through standardRoutes): custom properties flattened
// to top-level keys, never over a field of the record (LEAD_RESERVED).
import type { z } from 'zod';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import { flattenCustomProperties } from '../custom-properties.ts';
import { LEAD_STATUSES, leadSchema } from './lead-schemas.ts';

export const LEAD_RESERVED = new Set([...Object.keys(leadSchema.shape), 'custom_properties', 'object', 'company_id', 'metadata']);

export type LeadRow = {
  id: string;
  company_id: string;
  name: string;
  email: string | null;
  phone: string | null;
  company_name: string | null;
  job_title: string | null;
  status: (typeof LEAD_STATUSES)[number];
  source: string | null;
  notes: string | null;
  tags: string[];
  custom_properties: Record<string, unknown>;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export function serializeLead(row: LeadRow): z.output<typeof leadSchema> {
  return flattenCustomProperties(
    {
      id: row.id,
      name: row.name,
      email: row.email,
      phone: row.phone,
      company_name: row.company_name,
      job_title: row.job_title,
      status: row.status,
      source: row.source,
      notes: row.notes,
      tags: row.tags,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
    },
    row.custom_properties,
    LEAD_RESERVED,
  );
}
