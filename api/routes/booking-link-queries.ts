// SQL of booking links: every function takes the pool or a transaction
// client first and is scoped by company (the public page's lookup by host
// and slug is the one exception, and answers only what the page shows).
import { transaction, type Queryable } from '../../db/pool.ts';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import type { BookingWindow, DateOverride, SlotRules, WeeklyHours } from '../../lib/booking-slots.ts';
import { publicUrl } from '../../lib/booking-tokens.ts';
import { objectId } from '../../lib/objectid.ts';
import { validationFailed } from '../errors.ts';
import { listPage, type PaginationQuery, type TotalsCache } from '../pagination.ts';
import type { BookingLinkCreate, BookingLinkUpdate, LOCATION_TYPES, QUESTION_TYPES, bookingLinkSchema } from './booking-link-schemas.ts';
import { DEFAULT_WEEKLY_HOURS } from './booking-link-schemas.ts';
import { slugOrSkuTaken } from './slug-queries.ts';
import { changesAny, idOrSlugMatch, setList } from '../../db/tables.ts';
import type { z } from 'zod';

export type Question = { key: string; label: string; type: (typeof QUESTION_TYPES)[number]; required?: boolean; options?: string[] };
export type BookingLocation = { type: (typeof LOCATION_TYPES)[number]; value?: string | null };

export type BookingLinkRow = {
  id: string;
  company_id: string;
  user_id: string;
  slug: string;
  title: string;
  description: string | null;
  active: boolean;
  duration_minutes: number;
  slot_interval_minutes: number | null;
  buffer_before_minutes: number;
  buffer_after_minutes: number;
  minimum_notice_minutes: number;
  booking_window: BookingWindow;
  timezone: string;
  weekly_hours: WeeklyHours;
  date_overrides: DateOverride[];
  location: BookingLocation | null;
  max_bookings_per_day: number | null;
  questions: Question[];
  created_at: Timestamp;
  updated_at: Timestamp;
  /**
   * Joined: the host's booking slug, for `public_url`; null once the host is
   * soft-deleted (in no company any more), whose slug is free for someone
   * else to take: the link's URL would open that person's page.
   */
  host_booking_slug: string | null;
};

export function serializeBookingLink(row: BookingLinkRow, bookingUrl: string): z.output<typeof bookingLinkSchema> {
  return {
    id: row.id,
    user_id: row.user_id,
    slug: row.slug,
    title: row.title,
    description: row.description,
    active: row.active,
    duration_minutes: row.duration_minutes,
    slot_interval_minutes: row.slot_interval_minutes,
    buffer_before_minutes: row.buffer_before_minutes,
    buffer_after_minutes: row.buffer_after_minutes,
    minimum_notice_minutes: row.minimum_notice_minutes,
    booking_window: row.booking_window,
    timezone: row.timezone,
    weekly_hours: row.weekly_hours,
    date_overrides: row.date_overrides,
    location: row.location ? { type: row.location.type, value: row.location.value ?? null } : null,
    max_bookings_per_day: row.max_bookings_per_day,
    questions: row.questions.map((q) => ({ key: q.key, label: q.label, type: q.type, required: q.required ?? false, options: q.options ?? null })),
    public_url: publicUrl(bookingUrl, row.host_booking_slug, row.slug),
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

/** The rules the slot function reads. */
export function slotRulesOf(row: BookingLinkRow): SlotRules {
  return {
    timezone: row.timezone,
    duration_minutes: row.duration_minutes,
    slot_interval_minutes: row.slot_interval_minutes,
    buffer_before_minutes: row.buffer_before_minutes,
    buffer_after_minutes: row.buffer_after_minutes,
    minimum_notice_minutes: row.minimum_notice_minutes,
    booking_window: row.booking_window,
    weekly_hours: row.weekly_hours,
    date_overrides: row.date_overrides,
    max_bookings_per_day: row.max_bookings_per_day,
  };
}

const HOST_SLUG = 'CASE WHEN u.deleted_at IS NULL THEN u.booking_slug END';
const SELECT = `SELECT l.*, ${HOST_SLUG} AS host_booking_slug FROM booking_links l JOIN users u ON u.id = l.user_id`;
const JSON_COLUMNS = new Set(['booking_window', 'weekly_hours', 'date_overrides', 'location', 'questions']);

function values(data: Partial<BookingLinkCreate>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(data)) {
    if (value === undefined) continue;
    out[name] = JSON_COLUMNS.has(name) && value !== null ? JSON.stringify(value) : value;
  }
  return out;
}

export async function insertBookingLink(db: Queryable, companyId: string, data: BookingLinkCreate): Promise<string> {
  const cols = values({ weekly_hours: DEFAULT_WEEKLY_HOURS, ...data });
  const names = ['id', 'company_id', ...Object.keys(cols)];
  const id = objectId();
  await db
    .query(`INSERT INTO booking_links (${names.join(', ')}) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')})`, [id, companyId, ...Object.values(cols)])
    .catch(slugTaken);
  return id;
}

/** Writes the fields given, and moves `updated_at`, only when one of them differs from what is stored. */
export async function updateBookingLink(db: Queryable, companyId: string, id: string, data: BookingLinkUpdate): Promise<void> {
  const cols = values(data);
  const names = Object.keys(cols);
  if (!names.length) return;
  await db
    .query(`UPDATE booking_links SET ${setList(names, 3)}, updated_at = now() WHERE company_id = $1 AND id = $2${changesAny(names, 3)}`, [companyId, id, ...Object.values(cols)])
    .catch(slugTaken);
}

/** The UNIQUE indexes name the rule that was broken: in the company, or among the host's links (public URLs). */
function slugTaken(error: unknown): never {
  if ((error as { constraint?: string }).constraint === 'booking_links_host_slug_key') {
    throw validationFailed({ slug: ['el anfitrión ya tiene un enlace con ese slug (su URL pública sería la misma)'] });
  }
  return slugOrSkuTaken(error);
}

/**
 * Deletes a link; its bookings stay with `booking_link_id` null (ON DELETE SET NULL). Their rows are
 * locked first, in the order a reschedule takes its locks (the booking, then its link): deleting the
 * link first and then the bookings deadlocked with a reschedule of one of them (a concurrency review).
 */
export async function deleteBookingLink(db: Queryable, companyId: string, id: string): Promise<boolean> {
  return transaction(db, async (client) => {
    await client.query('SELECT id FROM bookings WHERE company_id = $1 AND booking_link_id = $2 ORDER BY id FOR UPDATE', [companyId, id]);
    const { rowCount } = await client.query('DELETE FROM booking_links WHERE company_id = $1 AND id = $2', [companyId, id]);
    return (rowCount ?? 0) > 0;
  });
}

export async function findBookingLink(db: Queryable, companyId: string, id: string, lock = false): Promise<BookingLinkRow | null> {
  const { rows } = await db.query<BookingLinkRow>(`${SELECT} WHERE l.company_id = $1 AND l.id = $2${lock ? ' FOR UPDATE OF l' : ''}`, [companyId, id]);
  return rows[0] ?? null;
}

/** A link by its id, or by its slug when the value is not shaped like an id (idOrSlugMatch), in one query. */
export async function findBookingLinkByIdOrSlug(db: Queryable, companyId: string, value: string): Promise<BookingLinkRow | null> {
  const { rows } = await db.query<BookingLinkRow>(`${SELECT} WHERE l.company_id = $1 AND ${idOrSlugMatch(value, '$2', 'l.')}`, [companyId, value]);
  return rows[0] ?? null;
}

/** The link behind a public URL: the host's booking slug and the link's slug. */
export async function findPublicBookingLink(db: Queryable, hostSlug: string, linkSlug: string): Promise<BookingLinkRow | null> {
  const { rows } = await db.query<BookingLinkRow>(
    `${SELECT} JOIN memberships m ON m.company_id = l.company_id AND m.user_id = l.user_id
      WHERE u.booking_slug = $1 AND u.deleted_at IS NULL AND l.slug = $2`,
    [hostSlug, linkSlug],
  );
  return rows[0] ?? null;
}

/** A host's active links, for their public landing page (`/book/<booking_slug>`), in title order. */
export async function findPublicBookingLinks(db: Queryable, hostSlug: string): Promise<BookingLinkRow[]> {
  const { rows } = await db.query<BookingLinkRow>(
    `${SELECT} JOIN memberships m ON m.company_id = l.company_id AND m.user_id = l.user_id
      WHERE u.booking_slug = $1 AND u.deleted_at IS NULL AND l.active ORDER BY l.title, l.slug LIMIT 200`,
    [hostSlug],
  );
  return rows;
}

export type BookingLinkFilters = { user_id?: string; active?: boolean };

export function listBookingLinks(db: Queryable, totals: TotalsCache, companyId: string, bookingUrl: string, filters: BookingLinkFilters, page: PaginationQuery) {
  return listPage<BookingLinkRow>(
    db,
    totals,
    {
      table: 'booking_links',
      columns: `*, (SELECT ${HOST_SLUG} FROM users u WHERE u.id = booking_links.user_id) AS host_booking_slug`,
      companyId,
      where: (p) => {
        const conditions: string[] = [];
        if (filters.user_id) conditions.push(`user_id = ${p.add(filters.user_id)}`);
        if (filters.active !== undefined) conditions.push(`active = ${p.add(filters.active)}`);
        return conditions;
      },
      serialize: (row) => serializeBookingLink(row, bookingUrl),
    },
    page,
  );
}
