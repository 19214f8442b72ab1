// The admin API's existence checks: an action naming a company or a person that does not exist is
// not_found (wsctl exits 1 saying which), never an empty answer or a message about something else.
import type { Queryable } from '../../db/pool.ts';
import { ApiError } from '../errors.ts';

/** A list or action naming a company that does not exist is not_found (exit 1), never an empty answer. */
export async function requireCompany(db: Queryable, companyId: string): Promise<void> {
  if (!(await db.query('SELECT 1 FROM companies WHERE id = $1', [companyId])).rowCount) throw new ApiError('not_found', `Company ${companyId} not found`);
}

/** The same for a person. */
export async function requireUser(db: Queryable, userId: string): Promise<void> {
  if (!(await db.query('SELECT 1 FROM users WHERE id = $1 AND deleted_at IS NULL', [userId])).rowCount) throw new ApiError('not_found', `User ${userId} not found`);
}
