// The generic row operations of a tenant-scoped table (insert, find, update,
// delete by company and id), used by the standard routes and simple resources. Table and column names
// always come from code (the resource's schema keys), never from input; the
// assertion below keeps it that way if someone wires a schema wrongly.
import { isObjectId, objectId } from '../lib/objectid.ts';
import type { Queryable } from './pool.ts';

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/** A column or table name checked as a plain identifier (never a client's key). */
export function identifier(name: string): string {
  if (!IDENTIFIER.test(name)) throw new Error(`Unsafe SQL identifier: ${name}`);
  return name;
}

/**
 * `a = $3, b = $4` for an UPDATE's SET: each column name checked as a plain identifier (they come from
 * validated bodies, never from a client's keys, and this keeps it so), parameters numbered from `first`.
 */
export function setList(columns: readonly string[], first: number): string {
  return columns.map((column, i) => `${identifier(column)} = $${i + first}`).join(', ');
}

/**
 * An UPDATE's condition that one of `columns` changes: ` AND ROW(a, b) IS DISTINCT FROM ROW($3, $4)`, the
 * parameters those the SET gives the columns from `first` on (each takes its column's type from there;
 * ROW so that one column compares as a row too). A write that changes nothing then touches no row, and
 * `updated_at` stays a signal a syncing client can trust (docs/api.md, Records).
 */
export function changesAny(columns: readonly string[], first: number): string {
  return ` AND ROW(${columns.map(identifier).join(', ')}) IS DISTINCT FROM ROW(${columns.map((_, i) => `$${i + first}`).join(', ')})`;
}

/** jsonb columns must be sent as JSON text: pg would turn a JS array into a Postgres array. */
function param(value: unknown, json: boolean): unknown {
  return json && value !== null && value !== undefined ? JSON.stringify(value) : value;
}

/**
 * The condition an id-or-slug path value (parameter `param`) is matched with: a value shaped like an
 * ObjectId is an id and only an id (see resolveIdOrSlug in api/routes/slug-queries.ts for why),
 * anything else a slug, compared lowercased as slugs are stored (`P1` finds `p1`, the slug a create
 * given `P1` made). `alias` qualifies the column (`l.` for `l.id`).
 */
export function idOrSlugMatch(value: string, param: string, alias = ''): string {
  return isObjectId(value) ? `${alias}id = ${param}` : `${alias}slug = lower(${param})`;
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

/**
 * Writes `values` to the row and moves its `updated_at`, only when one of them differs from what is
 * stored: a PATCH that changes nothing (`{data: {}}`, or the record sent back as read) writes nothing,
 * so `updated_at` stays a signal a syncing client can trust. `touch: 'always'` moves it anyway, for a
 * record whose other parts live in other tables (a product's variants).
 */
export async function updateRow<Row>(
  db: Queryable,
  spec: TableSpec,
  companyId: string,
  id: string,
  values: Record<string, unknown>,
  options: { touch?: 'changed' | 'always' } = {},
): Promise<Row | null> {
  const entries = Object.entries(values);
  const always = options.touch === 'always';
  if (entries.length === 0 && !always) return findRow<Row>(db, spec, companyId, id);
  const names = entries.map(([k]) => k);
  const sets = [...(names.length ? [setList(names, 3)] : []), 'updated_at = now()'];
  const changed = always ? '' : changesAny(names, 3);
  const { rows } = await db.query(
    `UPDATE ${identifier(spec.table)} SET ${sets.join(', ')} WHERE company_id = $1 AND id = $2${changed} RETURNING *`,
    [companyId, id, ...entries.map(([k, v]) => param(v, !!spec.jsonColumns?.has(k)))],
  );
  if (rows[0] || always) return (rows[0] as Row) ?? null;
  return findRow<Row>(db, spec, companyId, id);
}

export async function deleteRow(db: Queryable, spec: TableSpec, companyId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(`DELETE FROM ${identifier(spec.table)} WHERE company_id = $1 AND id = $2`, [companyId, id]);
  return (rowCount ?? 0) > 0;
}
