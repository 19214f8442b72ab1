// SQL of calendar events: every function takes the pool or a transaction
// client first and is scoped by company.
import type { Queryable } from '../../db/pool.ts';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import { objectId } from '../../lib/objectid.ts';
import type { TotalsCache } from '../pagination.ts';
import { listPage, type PaginationQuery } from '../pagination.ts';
import type { CalendarEventCreate, CalendarEventUpdate, calendarEventSchema } from './calendar-event-schemas.ts';
import { changesAny, setList } from '../../db/tables.ts';
import type { z } from 'zod';

export type CalendarEventRow = {
  id: string;
  company_id: string;
  user_id: string;
  title: string;
  description: string | null;
  location: string | null;
  color: string;
  starts_at: Timestamp;
  ends_at: Timestamp;
  all_day: boolean;
  timezone: string;
  kind: 'event' | 'meeting' | 'task';
  source: 'native' | 'booking' | 'google';
  meet_url: string | null;
  create_meet: boolean;
  sync_to_google: boolean | null;
  attendees: Array<{ name?: string | null; email: string }>;
  reminders_minutes: number[];
  google_event_id: string | null;
  booking_link_id: string | null;
  booking_id: string | null;
  booker_lead_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
};

/** The read of the contract; `sync_to_google` is a write-only control and is not shown. */
export function serializeCalendarEvent(row: CalendarEventRow): z.output<typeof calendarEventSchema> {
  return {
    id: row.id,
    user_id: row.user_id,
    title: row.title,
    description: row.description,
    location: row.location,
    color: row.color,
    starts_at: iso(row.starts_at)!,
    ends_at: iso(row.ends_at)!,
    all_day: row.all_day,
    timezone: row.timezone,
    kind: row.kind,
    source: row.source,
    meet_url: row.meet_url,
    // The contract: it applies only when kind is not task; a task reads false (the request is kept for a later change of kind).
    create_meet: row.create_meet && row.kind !== 'task',
    attendees: row.attendees.map((a) => ({ name: a.name ?? null, email: a.email })),
    reminders_minutes: row.reminders_minutes,
    google_event_id: row.google_event_id,
    booking_link_id: row.booking_link_id,
    booking_id: row.booking_id,
    booker_lead_id: row.booker_lead_id,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

/**
 * Whether the person works for the company. `lock`: hold the membership (FOR SHARE) to the end of the
 * transaction, so a removal (which deletes it) waits for the write that relied on it, and then sees
 * what that write made (a booking link it switches off).
 */
export async function isMember(db: Queryable, companyId: string, userId: string, lock = false): Promise<boolean> {
  const { rowCount } = await db.query(
    `SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id AND u.deleted_at IS NULL WHERE m.company_id = $1 AND m.user_id = $2${lock ? ' FOR SHARE OF m' : ''}`,
    [companyId, userId],
  );
  return (rowCount ?? 0) > 0;
}

type Columns = Omit<CalendarEventCreate, 'user_id'> & { user_id?: string };

function values(data: Partial<Columns>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...data };
  if (data.attendees !== undefined) out.attendees = JSON.stringify(data.attendees);
  return out;
}

export async function insertCalendarEvent(db: Queryable, companyId: string, data: Columns & { user_id: string }): Promise<CalendarEventRow> {
  const cols = values(data);
  const names = ['id', 'company_id', ...Object.keys(cols)];
  const { rows } = await db.query<CalendarEventRow>(
    `INSERT INTO calendar_events (${names.join(', ')}) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING *`,
    [objectId(), companyId, ...Object.values(cols)],
  );
  return rows[0];
}

export async function findCalendarEvent(db: Queryable, companyId: string, id: string, lock = false): Promise<CalendarEventRow | null> {
  const { rows } = await db.query<CalendarEventRow>(
    `SELECT * FROM calendar_events WHERE company_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
    [companyId, id],
  );
  return rows[0] ?? null;
}

/**
 * Writes the changed fields and moves `updated_at`, only when one of them differs from what is stored
 * (as `updateRow` does): null when nothing would change, so the caller neither pushes the event to
 * Google nor moves the list cache.
 */
export async function updateCalendarEvent(db: Queryable, companyId: string, id: string, data: CalendarEventUpdate): Promise<CalendarEventRow | null> {
  const cols = values(data);
  const names = Object.keys(cols);
  if (names.length === 0) return null;
  const { rows } = await db.query<CalendarEventRow>(
    `UPDATE calendar_events SET ${setList(names, 3)}, updated_at = now() WHERE company_id = $1 AND id = $2${changesAny(names, 3)} RETURNING *`,
    [companyId, id, ...Object.values(cols)],
  );
  return rows[0] ?? null;
}

export async function deleteCalendarEvent(db: Queryable, companyId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('DELETE FROM calendar_events WHERE company_id = $1 AND id = $2', [companyId, id]);
  return (rowCount ?? 0) > 0;
}

export type CalendarEventFilters = { user_id?: string; kind?: string; source?: string; from?: string; to?: string };

/** A page of events; `from`/`to` select events overlapping the window (ending after `from`, starting before `to`). */
export function listCalendarEvents(db: Queryable, totals: TotalsCache, companyId: string, filters: CalendarEventFilters, page: PaginationQuery) {
  return listPage<CalendarEventRow>(
    db,
    totals,
    {
      table: 'calendar_events',
      columns: '*',
      companyId,
      where: (p) => {
        const conditions: string[] = [];
        if (filters.user_id) conditions.push(`user_id = ${p.add(filters.user_id)}`);
        if (filters.kind) conditions.push(`kind = ${p.add(filters.kind)}`);
        if (filters.source) conditions.push(`source = ${p.add(filters.source)}`);
        if (filters.from && filters.to && Date.parse(filters.from) >= Date.parse(filters.to)) {
          // The contract's two conditions as written: a range cannot run backwards (PostgreSQL refuses
          // it), and one from an instant to itself is empty, where the conditions still hold for the
          // events in progress at that instant ("what is on now?").
          conditions.push(`ends_at > ${p.add(filters.from)}::timestamptz`, `starts_at < ${p.add(filters.to)}::timestamptz`);
        } else if (filters.from || filters.to) {
          // "Ending after from, starting before to" as one range overlap, which the range index answers.
          conditions.push(`tstzrange(starts_at, ends_at) && tstzrange(${p.add(filters.from ?? null)}::timestamptz, ${p.add(filters.to ?? null)}::timestamptz, '()')`);
        }
        return conditions;
      },
      serialize: serializeCalendarEvent,
    },
    page,
  );
}
