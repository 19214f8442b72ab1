// Admin procedures for `wsctl`, one router per domain combined here.
import { z } from 'zod';
import { OPT_IN_MODULES, parseScopes } from '../auth/scopes.ts';
import { PERMISSIONS } from '../auth/sessions.ts';
import {
  AdminError,
  createAutomation,
  createCompany,
  getCompany,
  issueKey,
  listCompanies,
  listKeys,
  revokeKey,
  setPassword,
  updateCompany,
} from './companies.ts';
import { serializeAutomation } from '../routes/automations.ts';
import { formRouter } from './forms.ts';
import { deliveryRouter, webhookRouter } from './webhooks.ts';
import { adminId as id, adminProcedure, router } from './trpc.ts';

const plan = z.enum(['free', 'starter', 'enterprise']);
const companyFields = {
  maxTeamSize: z.number().int().min(1).max(10_000).optional(),
  // A closed list: a typo (`automation`) must fail, not enable nothing silently.
  modules: z.array(z.enum(OPT_IN_MODULES)).optional(),
  plan: plan.optional(),
  mcpQuota: z.number().int().min(0).nullable().optional(),
};

const companyRouter = router({
  create: adminProcedure
    .input(z.object({ name: z.string().trim().min(1).max(200), ownerEmail: z.email().optional(), ...companyFields }))
    .mutation(({ ctx, input }) => createCompany(ctx.deps.pool, input)),
  update: adminProcedure
    .input(
      z.object({
        id,
        name: z.string().trim().min(1).max(200).optional(),
        ownerEmail: z.email().optional(),
        ...companyFields,
        responseCache: z.boolean().optional(),
        storageQuotaMb: z.number().int().min(0).optional(),
      }),
    )
    .mutation(({ ctx, input }) => {
      const { id: companyId, ...rest } = input;
      return updateCompany(ctx.deps.pool, companyId, rest);
    }),
  show: adminProcedure.input(z.object({ id })).query(({ ctx, input }) => getCompany(ctx.deps.pool, input.id)),
  list: adminProcedure.query(({ ctx }) => listCompanies(ctx.deps.pool)),
});

const keyRouter = router({
  create: adminProcedure
    .input(
      z.object({
        companyId: id,
        userId: id.optional(),
        scopes: z.union([z.string(), z.array(z.string())]),
        origins: z.array(z.string().trim().toLowerCase().regex(/^(\*\.)?[a-z0-9.-]+$/, 'must be a host name')).optional(),
        name: z.string().max(100).optional(),
        rateLimitPerMinute: z.number().int().min(1).nullable().optional(),
      }),
    )
    .mutation(({ ctx, input }) => {
      let scopes: string[];
      try {
        scopes = parseScopes(input.scopes);
      } catch (error) {
        throw new AdminError('bad_request', (error as Error).message);
      }
      return issueKey(ctx.deps.pool, { ...input, scopes });
    }),
  list: adminProcedure.input(z.object({ companyId: id })).query(({ ctx, input }) => listKeys(ctx.deps.pool, input.companyId)),
  revoke: adminProcedure.input(z.object({ id })).mutation(({ ctx, input }) => revokeKey(ctx.deps.pool, input.id)),
});

const userRouter = router({
  setPassword: adminProcedure
    .input(z.object({ id, password: z.string().min(8).max(200) }))
    .mutation(({ ctx, input }) => setPassword(ctx.deps.pool, input.id, input.password)),
  // Permissions of in-application routes (api/auth/sessions.ts); owners hold them all.
  setPermissions: adminProcedure
    .input(z.object({ id, companyId: id, permissions: z.array(z.enum(PERMISSIONS)) }))
    .mutation(async ({ ctx, input }) => {
      const { rows } = await ctx.deps.pool.query(
        'UPDATE memberships SET permissions = $3 WHERE user_id = $1 AND company_id = $2 RETURNING user_id, company_id, is_owner, permissions',
        [input.id, input.companyId, [...new Set(input.permissions)]],
      );
      if (!rows[0]) throw new AdminError('not_found', `User ${input.id} is not a member of company ${input.companyId}`);
      return rows[0] as { user_id: string; company_id: string; is_owner: boolean; permissions: string[] };
    }),
});

const automationRouter = router({
  create: adminProcedure
    .input(
      z.object({
        companyId: id,
        automation: z.object({
          name: z.string().trim().min(1).max(200),
          description: z.string().max(2000).nullable().optional(),
          active: z.boolean().optional(),
          trigger_type: z.string().trim().min(1).max(100),
          trigger_config: z.record(z.string(), z.unknown()).optional(),
          steps: z.array(z.unknown()).optional(),
        }),
      }),
    )
    .mutation(async ({ ctx, input }) => serializeAutomation(await createAutomation(ctx.deps.pool, input.companyId, input.automation))),
});

export const adminRouter = router({
  company: companyRouter,
  key: keyRouter,
  user: userRouter,
  automation: automationRouter,
  form: formRouter,
  webhook: webhookRouter,
  delivery: deliveryRouter,
});

export type AdminRouter = typeof adminRouter;
