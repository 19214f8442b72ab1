// OAuth connections for operators (`wsctl oauth grants|revoke`): the grants
// MCP clients hold, per person or per company. Revoking one is
// db/oauth-grants.ts `revokeGrant`, which the person's own route shares.
import { liveGrantSql } from '../../db/oauth-grants.ts';
import type { Queryable } from '../../db/pool.ts';

export type GrantSummary = {
  id: string;
  client_id: string;
  client_name: string | null;
  user_id: string;
  company_id: string;
  scopes: string[];
  created_at: string;
  revoked_at: string | null;
  /** Not revoked, and with a token or an unused code not yet expired (db/oauth-grants.ts). */
  active: boolean;
};

/** A person's grants (`userId`), a company's (`companyId`) or one (`id`), newest first. */
export async function listGrants(db: Queryable, filter: { userId?: string; companyId?: string; id?: string }): Promise<GrantSummary[]> {
  const { rows } = await db.query<Omit<GrantSummary, 'created_at' | 'revoked_at'> & { created_at: Date; revoked_at: Date | null }>(
    `SELECT g.id, g.client_id, c.client_name, g.user_id, g.company_id, g.scopes, g.created_at, g.revoked_at, ${liveGrantSql('g')} AS active
       FROM oauth_grants g JOIN oauth_clients c ON c.id = g.client_id
      WHERE ($1::text IS NULL OR g.user_id = $1) AND ($2::text IS NULL OR g.company_id = $2) AND ($3::text IS NULL OR g.id = $3) ORDER BY g.created_at DESC, g.id DESC`,
    [filter.userId ?? null, filter.companyId ?? null, filter.id ?? null],
  );
  return rows.map((r) => ({ ...r, created_at: r.created_at.toISOString(), revoked_at: r.revoked_at?.toISOString() ?? null }));
}
