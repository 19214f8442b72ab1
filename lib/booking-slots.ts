// Which slots of a booking link can be booked: the one function behind the
// slot list and behind booking creation, so a slot the list offers is a slot
// the booking step accepts (and the other way round).
//
// Availability is wall-clock time in the link's zone ("Mondays 09:00 to
// 17:00 in America/Mexico_City"); it is turned into instants day by day with
// Temporal (temporal-polyfill), so DST days, half-hour zones and ranges that
// cross a transition come out right. A wall time the zone skips (02:30 on a
// spring-forward day) is moved forward by the gap's length, read with the
// offset before the gap (Temporal's `compatible`, RFC 5545 §3.3.5). Slots then step in exact minutes from the
// range's start: a range crossing a transition offers every hour it really
// has (one less on a spring-forward night, one more on a fall-back night).
import { Temporal } from 'temporal-polyfill';
import { localDate, startOfLocalDate } from './local-dates.ts';


export type TimeRange = { start: string; end: string };
export type WeeklyHours = Array<{ days: number[] } & TimeRange>;
export type DateOverride = { date: string; ranges: TimeRange[] };
export type BookingWindow = { type: 'rolling'; days: number } | { type: 'range'; start_on: string; end_on: string };

export type SlotRules = {
  timezone: string;
  duration_minutes: number;
  slot_interval_minutes: number | null;
  buffer_before_minutes: number;
  buffer_after_minutes: number;
  minimum_notice_minutes: number;
  booking_window: BookingWindow;
  weekly_hours: WeeklyHours;
  date_overrides: DateOverride[];
  max_bookings_per_day: number | null;
};

/** Half-open [start, end) in epoch milliseconds. */
export type Interval = { start: number; end: number };

export type SlotContext = {
  now: number;
  /**
   * What the host cannot be booked over: confirmed bookings' blocked ranges
   * (their time widened by their buffers) and, when the host blocks
   * overlapping bookings, busy calendar events. Any order, may overlap.
   */
  busy: Interval[];
  /** Confirmed bookings of this link per local date (`YYYY-MM-DD` in the link's zone). */
  bookingsPerDay: ReadonlyMap<string, number>;
};

export type Slot = { start: number; end: number };

const MINUTE = 60_000;
const DAY = 86_400_000;

/** Minutes since midnight of "HH:MM" ("24:00" is the next midnight). */
export function minutesOf(hhmm: string): number {
  const [h, m] = hhmm.split(':').map(Number);
  return h * 60 + m;
}

/** The instant of a wall time on a local date in `zone` ("24:00" is the next day's midnight). */
function instantOf(date: Temporal.PlainDate, hhmm: string, zone: string): number {
  const minutes = minutesOf(hhmm);
  const day = minutes >= 1440 ? date.add({ days: 1 }) : date;
  const wall = day.toPlainDateTime({ hour: Math.floor((minutes % 1440) / 60), minute: minutes % 60 });
  return wall.toZonedDateTime(zone, { disambiguation: 'compatible' }).epochMilliseconds;
}

/** The availability ranges of one local date: its override when there is one (empty = day off), else the weekly hours of its weekday. */
function rangesOf(rules: SlotRules, date: Temporal.PlainDate, overrides: Map<string, TimeRange[]>): TimeRange[] {
  const override = overrides.get(date.toString());
  if (override) return override;
  return rules.weekly_hours.filter((w) => w.days.includes(date.dayOfWeek));
}

function withinWindow(rules: SlotRules, date: string, today: string): boolean {
  const window = rules.booking_window;
  if (window.type === 'range') return date >= window.start_on && date <= window.end_on;
  const last = Temporal.PlainDate.from(today).add({ days: window.days - 1 }).toString();
  return date >= today && date <= last;
}

/** Merged, sorted busy intervals, for binary search. */
function merge(intervals: Interval[]): Interval[] {
  const sorted = intervals.filter((i) => i.end > i.start).sort((a, b) => a.start - b.start);
  const out: Interval[] = [];
  for (const i of sorted) {
    const last = out[out.length - 1];
    if (last && i.start <= last.end) last.end = Math.max(last.end, i.end);
    else out.push({ ...i });
  }
  return out;
}

/** Whether [start, end) overlaps any of the merged intervals. */
function overlaps(merged: Interval[], start: number, end: number): boolean {
  // The first interval ending after `start`…
  let lo = 0;
  let hi = merged.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (merged[mid].end <= start) lo = mid + 1;
    else hi = mid;
  }
  // …overlaps when it starts before `end`.
  return lo < merged.length && merged[lo].start < end;
}

/**
 * The free slots of a link starting in [from, to), in order. A slot is free
 * when it starts no earlier than the minimum notice, on a local date inside
 * the booking window, on a day below the per-day cap, and its time widened by
 * the link's buffers overlaps nothing busy.
 */
export function freeSlots(rules: SlotRules, context: SlotContext, from: number, to: number): Slot[] {
  const zone = rules.timezone;
  const duration = rules.duration_minutes * MINUTE;
  const step = (rules.slot_interval_minutes ?? rules.duration_minutes) * MINUTE;
  const before = rules.buffer_before_minutes * MINUTE;
  const after = rules.buffer_after_minutes * MINUTE;
  const earliest = context.now + rules.minimum_notice_minutes * MINUTE;
  const today = localDate(context.now, zone);
  const busy = merge(context.busy);
  const overrides = new Map(rules.date_overrides.map((o) => [o.date, o.ranges]));
  const slots: Slot[] = [];
  // Every local date whose ranges may reach into [from, to): one day of
  // margin on each side covers any zone offset and a range ending at 24:00.
  let date = Temporal.PlainDate.from(localDate(Math.max(from, earliest) - DAY, zone));
  const lastDate = Temporal.PlainDate.from(localDate(to + DAY, zone));
  for (; Temporal.PlainDate.compare(date, lastDate) <= 0; date = date.add({ days: 1 })) {
    const day = date.toString();
    if (!withinWindow(rules, day, today)) continue;
    if (rules.max_bookings_per_day !== null && (context.bookingsPerDay.get(day) ?? 0) >= rules.max_bookings_per_day) continue;
    for (const range of rangesOf(rules, date, overrides)) {
      const rangeStart = instantOf(date, range.start, zone);
      const rangeEnd = instantOf(date, range.end, zone);
      for (let start = rangeStart; start + duration <= rangeEnd; start += step) {
        if (start < from || start < earliest) continue;
        if (start >= to) break;
        const end = start + duration;
        if (overlaps(busy, start - before, end + after)) continue;
        slots.push({ start, end });
      }
    }
  }
  // Ranges of one day may be given in any order or overlap: sort, drop repeats.
  slots.sort((a, b) => a.start - b.start);
  return slots.filter((slot, i) => i === 0 || slot.start !== slots[i - 1].start);
}

/** Whether a slot starting at `start` is one `freeSlots` offers: the booking step's check. */
export function isBookable(rules: SlotRules, context: SlotContext, start: number): boolean {
  return freeSlots(rules, context, start, start + 1).some((slot) => slot.start === start);
}

/**
 * Sorted slots grouped by their local date in `zone`. The date is looked up
 * once per day, not per slot: a slot before the current day's end belongs to
 * it (a 60-day list of 1,000+ slots is a few dozen zone lookups).
 */
export function groupByLocalDate(slots: Slot[], zone: string): Array<{ date: string; slots: Slot[] }> {
  const days: Array<{ date: string; slots: Slot[] }> = [];
  let dayEnd = -Infinity;
  for (const slot of slots) {
    if (slot.start >= dayEnd) {
      const date = localDate(slot.start, zone);
      dayEnd = startOfLocalDate(Temporal.PlainDate.from(date).add({ days: 1 }).toString(), zone);
      days.push({ date, slots: [] });
    }
    days[days.length - 1].slots.push(slot);
  }
  return days;
}
