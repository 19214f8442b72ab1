// What makes an OAuth grant a live connection, for the operator's list
// (api/admin/oauth.ts) and the housekeeping that deletes unused clients
// (worker/jobs/purge-expired.ts): not revoked, and still able to act or to
// become able: a token not expired yet, or a code not used and not expired.
// A grant is made when the person approves, before its code is exchanged;
// a code never exchanged, or tokens all expired, leave it dead.

/** SQL true when the grant aliased `g` is live. */
export function liveGrantSql(g: string): string {
  return `(${g}.revoked_at IS NULL AND (
    EXISTS (SELECT 1 FROM oauth_tokens t WHERE t.grant_id = ${g}.id AND t.expires_at > now())
    OR EXISTS (SELECT 1 FROM oauth_codes k WHERE k.grant_id = ${g}.id AND k.used_at IS NULL AND k.expires_at > now())))`;
}
