// One operation of the OpenAPI document per route of the table (api/route.ts):
// path and query parameters, the JSON or multipart body, the success response
// and every error the route can answer, grouped by status.
import type { z } from 'zod';
import { API_RELEASED_AT, API_VERSION } from '../../lib/version.ts';
import { ERROR_CODES, type ErrorCode } from '../errors.ts';
import { NOT_STORED } from '../middleware/idempotency.ts';
import { listMetaSchema, QUERY_BOOLEAN_VALUES } from '../pagination.ts';
import { COMMON_ERRORS, declaredErrors, type RouteDef } from '../route.ts';
import { operationId } from './names.ts';
import type { JsonSchema, SchemaBook } from './schemas.ts';

/** Codes only the admin API (wsctl) answers: no REST route can, so a generated client's error union leaves them out. */
const ADMIN_ONLY_CODES = new Set(['conflict']);

export const errorSchema: JsonSchema = {
  type: 'object',
  required: ['error', 'message'],
  properties: {
    error: { type: 'string', enum: Object.keys(ERROR_CODES).filter((code) => !ADMIN_ONLY_CODES.has(code)), description: 'Código estable: ramifica con él, no con message' },
    message: { type: 'string', description: 'Texto legible en español' },
    errors: {
      type: 'object',
      additionalProperties: { type: 'array', items: { type: 'string' } },
      description: 'Solo en 422 validation_failed: mensajes por campo',
    },
    required: { type: 'string', description: 'Solo en insufficient_scope: el scope que falta' },
    year: { type: 'integer', description: 'Solo en period_locked' },
    month: { type: 'integer', description: 'Solo en period_locked' },
  },
};

/** Headers every API response carries (contract, Versioning; DESIGN.md: request id). */
export const VERSION_HEADERS: Record<string, JsonSchema> = {
  'X-Request-Id': { schema: { type: 'string' }, description: 'Id de la petición; aparece en la línea de registro' },
  'X-Service-API-Version': { schema: { type: 'string', const: API_VERSION } },
  'X-Service-API-Released-At': { schema: { type: 'string', const: API_RELEASED_AT } },
  'Cache-Control': { schema: { type: 'string', const: 'no-store' }, description: 'Ninguna caché guarda las respuestas de la API' },
};

/** Those, and the rate limit's, on every answer to an authenticated request (DESIGN.md: rate limit). */
export const COMMON_HEADERS: Record<string, JsonSchema> = {
  ...VERSION_HEADERS,
  'RateLimit-Limit': { schema: { type: 'integer' }, description: 'Peticiones por minuto de la clave' },
  'RateLimit-Remaining': { schema: { type: 'integer' }, description: 'Peticiones que quedan en la ventana' },
  'RateLimit-Reset': { schema: { type: 'integer' }, description: 'Segundos hasta que la petición más antigua sale de la ventana' },
};

/** Codes a write answers before its Idempotency-Key is read, or about the key itself: never replayed. */
const ANSWERED_BEFORE_THE_KEY: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ...COMMON_ERRORS,
  'https_required', 'module_not_enabled', 'invalid_request',
  'idempotency_key_reused', 'idempotency_body_too_large', 'idempotency_in_progress', 'invalid_idempotency_key',
]);

/** On an answer replayed from an earlier request with the same Idempotency-Key. */
const REPLAYED_HEADER: Record<string, JsonSchema> = {
  'Idempotent-Replayed': { schema: { type: 'string', enum: ['true'] }, description: 'Presente cuando la respuesta es la guardada de una petición anterior con la misma Idempotency-Key' },
};

/** Headers of the error answers that carry more, or fewer, than COMMON_HEADERS. */
/** `Bearer realm="api"`, the same on every 401 invalid_key (contract: the same answer in all cases). */
export const WWW_AUTHENTICATE: Record<string, JsonSchema> = {
  'WWW-Authenticate': { schema: { type: 'string' }, description: 'Bearer realm="api", el mismo en todo 401 invalid_key' },
};

export const ERROR_HEADERS: Record<number, Record<string, JsonSchema>> = {
  // A refused credential counts against its client address, so the rate limit's headers are there too.
  401: { ...COMMON_HEADERS, ...WWW_AUTHENTICATE },
  // Answered before anything else (no key read, no rate limit); RFC 9110 §15.5.22.
  426: { ...VERSION_HEADERS, Upgrade: { schema: { type: 'string', const: 'TLS/1.2, HTTP/1.1' } } },
  409: { ...COMMON_HEADERS, 'Retry-After': { schema: { type: 'integer' }, description: 'Solo con `idempotency_in_progress`: segundos a esperar antes de repetir con la misma clave' } },
  429: { ...COMMON_HEADERS, 'Retry-After': { schema: { type: 'integer' }, description: 'Segundos enteros a esperar' } },
  503: { ...COMMON_HEADERS, 'Retry-After': { schema: { type: 'integer' }, description: 'Segundos enteros a esperar' } },
};

/** `/customers/:id` -> `/customers/{id}`. */
export function openApiPath(path: string): string {
  return path.replace(/:(\w+)/g, '{$1}');
}

/** The operation of `route`; `responseNames` names the components of response schemas (names.ts). */
export function routeOperation(route: RouteDef, book: SchemaBook, responseNames: Map<z.ZodType, string>) {
  return withUpload(route, operation(route, book, responseNames));
}

function operation(route: RouteDef, book: SchemaBook, responseNames: Map<z.ZodType, string>) {
  const parameters: JsonSchema[] = [];
  for (const [name, kind] of Object.entries(route.params ?? {})) {
    parameters.push({
      name,
      in: 'path',
      required: true,
      schema: kind === 'id' ? { type: 'string', pattern: '^[0-9a-f]{24}$' } : { type: 'string' },
      description: kind === 'id' ? 'ObjectId' : kind === 'id_slug_or_sku' ? 'ObjectId, slug o sku' : 'ObjectId o slug',
    });
  }
  if (route.query) {
    const query = book.inline(route.query, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, prop] of Object.entries(query.properties ?? {})) {
      const { description, ...rest } = prop;
      // A flag (pagination.ts queryBoolean) is a boolean to a generated client, which writes it as
      // `true`/`false` in the query; `1`/`0` are read too.
      const values = Array.isArray(rest.enum) ? (rest.enum as string[]) : [];
      const flag = values.length === QUERY_BOOLEAN_VALUES.length && QUERY_BOOLEAN_VALUES.every((v) => values.includes(v));
      const schema = flag ? { type: 'boolean' } : rest;
      parameters.push({ name, in: 'query', required: query.required?.includes(name) ?? false, schema, description: flag ? `${description ?? ''} (true/false; 1/0 también)`.trim() : description });
    }
  }
  // A write that reads its body; a route that never reads it (POST /automations) has no Idempotency-Key
  // (it answers alike whatever is sent), nor its errors.
  const readsWrite = route.method !== 'GET' && route.method !== 'DELETE' && !('ignoresBody' in route && route.ignoresBody);
  if (readsWrite) {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7E]+$' },
      description: 'Reintentos seguros: misma clave y cuerpo repiten la respuesta guardada (24 h). De 1 a 255 caracteres ASCII imprimibles, una sola vez (400 invalid_idempotency_key si no)',
    });
  }

  const responses: Record<string, JsonSchema> = {};
  if (route.status === 204) responses['204'] = { description: 'Sin contenido', headers: COMMON_HEADERS };
  else if (route.file) {
    responses[String(route.status)] = {
      description: 'El archivo, como adjunto',
      headers: {
        ...COMMON_HEADERS,
        'Content-Disposition': { schema: { type: 'string' }, description: 'attachment; filename="<serie>-<folio>.<ext>" (ASCII), y filename* en UTF-8 (RFC 6266) si la serie tiene otros caracteres' },
      },
      content: { [route.file.mediaType]: { schema: { type: 'string', format: 'binary' } } },
    };
  } else if (route.status < 400) {
    const item = route.response ? book.ref(responseNames.get(route.response)!, route.response, 'output') : { type: 'object' };
    const data = route.list ? { type: 'array', items: item } : item;
    const metaSchema = route.meta ?? (route.list ? listMetaSchema : null);
    // The shared ListMeta, or the route's own meta named after its records (WebhookEndpointListMeta).
    const metaName = metaSchema === listMetaSchema ? 'ListMeta' : `${route.response ? responseNames.get(route.response) : operationId(route)}ListMeta`;
    const body = metaSchema
      ? { type: 'object', required: ['data', 'meta'], properties: { data, meta: book.ref(metaName, metaSchema, 'output') } }
      : { type: 'object', required: ['data'], properties: { data } };
    const success = {
      description: 'Éxito',
      headers: {
        ...COMMON_HEADERS,
        ...(route.cache ? { 'X-Cache': { schema: { type: 'string', enum: ['HIT', 'MISS'] } } } : {}),
        ...(route.method !== 'GET' && route.method !== 'DELETE' ? REPLAYED_HEADER : {}),
      },
      content: { 'application/json': { schema: body } },
    };
    responses[String(route.status)] = success;
    if (route.alsoStatus) responses[String(route.alsoStatus.status)] = { ...success, description: route.alsoStatus.description };
  }
  const codes = declaredErrors(route);
  const byStatus = new Map<number, string[]>();
  for (const code of codes) {
    const status = ERROR_CODES[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    // A write's answer below 500 is stored under its Idempotency-Key and replayed, errors of the
    // handler included (docs/api.md, Idempotency), except the input's own (NOT_STORED) and those
    // answered before the key is read.
    const replayable = readsWrite && list.some((code) => !NOT_STORED.has(code as ErrorCode) && !ANSWERED_BEFORE_THE_KEY.has(code as ErrorCode));
    responses[String(status)] = {
      description: list.join(', '),
      headers: { ...(ERROR_HEADERS[status] ?? COMMON_HEADERS), ...(replayable ? REPLAYED_HEADER : {}) },
      // The codes this operation answers with this status, so a generated client can narrow `error`.
      content: { 'application/json': { schema: { allOf: [{ $ref: '#/components/schemas/Error' }, { type: 'object', properties: { error: { type: 'string', enum: list } } }] } } },
    };
  }

  return {
    operationId: route.operationId ?? operationId(route),
    tags: [route.tag],
    summary: route.summary,
    description: [
      route.description,
      route.session
        ? `Sesión de usuario (\`Authorization: Bearer service_ses_...\`, de \`POST /user/sessions\`) ${route.session === 'signed-in' ? 'de cualquier miembro' : `con el permiso \`${route.session}\``}.`
        : `Scope: \`${route.scope}\`.`,
      route.module ? `Módulo opcional: \`${route.module}\`.` : '',
    ]
      .filter(Boolean)
      .join('\n\n'),
    ...(route.session ? { ...(route.session === 'signed-in' ? {} : { 'x-permission': route.session }), security: [{ userSession: [] }] } : { 'x-scope': route.scope }),
    parameters,
    requestBody: route.multipart
      ? {
          required: true,
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                description: `Un archivo en uno de los campos: ${route.multipart.fields.join(', ')}; máximo ${route.multipart.maxFileBytes} bytes`,
                properties: Object.fromEntries(route.multipart.fields.map((f) => [f, { type: 'string', format: 'binary' }])),
              },
            },
          },
        }
      : route.body
      ? {
          required: !(!route.upload && route.bodyOptional),
          content: {
            'application/json': {
              // An optional body may also be `{}` (absentBodyAsEmptyData): `data` is required only where a body is.
              schema: {
                type: 'object',
                ...('bodyOptional' in route && route.bodyOptional ? {} : { required: ['data'] }),
                properties: { data: book.inline(('documentedBody' in route && route.documentedBody) || route.body, 'input') },
              },
              example: route.example ? { data: route.example } : undefined,
            },
          },
        }
      : undefined,
    responses,
  };
}

/** Upload routes also take multipart/form-data (the same fields, files as binary parts). */
function withUpload(route: RouteDef, op: ReturnType<typeof operation>) {
  if (!route.upload || !op.requestBody) return op;
  op.requestBody.content['multipart/form-data' as 'application/json'] = {
    schema: {
      type: 'object',
      description: 'Partes `data[answers][<key>]`, `answers[<key>]` o `files[<key>]` (texto o archivo; repetidas para varios archivos) y `locale` o `data[locale]`.',
      // anyOf: a text part is also a string, so the two are not exclusive (Redocly: no-illogical-composition-keywords).
      additionalProperties: { anyOf: [{ type: 'string' }, { type: 'string', format: 'binary' }] },
    },
  } as never;
  return op;
}
