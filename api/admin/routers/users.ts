// `wsctl user ...`: the password people sign in with, and the permissions of
// in-application routes (api/auth/sessions.ts; owners hold them all).
import { z } from 'zod';
import { PERMISSIONS } from '../../auth/scopes.ts';
import { addMembership, setPassword, setPermissions } from '../users.ts';
import { adminId as id, adminProcedure, router } from '../trpc.ts';

/**
 * 8 to 200 characters, any of them (spaces and every script included, as NIST SP 800-63B asks), but not
 * only spaces, and no control characters: neither can be typed in the sign-in page's field.
 */
const password = z
  .string()
  .min(8)
  .max(200)
  .refine((p) => !/[\u0000-\u001f\u007f-\u009f]/.test(p), 'must not hold control characters')
  .refine((p) => p.trim() !== '', 'must not be only spaces');

export const userRouter = router({
  setPassword: adminProcedure
    .input(z.strictObject({ id, password }))
    .mutation(({ ctx, input }) => setPassword(ctx.deps.pool, input.id, input.password)),
  setPermissions: adminProcedure
    .input(z.strictObject({ id, companyId: id, permissions: z.array(z.enum(PERMISSIONS)) }))
    .mutation(({ ctx, input }) => setPermissions(ctx.deps.pool, input.id, input.companyId, input.permissions)),
  addMembership: adminProcedure
    .input(z.strictObject({ id, companyId: id, owner: z.boolean().optional() }))
    .mutation(({ ctx, input }) => addMembership(ctx.deps.pool, input.id, input.companyId, input.owner ?? false)),
});
