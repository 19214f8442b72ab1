// `wsctl oauth grants --user <id>` / `wsctl oauth revoke <grant-id>`: a person's OAuth connections.
import { z } from 'zod';
import { ApiError } from '../../errors.ts';
import { requireCompany, requireUser } from '../exists.ts';
import { revokeGrant } from '../../../db/oauth-grants.ts';
import { listGrants } from '../oauth.ts';
import { adminId as id, adminProcedure, router } from '../trpc.ts';

export const oauthRouter = router({
  // A person's connections (--user), or a company's (--company) for operators.
  grants: adminProcedure.input(z.strictObject({ userId: id.optional(), companyId: id.optional() }).refine((v) => !!v.userId !== !!v.companyId, 'give exactly one of --user and --company')).query(async ({ ctx, input }) => {
    if (input.userId) await requireUser(ctx.deps.pool, input.userId);
    if (input.companyId) await requireCompany(ctx.deps.pool, input.companyId);
    return listGrants(ctx.deps.pool, input);
  }),
  revoke: adminProcedure.input(z.strictObject({ id })).mutation(async ({ ctx, input }) => {
    const grant = await revokeGrant(ctx.deps.pool, input.id);
    if (!grant) throw new ApiError('not_found', `Grant ${input.id} not found`);
    // The same shape as a row of `oauth grants` (client name, created_at, active: false now).
    return (await listGrants(ctx.deps.pool, { id: input.id }))[0]!;
  }),
});
