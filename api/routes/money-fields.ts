// Fields and rules shared by the money resources (docs/money.md): integer
// cents, lowercase ISO 4217 currencies, the contract's metadata rules (422
// invalid_metadata) and `metadata.external_ref` (a create naming an existing
// one answers that record with 200; an update taking another's is 409
// duplicate_reference).
import { z } from 'zod';
import type { Queryable } from '../../db/pool.ts';
import { isCurrency, mergeMetadata, METADATA_LIMITS, metadataProblem, type Metadata } from '../../lib/money.ts';
import { calendarDay, instant as dateInstant } from '../date-fields.ts';
import { ApiError } from '../errors.ts';
import type { ApiContext } from '../types.ts';

const SAFE = Number.MAX_SAFE_INTEGER;
/**
 * zod's `int()` also refuses a whole number past 2^53 − 1 (not safe): one message either way, the one
 * that fits, and no second one from the bound after it.
 */
const wholeCents = { error: (issue: { input?: unknown }) => (Number.isInteger(issue.input) ? 'pasa de 2^53 − 1' : 'centavos enteros, sin decimales'), abort: true };
export const cents = z.number().int(wholeCents).positive().max(SAFE, 'pasa de 2^53 − 1').describe('Centavos (entero > 0)');
/** A sum of cents (a balance, a total): not capped like one amount; exact up to 2^53 − 1, rounded past it (money.md). */
// Typed integer (whole cents) without the safe-integer bounds: a sum past 2^53 − 1 is still a whole number.
export const centsTotal = z.number().meta({ type: 'integer' }).describe('Centavos de una suma: exacta hasta 2^53 − 1, redondeada más allá');
export const signedCents = z.number().int(wholeCents).min(-SAFE).max(SAFE, 'pasa de 2^53 − 1');
export const currency = z
  .string()
  .refine(isCurrency, 'código ISO 4217 en minúsculas (mxn, usd…)')
  .describe('ISO 4217 en minúsculas')
  .meta({ pattern: '^[a-z]{3}$' });
export const instant = dateInstant.describe('ISO 8601; se devuelve en UTC');
export const localDay = calendarDay;
// Read as unknown so that every breach of the contract's table is its own 422 invalid_metadata
// (checkMetadata), not the generic validation_failed; the document still types it for clients.
export const metadataInput = z
  .unknown()
  // The contract's limits count bytes; JSON Schema's maxLength counts characters (the same for ASCII), an
  // upper bound a client's validator applies: the description says how the server counts.
  .meta({ type: 'object', maxProperties: 50, propertyNames: { maxLength: 40 }, additionalProperties: { anyOf: [{ type: 'string', maxLength: 500 }, { type: ['number', 'boolean', 'null'] }] } })
  .describe('Objeto plano: hasta 50 claves de 40 bytes, valores de hasta 500 bytes (texto, número o booleano; se guardan como texto). Los bytes son de UTF-8: una ñ cuenta 2 y un emoji 4, así que maxLength (en caracteres) es solo una cota; el servidor responde 422 invalid_metadata pasado el límite en bytes. `external_ref` (texto) es única por empresa y tipo de registro; null o "" borra una clave');

export const metadataSchema = z.record(z.string(), z.string()).describe('Metadata del cliente');

/** The metadata a write stores: the update merged over `base` (null or "" removes a key), after the contract's checks. */
export function checkMetadata(value: unknown, base: Metadata = {}): Metadata {
  if (value === undefined) return base;
  const problem = metadataProblem(value);
  if (problem) throw new ApiError('invalid_metadata', `metadata no es válido: ${problem}.`);
  const merged = mergeMetadata(base, value as Record<string, unknown>);
  // The limit holds for what is stored: an update adding keys to a record that has 50 is refused too.
  if (Object.keys(merged).length > METADATA_LIMITS.keys) {
    throw new ApiError('invalid_metadata', `metadata no es válido: con esta actualización tendría ${Object.keys(merged).length} claves, más de ${METADATA_LIMITS.keys}.`);
  }
  return merged;
}

/** The other success of a create (contract, Metadata): an `external_ref` already used returns that record with 200. */
export const EXISTING_BY_REF = {
  status: 200,
  description: 'Ya existe un registro con esa `metadata.external_ref`: se devuelve ese registro y no se crea nada',
} as const;

/** Tables whose records carry `metadata.external_ref` (a generated column with a unique index). */
export type RefTable = 'movements' | 'sales' | 'recurring_transactions';

/**
 * Serialises creates of one external_ref in the company (so concurrent
 * creates with it make one record), then finds the record that already has
 * it, if any. `scope` narrows movements to incomes or expenses.
 */
export async function existingByRef(db: Queryable, table: RefTable, companyId: string, ref: string | undefined, scope?: { direction: 'income' | 'expense' }): Promise<string | null> {
  if (!ref) return null;
  await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`${companyId}:${table}:${scope?.direction ?? ''}:${ref}`]);
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM ${table} WHERE company_id = $1 AND external_ref = $2${scope ? ' AND direction = $3' : ''}`,
    scope ? [companyId, ref, scope.direction] : [companyId, ref],
  );
  return rows[0]?.id ?? null;
}

/**
 * A create whose external_ref names an existing record answers that record in full (contract,
 * Metadata: 200): only to a caller that may read it. A key with `create-incomes` and not
 * `read-incomes` would otherwise read any income whose reference it can guess: 403
 * insufficient_scope naming the read scope, as the record's own GET answers it.
 */
function assertMayReadExisting(scopes: readonly string[], readScope: string): void {
  if (!scopes.includes(readScope)) {
    throw new ApiError('insufficient_scope', `Ya existe un registro con ese metadata.external_ref; devolverlo requiere el permiso ${readScope}, que la clave no tiene.`, { required: readScope });
  }
}

/**
 * The record a create's external_ref already names, to answer instead of creating one (contract,
 * Metadata: 200, and the answer's status is set so): null when there is none. Only to a caller that
 * may read it (assertMayReadExisting). Call first in the create's transaction: it takes the reference's
 * turn (existingByRef), so concurrent creates with it make one record.
 */
export async function answerExistingByRef<Row>(
  ctx: ApiContext,
  db: Queryable,
  ref: { table: RefTable; companyId: string; value: string | undefined; readScope: string; direction?: 'income' | 'expense' },
  find: (id: string) => Promise<Row | null>,
): Promise<Row | null> {
  const existing = await existingByRef(db, ref.table, ref.companyId, ref.value, ref.direction ? { direction: ref.direction } : undefined);
  if (!existing) return null;
  assertMayReadExisting(ctx.state.auth!.scopes, ref.readScope);
  ctx.state.status = 200;
  return find(existing);
}

/** An update whose external_ref another record of the company already has: 409 duplicate_reference. */
export async function assertRefFree(db: Queryable, table: RefTable, companyId: string, id: string, ref: string | undefined, scope?: { direction: 'income' | 'expense' }): Promise<void> {
  if (!ref) return;
  const other = await existingByRef(db, table, companyId, ref, scope);
  if (other && other !== id) throw new ApiError('duplicate_reference');
}

/** The unique index's verdict, should a write slip past the lock: the same 409. */
export function refTaken(error: unknown): never {
  if ((error as { code?: string; constraint?: string }).code === '23505' && /external_ref/.test((error as { constraint?: string }).constraint ?? '')) {
    throw new ApiError('duplicate_reference');
  }
  throw error;
}

/** A customer id of a write must be the company's (422 naming the field otherwise). */
export async function assertCustomer(db: Queryable, companyId: string, id: string | null | undefined, field = 'customer_id'): Promise<void> {
  if (!id) return;
  const { rowCount } = await db.query('SELECT 1 FROM customers WHERE company_id = $1 AND id = $2', [companyId, id]);
  if (!rowCount) throw new ApiError('validation_failed', undefined, { errors: { [field]: ['no existe en la empresa'] } });
}
