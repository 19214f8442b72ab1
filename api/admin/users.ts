// Operator actions on people: passwords (for sign-in) and the permissions of
// a membership. The serializer is the operator's view of a user.
import type { Queryable } from '../../db/pool.ts';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import { hashPassword } from '../../lib/passwords.ts';
import { ApiError } from '../errors.ts';

/** A `users` row (the password hash never leaves this layer). */
export type UserRow = {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  phone: string | null;
  username: string | null;
  birthdate: string | Date | null;
  booking_slug: string | null;
  avatar_url: string | null;
  settings_preferences: Record<string, unknown>;
  password_hash: string | null;
  deleted_at: Timestamp | null;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export function serializeUser(row: UserRow, isOwner = false) {
  const fullName = [row.first_name, row.last_name].filter(Boolean).join(' ');
  return {
    id: row.id,
    email: row.email,
    first_name: row.first_name,
    last_name: row.last_name,
    full_name: fullName || null,
    is_owner: isOwner,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

export async function setPassword(db: Queryable, userId: string, password: string) {
  if (password.length < 8) throw new ApiError('validation_failed', 'Password must have at least 8 characters');
  const { rows } = await db.query<UserRow>(
    'UPDATE users SET password_hash = $2, updated_at = now() WHERE id = $1 AND deleted_at IS NULL RETURNING *',
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
  if (!rows[0]) throw new ApiError('not_found', `User ${userId} is not a member of company ${companyId}`);
  return rows[0];
}
