// The company (contract: Company (singular)): editable profile fields, and
// the read. Everything else (slug, plan, quotas, max_team_size, modules, id,
// timestamps) is refused on PUT like any unknown field: 422 naming it.
import { z } from 'zod';
import { lineText, optionalHttpUrl, optionalText, text } from '../validation.ts';
import { OPT_IN_MODULES } from '../auth/scopes.ts';


export const companyUpdate = z.strictObject({
  // One line: it is the sender's name of the company's emails and heads its pages.
  name: lineText(200).min(1).optional(),
  website: optionalHttpUrl,
  legal_name: optionalText(300),
  business_type: optionalText(200).describe('Texto libre'),
  business_context: optionalText(20_000).describe('Texto largo que usan las funciones de IA'),
  business_goals: z.array(text(500).min(1)).max(50).optional(),
});
export type CompanyUpdate = z.infer<typeof companyUpdate>;

export const companySchema = z.object({
  id: z.string(),
  name: z.string(),
  slug: z.string(),
  website: z.string().nullable(),
  legal_name: z.string().nullable(),
  logo_url: z.string().nullable(),
  business_type: z.string().nullable(),
  business_context: z.string().nullable(),
  business_goals: z.array(z.string()),
  team: z.object({ max_team_size: z.number().int(), current_team_size: z.number().int(), seats_available: z.number().int() }),
  enabled_modules: z.array(z.enum(OPT_IN_MODULES)),
  timezone: z.string().describe('Zona IANA en la que se leen las fechas de dinero (meses contables, días de los reportes); la cambian los operadores'),
  created_at: z.string(),
  updated_at: z.string(),
});
