// Days and instants a client sends: ISO 8601, from the year 1900 on for what
// is stored or computed (bodies, report days, slot ranges); list filters only
// compare and take any instant PostgreSQL can read (`instantFilter`).
// PostgreSQL stores far earlier dates, but the service's own arithmetic does
// not hold there: a day in year 0 answered 500 (date/time out of range) and an
// instant of 0001-01-01Z, a local day of year 0 in Mexico City, was stored and
// left out of the ledger. No record of a business is dated before 1900; the
// bound is documented (docs/api.md, Errors).
import { z } from 'zod';

export const EARLIEST_DAY = '1900-01-01';
const EARLIEST_INSTANT = Date.UTC(1900, 0, 2); // a day of margin: the local day is 1900 or later in every zone
const LATEST_INSTANT = Date.UTC(9999, 11, 30); // and 9999 or earlier

/**
 * What the OpenAPI document and the MCP tools publish for a date or an instant: zod's pattern, and
 * beside it (`allOf`) prefix patterns on the year, so a client validating against the schema refuses
 * the years the refinements refuse and does not send what the API answers 422 (or -32602) to. Each a
 * pattern of its own rather than a lookahead in one: JSON Schema's portable regular expressions have no
 * lookaround, and RE2-style validators (Go's, Rust's) refuse to compile it.
 */
const withYear = (pattern: string, ...prefixes: string[]) => {
  if (!pattern.startsWith('^')) throw new Error(`date-fields: zod's pattern is not anchored (${pattern.slice(0, 20)})`);
  return { pattern, allOf: prefixes.map((prefix) => ({ pattern: prefix })) };
};
/** From 1900: a year starting 19, or 2 to 9. */
const FROM_1900 = '^(?:19|[2-9])';
/** Any year but 0000. */
const NOT_YEAR_0 = '^(?:[1-9]|0[1-9]|00[1-9]|000[1-9])';
/** Before 9999-12-31 (the day after it is past what a list can read). */
const BEFORE_LAST_DAY = '^(?:[0-8]|9[0-8]|99[0-8]|999[0-8]|9999-(?:0|1[01]|12-(?:[0-2]|30)))';
const ZOD_DATE_PATTERN = (z.toJSONSchema(z.iso.date()) as { pattern?: string }).pattern ?? '';

/** YYYY-MM-DD, a real calendar day, 1900-01-01 or later (a value that is no day gets that one message: `abort`). */
export const calendarDay = z.iso
  .date({ abort: true })
  .refine((day) => day >= EARLIEST_DAY, `debe ser ${EARLIEST_DAY} o posterior`)
  .describe(`YYYY-MM-DD, desde ${EARLIEST_DAY}`)
  .meta(withYear(ZOD_DATE_PATTERN, FROM_1900));

/**
 * A UTC offset PostgreSQL reads: ISO 8601 allows up to ±23:59, PostgreSQL refuses from ±16:00 (it
 * answered 500), and no time zone is further than ±14:00 from UTC.
 */
function readableOffset(value: string): boolean {
  const offset = /([+-])(\d{2}):?(\d{2})$/.exec(value);
  return !offset || Number(offset[2]) < 16;
}
const OFFSET_REASON = 'la diferencia con UTC debe estar entre -15:59 y +15:59';

/**
 * zod's pattern for an ISO instant with offset, as the OpenAPI document shows it, with the offsets
 * narrowed to what is accepted (±15:59), so a client validating against the document refuses what the
 * API would. Built from zod's own, so it stays zod's; a zod whose pattern changed fails here, at load.
 */
const ZOD_OFFSET = '[+-](?:[01]\\d|2[0-3]):[0-5]\\d';
const INSTANT_PATTERN = (() => {
  const pattern = (z.toJSONSchema(z.iso.datetime({ offset: true })) as { pattern?: string }).pattern ?? '';
  if (!pattern.includes(ZOD_OFFSET)) throw new Error(`date-fields: zod's date-time pattern changed (${pattern.slice(-60)})`);
  return pattern.replace(ZOD_OFFSET, '[+-](?:0\\d|1[0-5]):[0-5]\\d');
})();

/**
 * An ISO 8601 instant with its offset, from 1900-01-02T00:00:00Z to 9999-12-30T00:00:00Z, taken to the
 * millisecond, what every answer shows (`…T10:00:00.123456+00:00`, Python's isoformat, is
 * `…T10:00:00.123Z`): what is stored and compared is what a read gives back, so two instants one
 * microsecond apart are one instant, never a later one stored and an equal one shown.
 */
export const instant = z.iso
  .datetime({ offset: true, abort: true })
  .refine(readableOffset, OFFSET_REASON)
  .refine((value) => {
    const at = Date.parse(value);
    return at >= EARLIEST_INSTANT && at <= LATEST_INSTANT;
  }, 'debe estar entre 1900-01-02 y 9999-12-30')
  .transform((value) => new Date(Date.parse(value)).toISOString())
  .describe('ISO 8601, de 1900-01-02 a 9999-12-30; se toma al milisegundo')
  .meta(withYear(INSTANT_PATTERN, FROM_1900));

/**
 * A list filter (`from`/`to`): any ISO 8601 instant PostgreSQL can read, so the
 * usual "no limit" values (`0001-01-01T00:00:00Z`, `9999-12-31T23:59:59Z`)
 * work; only year 0000, which PostgreSQL has no such year for, is refused.
 */
export const instantFilter = z.iso
  .datetime({ offset: true, abort: true })
  .refine(readableOffset, OFFSET_REASON)
  .refine((value) => !value.startsWith('0000'), 'el año 0000 no existe; usa 0001 o posterior')
  .describe('ISO 8601, desde el año 0001')
  .meta(withYear(INSTANT_PATTERN, NOT_YEAR_0));

/**
 * A list window's bound (`from`/`to`): an instant, or a whole day (ISO 8601 allows both), which the
 * list reads in the company's time zone (`windowInstants` in db/companies.ts).
 */
export const windowBound = z.union([
  calendarDay
    .refine((day) => day < '9999-12-31', 'debe ser anterior a 9999-12-31')
    // Published too: the day after the last is an instant past 9999, which the list cannot read.
    .meta(withYear(ZOD_DATE_PATTERN, FROM_1900, BEFORE_LAST_DAY)),
  instantFilter,
], {
  error: 'debe ser un día YYYY-MM-DD (de 1900-01-01 a 9999-12-30) o un instante ISO 8601 con su zona',
});
