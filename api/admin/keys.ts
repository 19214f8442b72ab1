// Operator actions on API keys: issue (to a member of the company, the owner
// by default), list, revoke. Revoking notifies every process's key cache in
// the same transaction.
import { transaction, type Pool, type Queryable } from '../../db/pool.ts';
import { notifyAuthChange } from '../auth/key-cache.ts';
import { createKey, serializeKey, type KeyRow } from '../auth/keys.ts';
import { ApiError } from '../errors.ts';
import { getCompany, ownerOf } from './companies.ts';

export type KeyInput = {
  companyId: string;
  userId?: string;
  scopes: string[];
  origins?: string[];
  name?: string;
  rateLimitPerMinute?: number | null;
};

export async function issueKey(pool: Pool, input: KeyInput) {
  await getCompany(pool, input.companyId);
  const userId = input.userId ?? (await ownerOf(pool, input.companyId));
  const member = await pool.query('SELECT 1 FROM memberships WHERE company_id = $1 AND user_id = $2', [input.companyId, userId]);
  if (member.rowCount === 0) throw new ApiError('validation_failed', `User ${userId} is not a member of company ${input.companyId}`);
  return createKey(pool, {
    companyId: input.companyId,
    userId,
    scopes: input.scopes,
    // Each once, as given (lower-cased by the router): a host named twice is one.
    allowedOrigins: input.origins && [...new Set(input.origins)],
    name: input.name,
    rateLimitPerMinute: input.rateLimitPerMinute,
  });
}

export async function listKeys(db: Queryable, companyId: string) {
  const { rows } = await db.query<KeyRow>('SELECT * FROM api_keys WHERE company_id = $1 ORDER BY created_at DESC, id DESC', [companyId]);
  return rows.map(serializeKey);
}

export async function revokeKey(pool: Pool, id: string) {
  return transaction(pool, async (db) => {
    const { rows } = await db.query<KeyRow>('UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING *', [id]);
    if (!rows[0]) throw new ApiError('not_found', `Key ${id} not found`);
    await notifyAuthChange(db);
    return serializeKey(rows[0]);
  });
}
