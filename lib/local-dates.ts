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

/** The year and month (1-12) of an instant in `zone`. */
export function localMonth(epochMs: number, zone: string): { year: number; month: number } {
  const [year, month] = localDate(epochMs, zone).split('-').map(Number);
  return { year, month };
}
