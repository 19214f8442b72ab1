// Local calendar dates of instants in an IANA zone, and the instant a local
// date starts: what bookings (a host's days), money (a company's accounting
// months and report days) and the calendar sync share.
import { Temporal } from 'temporal-polyfill';

const dateFormats = new Map<string, Intl.DateTimeFormat>();

/** The local date (`YYYY-MM-DD`) of an instant in `zone` (Intl: the zone database Temporal uses, without its allocations). */
export function localDate(epochMs: number, zone: string): string {
  let format = dateFormats.get(zone);
  if (!format) dateFormats.set(zone, (format = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' })));
  return format.format(epochMs);
}

/** The instant a local date starts in `zone` (its first existing moment). */
export function startOfLocalDate(date: string, zone: string): number {
  return Temporal.PlainDate.from(date).toZonedDateTime({ timeZone: zone }).epochMilliseconds;
}

/** The instant after a local date's last moment: the next date's start, where a window's `to` ends when it includes its date whole. */
export function endOfLocalDate(date: string, zone: string): number {
  return Temporal.PlainDate.from(date).add({ days: 1 }).toZonedDateTime({ timeZone: zone }).epochMilliseconds;
}

/** A date without a time (`YYYY-MM-DD`), which ISO 8601 allows where an instant is asked for. */
export const isDateOnly = (value: string | undefined): value is string => value !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(value);

/** The year and month (1-12) of an instant in `zone`. */
export function localMonth(epochMs: number, zone: string): { year: number; month: number } {
  const [year, month] = localDate(epochMs, zone).split('-').map(Number);
  return { year, month };
}
