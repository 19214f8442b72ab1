// `wsctl company tax-profile`: the emitter data of tax invoices (files sent as base64).
import { z } from 'zod';
import { setTaxProfile } from '../tax-profile.ts';
import { adminId as id, adminProcedure, router } from '../trpc.ts';

export const taxProfileRouter = router({
  set: adminProcedure
    .input(
      z.strictObject({
        companyId: id,
        rfc: z.string().min(12).max(13),
        legalName: z.string().min(1).max(300),
        taxRegime: z.string().regex(/^\d{3}$/),
        zip: z.string(),
        cer: z.string().min(1).max(20_000),
        key: z.string().min(1).max(20_000),
        keyPassword: z.string().min(1).max(200),
      }),
    )
    .mutation(({ ctx, input }) => setTaxProfile(ctx.deps.pool, ctx.deps.config, input)),
});
