// Leads (contract: Customers and leads). Fields: name, email, phone,
// company_name, job_title (the form `maps_to` targets, fixed by DESIGN.md),
// a pipeline `status`, `source`, notes, tags and custom properties.
import { z } from 'zod';
import { contactCreatedData } from '../../db/contacts.ts';
import { standardRoutes } from './standard-routes.ts';
import { CONTACT_SEARCH } from './crm-fields.ts';
import { LEAD_RESERVED, serializeLead } from './lead-queries.ts';
import { LEAD_STATUSES, leadCreate, leadSchema, leadUpdate } from './lead-schemas.ts';

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
  reserved: LEAD_RESERVED,
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
