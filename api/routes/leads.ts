// Leads (contract: Customers and leads). Fields: name, email, phone,
// company_name, job_title (the form `maps_to` targets, fixed by DESIGN.md),
// a pipeline `status`, `source`, notes, tags and custom properties.
import { z } from 'zod';
import { CONTACT_LIMITS, contactCreatedData } from '../../db/contacts.ts';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import { customPropertiesWrite, flattenCustomProperties } from '../custom-properties.ts';
import { standardRoutes } from './standard-routes.ts';
import { optionalText } from '../validation.ts';
import { CONTACT_SEARCH, contactFields, timestamps } from './crm-fields.ts';

export const LEAD_STATUSES = ['new', 'contacted', 'qualified', 'unqualified', 'converted'] as const;

const leadFields = {
  ...contactFields,
  company_name: optionalText(CONTACT_LIMITS.company_name),
  job_title: optionalText(CONTACT_LIMITS.job_title),
  status: z.enum(LEAD_STATUSES).optional().describe('Etapa del embudo; por defecto new'),
  source: optionalText(100).describe('Origen del prospecto (por ejemplo web, referido, formulario)'),
  custom_properties: customPropertiesWrite.optional(),
};

export const leadCreate = z.strictObject(leadFields);
export const leadUpdate = z.strictObject(leadFields).partial();

export const leadSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    email: z.string().nullable(),
    phone: z.string().nullable(),
    company_name: z.string().nullable(),
    job_title: z.string().nullable(),
    status: z.enum(LEAD_STATUSES),
    source: z.string().nullable(),
    notes: z.string().nullable(),
    tags: z.array(z.string()),
    ...timestamps,
  })
  .catchall(z.unknown())
  .describe('Prospecto; las propiedades personalizadas aparecen como claves adicionales');

const RESERVED = new Set([...Object.keys(leadSchema.shape), 'custom_properties', 'object', 'company_id', 'metadata']);

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
    RESERVED,
  );
}

export const leadRoutes = standardRoutes({
  table: 'leads',
  jsonColumns: new Set(['custom_properties']),
  path: '/leads',
  scopeResource: 'leads',
  tag: 'Leads',
  singular: 'un prospecto',
  plural: 'los prospectos',
  createSchema: leadCreate,
  updateSchema: leadUpdate,
  responseSchema: leadSchema,
  example: {
    name: 'Luis Pérez',
    email: 'luis@prospecto.example',
    phone: '+52 55 1111 2222',
    company_name: 'Prospecto SA',
    job_title: 'Director de compras',
    source: 'web',
  },
  serialize: serializeLead,
  reserved: RESERVED,
  searchExpression: CONTACT_SEARCH,
  // The pipeline by stage, as MCP's list_leads takes it.
  listFilters: {
    query: { status: z.enum(LEAD_STATUSES).optional().describe(`Etapa del embudo: ${LEAD_STATUSES.join(', ')}`) },
    where: (query, p) => (query.status ? [`status = ${p.add(query.status)}`] : []),
  },
  createdEvent: {
    name: 'lead.created',
    data: (row) => contactCreatedData('leads', row),
  },
});
