// User-defined attributes (contract, Product: custom properties). Written as
// an array of `{key, value}`, stored as one jsonb object, read back flattened
// into top-level keys of the resource. Keys that collide with a field of the
// resource are dropped, on write and on read, so a property can never shadow
// or overwrite a real field.
//
// Values may be text, numbers, booleans, lists, objects, lists of objects and
// files (an object `{type: "file", url, filename?, content_type?, size_bytes?}`,
// strictly that shape with an http(s) URL wherever `type: "file"` appears).
// On PATCH the array is merged by key; a `null` value removes the key.
import { z } from 'zod';
import { httpUrl } from './validation.ts';
import { validationFailed } from './errors.ts';

export const MAX_CUSTOM_PROPERTIES = 100;
const MAX_VALUE_BYTES = 10_000;

const fileValue = z.strictObject({
  type: z.literal('file'),
  // http(s) only: clients render a file value as a link, so `javascript:` or
  // `data:` here would be stored XSS in every storefront that shows it.
  url: httpUrl,
  filename: z.string().max(255).optional(),
  content_type: z.string().max(255).optional(),
  size_bytes: z.number().int().min(0).optional(),
});

// Past 2^53 a JSON number has lost digits by the time it is read (9007199254740993 reads as
// 9007199254740992): stored, it would not be what was sent. Refused, as metadata values and money
// amounts are (lib/money.ts); such ids go as text.
const exactNumber = z
  .number()
  .refine((n) => !Number.isInteger(n) || Number.isSafeInteger(n), 'es un entero mayor que 9007199254740991, que un número JSON no guarda con exactitud; envíalo como texto');

// The id names it in the OpenAPI document (components/schemas/JsonValue): a
// recursive schema needs a stable name there to be referred to.
const jsonValue: z.ZodType<unknown> = z.lazy(() =>
  z.union([z.string(), exactNumber, z.boolean(), z.null(), z.array(jsonValue), z.record(z.string(), jsonValue)]),
).meta({ id: 'JsonValue', description: 'Cualquier valor JSON' });

/**
 * Any object with `type: "file"`, at any depth (a list of files, a file
 * inside an object), must be exactly the file shape. Without this check an
 * object failing the file shape was still accepted as plain JSON by the
 * union, `javascript:` URL included.
 */
function checkFiles(value: unknown, path: PropertyKey[], ctx: z.core.$RefinementCtx): void {
  if (Array.isArray(value)) {
    value.forEach((item, i) => checkFiles(item, [...path, i], ctx));
    return;
  }
  if (value === null || typeof value !== 'object') return;
  if ((value as { type?: unknown }).type !== 'file') {
    for (const [key, item] of Object.entries(value)) checkFiles(item, [...path, key], ctx);
    return;
  }
  const result = fileValue.safeParse(value);
  if (result.success) return;
  for (const issue of result.error.issues) {
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [undefined];
    for (const key of keys) {
      ctx.addIssue({
        code: 'custom',
        path: [...path, ...issue.path, ...(key === undefined ? [] : [key])],
        message: key === undefined ? issue.message : 'no es un campo de un archivo (type, url, filename, content_type, size_bytes)',
      });
    }
  }
}

export const customPropertyValue = z
  .union([fileValue, jsonValue])
  .superRefine((value, ctx) => checkFiles(value, [], ctx))
  .refine((v) => Buffer.byteLength(JSON.stringify(v) ?? '') <= MAX_VALUE_BYTES, {
    message: `el valor no puede superar ${MAX_VALUE_BYTES} bytes`,
  });

export const customPropertiesWrite = z
  .array(
    z.strictObject({
      key: z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'minúsculas, dígitos y guion bajo; empieza con letra; máximo 64'),
      value: customPropertyValue,
    }),
  )
  .max(MAX_CUSTOM_PROPERTIES)
  .refine((items) => new Set(items.map((i) => i.key)).size === items.length, { message: 'claves repetidas' })
  .describe('Propiedades personalizadas: arreglo de {key, value}; en lectura aparecen como claves de primer nivel');

export type CustomPropertiesWrite = z.infer<typeof customPropertiesWrite>;

/** Merges a write into the stored object; reserved keys are dropped, null deletes. */
export function mergeCustomProperties(
  stored: Record<string, unknown>,
  write: CustomPropertiesWrite,
  reserved: ReadonlySet<string>,
): Record<string, unknown> {
  const next: Record<string, unknown> = { ...stored };
  for (const { key, value } of write) {
    if (reserved.has(key)) continue;
    if (value === null) delete next[key];
    else next[key] = value;
  }
  if (Object.keys(next).length > MAX_CUSTOM_PROPERTIES) {
    throw validationFailed({ custom_properties: [`máximo ${MAX_CUSTOM_PROPERTIES} propiedades`] });
  }
  return next;
}

/** Resource fields first; custom properties fill only keys the resource does not use. */
export function flattenCustomProperties<T extends Record<string, unknown>>(
  resource: T,
  properties: Record<string, unknown> | null | undefined,
  reserved: ReadonlySet<string>,
): T & Record<string, unknown> {
  const out: Record<string, unknown> = { ...resource };
  for (const [key, value] of Object.entries(properties ?? {})) {
    // Own fields only: `in` would also find what every object has (`constructor`), hiding a property of that name.
    if (reserved.has(key) || Object.hasOwn(resource, key)) continue;
    out[key] = value;
  }
  return out as T & Record<string, unknown>;
}
