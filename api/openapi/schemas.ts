// zod -> JSON Schema for the OpenAPI document. zod writes the parts it
// extracts (a schema with `.meta({ id })`, a recursive one) to `$defs` at the
// root of each converted schema and refers to them as `#/$defs/<id>`; placed
// inside an operation, such a reference resolves against the document root
// and points nowhere (Redocly: no-unresolved-refs; openapi-typescript refuses
// the document). Here those parts move to `components/schemas` under their id
// and the references follow them, and response schemas become components
// named by the generator (names.ts), so generated clients get one type per
// shared shape (`components['schemas']['Customer']`).
import { z } from 'zod';

export type JsonSchema = Record<string, unknown>;
export type Io = 'input' | 'output';

const COMPONENTS = '#/components/schemas/';
const DEFS = '#/$defs/';

export class SchemaBook {
  /** The document's `components/schemas`. */
  readonly schemas: Record<string, JsonSchema> = {};
  readonly #converted = new Map<z.ZodType, string>();

  /** JSON Schema of `type`, inline; its named and recursive parts are `$ref`s to components. */
  inline(type: z.ZodType, io: Io): JsonSchema {
    let converted = withoutNeverFields(z.toJSONSchema(type, { io, unrepresentable: 'any', target: 'draft-2020-12' })) as JsonSchema;
    if (io === 'output') converted = withDateFormats(converted) as JsonSchema;
    const { $schema: _, $defs, ...schema } = converted;
    for (const [id, def] of Object.entries(($defs ?? {}) as Record<string, JsonSchema>)) {
      if (id.startsWith('__schema')) {
        // zod numbers an unnamed recursive schema per conversion: no stable name to give it.
        throw new Error(`OpenAPI: a recursive schema has no name; give it .meta({ id: 'Name' }) (${JSON.stringify(def).slice(0, 120)})`);
      }
      this.add(id, loosenArrayRecursion(id, relink(def) as JsonSchema));
    }
    return relink(schema) as JsonSchema;
  }

  /** `type` as the component `name`, and a `$ref` to it. */
  ref(name: string, type: z.ZodType, io: Io): JsonSchema {
    if (this.#converted.get(type) !== `${io} ${name}`) {
      const schema = this.inline(type, io);
      // A schema named by its own `.meta({ id })` is already that component (inline put it there).
      if (!(schema.$ref === COMPONENTS + name && Object.keys(schema).length === 1)) this.add(name, schema);
      this.#converted.set(type, `${io} ${name}`);
    }
    return { $ref: COMPONENTS + name };
  }

  /** Adds a component; the same name for two different schemas is a bug worth failing on. */
  add(name: string, schema: JsonSchema): void {
    if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`OpenAPI: "${name}" is not a valid component name`);
    const existing = this.schemas[name];
    if (existing && JSON.stringify(existing) !== JSON.stringify(schema)) {
      throw new Error(`OpenAPI: two different schemas are named ${name}; give one of them another .meta({ id })`);
    }
    this.schemas[name] = schema;
  }
}

/** A copy of `value` whose `#/$defs/<id>` references point to `components/schemas/<id>`. */
function relink(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(relink);
  if (value === null || typeof value !== 'object') return value;
  const out: JsonSchema = {};
  for (const [key, item] of Object.entries(value)) {
    if (key === '$ref' && typeof item === 'string') {
      if (!item.startsWith(DEFS)) throw new Error(`OpenAPI: a schema refers to ${item}, which is not a named part; give it .meta({ id: 'Name' })`);
      out[key] = COMPONENTS + item.slice(DEFS.length).replaceAll('~1', '/').replaceAll('~0', '~');
    } else {
      out[key] = relink(item);
    }
  }
  return out;
}

/**
 * A property no value satisfies (`z.never()`, `{not: {}}`: the fields 1.0.02 removed, kept in the zod
 * schema so that sending one is refused with a message naming its replacement) is not one a client may
 * send: listed as a property, openapi-typescript typed it `price_cents?: unknown` and a generated client
 * compiled a body the server refuses. It leaves `properties`, and the object's description names it
 * (`additionalProperties: false` still refuses it).
 */
function withoutNeverFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNeverFields);
  if (value === null || typeof value !== 'object') return value;
  const out: JsonSchema = {};
  for (const [key, item] of Object.entries(value)) out[key] = withoutNeverFields(item);
  const properties = out.properties as Record<string, JsonSchema> | undefined;
  if (!properties) return out;
  const gone = Object.entries(properties).filter(([, sub]) => isNever(sub));
  if (!gone.length) return out;
  out.properties = Object.fromEntries(Object.entries(properties).filter(([, sub]) => !isNever(sub)));
  const notes = gone.map(([name, sub]) => `\`${name}\`${sub.description ? ` (${String(sub.description)})` : ''}`);
  out.description = [out.description, `No acepta: ${notes.join('; ')}.`].filter(Boolean).join(' ');
  return out;
}

function isNever(schema: JsonSchema): boolean {
  const not = schema.not as JsonSchema | undefined;
  return !!not && typeof not === 'object' && Object.keys(not).length === 0;
}

/**
 * A recursive schema whose union holds an array of itself (`JsonValue`:
 * string | ... | JsonValue[]) becomes, in openapi-typescript's output, a
 * property typed through itself, which TypeScript rejects ("referenced
 * directly or indirectly in its own type annotation",
 * openapi-ts/openapi-typescript#1603); with skipLibCheck the whole type turns
 * into `any` silently. Such an array's items are left open (`{}`, any JSON
 * value); recursion through object members (`{[key]: JsonValue}`, a tree's
 * `children`) compiles and stays.
 */
function loosenArrayRecursion(name: string, schema: JsonSchema): JsonSchema {
  const self = COMPONENTS + name;
  const loosen = (branch: unknown) => {
    const b = branch as JsonSchema;
    return b?.type === 'array' && (b.items as JsonSchema | undefined)?.$ref === self ? { ...b, items: {} } : branch;
  };
  const out = loosen(schema) as JsonSchema;
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(out[key])) out[key] = out[key].map(loosen);
  }
  return out;
}

/**
 * What the API answers as `*_at` is an instant (ISO 8601 in UTC, `…Z`) and
 * as `*_on` a day (`YYYY-MM-DD`), whatever zod type a response schema gave
 * it: the names say so (docs/api.md), and here the document does too, with
 * `format: date-time` and `format: date`, so generated clients can type them
 * as dates. Only answers: a request may write an instant with an offset.
 */
function withDateFormats(value: unknown, name?: string): unknown {
  if (Array.isArray(value)) return value.map((item) => withDateFormats(item, name));
  if (value === null || typeof value !== 'object') return value;
  const schema = value as JsonSchema;
  const out: JsonSchema = {};
  for (const [key, item] of Object.entries(schema)) {
    if (key === 'properties' && item && typeof item === 'object') {
      out[key] = Object.fromEntries(Object.entries(item as JsonSchema).map(([prop, sub]) => [prop, withDateFormats(sub, prop)]));
    } else if (key === 'anyOf' || key === 'oneOf') {
      out[key] = (item as unknown[]).map((branch) => withDateFormats(branch, name));
    } else if (key === 'items' || key === 'additionalProperties') {
      out[key] = withDateFormats(item);
    } else if (key === '$defs' && item && typeof item === 'object') {
      // The named parts (`.meta({ id })`), which become components: their instants too.
      out[key] = Object.fromEntries(Object.entries(item as JsonSchema).map(([id, def]) => [id, withDateFormats(def)]));
    } else out[key] = item;
  }
  const format = name?.endsWith('_at') ? 'date-time' : name?.endsWith('_on') ? 'date' : undefined;
  const isString = out.type === 'string' || (Array.isArray(out.type) && out.type.includes('string'));
  if (format && isString && out.format === undefined && out.enum === undefined && out.const === undefined) out.format = format;
  return out;
}
