// SQL of bookings, and the busy time the slot function reads.
import { readAll, type Queryable } from '../../db/pool.ts';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import type { Interval, SlotContext } from '../../lib/booking-slots.ts';
import { listPage, type PaginationQuery, type TotalsCache } from '../pagination.ts';
import type { BookingLinkRow, BookingLocation } from './booking-link-queries.ts';
import type { z } from 'zod';
import type { bookingSchema } from './booking-schemas.ts';

export type BookingRow = {
  id: string;
  company_id: string;
  booking_link_id: string | null;
  user_id: string;
  calendar_event_id: string | null;
  lead_id: string | null;
  status: 'confirmed' | 'cancelled';
  starts_at: Timestamp;
  ends_at: Timestamp;
  title: string;
  location: BookingLocation | null;
  booker_name: string;
  booker_email: string;
  booker_phone: string | null;
  booker_timezone: string | null;
  /** The link's zone when the booking was made (null for bookings from before it was kept). */
  link_timezone: string | null;
  answers: Record<string, string | boolean>;
  meet_url: string | null;
  cancelled_at: Timestamp | null;
  cancellation_reason: string | null;
  cancelled_by: 'host' | 'booker' | null;
  rescheduled_from_id: string | null;
  rescheduled_to_id: string | null;
  manage_token_digest: string;
  ical_uid: string;
  ical_sequence: number;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export function serializeBooking(row: BookingRow): z.output<typeof bookingSchema> {
  return {
    id: row.id,
    booking_link_id: row.booking_link_id,
    user_id: row.user_id,
    calendar_event_id: row.calendar_event_id,
    lead_id: row.lead_id,
    status: row.status,
    title: row.title,
    starts_at: iso(row.starts_at)!,
    ends_at: iso(row.ends_at)!,
    booker: { name: row.booker_name, email: row.booker_email, phone: row.booker_phone, timezone: row.booker_timezone },
    answers: row.answers,
    location: row.location ? { type: row.location.type, value: row.location.value ?? null } : null,
    meet_url: row.meet_url,
    cancelled_at: iso(row.cancelled_at),
    cancellation_reason: row.cancellation_reason,
    cancelled_by: row.cancelled_by,
    rescheduled_from_id: row.rescheduled_from_id,
    rescheduled_to_id: row.rescheduled_to_id,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

export async function findBooking(db: Queryable, companyId: string, id: string, lock = false): Promise<BookingRow | null> {
  const { rows } = await db.query<BookingRow>(`SELECT * FROM bookings WHERE company_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`, [companyId, id]);
  return rows[0] ?? null;
}

export async function findBookingByTokenDigest(db: Queryable, digest: string): Promise<BookingRow | null> {
  const { rows } = await db.query<BookingRow>('SELECT * FROM bookings WHERE manage_token_digest = $1', [digest]);
  return rows[0] ?? null;
}

export type BookingFilters = { booking_link_id?: string; user_id?: string; status?: string; from?: string; to?: string };

export function listBookings(db: Queryable, totals: TotalsCache, companyId: string, filters: BookingFilters, page: PaginationQuery) {
  return listPage<BookingRow>(
    db,
    totals,
    {
      table: 'bookings',
      columns: '*',
      companyId,
      where: (p) => {
        const conditions: string[] = [];
        if (filters.booking_link_id) conditions.push(`booking_link_id = ${p.add(filters.booking_link_id)}`);
        if (filters.user_id) conditions.push(`user_id = ${p.add(filters.user_id)}`);
        if (filters.status) conditions.push(`status = ${p.add(filters.status)}`);
        if (filters.from) conditions.push(`ends_at > ${p.add(filters.from)}::timestamptz`);
        if (filters.to) conditions.push(`starts_at < ${p.add(filters.to)}::timestamptz`);
        return conditions;
      },
      serialize: serializeBooking,
    },
    page,
  );
}

/** Whether the host blocks booking slots with their calendar events (settings_preferences.block_overlapping_bookings). */
async function blocksOverlapping(db: Queryable, userId: string): Promise<boolean> {
  const { rows } = await db.query<{ on: boolean | null }>(
    `SELECT (settings_preferences->>'block_overlapping_bookings')::boolean AS on FROM users WHERE id = $1`,
    [userId],
  );
  return rows[0]?.on === true;
}

/**
 * What the slot function needs to judge the link's slots starting in
 * [from, to): the host's confirmed bookings (their blocked ranges, in every
 * company the host works for: one person, one agenda), the host's calendar
 * events when they block bookings, and this link's confirmed bookings per
 * local day. `ignoreBookingId` is the booking being moved by a reschedule:
 * its own time (and its calendar event) counts as free.
 */
export async function slotContext(
  db: Queryable,
  link: BookingLinkRow,
  from: number,
  to: number,
  options: { now?: number; ignoreBookingId?: string } = {},
): Promise<SlotContext> {
  // Wide enough for any buffer and any zone's day around the window.
  const margin = (link.buffer_before_minutes + link.buffer_after_minutes) * 60_000 + 2 * 86_400_000;
  const lo = new Date(from - margin);
  const hi = new Date(to + margin);
  const ignore = options.ignoreBookingId ?? null;
  // Independent reads: together on the pool (a slot list), in turn in a booking's transaction.
  const [booked, blocks, events, perDay] = await readAll(db, [
    () => db.query<{ start: Date; end: Date }>(
      `SELECT lower(blocked) AS start, upper(blocked) AS end FROM bookings
        WHERE user_id = $1 AND status = 'confirmed' AND blocked && tstzrange($2, $3) AND id IS DISTINCT FROM $4`,
      [link.user_id, lo, hi, ignore],
    ),
    () => blocksOverlapping(db, link.user_id),
    () => db.query<{ start: Date; end: Date }>(
      `SELECT starts_at AS start, ends_at AS end FROM calendar_events
        WHERE user_id = $1 AND tstzrange(starts_at, ends_at) && tstzrange($2, $3) AND ($4::text IS NULL OR booking_id IS DISTINCT FROM $4)`,
      [link.user_id, lo, hi, ignore],
    ),
    () => link.max_bookings_per_day === null
      ? Promise.resolve({ rows: [] as Array<{ day: string; n: number }> })
      : db.query<{ day: string; n: number }>(
          `SELECT to_char(starts_at AT TIME ZONE $2, 'YYYY-MM-DD') AS day, count(*)::int AS n FROM bookings
            WHERE booking_link_id = $1 AND status = 'confirmed' AND starts_at >= $3 AND starts_at < $4 AND id IS DISTINCT FROM $5
            GROUP BY 1`,
          [link.id, link.timezone, lo, hi, ignore],
        ),
  ]);
  const busy: Interval[] = booked.rows.map((b) => ({ start: b.start.getTime(), end: b.end.getTime() }));
  if (blocks) for (const e of events.rows) busy.push({ start: e.start.getTime(), end: e.end.getTime() });
  const perDayMap = new Map(perDay.rows.map((r) => [r.day, r.n]));
  return { now: options.now ?? Date.now(), busy, bookingsPerDay: perDayMap };
}
