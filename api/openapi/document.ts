// OpenAPI 3.1 description generated from the router table: the same zod
// schemas that validate requests describe them here (one source of truth).
// The reference page (reference-page.ts) is rendered from this document.
import { z } from 'zod';
import type { Config } from '../../lib/config.ts';
import { API_RELEASED_AT, API_VERSION } from '../../lib/version.ts';
import { ERROR_CODES, type ErrorCode } from '../errors.ts';
import { listMetaSchema } from '../pagination.ts';
import { EVENT_NAMES } from '../../lib/webhook-events.ts';
import { SESSION_TTL_HOURS, signInSchema } from '../auth/sessions.ts';
import type { RouteDef } from '../route.ts';
import { apiRoutes } from '../routes/index.ts';

type JsonSchema = Record<string, unknown>;

function schema(type: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const out = z.toJSONSchema(type, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as JsonSchema;
  delete out.$schema;
  return out;
}

const errorSchema: JsonSchema = {
  type: 'object',
  required: ['error', 'message'],
  properties: {
    error: { type: 'string', enum: Object.keys(ERROR_CODES), description: 'Código estable: ramifica con él, no con message' },
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

/** Headers every API response carries (contract, Versioning; DESIGN.md: rate limit and request id). */
const COMMON_HEADERS: Record<string, JsonSchema> = {
  'X-Request-Id': { schema: { type: 'string' }, description: 'Id de la petición; aparece en la línea de registro' },
  'X-Service-API-Version': { schema: { type: 'string', const: API_VERSION } },
  'X-Service-API-Released-At': { schema: { type: 'string', const: API_RELEASED_AT } },
  'RateLimit-Limit': { schema: { type: 'integer' }, description: 'Peticiones por minuto de la clave' },
  'RateLimit-Remaining': { schema: { type: 'integer' }, description: 'Peticiones que quedan en la ventana' },
  'RateLimit-Reset': { schema: { type: 'integer' }, description: 'Segundos hasta que la petición más antigua sale de la ventana' },
};

const COMMON_ERRORS: ErrorCode[] = ['invalid_key', 'origin_not_allowed', 'insufficient_scope', 'rate_limited'];

function openApiPath(path: string): string {
  return path.replace(/:(\w+)/g, '{$1}');
}

function operation(route: RouteDef) {
  const parameters: JsonSchema[] = [];
  for (const [name, kind] of Object.entries(route.params ?? {})) {
    parameters.push({
      name,
      in: 'path',
      required: true,
      schema: kind === 'id' ? { type: 'string', pattern: '^[0-9a-f]{24}$' } : { type: 'string' },
      description: kind === 'id' ? 'ObjectId' : 'ObjectId o slug',
    });
  }
  if (route.query) {
    const query = schema(route.query, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
    for (const [name, prop] of Object.entries(query.properties ?? {})) {
      const { description, ...rest } = prop;
      parameters.push({ name, in: 'query', required: query.required?.includes(name) ?? false, schema: rest, description });
    }
  }
  if (route.method !== 'GET' && route.method !== 'DELETE') {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      schema: { type: 'string', maxLength: 255 },
      description: 'Reintentos seguros: misma clave y cuerpo repiten la respuesta guardada (24 h)',
    });
  }

  const responses: Record<string, JsonSchema> = {};
  if (route.status === 204) responses['204'] = { description: 'Sin contenido' };
  else if (route.status < 400) {
    const item = route.response ? schema(route.response, 'output') : { type: 'object' };
    const body = route.list
      ? { type: 'object', required: ['data', 'meta'], properties: { data: { type: 'array', items: item }, meta: schema(listMetaSchema, 'output') } }
      : { type: 'object', required: ['data'], properties: { data: item } };
    responses[String(route.status)] = {
      description: 'Éxito',
      headers: {
        ...COMMON_HEADERS,
        ...(route.cache ? { 'X-Cache': { schema: { type: 'string', enum: ['HIT', 'MISS'] } } } : {}),
        ...(route.method !== 'GET' && route.method !== 'DELETE'
          ? { 'Idempotent-Replayed': { schema: { type: 'string', enum: ['true'] }, description: 'Presente cuando la respuesta es la guardada de una petición anterior con la misma Idempotency-Key' } }
          : {}),
      },
      content: { 'application/json': { schema: body } },
    };
  }
  const writes: ErrorCode[] = route.method !== 'GET' && route.method !== 'DELETE'
    ? ['idempotency_key_reused', 'idempotency_body_too_large', 'idempotency_in_progress', 'invalid_idempotency_key']
    : [];
  const codes = [...new Set<ErrorCode>([...(route.errors ?? []), ...COMMON_ERRORS, 'https_required', ...(route.module ? (['module_not_enabled'] as const) : []), ...writes])];
  const byStatus = new Map<number, string[]>();
  for (const code of codes) {
    const status = ERROR_CODES[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    responses[String(status)] = {
      description: list.join(', '),
      headers: status === 429 ? { ...COMMON_HEADERS, 'Retry-After': { schema: { type: 'integer' }, description: 'Segundos enteros a esperar' } } : COMMON_HEADERS,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  }

  return {
    operationId: `${route.method.toLowerCase()}${route.path.replace(/[/:](\w)/g, (_, c: string) => c.toUpperCase()).replace(/[^A-Za-z]/g, '')}`,
    tags: [route.tag],
    summary: route.summary,
    description: [
      route.description,
      route.session
        ? `Sesión de usuario (\`Authorization: Bearer service_ses_...\`, de \`POST /user/sessions\`) con el permiso \`${route.session}\`.`
        : `Scope: \`${route.scope}\`.`,
      route.module ? `Módulo opcional: \`${route.module}\`.` : '',
    ]
      .filter(Boolean)
      .join('\n\n'),
    ...(route.session ? { 'x-permission': route.session, security: [{ userSession: [] }] } : { 'x-scope': route.scope }),
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
          required: true,
          content: {
            'application/json': {
              schema: { type: 'object', required: ['data'], properties: { data: schema(route.body, 'input') } },
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
      additionalProperties: { oneOf: [{ type: 'string' }, { type: 'string', format: 'binary' }] },
    },
  } as never;
  return op;
}

/** Sign-in and sign-out of the user session that `/user/...` routes take (api/auth/sessions.ts). */
function sessionPaths(): Record<string, Record<string, unknown>> {
  const error = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });
  return {
    '/user/sessions': {
      post: {
        operationId: 'postUserSessions',
        tags: ['Sesiones de usuario'],
        summary: 'Inicia sesión con correo y contraseña',
        description: `Devuelve un token \`service_ses_...\` válido ${SESSION_TTL_HOURS} h para las rutas \`/user/...\`. Credenciales incorrectas: 401 invalid_key. 10 intentos por minuto por correo.`,
        security: [],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['data'], properties: { data: schema(signInSchema, 'input') } } } } },
        responses: {
          '201': {
            description: 'Sesión abierta',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  properties: {
                    data: {
                      type: 'object',
                      properties: { object: { const: 'user_session' }, token: { type: 'string' }, user_id: { type: 'string' }, company_id: { type: 'string' }, expires_at: { type: 'string', format: 'date-time' } },
                    },
                  },
                },
              },
            },
          },
          '401': error('invalid_key'),
          '422': error('validation_failed, parameter_missing'),
          '429': error('rate_limited'),
        },
      },
    },
    '/user/sessions/current': {
      delete: {
        operationId: 'deleteUserSessionsCurrent',
        tags: ['Sesiones de usuario'],
        summary: 'Cierra la sesión del token enviado',
        security: [{ userSession: [] }],
        responses: { '204': { description: 'Sesión cerrada' }, '401': error('invalid_key') },
      },
    },
  };
}

const webhookEventSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'evento', 'event', 'created_at', 'api_version', 'data'],
  properties: {
    id: { type: 'string', pattern: '^evt_[0-9a-f]+$', description: 'Id estable del evento, igual en cada intento: base para descartar duplicados' },
    evento: { type: 'string', description: 'Nombre del evento (igual que event)' },
    event: { type: 'string' },
    created_at: { type: 'string', format: 'date-time', description: 'Cuándo ocurrió el hecho, no cuándo se intentó la entrega' },
    api_version: { type: 'string', description: 'Versión (fecha) con la que se construyó el cuerpo' },
    data: {
      type: 'object',
      required: ['object', 'id', 'metadata'],
      properties: { object: { type: 'string' }, id: { type: 'string' }, metadata: { type: 'object', additionalProperties: { type: 'string' } } },
      additionalProperties: true,
    },
  },
};

/** One entry of the document's `webhooks`: what a receiver gets for `name`. */
function webhookOperation(name: string) {
  const header = (h: string, description: string) => ({ name: h, in: 'header', required: true, schema: { type: 'string' }, description });
  return {
    post: {
      summary: name,
      description: 'Firma: `X-Service-Signature: t=<unix>,v1=<hex HMAC-SHA256 de "<t>.<cuerpo crudo>">` con el secreto completo del endpoint (whsec_...). Rechaza t a más de 300 s de tu reloj. Éxito: cualquier 2xx con la respuesta completa (10 s de lectura, 15 s en total; una respuesta cortada es un fallo, y las redirecciones no se siguen); reintentos a +1 min, +5 min, +30 min, +2 h y +6 h.',
      parameters: [
        header('X-Service-Signature', 't=<unix>,v1=<hex>'),
        header('X-Service-Event', 'Nombre del evento'),
        header('X-Service-Event-Id', 'Igual que el id del cuerpo'),
        header('X-Service-Delivery', 'Id de la entrega (GET /webhook-endpoints/{id}/deliveries/{delivery_id})'),
        header('X-Service-Attempt', 'Número de intento, desde 1'),
      ],
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/WebhookEvent' } } } },
      responses: { '2XX': { description: 'Recibido; cualquier otra respuesta es un fallo y se reintenta' } },
    },
  };
}

let cached: { key: string; doc: JsonSchema } | undefined;

export function openApiDocument(config: Config, routes: RouteDef[] = apiRoutes): JsonSchema {
  if (cached?.key === config.baseUrl && routes === apiRoutes) return cached.doc;
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const p = openApiPath(route.path);
    paths[p] ??= {};
    paths[p][route.method.toLowerCase()] = withUpload(route, operation(route));
  }
  Object.assign(paths, sessionPaths());
  const doc = {
    openapi: '3.1.0',
    info: {
      title: 'Business Workspace API',
      version: API_VERSION,
      description: [
        'API REST multiempresa. Cada clave pertenece a una empresa y solo alcanza sus registros.',
        `Versión ${API_VERSION}, publicada el ${API_RELEASED_AT}. Cada respuesta lleva X-Service-API-Version y X-Service-API-Released-At.`,
        'Errores: `{error, message, errors?}`; ramifica con `error`. Límite: 600 peticiones por minuto por clave (ventana deslizante), con cabeceras RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset y Retry-After en 429.',
        'Paginación: limit (25 por defecto, máximo 100), starting_after, ending_before, page (máximo 200), include_total, include_filtered_total.',
      ].join('\n\n'),
    },
    servers: [{ url: config.baseUrl }],
    security: [{ apiKey: [] }],
    paths,
    webhooks: Object.fromEntries(EVENT_NAMES.map((name) => [name, webhookOperation(name)])),
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer service_sk_<API_KEY_SECRET>' },
        userSession: {
          type: 'http',
          scheme: 'bearer',
          description: `Authorization: Bearer service_ses_<TOKEN>, de POST /api/v1/user/sessions (correo y contraseña); válida ${SESSION_TTL_HOURS} h`,
        },
      },
      schemas: { Error: errorSchema, WebhookEvent: webhookEventSchema },
    },
  };
  const json = JSON.parse(JSON.stringify(doc)) as JsonSchema; // drops undefined members
  if (routes === apiRoutes) cached = { key: config.baseUrl, doc: json };
  return json;
}
