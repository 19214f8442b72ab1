// Timestamps as the API answers them: ISO 8601 UTC with milliseconds, from a
// Date (single reads) or straight from PostgreSQL's text (lists).
import pg from 'pg';

/**
 * A timestamptz column as rows carry it: a Date from a single read, or the
 * API's ISO string from a list read with ISO_TIMESTAMPS. iso() takes both.
 */
export type Timestamp = Date | string;

/** `2026-11-24T02:21:48.123Z`: what the API answers for every timestamp. */
const CANONICAL_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export function iso(value: Date | string): string;
export function iso(value: Date | string | null | undefined): string | null;
export function iso(value: Date | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  // Already the API's form (a list row read with ISO_TIMESTAMPS). Only for
  // values from the database: a string of this shape is not checked for a
  // real date (2026-02-30T...), which PostgreSQL never writes.
  if (typeof value === 'string' && CANONICAL_ISO.test(value)) return value;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

const TIMESTAMPTZ_OID = 1184;
/** PostgreSQL's text output of a timestamptz in a UTC session: `2026-11-24 02:21:48.123456+00`. */
const PG_UTC_TEXT = /^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00$/;
const defaultTimestamptz = pg.types.getTypeParser(TIMESTAMPTZ_OID, 'text') as (text: string) => Date;

/**
 * A timestamptz as the API's ISO string, straight from PostgreSQL's text:
 * milliseconds kept, microseconds dropped, as a Date would. Any other shape
 * (a session in another time zone, BC, a year past 9999, infinity, another
 * DateStyle) goes through pg's own parser, and what that gives other than a
 * valid Date (null, Infinity) is returned as it is, so `iso()` meets exactly
 * what it met before.
 */
export function isoFromTimestamptz(text: string): string | Date | number | null {
  // The common shape, microseconds present (`2026-11-24 02:21:48.123456+00`),
  // by position: a third of the regex's time, and a list reads two per row.
  if (
    text.length === 29 && text.charCodeAt(10) === 32 && text.charCodeAt(19) === 46 &&
    text.charCodeAt(26) === 43 && text.charCodeAt(27) === 48 && text.charCodeAt(28) === 48
  ) {
    return `${text.slice(0, 10)}T${text.slice(11, 23)}Z`;
  }
  // Milliseconds only (`2026-11-24 02:21:48.123+00`): a created_at, stored as shown (migration 103).
  if (
    text.length === 26 && text.charCodeAt(10) === 32 && text.charCodeAt(19) === 46 &&
    text.charCodeAt(23) === 43 && text.charCodeAt(24) === 48 && text.charCodeAt(25) === 48
  ) {
    return `${text.slice(0, 10)}T${text.slice(11, 23)}Z`;
  }
  const m = PG_UTC_TEXT.exec(text);
  if (m) return `${m[1]}T${m[2]}.${m[3] === undefined ? '000' : m[3].length >= 3 ? m[3].slice(0, 3) : m[3].padEnd(3, '0')}Z`;
  const parsed: unknown = defaultTimestamptz(text);
  if (parsed instanceof Date) return Number.isNaN(parsed.getTime()) ? parsed : parsed.toISOString();
  return parsed as number | null;
}

/**
 * Type parsers for a query whose rows are only serialized (lists): each
 * timestamptz arrives as the API's ISO string rather than as a Date that
 * `iso()` turns back into one. Measured with `npm run bench -- customers`:
 * parsing dates and formatting them again was about a tenth of a list
 * request's CPU.
 */
export const ISO_TIMESTAMPS: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === TIMESTAMPTZ_OID && format !== 'binary' ? isoFromTimestamptz : pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
};
