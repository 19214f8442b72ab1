// API key issuing and lookup. The secret is `service_sk_` + 32 random bytes
// (base64url); only its SHA-256 digest is stored. Lookup is by digest, then
// the digests are compared again with timingSafeEqual, so neither the index
// walk nor the comparison reveals how much of a guessed secret was right.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Queryable } from '../../db/pool.ts';
import { iso } from '../../db/timestamps.ts';
import { objectId } from '../../lib/objectid.ts';

export const KEY_PREFIX = 'service_sk_';
const SECRET_SHAPE = /^service_sk_[A-Za-z0-9_-]{43}$/;

export type AuthKey = {
  keyId: string;
  companyId: string;
  userId: string;
  scopes: string[];
  allowedOrigins: string[];
  rateLimitPerMinute: number | null;
  enabledModules: string[];
  responseCache: boolean;
};

export function digestSecret(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

export function newSecret(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function isWellFormedSecret(secret: string): boolean {
  return SECRET_SHAPE.test(secret);
}

export async function findKeyByDigest(db: Queryable, digest: Buffer): Promise<AuthKey | null> {
  const { rows } = await db.query(
    `SELECT k.id, k.company_id, k.user_id, k.scopes, k.allowed_origins, k.rate_limit_per_minute,
            k.secret_digest, c.enabled_modules, c.response_cache
       FROM api_keys k JOIN companies c ON c.id = k.company_id
      WHERE k.secret_digest = $1 AND k.revoked_at IS NULL`,
    [digest],
  );
  const row = rows[0];
  if (!row || !timingSafeEqual(row.secret_digest, digest)) return null;
  return {
    keyId: row.id,
    companyId: row.company_id,
    userId: row.user_id,
    scopes: row.scopes,
    allowedOrigins: row.allowed_origins,
    rateLimitPerMinute: row.rate_limit_per_minute,
    enabledModules: row.enabled_modules,
    responseCache: row.response_cache,
  };
}

export type NewKey = {
  companyId: string;
  userId: string;
  scopes: string[];
  allowedOrigins?: string[];
  name?: string;
  rateLimitPerMinute?: number | null;
};

export async function createKey(db: Queryable, input: NewKey) {
  const secret = newSecret();
  const id = objectId();
  const { rows } = await db.query<KeyRow>(
    `INSERT INTO api_keys (id, company_id, user_id, name, secret_digest, secret_last_four, scopes, allowed_origins, rate_limit_per_minute)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     RETURNING id, company_id, user_id, name, secret_last_four, scopes, allowed_origins, rate_limit_per_minute, revoked_at, created_at`,
    [
      id,
      input.companyId,
      input.userId,
      input.name ?? 'API key',
      digestSecret(secret),
      secret.slice(-4),
      input.scopes,
      input.allowedOrigins ?? [],
      input.rateLimitPerMinute ?? null,
    ],
  );
  return { ...serializeKey(rows[0]), secret };
}

/** An `api_keys` row as read back (never with its digest). */
export type KeyRow = {
  id: string;
  company_id: string;
  user_id: string;
  name: string;
  secret_last_four: string;
  scopes: string[];
  allowed_origins: string[];
  rate_limit_per_minute: number | null;
  revoked_at: Date | null;
  created_at: Date;
};

export function serializeKey(row: KeyRow) {
  return {
    id: row.id,
    object: 'api_key' as const,
    company_id: row.company_id,
    user_id: row.user_id,
    name: row.name,
    secret_last_four: row.secret_last_four,
    scopes: row.scopes,
    allowed_origins: row.allowed_origins,
    rate_limit_per_minute: row.rate_limit_per_minute,
    revoked_at: iso(row.revoked_at),
    created_at: iso(row.created_at)!,
  };
}
