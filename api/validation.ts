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

/** Validates the `data` object of a write body. */
export function parseData<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
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
