// `wsctl period close|open`: an accounting month of a company.
import { z } from 'zod';
import { setPeriod } from '../periods.ts';
import { adminId as id, adminProcedure, router } from '../trpc.ts';

const input = z.strictObject({ companyId: id, year: z.number().int().min(1900).max(9999), month: z.number().int().min(1).max(12) });

export const periodRouter = router({
  close: adminProcedure.input(input).mutation(({ ctx, input }) => setPeriod(ctx.deps.pool, { ...input, closed: true })),
  open: adminProcedure.input(input).mutation(({ ctx, input }) => setPeriod(ctx.deps.pool, { ...input, closed: false })),
});
