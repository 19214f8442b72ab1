// Small, shared SQL helpers for tenant-scoped tables. Table and column names
// always come from code (the resource's schema keys), never from input; the
// assertion below keeps it that way if someone wires a schema wrongly.
import pg from 'pg';
import { objectId } from '../lib/objectid.ts';
import type { Queryable } from './pool.ts';

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

function identifier(name: string): string {
  if (!IDENTIFIER.test(name)) throw new Error(`Unsafe SQL identifier: ${name}`);
  return name;
}

/** jsonb columns must be sent as JSON text: pg would turn a JS array into a Postgres array. */
function param(value: unknown, json: boolean): unknown {
  return json && value !== null && value !== undefined ? JSON.stringify(value) : value;
}

export type TableSpec = { table: string; jsonColumns?: ReadonlySet<string> };

export async function insertRow<Row>(db: Queryable, spec: TableSpec, companyId: string, values: Record<string, unknown>): Promise<Row> {
  const columns = ['id', 'company_id', ...Object.keys(values).map(identifier)];
  const params = [objectId(), companyId, ...Object.entries(values).map(([k, v]) => param(v, !!spec.jsonColumns?.has(k)))];
  const { rows } = await db.query(
    `INSERT INTO ${identifier(spec.table)} (${columns.join(', ')})
     VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')}) RETURNING *`,
    params,
  );
  return rows[0] as Row;
}

export async function findRow<Row>(db: Queryable, spec: TableSpec, companyId: string, id: string, lock = false): Promise<Row | null> {
  const { rows } = await db.query(
    `SELECT * FROM ${identifier(spec.table)} WHERE company_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
    [companyId, id],
  );
  return (rows[0] as Row) ?? null;
}

export async function updateRow<Row>(db: Queryable, spec: TableSpec, companyId: string, id: string, values: Record<string, unknown>): Promise<Row | null> {
  const entries = Object.entries(values);
  const sets = entries.map(([k], i) => `${identifier(k)} = $${i + 3}`);
  sets.push('updated_at = now()');
  const { rows } = await db.query(
    `UPDATE ${identifier(spec.table)} SET ${sets.join(', ')} WHERE company_id = $1 AND id = $2 RETURNING *`,
    [companyId, id, ...entries.map(([k, v]) => param(v, !!spec.jsonColumns?.has(k)))],
  );
  return (rows[0] as Row) ?? null;
}

export async function deleteRow(db: Queryable, spec: TableSpec, companyId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM ${identifier(spec.table)} WHERE company_id = $1 AND id = $2`, [companyId, id]);
  return (rowCount ?? 0) > 0;
}

/**
 * A timestamptz column as rows carry it: a Date from a single read, or the
 * API's ISO string from a list read with ISO_TIMESTAMPS. iso() takes both.
 */
export type Timestamp = Date | string;

/** `2026-11-24T02:21:48.123Z`: what the API answers for every timestamp. */
const CANONICAL_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

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
