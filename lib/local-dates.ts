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

/**
 * Zones already accepted. Constructing an Intl.DateTimeFormat is the check,
 * and it cost a slot query (which names a zone on every request) about 0.4 ms
 * of CPU: a tenth of the request (docs/bench.md, booking slots). Only valid
 * zones are kept (a few hundred names, written one way), at most
 * KNOWN_ZONES_MAX; past that, each is checked anew.
 */
const knownZones = new Set<string>();
const KNOWN_ZONES_MAX = 2_000;

/**
 * The zones PostgreSQL knows (`pg_timezone_names`), once a process has read them (db/time-zones.ts):
 * a name must be known there too, since money, reports and booking limits read local days with
 * `AT TIME ZONE`. The two zone databases differ: ICU keeps links the tz database removed
 * (`US/Pacific-New`), a server with the system's tzdata may lack the legacy links (`US/Eastern`), and
 * an older one lacks new zones (`America/Ciudad_Juarez`). Null until read: every name Intl knows.
 */
let databaseZones: ReadonlySet<string> | null = null;

/** Accept from now on only the zones that are in `names` as well (the database's). */
export function restrictTimeZones(names: ReadonlySet<string>): void {
  databaseZones = names;
  knownZones.clear();
}

/**
 * An IANA zone name the runtime knows (`America/Mexico_City`, `UTC`,
 * `US/Eastern`), and PostgreSQL too once its names were read
 * (restrictTimeZones), written as the zone database writes it. Intl also takes UTC
 * offsets (`+05:00`) and any letter case (`america/mexico_city`): those are
 * not IANA names, and Google Calendar refuses them when an event syncs.
 */
export function isTimeZone(value: string): boolean {
  if (knownZones.has(value)) return true;
  if (value.length > 64 || !/^[A-Za-z]/.test(value)) return false;
  if (databaseZones && !databaseZones.has(value)) return false;
  try {
    if (Temporal.Now.zonedDateTimeISO(value).timeZoneId !== value) return false;
  } catch {
    return false;
  }
  if (knownZones.size < KNOWN_ZONES_MAX) knownZones.add(value);
  return true;
}
