// `wsctl form create|update --file form.json`: forms are read-only in the REST API.
import { z } from 'zod';
import { createForm, updateForm } from '../forms.ts';
import { adminId as id, adminProcedure, router } from '../trpc.ts';

export const formRouter = router({
  create: adminProcedure
    .input(z.strictObject({ companyId: id, form: z.unknown() }))
    .mutation(({ ctx, input }) => createForm(ctx.deps.pool, input.companyId, input.form)),
  update: adminProcedure
    .input(z.strictObject({ id, form: z.unknown() }))
    .mutation(({ ctx, input }) => updateForm(ctx.deps.pool, input.id, input.form)),
});
