// What makes an OAuth grant a live connection, for the operator's list
// (api/admin/oauth.ts), the person's own (api/routes/user-oauth-grants.ts)
// and the housekeeping that deletes unused clients
// (worker/jobs/purge-expired.ts): not revoked, and still able to act or to
// become able: a token not expired yet, or a code not used and not expired.
// A grant is made when the person approves, before its code is exchanged;
// a code never exchanged, or tokens all expired, leave it dead. And revoking
// one, by an operator or by its person.
import type { Queryable } from './pool.ts';

/** SQL true when the grant aliased `g` is live. */
export function liveGrantSql(g: string): string {
  return `(${g}.revoked_at IS NULL AND (
    EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.grant_id = ${g}.id AND t.expires_at > now())
    OR EXISTS (SELECT 1 FROM oauth_codes k WHERE k.grant_id = ${g}.id AND k.used_at IS NULL AND k.expires_at > now())))`;
}

export type RevokedGrant = { id: string; client_id: string; user_id: string; company_id: string; scopes: string[]; revoked_at: string };

/**
 * Revokes a grant (kept revoked if it was already): its tokens stop at once, since every MCP request
 * checks its grant. `of`: only that person's grant in that company. Null when there is no such grant.
 */
export async function revokeGrant(db: Queryable, id: string, of?: { userId: string; companyId: string }): Promise<RevokedGrant | null> {
  const { rows } = await db.query<Omit<RevokedGrant, 'revoked_at'> & { revoked_at: Date }>(
    `UPDATE oauth_grants SET revoked_at = coalesce(revoked_at, now())
      WHERE id = $1 AND ($2::text IS NULL OR (user_id = $2 AND company_id = $3))
      RETURNING id, client_id, user_id, company_id, scopes, revoked_at`,
    [id, of?.userId ?? null, of?.companyId ?? null],
  );
  return rows[0] ? { ...rows[0], revoked_at: rows[0].revoked_at.toISOString() } : null;
}
