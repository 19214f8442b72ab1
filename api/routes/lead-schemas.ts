// Leads' zod schemas (contract: Customers and leads): what a create and an update take, the pipeline's
// statuses, and what a read answers (serializeLead in lead-queries.ts is typed by leadSchema).
import { z } from 'zod';
import { CONTACT_LIMITS } from '../../db/contacts.ts';
import { customPropertiesWrite } from '../custom-properties.ts';
import { optionalText } from '../validation.ts';
import { contactFields, timestamps } from './crm-fields.ts';

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
