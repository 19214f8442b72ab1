// The SQL of a person's own OAuth connections (user-oauth-grants.ts).
import type { z } from 'zod';
import { liveGrantSql } from '../../db/oauth-grants.ts';
import type { Queryable } from '../../db/pool.ts';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import { listPage, type PaginationQuery, type TotalsCache } from '../pagination.ts';
import type { grantSchema } from './user-oauth-grant-schemas.ts';

export type GrantRow = {
  id: string;
  client_id: string;
  client_name: string | null;
  company_id: string;
  scopes: string[];
  created_at: Timestamp;
  revoked_at: Timestamp | null;
  active: boolean;
};

export function serializeGrant(row: GrantRow): z.output<typeof grantSchema> {
  return {
    id: row.id,
    object: 'oauth_grant' as const,
    client_id: row.client_id,
    client_name: row.client_name,
    company_id: row.company_id,
    scopes: row.scopes,
    active: row.active,
    created_at: iso(row.created_at),
    revoked_at: iso(row.revoked_at),
  };
}

const COLUMNS = `id, client_id, (SELECT c.client_name FROM oauth_clients c WHERE c.id = oauth_grants.client_id) AS client_name,
  company_id, scopes, created_at, revoked_at, ${liveGrantSql('oauth_grants')} AS active`;

/** The person's grants in the company, newest first, a page of them. */
export function listUserGrants(db: Queryable, totals: TotalsCache, companyId: string, userId: string, page: PaginationQuery) {
  return listPage<GrantRow>(db, totals, { table: 'oauth_grants', columns: COLUMNS, companyId, collection: (p) => [`user_id = ${p.add(userId)}`], serialize: serializeGrant }, page);
}

/** One of the person's grants in the company; null when they have no such grant. */
export async function findUserGrant(db: Queryable, companyId: string, userId: string, id: string): Promise<GrantRow | null> {
  const { rows } = await db.query<GrantRow>(`SELECT ${COLUMNS} FROM oauth_grants WHERE id = $1 AND company_id = $2 AND user_id = $3`, [id, companyId, userId]);
  return rows[0] ?? null;
}
