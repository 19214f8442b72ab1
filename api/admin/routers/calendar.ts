// `wsctl calendar connect | status | disconnect --user <id>` (DESIGN.md, CLI contract).
import { z } from 'zod';
import { calendarStatus, connectCalendar, disconnectCalendar } from '../calendar.ts';
import { adminId as id, adminProcedure, router } from '../trpc.ts';

export const calendarRouter = router({
  connect: adminProcedure
    .input(z.strictObject({ userId: id, refreshToken: z.string().min(1).max(2000).optional(), calendarId: z.string().min(1).max(300).optional() }))
    .mutation(({ ctx, input }) => connectCalendar(ctx.deps.pool, ctx.deps.jobs, ctx.deps.config, input)),
  status: adminProcedure.input(z.strictObject({ userId: id })).query(({ ctx, input }) => calendarStatus(ctx.deps.pool, input.userId)),
  disconnect: adminProcedure.input(z.strictObject({ userId: id })).mutation(({ ctx, input }) => disconnectCalendar(ctx.deps.pool, ctx.deps.config, input.userId)),
});
