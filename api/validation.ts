// Turning zod results into the contract's errors: a missing `data` or a
// missing required `data.<field>` is 422 parameter_missing; any other problem
// with the payload is 422 validation_failed with per-field messages; a bad
// query parameter is 400.
import { isUtf8 } from 'node:buffer';
import { unescape } from 'node:querystring';
import { Rfc } from '@nodecfdi/rfc';
import { z } from 'zod';
import { PRODUCT_KEY, UNIT_KEY } from '../lib/cfdi/catalogs.ts';
import { isTimeZone } from '../lib/local-dates.ts';
import { isObjectId } from '../lib/objectid.ts';
import { addFieldError, ApiError, validationFailed, type FieldErrors } from './errors.ts';

/**
 * zod's Spanish messages, with the ones clients meet most said in plain Spanish: its format messages
 * read "Inválido fecha ISO" (adjective first, no agreement) and a missing value "se esperaba texto,
 * recibido indefinido".
 */
const zodSpanish = z.locales.es().localeError;
const FORMATS: Record<string, string> = {
  date: 'debe ser una fecha válida con la forma AAAA-MM-DD',
  datetime: 'debe ser un instante ISO 8601 con su zona horaria, como 2026-11-24T10:00:00Z o 2026-11-24T04:00:00-06:00',
  time: 'debe ser una hora válida con la forma HH:MM',
  email: 'debe ser una dirección de correo electrónico válida',
  url: 'debe ser una URL válida',
};
z.config({
  localeError: (issue) => {
    if (issue.code === 'invalid_type' && issue.input === undefined) return 'es obligatorio';
    if (issue.code === 'invalid_format' && FORMATS[issue.format]) return FORMATS[issue.format];
    const message = zodSpanish(issue);
    let text = typeof message === 'string' ? message : message?.message;
    // The locale names integers by zod's type name: "se esperaba int, recibido número".
    const integer = (issue.code === 'invalid_type' && issue.expected === 'int') || ((issue.code === 'too_big' || issue.code === 'too_small') && issue.origin === 'int');
    if (integer && text) return text.replace(/\bint\b/, 'número entero');
    // The formats not listed above: "Inválido UUID" → "formato inválido: se esperaba UUID".
    return text?.startsWith('Inválido ') ? `formato inválido: se esperaba ${text.slice('Inválido '.length)}` : message;
  },
});

function valueAt(input: unknown, path: PropertyKey[]): unknown {
  let current: unknown = input;
  for (const part of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[part];
  }
  return current;
}

function fieldName(path: PropertyKey[], root = 'data'): string {
  return path.length ? path.map(String).join('.') : root;
}

/** Issues by field name; an issue with the value as a whole is named `root` (a body's `data`, an MCP call's `arguments`). */
export function fieldErrors(issues: z.core.$ZodIssue[], prefix = '', root = 'data'): FieldErrors {
  const errors: FieldErrors = {};
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const name = prefix + fieldName([...issue.path, key], root);
        addFieldError(errors, name, 'no es un campo permitido');
      }
      continue;
    }
    const name = prefix + fieldName(issue.path, root);
    addFieldError(errors, name, issue.message);
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
 * Refuses a parsed JSON body that PostgreSQL could not store, before
 * anything reads it: 422 validation_failed, under the field it starts in,
 * named as every other field error is (relative to `data`: `notes`,
 * `custom_properties`).
 * - Nested deeper than MAX_JSON_DEPTH. Walks with its own stack, not
 *   recursion, for that same reason.
 * - A string (value or key) holding U+0000, which no PostgreSQL text or
 *   JSON value can hold, or a lone UTF-16 surrogate (`"\ud800"`), which is
 *   not Unicode text: a text column would store it as U+FFFD and a JSON
 *   column refuses it. Both used to reach the database and answer 500.
 */
export function checkJsonBody(body: unknown): void {
  const problem = jsonBodyProblem(body);
  if (problem) throw validationFailed(problem);
}

/** What checkJsonBody refuses, as field errors (MCP answers them as -32602), or null when the body is fine. */
export function jsonBodyProblem(body: unknown): FieldErrors | null {
  const pending: Array<{ value: unknown; depth: number; path: string[] }> = [{ value: body, depth: 1, path: [] }];
  // Paths are kept to 3 steps (`data` and two below it): enough to name a field, bounded however deep the body.
  const inData = (path: string[]) => (path[0] === 'data' ? path.slice(1) : path);
  const textAt = (path: string[]) => ({ [inData(path).join('.') || 'data']: [TEXT_REASON] });
  while (pending.length) {
    const { value, depth, path } = pending.pop()!;
    if (typeof value === 'string') {
      if (!isStorableText(value)) return textAt(path);
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth > MAX_JSON_DEPTH) return { [inData(path)[0] ?? 'data']: [`anida más de ${MAX_JSON_DEPTH} niveles de objetos o listas`] };
    for (const [key, child] of Object.entries(value)) {
      const at = path.length < 3 ? [...path, key] : path;
      if (!isStorableText(key)) return textAt(at);
      pending.push({ value: child, depth: depth + 1, path: at });
    }
  }
  return null;
}

export const TEXT_REASON = 'contiene un carácter nulo (U+0000) o un sustituto UTF-16 sin pareja, que no son texto válido';

/** Text PostgreSQL can store as written: no U+0000, well-formed UTF-16 (no lone surrogate). */
export function isStorableText(text: string): boolean {
  return !text.includes('\0') && text.isWellFormed();
}

/**
 * A write body is a JSON object (`{"data": …}`). The parser takes any JSON
 * object or array, and refuses `"x"` or `42` as invalid JSON: an array is
 * refused the same way (400 invalid_json, docs/api.md), not as a missing `data`.
 */
export function refuseArrayBody(body: unknown): void {
  if (Array.isArray(body)) throw new ApiError('invalid_json', 'El cuerpo debe ser un objeto JSON: {"data": {…}}.');
}

/** Validates the `data` object of a write body. */
export function parseData<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  refuseArrayBody(body);
  checkJsonBody(body);
  if (body === null || typeof body !== 'object' || !('data' in body)) {
    throw new ApiError('parameter_missing', 'Falta el parámetro data.');
  }
  // The fields go inside data; anything beside it is an unknown parameter, refused like one inside it.
  const beside = Object.keys(body).filter((key) => key !== 'data');
  if (beside.length) throw validationFailed(Object.fromEntries(beside.slice(0, 20).map((key) => [key, ['parámetro desconocido: los campos van dentro de data']])));
  const data = (body as { data: unknown }).data;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw validationFailed({ data: ['debe ser un objeto'] });
  }
  const result = schema.safeParse(data);
  if (result.success) return result.data;
  // A field removed from the API (catalog-fields.ts removedField) is named with
  // its replacement even when the replacement is missing too: that is what the
  // client has to change, more than a parameter_missing for the new name.
  const removed = result.error.issues.some((issue) => issue.code === 'invalid_type' && issue.expected === 'never');
  // Absent and required: zod says invalid_type, invalid_value for an enum or a literal, or
  // invalid_union naming the discriminator of a tagged object (booking_window's type).
  const missing = !removed && result.error.issues.find(
    (issue) =>
      (issue.code === 'invalid_type' || issue.code === 'invalid_value' || (issue.code === 'invalid_union' && 'discriminator' in issue)) &&
      valueAt(data, issue.path) === undefined,
  );
  if (missing) {
    const param = `data.${fieldName(missing.path)}`;
    throw new ApiError('parameter_missing', `Falta el parámetro ${param}.`);
  }
  throw validationFailed(fieldErrors(result.error.issues));
}

/**
 * The name of the first parameter of `querystring` (as it came, still percent-encoded) whose name or
 * value is not UTF-8 once decoded (`q=%FF`), else null. Koa decodes such bytes to U+FFFD, the
 * replacement character, so a search would run for something the client never sent. A malformed
 * escape (`%A`, `50%off`) is read as written, as URLSearchParams reads it.
 */
function nonUtf8Parameter(querystring: string): string | null {
  // Only a percent-encoded byte at 0x80 or above can start a sequence that is not UTF-8.
  if (!/%[89a-f]/i.test(querystring)) return null;
  for (const part of querystring.split('&')) {
    if (!isUtf8(percentDecoded(part))) return unescape(part.split('=')[0]!);
  }
  return null;
}

/** The bytes `part` stands for: each `%XX` one byte, anything else (a malformed escape included) as written. */
function percentDecoded(part: string): Buffer {
  return Buffer.concat(part.split(/(%[0-9a-fA-F]{2})/).map((piece, i) => (i % 2 ? Buffer.of(Number.parseInt(piece.slice(1), 16)) : Buffer.from(piece))));
}

const commaLists = new WeakSet<z.ZodType>();

/**
 * A query parameter that takes several values separated by commas (`brand=a,b`). Only these are told,
 * when sent twice or in array syntax, to separate their values with commas: a one-value filter
 * (`status`) would refuse `status=a,b` too.
 */
export function commaList<S extends z.ZodType>(schema: S): S {
  commaLists.add(schema);
  return schema;
}

/**
 * Validates query parameters; problems are 400 invalid_parameter (invalid_id for a malformed cursor, the contract's code for a malformed id).
 * `querystring`: the request's, still encoded, so that bytes that are not UTF-8 are refused rather than searched for as U+FFFD.
 */
export function parseQuery<S extends z.ZodType>(schema: S, query: unknown, querystring = ''): z.infer<S> {
  const notUtf8 = nonUtf8Parameter(querystring);
  if (notUtf8 !== null) throw new ApiError('invalid_parameter', `El parámetro ${notUtf8} no es texto UTF-8 válido: codifica sus bytes en UTF-8 antes de escaparlos (%C3%B1 es ñ).`);
  // %00 decodes to U+0000, which no column can hold or be compared with: refused before any query uses it.
  for (const [name, value] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if ([value].flat().some((v) => typeof v === 'string' && !isStorableText(v))) {
      throw new ApiError('invalid_parameter', `El parámetro ${name} contiene un carácter nulo (%00).`);
    }
  }
  // A list filter written in array or object syntax (`category[]=x`, `category[0]=x`, `category[a]=x`)
  // is no parameter we know, and would be ignored as such: the list given unfiltered. Refused, saying
  // how lists are written.
  const known = (schema as { shape?: Record<string, unknown> }).shape;
  if (known) {
    for (const name of Object.keys((query ?? {}) as Record<string, unknown>)) {
      const base = /^([^[\]]+)\[/.exec(name)?.[1];
      if (base && Object.hasOwn(known, base)) {
        const how = commaLists.has(known[base] as z.ZodType) ? `; varios valores van separados por comas: ${base}=a,b` : '';
        throw new ApiError('invalid_parameter', `El parámetro ${name} no existe: escribe ${base}=<valor>${how}.`);
      }
    }
  }
  const result = schema.safeParse(query);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  // An endpoint that takes a fixed set of parameters (the reports) names the one it does not know.
  if (issue.code === 'unrecognized_keys') throw new ApiError('invalid_parameter', `El parámetro ${issue.keys[0]} no existe en este endpoint.`);
  const name = fieldName(issue.path);
  if (issue.message === 'invalid_id') throw new ApiError('invalid_id', `El parámetro ${name} no es un ObjectId válido.`);
  // (issues keep no `input`: whether it is missing is read from the query itself)
  if (issue.code === 'invalid_type' && valueAt(query, issue.path) === undefined) throw new ApiError('invalid_parameter', `Falta el parámetro ${name}, que es obligatorio.`);
  // `?limit=1&limit=3`: the value is not wrong, there are two of it.
  if (Array.isArray(valueAt(query, issue.path))) {
    const how = known && commaLists.has(known[String(issue.path[0])] as z.ZodType) ? `, con sus valores separados por comas: ${name}=a,b` : '';
    throw new ApiError('invalid_parameter', `El parámetro ${name} aparece más de una vez: envíalo una sola vez${how}.`);
  }
  throw new ApiError('invalid_parameter', `El parámetro ${name} no es válido: ${issue.message}`);
}

/**
 * A link a client shows or follows (a website, an image, a file value): http or https only, so
 * `javascript:` or `data:` is never stored for a page to render; at most 2,000 characters.
 */
export const httpUrl = z
  // The message for what is no http(s) URL only: a URL too long says so (zod's message), not "no URL".
  .url({ protocol: /^https?$/, error: (issue) => (issue.code === 'invalid_format' ? 'debe ser una URL http(s)' : undefined) })
  .max(2000);

/**
 * An ObjectId in a body or a query (one in the path is the router's: 400 invalid_id). The pattern is
 * published in the OpenAPI document and the MCP tools, so a client validating against it agrees.
 */
/** A colour as `#rrggbb` (a calendar event's, a person's background). */
export const hexColor = z.string().regex(/^#[0-9a-fA-F]{6}$/, 'color hexadecimal #rrggbb');
/** The SAT's ClaveProdServ (8 digits) and ClaveUnidad (H87, E48: upper-cased), as a product stores them and an invoice's line_keys give them. */
export const satProductKey = z.string().trim().regex(PRODUCT_KEY, 'clave de 8 dígitos del catálogo del SAT (ClaveProdServ)');
export const satUnitKey = z.string().trim().toUpperCase().regex(UNIT_KEY, 'clave de unidad del SAT (ClaveUnidad, por ejemplo H87)');
/**
 * Whether an address that passed zod's syntax fits RFC 5321's sizes, which a mail server enforces when
 * it is too late to tell the sender: a local part of at most 64 octets, DNS labels of at most 63, 254
 * octets in all.
 */
function fitsMailSizes(value: string): boolean {
  if (Buffer.byteLength(value) > 254) return false;
  const at = value.lastIndexOf('@');
  return Buffer.byteLength(value.slice(0, at)) <= 64 && value.slice(at + 1).split('.').every((label) => label.length <= 63);
}

/** An email address mail can go to: zod's syntax and RFC 5321's sizes (fitsMailSizes), the same wherever one is taken. */
export const emailAddress = z
  .email()
  .max(254)
  .refine(fitsMailSizes, 'no es un correo al que se pueda escribir: hasta 64 bytes antes de la @ y 63 caracteres por parte del dominio');

const RFC_SHAPE = /^[A-ZÑ&]{3,4}\d{6}[A-Z0-9]{3}$/;
/**
 * A Mexican RFC (a customer's tax_id, a supplier's supplier_tax_id): any case and spaces around, stored
 * trimmed in capitals; its shape and a real date (YYMMDD: "AAA991331AAA" has the shape of one and is
 * none). The generic ones (XAXX010101000, XEXX010101000 abroad) are RFCs too.
 */
export const rfc = z
  .string()
  .trim()
  .toUpperCase()
  .regex(RFC_SHAPE, 'RFC inválido')
  // The document shows what a client may send: any case, spaces around (stored trimmed, in capitals).
  .meta({ pattern: '^\\s*[A-Za-zÑñ&]{3,4}[0-9]{6}[A-Za-z0-9]{3}\\s*$' })
  // Judged only once the shape passed: a value with no date gets one message, not two.
  .refine((value) => !RFC_SHAPE.test(value) || Rfc.isValid(value), 'RFC inválido: su fecha (AAMMDD) no existe');
/** An IANA time zone name both Intl and PostgreSQL know (lib/local-dates.ts isTimeZone). */
export const timeZone = z.string().refine(isTimeZone, 'zona horaria IANA desconocida');
export const objectIdField = z.string().refine(isObjectId, 'no es un ObjectId válido').meta({ pattern: '^[0-9a-f]{24}$' });

/** Characters that show nothing: zero-width spaces and joiners, direction marks, fillers, the soft hyphen, the BOM. */
const INVISIBLE = /[\u00ad\u034f\u061c\u115f\u1160\u180e\u200b-\u200f\u2060-\u2064\u3164\ufeff\uffa0]/g;
/** Whether `value` shows nothing: only spaces and invisible characters (`"\u200b"` is no name). */
export const showsNothing = (value: string) => value.replace(INVISIBLE, '').trim() === '';
const blankIfInvisible = (value: string) => (showsNothing(value) ? '' : value);

/**
 * A text field of a body: trimmed, at most `max` characters; text that shows nothing is blank (`""`), so a
 * required one (`.min(1)`) refuses it and an optional one stores no value (docs/api.md, Records).
 */
export const text = (max: number) => z.string().trim().overwrite(blankIfInvisible).max(max);

/**
 * An optional text field that may have no value: trimmed, at most `max` characters; blank (`""`, or
 * only spaces) is stored as `null`, the one way a record says "no value" (docs/api.md, Records).
 */
export const optionalText = (max: number) =>
  text(max)
    .transform((value) => (value === '' ? null : value))
    .nullable()
    .optional();

/** An optional http(s) URL that `""` clears, as `optionalText` clears a text (null clears it too). */
export const optionalHttpUrl = z
  .union([z.literal(''), httpUrl])
  .transform((value) => (value === '' ? null : value))
  .nullable()
  .optional();

/** Line breaks (NEL and the Unicode separators too), other control characters and direction overrides: what no one-line name holds. */
const NOT_IN_A_LINE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** Control characters but tab and line breaks, and direction overrides: what no text a person writes holds. */
const NOT_IN_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** Whether `value` is one line: no line break, control character or direction override. */
export const isOneLine = (value: string) => !NOT_IN_A_LINE.test(value);
/** Whether `value` is text a person writes, over several lines perhaps: no control character but tab and line breaks, no direction override. */
export const isWrittenText = (value: string) => !NOT_IN_TEXT.test(value);

/** A text field of one line: trimmed, at most `max` characters, no line break, control character or direction override. */
export const lineText = (max: number) => text(max).refine(isOneLine, 'debe ser una sola línea, sin caracteres de control');

/** `lineText` that may have no value: blank is stored as `null`, as `optionalText` does. */
export const optionalLineText = (max: number) =>
  lineText(max)
    .transform((value) => (value === '' ? null : value))
    .nullable()
    .optional();

/**
 * Text of several lines that goes into an email or a page (a cancellation's reason): tab and line
 * breaks, but no other control character or direction override; blank is `null`.
 */
export const optionalWrittenText = (max: number) =>
  text(max)
    .refine(isWrittenText, 'sin caracteres de control (salvo saltos de línea y tabuladores)')
    .transform((value) => (value === '' ? null : value))
    .nullable()
    .optional();

/**
 * A person's name a visitor types (a booker's): one line, at most `max` characters, and something
 * visible (`"\u200b"` alone is no name). Line breaks and direction overrides are refused: the name is
 * quoted at the top of the host's email, where `Mallory\r\nBcc: …` forged lines of its own.
 */
export const personName = (max: number) =>
  lineText(max)
    .refine((v) => !showsNothing(v), 'es obligatorio');
