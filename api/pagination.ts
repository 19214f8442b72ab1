// The one pagination implementation behind every list (contract, Pagination).
// Order is created_at DESC, id DESC; cursors are record ids resolved inside
// the same query, so a page 50,000 rows deep is one index range scan just like
// the first page (the (company_id, created_at DESC, id DESC) index).
import { z } from 'zod';
import type { Queryable } from '../db/pool.ts';
import { ISO_TIMESTAMPS } from '../db/timestamps.ts';
import { isObjectId } from '../lib/objectid.ts';
import { ApiError } from './errors.ts';

export const DEFAULT_LIMIT = 25;
export const MAX_LIMIT = 100;
export const MAX_PAGE = 200;
export const FILTERED_TOTAL_CAP = 10_000;
export const SEARCH_FILTERED_TOTAL_CAP = 100;
const TOTAL_TTL_MS = 60_000;

/** The values a boolean query parameter takes; the OpenAPI document calls it a boolean (openapi/operations.ts). */
export const QUERY_BOOLEAN_VALUES = ['true', 'false', '1', '0'] as const;
export const queryBoolean = z
  .enum(QUERY_BOOLEAN_VALUES)
  .transform((v) => v === 'true' || v === '1');

const cursor = z.string().refine(isObjectId, { message: 'invalid_id' });

/**
 * A positive integer parameter whose huge values still mean "larger": 16
 * digits or more read as Number.MAX_SAFE_INTEGER (however many: 400 digits
 * would be Infinity), so `limit=99999999999999999999` is cut to 100 and such
 * a `page` is 400 offset_too_deep (contract, Pagination), not a failed
 * integer check. Anything but decimal digits is 400. OpenAPI still shows the integer schema (zod documents a
 * preprocessed input by its inner schema).
 */
const POSITIVE_INTEGER = 'debe ser un entero de 1 en adelante, solo dígitos';
const positiveInteger = () =>
  z.preprocess(
    // Decimal digits only: Number() would also read `0x10`, `1e2`, `0b11` and ` 5`.
    (v) => (typeof v !== 'string' ? v : !/^\d+$/.test(v) ? Number.NaN : v.length >= 16 ? Number.MAX_SAFE_INTEGER : v),
    z.coerce.number({ error: POSITIVE_INTEGER }).int({ error: POSITIVE_INTEGER }).min(1, { error: POSITIVE_INTEGER }),
  );

/** Query parameters shared by every list; resources extend it with their filters. */
export const paginationQuery = z.object({
  limit: positiveInteger().optional().describe(`Tamaño de página; por defecto ${DEFAULT_LIMIT}, máximo ${MAX_LIMIT} (valores mayores se recortan)`),
  starting_after: cursor.optional().describe('Id de cursor: devuelve los registros siguientes (más antiguos)'),
  ending_before: cursor.optional().describe('Id de cursor: devuelve los registros anteriores (más nuevos)'),
  // `maximum` in the document only: past it the answer is the contract's 400 offset_too_deep, not a failed integer check.
  page: positiveInteger().optional().describe(`Paginación por desplazamiento (heredada), máximo ${MAX_PAGE}; más allá, 400 offset_too_deep`).meta({ maximum: MAX_PAGE }),
  include_total: queryBoolean.optional().describe('Añade total y total_pages (colección completa, sin filtros; memorizado 60 s)'),
  include_filtered_total: queryBoolean.optional().describe('Añade filtered_total y filtered_total_pages (tope 10000; 100 con búsqueda de texto)'),
});

export type PaginationQuery = z.infer<typeof paginationQuery>;

/** A list's query with text search: `q`, or its alias `search`, over the fields `over` names. */
export function searchableQuery(over: string) {
  return paginationQuery.extend({
    q: z.string().trim().max(200).optional().describe(`Búsqueda de texto (${over}); no distingue mayúsculas ni acentos`),
    search: z.string().trim().max(200).optional().describe('Alias de q'),
  });
}

/** The search term of a `searchableQuery`: `q`, else `search`; undefined when neither says anything. */
export function searchTerm(query: { q?: string; search?: string }): string | undefined {
  return query.q || query.search || undefined;
}

export const listMetaSchema = z.object({
  limit: z.number().int(),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
  previous_cursor: z.string().nullable(),
  page: z.number().int().optional(),
  total: z.number().int().optional(),
  total_pages: z.number().int().optional(),
  filtered_total: z.number().int().optional(),
  filtered_total_pages: z.number().int().optional(),
  filtered_total_capped: z.boolean().optional(),
});

export type ListMeta = z.infer<typeof listMetaSchema>;

/** Builds `$n` placeholders while collecting their values. */
export class Params {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/**
 * Whole-collection counts memoized per company for 60 s (contract, Limits).
 * Per process on purpose: a stale total is harmless and bounded (DESIGN.md).
 * A collection is a table's rows of one company, narrowed by the list's
 * `collection` condition when the table holds more than one (incomes and
 * expenses share `movements`; an endpoint's deliveries are some of
 * `webhook_deliveries`).
 */
export class TotalsCache {
  #entries = new Map<string, { value: number; expires: number }>();

  /** `where` is trusted SQL over `values`, `$1` being the company (listPage builds it). */
  async get(db: Queryable, table: string, where: string, values: unknown[]): Promise<number> {
    const key = `${table}|${where}|${JSON.stringify(values)}`;
    const hit = this.#entries.get(key);
    if (hit && hit.expires > Date.now()) return hit.value;
    const { rows } = await db.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, values);
    if (this.#entries.size > 50_000) this.#entries.clear();
    this.#entries.set(key, { value: rows[0].n, expires: Date.now() + TOTAL_TTL_MS });
    return rows[0].n;
  }
}

export type ListSpec<Row> = {
  /** Trusted table name (never from input). */
  table: string;
  /** Trusted select list. */
  columns: string;
  companyId: string;
  /**
   * What makes the collection when the table holds more than one per
   * company (`direction = 'income'`, one form's submissions): counted by
   * `include_total`, which ignores filters but not this. Parameterised
   * through `params`.
   */
  collection?: (params: Params) => string[];
  /** Filters: extra WHERE conditions (already parameterised through `params`). */
  where?: (params: Params) => string[];
  /** A text search is active: the filtered total cap is 100. */
  searching?: boolean;
  serialize: (row: Row) => unknown;
};

export async function listPage<Row>(
  db: Queryable,
  totals: TotalsCache,
  spec: ListSpec<Row>,
  query: PaginationQuery,
): Promise<{ data: unknown[]; meta: ListMeta }> {
  const limit = Math.min(query.limit ?? DEFAULT_LIMIT, MAX_LIMIT);
  // Only a page that is used can be too deep: with a cursor, `page` is ignored (precedence).
  const byPage = query.page !== undefined && !query.ending_before && !query.starting_after;
  if (byPage && query.page! > MAX_PAGE) throw new ApiError('offset_too_deep');

  const params = new Params();
  const company = params.add(spec.companyId);
  const collection = spec.collection?.(params) ?? [];
  const conditions = [`company_id = ${company}`, ...collection, ...(spec.where?.(params) ?? [])];
  // A cursor is a record of this collection (an expense's id is no cursor of the incomes).
  const ofCollection = collection.map((condition) => ` AND ${condition}`).join('');
  const filters = conditions.join(' AND ');
  const filterValues = [...params.values];

  // Precedence: ending_before, then starting_after, then page.
  let direction: 'DESC' | 'ASC' = 'DESC';
  let cursorId: string | undefined;
  let keyset = '';
  let offset = 0;
  if (query.ending_before) {
    direction = 'ASC';
    cursorId = query.ending_before;
    keyset = `AND (created_at, id) > (SELECT created_at, id FROM ${spec.table} WHERE company_id = ${company} AND id = ${params.add(cursorId)}${ofCollection})`;
  } else if (query.starting_after) {
    cursorId = query.starting_after;
    keyset = `AND (created_at, id) < (SELECT created_at, id FROM ${spec.table} WHERE company_id = ${company} AND id = ${params.add(cursorId)}${ofCollection})`;
  } else if (query.page !== undefined) {
    offset = (query.page - 1) * limit;
  }

  const sql = `SELECT ${spec.columns} FROM ${spec.table} WHERE ${filters} ${keyset}
    ORDER BY created_at ${direction}, id ${direction} LIMIT ${limit + 1} OFFSET ${offset}`;
  // Timestamps as ISO strings (ISO_TIMESTAMPS): the rows are only serialized.
  const { rows } = await db.query({ text: sql, values: params.values, types: ISO_TIMESTAMPS });
  const hasMore = rows.length > limit;
  const pageRows = rows.slice(0, limit);
  if (direction === 'ASC') pageRows.reverse();

  if (pageRows.length === 0 && cursorId) {
    const check = new Params();
    const where = [`company_id = ${check.add(spec.companyId)}`, `id = ${check.add(cursorId)}`, ...(spec.collection?.(check) ?? [])].join(' AND ');
    const found = await db.query(`SELECT 1 FROM ${spec.table} WHERE ${where}`, check.values);
    if (found.rowCount === 0) throw new ApiError('invalid_cursor');
  }

  const data = pageRows.map((row) => spec.serialize(row as Row));
  const ids = pageRows.map((row) => (row as { id: string }).id);
  const meta: ListMeta = {
    limit,
    has_more: hasMore,
    next_cursor: ids.length ? ids[ids.length - 1] : null,
    previous_cursor: ids.length ? ids[0] : null,
  };
  if (query.page !== undefined && !query.ending_before && !query.starting_after) meta.page = query.page;
  if (query.include_total) {
    const counted = new Params();
    const where = [`company_id = ${counted.add(spec.companyId)}`, ...(spec.collection?.(counted) ?? [])].join(' AND ');
    meta.total = await totals.get(db, spec.table, where, counted.values);
  }
  if (query.include_filtered_total) {
    const cap = spec.searching ? SEARCH_FILTERED_TOTAL_CAP : FILTERED_TOTAL_CAP;
    const { rows: counted } = await db.query(
      `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${spec.table} WHERE ${filters} LIMIT ${cap + 1}) capped`,
      filterValues,
    );
    const n = counted[0].n as number;
    meta.filtered_total = Math.min(n, cap);
    meta.filtered_total_pages = Math.ceil(meta.filtered_total / limit);
    meta.filtered_total_capped = n > cap;
  }
  if (meta.total !== undefined) {
    // The memoized total may be up to 60 s old; it is never below what this answer itself shows: the rows
    // before and on this page (and one more when has_more), and the filtered count (a part of the whole).
    // (An empty page past the end says nothing of the rows before it.)
    const shown = pageRows.length ? offset + pageRows.length + (hasMore ? 1 : 0) : 0;
    meta.total = Math.max(meta.total, shown, meta.filtered_total ?? 0);
    meta.total_pages = Math.ceil(meta.total / limit);
  }
  return { data, meta };
}

/** A list's text search as its `where`: `term` (when there is one) found in any of `expressions` (textMatch), as one condition. */
export function searchWhere(term: string | undefined, expressions: string[]): (params: Params) => string[] {
  return (p) => {
    if (!term) return [];
    const like = p.add(likePattern(term));
    return [`(${expressions.map((e) => textMatch(e, like)).join(' OR ')})`];
  };
}

/**
 * A text search's condition: `expression` contains the pattern `like` (a
 * parameter holding likePattern(term)), ignoring case and accents ("jose"
 * finds "José", "PENA" finds "Peña"): both sides folded by fold_accents()
 * (migration 102, PostgreSQL's unaccent rules). An index that serves it is
 * built on fold_accents(expression), as customers_search is.
 */
export function textMatch(expression: string, like: string): string {
  return `fold_accents(${expression}) ILIKE fold_accents(${like})`;
}

/** `%`, `_` and `\` are literal in a search term. */
export function likePattern(term: string): string {
  return `%${term.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
