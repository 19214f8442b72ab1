// SQL of team members: people (`users`, unique across the service) and their
// membership in the key's company (`memberships`: is_owner, permissions).
import { isDeepStrictEqual } from 'node:util';
import { endConnectionOfLeaver } from '../../db/calendar-sync.ts';
import type { JobSender } from '../../db/job-sender.ts';
import type { Queryable } from '../../db/pool.ts';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import { objectId } from '../../lib/objectid.ts';
import { deleteMedia } from '../../storage/media-items.ts';
import { ApiError, validationFailed } from '../errors.ts';
import type { TotalsCache } from '../pagination.ts';
import { listPage, searchWhere, type PaginationQuery } from '../pagination.ts';
import type { Background, BG_MODES, BRANDING_THEMES, DASHBOARD_THEMES, SettingsPreferencesWrite, UserCreate, UserUpdate, userSchema } from './user-schemas.ts';
import { setList } from '../../db/tables.ts';
import { teamSize } from './company-queries.ts';
import type { z } from 'zod';

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

/** `membership_updated_at`: when the company's own part of the member (is_owner) last changed; null if never. */
export type MemberRow = UserRow & { company_id: string; is_owner: boolean; membership_updated_at: Timestamp | null };

/** A member as the company reads it: the person's columns and the membership's (migration 104). */
const MEMBER_COLUMNS = 'u.*, m.company_id, m.is_owner, m.updated_at AS membership_updated_at';

/** Members of a company as a table with `company_id` (what listPage pages over). */
const MEMBERS = `(SELECT ${MEMBER_COLUMNS} FROM users u JOIN memberships m ON m.user_id = u.id WHERE u.deleted_at IS NULL) AS members`;

// What is stored was validated by the write schema (user-schemas.ts), so it holds its enums' values.
type StoredBackground = { bg_mode?: (typeof BG_MODES)[number]; bg_color_from?: string; bg_color_to?: string | null; bg_angle?: number };
type StoredPreferences = {
  theme?: (typeof DASHBOARD_THEMES)[number];
  block_overlapping_bookings?: boolean;
  booking_branding?: { theme?: (typeof BRANDING_THEMES)[number]; light?: StoredBackground; dark?: StoredBackground };
};

const background = (b: StoredBackground | undefined) => ({
  bg_mode: b?.bg_mode ?? null,
  bg_color_from: b?.bg_color_from ?? null,
  bg_color_to: b?.bg_color_to ?? null,
  bg_angle: b?.bg_angle ?? null,
});

/** Stored preferences as the read shows them, every member present (null or the default). */
function preferencesRead(prefs: StoredPreferences) {
  return {
    theme: prefs.theme ?? null,
    block_overlapping_bookings: prefs.block_overlapping_bookings ?? false,
    booking_branding: { theme: prefs.booking_branding?.theme ?? null, light: background(prefs.booking_branding?.light), dark: background(prefs.booking_branding?.dark) },
  };
}

/** The later of two ISO timestamps of one form (comparable as text); `b` may be absent. */
function laterOf(a: string, b: string | null): string {
  return b !== null && b > a ? b : a;
}

export function serializeMember(row: MemberRow, bookingUrl: string): z.output<typeof userSchema> {
  const prefs = (row.settings_preferences ?? {}) as StoredPreferences;
  const fullName = [row.first_name, row.last_name].filter(Boolean).join(' ');
  return {
    id: row.id,
    first_name: row.first_name,
    last_name: row.last_name,
    full_name: fullName || null,
    email: row.email,
    phone: row.phone,
    username: row.username,
    booking_slug: row.booking_slug,
    booking_url: row.booking_slug ? `${bookingUrl}/${row.booking_slug}` : null,
    avatar_url: row.avatar_url,
    is_owner: row.is_owner,
    settings_preferences: preferencesRead(prefs),
    created_at: iso(row.created_at)!,
    // The later of the person's change and this company's membership change (both ISO, comparable as text).
    updated_at: laterOf(iso(row.updated_at)!, iso(row.membership_updated_at)),
  };
}

/** Merges written preferences into the stored ones; the flat booking_branding form writes the light theme. */
export function mergePreferences(stored: StoredPreferences, write: SettingsPreferencesWrite | undefined): StoredPreferences {
  if (!write) return stored;
  const out: StoredPreferences = { ...stored };
  // null clears: the key goes, and reads null again.
  const set = <T extends object, K extends keyof T>(target: T, key: K, value: T[K] | null | undefined) => {
    if (value === null) delete target[key];
    else if (value !== undefined) target[key] = value;
  };
  const merged = (into: StoredBackground | undefined, write: Background): StoredBackground => {
    const result = { ...(into ?? {}) };
    for (const key of ['bg_mode', 'bg_color_from', 'bg_color_to', 'bg_angle'] as const) set(result, key, write[key] as never);
    return result;
  };
  set(out, 'theme', write.theme);
  if (write.block_overlapping_bookings !== undefined) out.block_overlapping_bookings = write.block_overlapping_bookings;
  if (write.booking_branding) {
    const { theme, light, dark, bg_mode, bg_color_from, bg_color_to } = write.booking_branding;
    const branding = { ...(stored.booking_branding ?? {}) };
    set(branding, 'theme', theme);
    const lightWrite: Background = light ?? { bg_mode, bg_color_from, bg_color_to };
    branding.light = merged(branding.light, lightWrite);
    if (dark) branding.dark = merged(branding.dark, dark);
    out.booking_branding = branding;
  }
  return out;
}

/**
 * A member of the company. `lock` (an update or a removal): NO KEY UPDATE, which serializes the
 * member's changes without blocking the KEY SHARE an insert naming the person takes (a booking link
 * made for them at that moment holds their membership and then inserts; FOR UPDATE deadlocked with it).
 */
export async function findMember(db: Queryable, companyId: string, userId: string, lock = false): Promise<MemberRow | null> {
  const { rows } = await db.query<MemberRow>(
    `SELECT ${MEMBER_COLUMNS} FROM users u JOIN memberships m ON m.user_id = u.id
      WHERE m.company_id = $1 AND u.id = $2 AND u.deleted_at IS NULL${lock ? ' FOR NO KEY UPDATE OF u, m' : ''}`,
    [companyId, userId],
  );
  return rows[0] ?? null;
}

/** The company's members, newest first; `term` searches name (first and last) and email. */
export function listMembers(db: Queryable, totals: TotalsCache, companyId: string, bookingUrl: string, page: PaginationQuery, term?: string) {
  return listPage<MemberRow>(
    db,
    totals,
    {
      table: MEMBERS,
      columns: '*',
      companyId,
      searching: !!term,
      where: searchWhere(term, [`concat_ws(' ', first_name, last_name)`, 'email']),
      serialize: (row) => serializeMember(row, bookingUrl),
    },
    page,
  );
}

/** A unique violation of users as the contract's errors: the email 409, the booking slug 422. */
function userTaken(error: unknown): never {
  const pg = error as { code?: string; constraint?: string };
  if (pg.code === '23505' && pg.constraint === 'users_email_key') throw new ApiError('email_taken');
  if (pg.code === '23505' && pg.constraint === 'users_booking_slug_key') throw validationFailed({ booking_slug: ['ya lo usa otra persona'] });
  throw error;
}

/**
 * Locks the company row, so concurrent adds (the API's creates, wsctl's
 * add-membership) take turns at the last free seat, and refuses at
 * max_team_size (422 team_limit_reached). False when there is no such company.
 */
export async function lockSeat(db: Queryable, companyId: string): Promise<boolean> {
  // The lock first, the count after in a statement of its own: a count in the
  // locking statement would read the snapshot taken before the wait, missing
  // the member the previous holder just added.
  const { rows } = await db.query<{ max_team_size: number }>('SELECT max_team_size FROM companies WHERE id = $1 FOR NO KEY UPDATE', [companyId]);
  if (!rows[0]) return false;
  if ((await teamSize(db, companyId)) >= rows[0].max_team_size) throw new ApiError('team_limit_reached');
  return true;
}

const PROFILE = ['first_name', 'last_name', 'email', 'phone', 'username', 'birthdate', 'booking_slug'] as const;

export async function createMember(db: Queryable, companyId: string, data: UserCreate, actingUserId?: string): Promise<MemberRow> {
  if (data.is_owner) await assertActingOwner(db, companyId, actingUserId);
  const id = objectId();
  // No password: nobody signs in as the person until an operator sets one (wsctl user set-password);
  // a sign-in before that costs the same scrypt as a wrong password (lib/passwords.ts).
  const cols: Record<string, unknown> = { id, settings_preferences: JSON.stringify(mergePreferences({}, data.settings_preferences)) };
  for (const key of PROFILE) if (data[key] !== undefined) cols[key] = key === 'email' ? data.email.toLowerCase() : data[key];
  const names = Object.keys(cols);
  await db
    .query(`INSERT INTO users (${names.join(', ')}) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')})`, Object.values(cols))
    .catch(userTaken);
  await db.query('INSERT INTO memberships (company_id, user_id, is_owner) VALUES ($1, $2, $3)', [companyId, id, data.is_owner ?? false]);
  return (await findMember(db, companyId, id))!;
}

/**
 * `is_owner` grants every permission of the company, so only an owner gives or takes it, or removes
 * an owner from the team: a member with a key holding `update-users` cannot make themselves owner.
 * 403 owner_required.
 */
export async function assertActingOwner(db: Queryable, companyId: string, actingUserId: string | undefined): Promise<void> {
  // The company first (every ownership change takes it): a demotion of the acting user committed
  // meanwhile is seen by the read below, so a just-demoted owner cannot promote anyone.
  await db.query('SELECT id FROM companies WHERE id = $1 FOR NO KEY UPDATE', [companyId]);
  const { rows } = await db.query<{ is_owner: boolean }>('SELECT is_owner FROM memberships WHERE company_id = $1 AND user_id = $2', [companyId, actingUserId ?? '']);
  if (!rows[0]?.is_owner) throw new ApiError('owner_required');
}

/** Owners of the company other than `userId`. */
async function otherOwners(db: Queryable, companyId: string, userId: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM memberships m JOIN users u ON u.id = m.user_id AND u.deleted_at IS NULL
      WHERE m.company_id = $1 AND m.is_owner AND m.user_id <> $2`,
    [companyId, userId],
  );
  return rows[0].n;
}

/**
 * A person's own fields (name, email, booking slug, preferences, avatar) are
 * one record shared by every company they belong to: a company changes them
 * only while the person belongs to it alone, or when the person acts for
 * themselves (their own key). Otherwise company A could change the sign-in
 * email of company B's owner. Membership fields (`is_owner`) stay each
 * company's. 422 validation_failed naming each such field. An owner's fields
 * are changed by an owner or by themselves: 403 owner_required.
 */
export async function assertProfileEditable(db: Queryable, companyId: string, userId: string, actingUserId: string | undefined, fields: string[]): Promise<void> {
  if (!fields.length || userId === actingUserId) return;
  // An owner's own fields are changed by an owner or by themselves: a member with `update-users` could
  // otherwise change an owner's sign-in email (and lock them out) or take their booking address.
  const { rows: target } = await db.query<{ is_owner: boolean }>('SELECT is_owner FROM memberships WHERE company_id = $1 AND user_id = $2', [companyId, userId]);
  if (target[0]?.is_owner) await assertActingOwner(db, companyId, actingUserId);
  const { rowCount } = await db.query('SELECT 1 FROM memberships WHERE user_id = $1 AND company_id <> $2 LIMIT 1', [userId, companyId]);
  if (!rowCount) return;
  const reason = 'esta persona pertenece también a otra empresa: solo ella misma cambia sus datos personales';
  throw validationFailed(Object.fromEntries(fields.map((field) => [field, [reason]])));
}

/**
 * Whether `value` is what is stored. Only fields a read shows: `birthdate` is written but never read,
 * so taking an unchanged one would tell a caller without the right to change it what it is.
 */
function unchanged(existing: MemberRow, key: string, value: unknown): boolean {
  if (key === 'birthdate') return false;
  const stored = (existing as Record<string, unknown>)[key];
  // Preferences: the same once read (stored `{}` and the defaults written out are one setting).
  if (key === 'settings_preferences') return isDeepStrictEqual(preferencesRead(JSON.parse(value as string)), preferencesRead((stored ?? {}) as StoredPreferences));
  return value === stored;
}

export async function updateMember(db: Queryable, companyId: string, existing: MemberRow, data: UserUpdate, actingUserId?: string): Promise<MemberRow> {
  const cols: Record<string, unknown> = {};
  for (const key of PROFILE) if (data[key] !== undefined) cols[key] = key === 'email' ? (data.email as string).toLowerCase() : data[key];
  if (data.settings_preferences) cols.settings_preferences = JSON.stringify(mergePreferences(existing.settings_preferences as StoredPreferences, data.settings_preferences));
  // A field sent as it is stored is no change (a client writing back what it read): only changes
  // are checked and written, as for `is_owner` below.
  for (const key of Object.keys(cols)) if (unchanged(existing, key, cols[key])) delete cols[key];
  const names = Object.keys(cols);
  await assertProfileEditable(db, companyId, existing.id, actingUserId, names);
  if (names.length) {
    await db
      .query(`UPDATE users SET ${setList(names, 2)}, updated_at = now() WHERE id = $1`, [existing.id, ...Object.values(cols)])
      .catch(userTaken);
  }
  if (data.is_owner !== undefined && data.is_owner !== existing.is_owner) {
    await assertActingOwner(db, companyId, actingUserId);
    await db.query('SELECT id FROM companies WHERE id = $1 FOR NO KEY UPDATE', [companyId]);
    if (!data.is_owner && (await otherOwners(db, companyId, existing.id)) === 0) throw new ApiError('last_owner');
    // The membership is this company's: its change is its own updated_at, not the person's (other companies read that).
    await db.query('UPDATE memberships SET is_owner = $3, updated_at = now() WHERE company_id = $1 AND user_id = $2', [companyId, existing.id, data.is_owner]);
  }
  return (await findMember(db, companyId, existing.id))!;
}

/**
 * Removes the membership; a person left in no company is soft-deleted (kept
 * for history, hidden everywhere; the email and booking slug become free
 * again). The member's API keys of this company are revoked and their
 * booking links here switched off (active: false) and their OAuth grants
 * for it and their sessions in it revoked, in the same transaction.
 */
export async function removeMember(db: Queryable, jobs: JobSender, companyId: string, member: MemberRow): Promise<void> {
  // NO KEY UPDATE, as every lock of the company row here: it serializes the team's changes without
  // blocking the KEY SHARE locks of inserts referencing the company. FOR UPDATE deadlocked with a booking,
  // which holds its link row and then inserts (KEY SHARE on the company) while this waits for the link.
  await db.query('SELECT id FROM companies WHERE id = $1 FOR NO KEY UPDATE', [companyId]);
  if (member.is_owner && (await otherOwners(db, companyId, member.id)) === 0) throw new ApiError('last_owner');
  await db.query('DELETE FROM memberships WHERE company_id = $1 AND user_id = $2', [companyId, member.id]);
  await db.query('UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE company_id = $1 AND user_id = $2', [companyId, member.id]);
  // Their Google busy time is no longer this company's (their own events here stay, as history).
  await db.query(`DELETE FROM calendar_events WHERE company_id = $1 AND user_id = $2 AND source = 'google'`, [companyId, member.id]);
  // Their sign-in sessions in this company end for good too: a session is checked against the membership,
  // so without this a membership given back later (wsctl user add-membership) would revive them.
  await db.query('UPDATE user_sessions SET revoked_at = now() WHERE company_id = $1 AND user_id = $2 AND revoked_at IS NULL', [companyId, member.id]);
  // Their OAuth connections to this company end for good: a membership given back later revives none of them.
  await db.query('UPDATE oauth_grants SET revoked_at = coalesce(revoked_at, now()) WHERE company_id = $1 AND user_id = $2', [companyId, member.id]);
  const { rowCount } = await db.query('SELECT 1 FROM memberships WHERE user_id = $1', [member.id]);
  const leaving = !rowCount;
  // Their booking links here take no more bookings (kept, with their bookings, for history). When they
  // leave the service, every link of theirs here also loses its public_url (their slug is free again):
  // those already off are written too, so the cached booking-link lists are refreshed.
  await db.query('UPDATE booking_links SET active = false, updated_at = now() WHERE company_id = $1 AND user_id = $2 AND (active OR $3)', [companyId, member.id, leaving]);
  if (leaving) {
    // Gone from the service, their photo is too: its public URL (cached a year as immutable) stops answering,
    // as a removed avatar's does. Stored under the company they uploaded it in, which may be another.
    const { rows: avatar } = await db.query<{ id: string; company_id: string }>(
      'SELECT m.id, m.company_id FROM users u JOIN media m ON m.id = u.avatar_media_id WHERE u.id = $1',
      [member.id],
    );
    await db.query(
      'UPDATE users SET deleted_at = now(), updated_at = now(), avatar_url = NULL, avatar_thumbnail_url = NULL, avatar_media_id = NULL WHERE id = $1',
      [member.id],
    );
    for (const media of avatar) await deleteMedia(db, media.company_id, [media.id]);
    // Gone from the service: their Google Calendar connection ends too (its token revoked at Google).
    await endConnectionOfLeaver(db, jobs, member.id);
  }
}
