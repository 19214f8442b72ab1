// Operator actions on people: passwords (for sign-in) and the permissions of
// a membership. The serializer is the operator's view of a user.
import { transaction, type Pool, type Queryable } from '../../db/pool.ts';
import { iso } from '../../db/timestamps.ts';
import { hashPassword } from '../../lib/passwords.ts';
import { ApiError } from '../errors.ts';
import { requireCompany, requireUser } from './exists.ts';
import { lockSeat, type UserRow } from '../routes/user-queries.ts';

export type { UserRow };

/** A person as the CLI shows it; `is_owner` only where one company is in view (ownership is per membership). */
export function serializeUser(row: UserRow, isOwner?: boolean) {
  const fullName = [row.first_name, row.last_name].filter(Boolean).join(' ');
  return {
    id: row.id,
    email: row.email,
    first_name: row.first_name,
    last_name: row.last_name,
    full_name: fullName || null,
    ...(isOwner === undefined ? {} : { is_owner: isOwner }),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

export async function setPassword(db: Queryable, userId: string, password: string) {
  if (password.length < 8) throw new ApiError('validation_failed', 'Password must have at least 8 characters');
  // A new password ends the person's open sessions (API sign-in and the OAuth sign-in page) in the same statement: it is the operator's answer
  // to a leaked password, and whoever signed in with the old one must not keep a 12-hour session.
  const { rows } = await db.query<UserRow>(
    `WITH changed AS (
       UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1 AND deleted_at IS NULL RETURNING *
     ), ended AS (
       UPDATE user_sessions SET revoked_at = now() WHERE user_id = (SELECT id FROM changed) AND revoked_at IS NULL
     ), signed_out AS (
       DELETE FROM oauth_sessions WHERE user_id = (SELECT id FROM changed)
     )
     SELECT * FROM changed`,
    [userId, await hashPassword(password)],
  );
  if (!rows[0]) throw new ApiError('not_found', `User ${userId} not found`);
  return serializeUser(rows[0]);
}

export type MembershipRow = { user_id: string; company_id: string; is_owner: boolean; permissions: string[] };

/** Replaces the permissions of one membership (owners hold every permission anyway). */
export async function setPermissions(db: Queryable, userId: string, companyId: string, permissions: string[]): Promise<MembershipRow> {
  const { rows } = await db.query<MembershipRow>(
    'UPDATE memberships SET permissions = $3 WHERE user_id = $1 AND company_id = $2 RETURNING user_id, company_id, is_owner, permissions',
    [userId, companyId, [...new Set(permissions)]],
  );
  if (!rows[0]) {
    // Said as every command says it: an unknown company or person first, then the membership.
    await requireCompany(db, companyId);
    await requireUser(db, userId);
    throw new ApiError('not_found', `User ${userId} is not a member of company ${companyId}`);
  }
  return rows[0];
}

/**
 * Adds an existing person to another company (`wsctl user add-membership`):
 * the REST API answers 409 email_taken for an email already in the service,
 * so operators are the ones who put one person in several companies. The
 * team limit holds here too.
 */
export async function addMembership(pool: Pool, userId: string, companyId: string, isOwner: boolean): Promise<MembershipRow> {
  return transaction(pool, async (db) => {
    // The person first, locked as a removal locks them (findMember): an add racing the removal that takes
    // them out of the service waits for it and then finds them gone (it gave a deleted person a membership
    // nobody could see); a removal that comes second sees this membership and keeps them. Person before
    // company, the order a removal takes them in.
    const { rows: user } = await db.query('SELECT 1 FROM users WHERE id = $1 AND deleted_at IS NULL FOR NO KEY UPDATE', [userId]);
    if (!user[0]) throw new ApiError('not_found', `User ${userId} not found`);
    // Who is already a member is told so, also in a company that is full (it was told the team was full).
    const { rowCount: member } = await db.query('SELECT 1 FROM memberships WHERE company_id = $1 AND user_id = $2', [companyId, userId]);
    if (member) throw new ApiError('conflict', `User ${userId} is already a member of company ${companyId}`);
    if (!(await lockSeat(db, companyId))) throw new ApiError('not_found', `Company ${companyId} not found`);
    const { rows } = await db.query<MembershipRow>(
      `INSERT INTO memberships (company_id, user_id, is_owner) VALUES ($1, $2, $3)
       ON CONFLICT (company_id, user_id) DO NOTHING RETURNING user_id, company_id, is_owner, permissions`,
      [companyId, userId, isOwner],
    );
    if (!rows[0]) throw new ApiError('conflict', `User ${userId} is already a member of company ${companyId}`);
    // A connected Google calendar is imported into every company of the person: the next pull (within
    // 5 minutes) lists it in full, which brings its busy time into this company too.
    await db.query('UPDATE calendar_connections SET sync_token = NULL, updated_at = now() WHERE user_id = $1', [userId]);
    return rows[0];
  });
}
