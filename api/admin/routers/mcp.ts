// `wsctl mcp activity --company <id>`: the last 25 MCP calls and the 24-hour success rate.
import { z } from 'zod';
import { activity } from '../../mcp/activity-log.ts';
import { requireCompany } from '../exists.ts';
import { adminId as id, adminProcedure, router } from '../trpc.ts';

export const mcpRouter = router({
  activity: adminProcedure.input(z.strictObject({ companyId: id })).query(async ({ ctx, input }) => {
    await requireCompany(ctx.deps.pool, input.companyId);
    // This process's buffered calls first (other web processes flush within 200 ms).
    await ctx.deps.mcpActivity.flush();
    return activity(ctx.deps.pool, input.companyId);
  }),
});
