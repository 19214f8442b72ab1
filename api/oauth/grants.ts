// The grants behind /oauth/token and /oauth/revoke (api/oauth/routes.ts
// answers them): an authorization code exchanged once with its PKCE verifier,
// a refresh token rotated on every use (a parallel refresh within the grace
// gets the same successor pair; a replay after it revokes the whole grant),
// and revocation (RFC 7009). Each returns the token pair or the RFC 6749
// error code and description the endpoint answers with.
import { createHash } from 'node:crypto';
import { transaction, type Pool, type Queryable } from '../../db/pool.ts';
import { revokeGrant } from '../../db/oauth-grants.ts';
import { digest, issueTokens, openSuccessor, REFRESH_GRACE_SECONDS, sealSuccessor, type GrantRow, type TokenPair } from './store.ts';

export type GrantResult = { tokens: TokenPair } | { error: string; text: string };

/**
 * Why a grant can no longer issue tokens, or null: revoked, or its person no longer in the company
 * (a removal revokes the grant too; this holds whatever removed them, and revokes it then).
 */
async function refusedGrant(db: Queryable, grant: GrantRow): Promise<string | null> {
  if (grant.revoked_at) return 'el acceso fue revocado';
  const { rowCount: member } = await db.query(
    'SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id AND u.deleted_at IS NULL WHERE m.user_id = $1 AND m.company_id = $2',
    [grant.user_id, grant.company_id],
  );
  if (member) return null;
  await revokeGrant(db, grant.id);
  return 'la persona ya no pertenece a la empresa; se revocó el acceso';
}

/**
 * authorization_code: the code once, within its life, for its client and
 * redirect URI when they are sent, with the verifier of its challenge. A
 * second use revokes what the first issued.
 */
export async function exchangeCode(
  pool: Pool,
  input: { code: string; verifier: string; clientId?: string; redirectUri?: string },
): Promise<{ tokens: TokenPair } | { error: string }> {
  return transaction(pool, async (db) => {
    const { rows } = await db.query<{ grant_id: string; redirect_uri: string; code_challenge: string; expired: boolean; used_at: Date | null }>(
      'SELECT grant_id, redirect_uri, code_challenge, expires_at < now() AS expired, used_at FROM oauth_codes WHERE digest = $1 FOR UPDATE',
      [digest(input.code)],
    );
    const code = rows[0];
    if (!code) return { error: 'el código no es válido' };
    if (code.used_at) {
      // A second use: whatever the first use issued is revoked.
      await revokeGrant(db, code.grant_id);
      return { error: 'el código ya se usó; se revocó el acceso que emitió' };
    }
    const { rows: grants } = await db.query<GrantRow>('SELECT * FROM oauth_grants WHERE id = $1', [code.grant_id]);
    const grant = grants[0];
    if (code.expired) return { error: 'el código expiró' };
    if (input.clientId && input.clientId !== grant.client_id) return { error: 'el código es de otra aplicación' };
    if (input.redirectUri !== undefined && input.redirectUri !== code.redirect_uri) return { error: 'redirect_uri no coincide' };
    const challenge = createHash('sha256').update(input.verifier).digest('base64url');
    if (challenge !== code.code_challenge) return { error: 'code_verifier no corresponde al code_challenge' };
    await db.query('UPDATE oauth_codes SET used_at = now() WHERE digest = $1', [digest(input.code)]);
    // Revoked between the consent and this exchange (the person removed, `wsctl oauth revoke`): no tokens.
    const refused = await refusedGrant(db, grant);
    if (refused) return { error: refused };
    return { tokens: await issueTokens(db, grant) };
  });
}

/** refresh_token: rotation, the grace for parallel refreshes, theft on replay, and a narrower scope for the access token only. */
export async function refreshGrant(pool: Pool, input: { refreshToken: string; clientId?: string; scope?: string }): Promise<GrantResult> {
  return transaction(pool, async (db) => {
    const { rows } = await db.query<{ grant_id: string; expired: boolean; rotated_at: Date | null; in_grace: boolean; successor: Buffer | null }>(
      `SELECT grant_id, expires_at < now() AS expired, rotated_at, successor,
              rotated_at > now() - make_interval(secs => $2) AS in_grace
         FROM oauth_tokens WHERE digest = $1 AND kind = 'refresh' FOR UPDATE`,
      [digest(input.refreshToken), REFRESH_GRACE_SECONDS],
    );
    const token = rows[0];
    if (!token) return { error: 'invalid_grant', text: 'el refresh_token no es válido' };
    const { rows: grants } = await db.query<GrantRow>('SELECT * FROM oauth_grants WHERE id = $1', [token.grant_id]);
    const grant = grants[0];
    if (input.clientId && input.clientId !== grant.client_id) return { error: 'invalid_grant', text: 'el refresh_token es de otra aplicación' };
    // RFC 6749 §6: a narrower scope narrows the new access token only; the grant and its refresh token
    // keep what the person approved (omitted = "equal to the scope originally granted"). A wider one is
    // refused whatever the token's state, a parallel refresh within the grace included.
    const wanted = input.scope ? [...new Set(input.scope.split(' ').filter(Boolean))] : grant.scopes;
    if (wanted.some((s) => !grant.scopes.includes(s))) return { error: 'invalid_scope', text: 'un refresh no puede ampliar los permisos' };
    if (token.rotated_at && token.in_grace && token.successor && !grant.revoked_at) {
      // Parallel refreshes of one client: the same successor pair, not a new one (its `scope` says what
      // it holds, which a narrower request in parallel does not change: RFC 6749 §3.3 lets the server
      // issue other than asked, saying so). Once that successor has itself been used, this is no
      // parallel refresh but a replay: theft, below.
      // FOR SHARE waits for a refresh of the successor in flight, and then reads it as rotated.
      const pair = openSuccessor(input.refreshToken, token.successor);
      const { rows: next } = pair
        ? await db.query<{ rotated: boolean }>(`SELECT rotated_at IS NOT NULL AS rotated FROM oauth_tokens WHERE digest = $1 AND kind = 'refresh' FOR SHARE`, [digest(pair.refresh_token)])
        : { rows: [] };
      if (pair && next[0] && !next[0].rotated) {
        // The pair as issued, its access token's life counted from now (RFC 6749 §5.1): issued up to the grace ago.
        const { rows: left } = await db.query<{ seconds: number }>(
          `SELECT greatest(0, floor(extract(epoch FROM expires_at - now())))::int AS seconds FROM oauth_tokens WHERE digest = $1 AND kind = 'access'`,
          [digest(pair.access_token)],
        );
        return { tokens: { ...pair, expires_in: left[0]?.seconds ?? 0 } };
      }
    }
    if (token.rotated_at) {
      // Reuse of a rotated refresh token after the grace: treated as theft, the whole grant goes.
      await revokeGrant(db, grant.id);
      return { error: 'invalid_grant', text: 'el refresh_token ya se usó; se revocó el acceso' };
    }
    if (token.expired) return { error: 'invalid_grant', text: 'el refresh_token expiró o el acceso fue revocado' };
    const refused = await refusedGrant(db, grant);
    if (refused) return { error: 'invalid_grant', text: refused };
    const tokens = await issueTokens(db, grant, wanted);
    await db.query('UPDATE oauth_tokens SET rotated_at = now(), successor = $2 WHERE digest = $1', [digest(input.refreshToken), sealSuccessor(input.refreshToken, tokens)]);
    return { tokens };
  });
}

/**
 * RFC 7009: a refresh token revokes its grant, an access token itself; an unknown token is nothing to
 * do. A token issued to another client than the `clientId` the request names is refused (§2.1) and
 * left alone: 'other_client'.
 */
export async function revokeToken(db: Queryable, token: string, clientId?: string): Promise<'done' | 'other_client'> {
  const { rows } = await db.query<{ grant_id: string; kind: string; client_id: string }>(
    'SELECT t.grant_id, t.kind, g.client_id FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.digest = $1',
    [digest(token)],
  );
  const found = rows[0];
  if (found && clientId && clientId !== found.client_id) return 'other_client';
  if (found?.kind === 'refresh') await revokeGrant(db, found.grant_id);
  else if (found) await db.query('UPDATE oauth_tokens SET expires_at = now() WHERE digest = $1', [digest(token)]);
  return 'done';
}
