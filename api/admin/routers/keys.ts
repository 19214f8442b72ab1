// `wsctl key ...`: create (the secret shown once), list, revoke.
import { z } from 'zod';
import { parseScopes } from '../../auth/scopes.ts';
import { validationFailed } from '../../errors.ts';
import { text } from '../../validation.ts';
import { requireCompany } from '../exists.ts';
import { issueKey, listKeys, revokeKey } from '../keys.ts';
import { adminId as id, adminProcedure, router, storedInt } from '../trpc.ts';

export const keyRouter = router({
  create: adminProcedure
    .input(
      z.strictObject({
        companyId: id,
        userId: id.optional(),
        scopes: z.union([z.string(), z.array(z.string())]),
        origins: z.array(z.string().trim().toLowerCase().regex(/^(\*\.)?[a-z0-9.-]+$/, 'must be a host name')).optional(),
        name: text(100).min(1, 'must not be empty (leave --name out for the default)').optional(),
        rateLimitPerMinute: storedInt(1).nullable().optional(),
      }),
    )
    .mutation(({ ctx, input }) => {
      let scopes: string[];
      try {
        scopes = parseScopes(input.scopes);
      } catch (error) {
        throw validationFailed({ scopes: [(error as Error).message] });
      }
      return issueKey(ctx.deps.pool, { ...input, scopes });
    }),
  list: adminProcedure.input(z.strictObject({ companyId: id })).query(async ({ ctx, input }) => {
    await requireCompany(ctx.deps.pool, input.companyId);
    return listKeys(ctx.deps.pool, input.companyId);
  }),
  revoke: adminProcedure.input(z.strictObject({ id })).mutation(async ({ ctx, input }) => {
    const key = await revokeKey(ctx.deps.pool, input.id);
    ctx.deps.keyCache.invalidate(); // this process at once; the others on the NOTIFY
    return key;
  }),
});
