// `wsctl company ...`: create, update, show, list.
import { z } from 'zod';
import { MAX_TEAM_SIZE } from '../limits.ts';
import { OPT_IN_MODULES } from '../../auth/scopes.ts';
import { isTimeZone } from '../../../lib/local-dates.ts';
import { emailAddress, isOneLine, text } from '../../validation.ts';
import { createCompany, getCompany, listCompanies, updateCompany } from '../companies.ts';
import { adminId as id, adminProcedure, router, storedInt } from '../trpc.ts';

// One line, as the API's PUT /company takes it: the sender's name of the company's emails.
// Text that shows nothing is blank (api/validation.ts text), as the API's PUT /company reads it.
const name = text(200).min(1).refine(isOneLine, 'must be one line, without control characters');
const plan = z.enum(['free', 'starter', 'enterprise']);
const companyFields = {
  maxTeamSize: z.number().int().min(1).max(MAX_TEAM_SIZE).optional(),
  // A closed list: a typo (`invocing`) must fail, not enable nothing silently.
  modules: z.array(z.enum(OPT_IN_MODULES)).optional(),
  plan: plan.optional(),
  mcpQuota: storedInt(0).nullable().optional(),
};

export const companyRouter = router({
  create: adminProcedure
    .input(z.strictObject({ name, ownerEmail: emailAddress.optional(), ...companyFields }))
    .mutation(({ ctx, input }) => createCompany(ctx.deps.pool, input)),
  update: adminProcedure
    .input(
      z.strictObject({
        id,
        name: name.optional(),
        ownerEmail: emailAddress.optional(),
        ...companyFields,
        responseCache: z.boolean().optional(),
        storageQuotaMb: storedInt(0).optional(),
        timezone: z.string().refine(isTimeZone, 'unknown IANA time zone').optional(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const { id: companyId, ...rest } = input;
      const company = await updateCompany(ctx.deps.pool, companyId, rest);
      ctx.deps.keyCache.invalidate(); // this process at once; the others on the NOTIFY
      return company;
    }),
  show: adminProcedure.input(z.strictObject({ id })).query(({ ctx, input }) => getCompany(ctx.deps.pool, input.id)),
  list: adminProcedure.query(({ ctx }) => listCompanies(ctx.deps.pool)),
});
