// `wsctl user ...`: the password people sign in with, and the permissions of
// in-application routes (api/auth/sessions.ts; owners hold them all).
import { z } from 'zod';
import { PERMISSIONS } from '../../auth/sessions.ts';
import { addMembership, setPassword, setPermissions } from '../users.ts';
import { adminId as id, adminProcedure, router } from '../trpc.ts';

export const userRouter = router({
  setPassword: adminProcedure
    .input(z.strictObject({ id, password: z.string().min(8).max(200) }))
    .mutation(({ ctx, input }) => setPassword(ctx.deps.pool, input.id, input.password)),
  setPermissions: adminProcedure
    .input(z.strictObject({ id, companyId: id, permissions: z.array(z.enum(PERMISSIONS)) }))
    .mutation(({ ctx, input }) => setPermissions(ctx.deps.pool, input.id, input.companyId, input.permissions)),
  addMembership: adminProcedure
    .input(z.strictObject({ id, companyId: id, owner: z.boolean().optional() }))
    .mutation(({ ctx, input }) => addMembership(ctx.deps.pool, input.id, input.companyId, input.owner ?? false)),
});
