// Automations' zod schemas (contract: Automation): what a read answers (serializeAutomation in
// automation-queries.ts is typed by automationSchema) and the one change the API takes (PATCH).
import { z } from 'zod';
import { optionalText, text } from '../validation.ts';
import { timestamps } from './crm-fields.ts';

export const automationSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  active: z.boolean().describe('Interruptor de encendido/apagado'),
  trigger_type: z.string(),
  trigger_config: z.record(z.string(), z.unknown()),
  steps: z.array(z.unknown()),
  runs_count: z.number().int(),
  last_run_at: z.iso.datetime().nullable(),
  ...timestamps,
});

export const automationUpdate = z
  .strictObject({
    name: text(200).min(1).optional(),
    description: optionalText(2000),
    active: z.boolean().optional(),
  })
  .describe('Solo active, name y description pueden cambiar');
