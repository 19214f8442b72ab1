// `wsctl automation create --file`: the REST API cannot create automations.
import { z } from 'zod';
import { serializeAutomation } from '../../routes/automation-queries.ts';
import { optionalText, text } from '../../validation.ts';
import { createAutomation } from '../automations.ts';
import { adminId as id, adminProcedure, router } from '../trpc.ts';

export const automationRouter = router({
  create: adminProcedure
    .input(
      z.strictObject({
        companyId: id,
        // Strict, as form files are: a misspelt key (`trigger-config`) is refused, not dropped.
        automation: z.strictObject({
          name: text(200).min(1),
          description: optionalText(2000),
          active: z.boolean().optional(),
          trigger_type: z.string().trim().min(1).max(100),
          trigger_config: z.record(z.string(), z.unknown()).optional(),
          // Each step is the engine's object: its `type` (the engine's name for the action) and whatever
          // else that engine reads. A list of anything else ([1, "a", null]) can never be a step.
          steps: z.array(z.looseObject({ type: z.string().trim().min(1).max(100) }), 'debe ser una lista de pasos').max(100).optional(),
        }),
      }),
    )
    .mutation(async ({ ctx, input }) => serializeAutomation(await createAutomation(ctx.deps.pool, input.companyId, input.automation))),
});
