// `wsctl oauth grants --user <id>` / `wsctl oauth revoke <grant-id>`: a person's OAuth connections.
import { z } from 'zod';
import { ApiError } from '../../errors.ts';
import { requireCompany, requireUser } from '../companies.ts';
import { adminId as id, adminProcedure, router } from '../trpc.ts';

export const oauthRouter = router({
  // A person's connections (--user), or a company's (--company) for operators.
  grants: adminProcedure.input(z.object({ userId: id.optional(), companyId: id.optional() }).refine((v) => !!v.userId !== !!v.companyId, 'give --user or --company')).query(async ({ ctx, input }) => {
    if (input.userId) await requireUser(ctx.deps.pool, input.userId);
    if (input.companyId) await requireCompany(ctx.deps.pool, input.companyId);
    const { rows } = await ctx.deps.pool.query(
      `SELECT g.id, g.client_id, c.client_name, g.user_id, g.company_id, g.scopes, g.created_at, g.revoked_at
         FROM oauth_grants g JOIN oauth_clients c ON c.id = g.client_id
        WHERE ($1::text IS NULL OR g.user_id = $1) AND ($2::text IS NULL OR g.company_id = $2) ORDER BY g.created_at DESC`,
      [input.userId ?? null, input.companyId ?? null],
    );
    return rows.map((r) => ({ ...r, created_at: r.created_at.toISOString(), revoked_at: r.revoked_at?.toISOString() ?? null }));
  }),
  revoke: adminProcedure.input(z.object({ id })).mutation(async ({ ctx, input }) => {
    const { rows } = await ctx.deps.pool.query(
      'UPDATE oauth_grants SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING id, client_id, user_id, company_id, scopes, revoked_at',
      [input.id],
    );
    if (!rows[0]) throw new ApiError('not_found', `Grant ${input.id} not found`);
    return { ...rows[0], revoked_at: rows[0].revoked_at.toISOString() };
  }),
});
