// Turning zod results into the contract's errors: a missing `data` or a
// missing required `data.<field>` is 422 parameter_missing; any other problem
// with the payload is 422 validation_failed with per-field messages; a bad
// query parameter is 400.
import { z } from 'zod';
import { ApiError, validationFailed, type FieldErrors } from './errors.ts';

z.config(z.locales.es());

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let current: unknown = input;
  for (const part of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[part];
  }
  return current;
}

function fieldName(path: PropertyKey[]): string {
  return path.length ? path.map(String).join('.') : 'data';
}

export function fieldErrors(issues: z.core.$ZodIssue[], prefix = ''): FieldErrors {
  const errors: FieldErrors = {};
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const name = prefix + fieldName([...issue.path, key]);
        (errors[name] ??= []).push('no es un campo permitido');
      }
      continue;
    }
    const name = prefix + fieldName(issue.path);
    (errors[name] ??= []).push(issue.message);
  }
  return errors;
}

/**
 * How deep a JSON body may nest, the body itself being level 1. The deepest
 * payload of the contract (a custom property whose value is a list of
 * objects) is about 6; what reads a body after parsing (zod, the
 * Idempotency-Key fingerprint) recurses, and a 6 KB body of brackets would
 * otherwise exhaust the stack and answer 500.
 */
export const MAX_JSON_DEPTH = 32;

/**
 * Refuses a parsed JSON body nested deeper than MAX_JSON_DEPTH: 422
 * validation_failed, under the field it starts in, named as every other
 * field error is (relative to `data`: `notes`, `custom_properties`). Walks
 * with its own stack, not recursion, for that same reason.
 */
export function checkJsonDepth(body: unknown): void {
  const pending: Array<{ value: unknown; depth: number; path: string[] }> = [{ value: body, depth: 1, path: [] }];
  while (pending.length) {
    const { value, depth, path } = pending.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (depth > MAX_JSON_DEPTH) {
      const field = (path[0] === 'data' ? path[1] : path[0]) ?? 'data';
      throw validationFailed({ [field]: [`anida más de ${MAX_JSON_DEPTH} niveles de objetos o listas`] });
    }
    for (const [key, child] of Object.entries(value)) pending.push({ value: child, depth: depth + 1, path: path.length < 2 ? [...path, key] : path });
  }
}

/** Validates the `data` object of a write body. */
export function parseData<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  checkJsonDepth(body);
  if (body === null || typeof body !== 'object' || Array.isArray(body) || !('data' in body)) {
    throw new ApiError('parameter_missing', 'Falta el parámetro data.');
  }
  const data = (body as { data: unknown }).data;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw validationFailed({ data: ['debe ser un objeto'] });
  }
  const result = schema.safeParse(data);
  if (result.success) return result.data;
  const missing = result.error.issues.find(
    (issue) => issue.code === 'invalid_type' && valueAt(data, issue.path) === undefined,
  );
  if (missing) {
    const param = `data.${fieldName(missing.path)}`;
    throw new ApiError('parameter_missing', `Falta el parámetro ${param}.`);
  }
  throw validationFailed(fieldErrors(result.error.issues));
}

/** Validates query parameters; problems are 400 (400 invalid_id for a malformed id). */
export function parseQuery<S extends z.ZodType>(schema: S, query: unknown): z.infer<S> {
  const result = schema.safeParse(query);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const name = fieldName(issue.path);
  if (issue.message === 'invalid_id') throw new ApiError('invalid_id', `El parámetro ${name} no es un ObjectId válido.`);
  throw new ApiError('invalid_parameter', `El parámetro ${name} no es válido: ${issue.message}`);
}
