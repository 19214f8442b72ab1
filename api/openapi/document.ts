// OpenAPI 3.1 description generated from the router table: the same zod
// schemas that validate requests describe them here (one source of truth).
// It is meant for client generators (openapi-typescript, openapi-generator):
// shared and recursive schemas are components with stable names, every
// operation has an operationId, and test/openapi.clients.test.ts keeps it at
// zero errors under Redocly's recommended rules. The reference page
// (reference-page.ts) is rendered from this document.
import type { Config } from '../../lib/config.ts';
import { API_RELEASED_AT, API_VERSION } from '../../lib/version.ts';
import { EMITTED_EVENT_NAMES } from '../../lib/webhook-events.ts';
import { SESSION_TTL_HOURS } from '../auth/sessions.ts';
import type { RouteDef } from '../route.ts';
import { apiRoutes } from '../routes/index.ts';
import { responseNames } from './names.ts';
import { errorSchema, openApiPath, routeOperation } from './operations.ts';
import { SchemaBook, type JsonSchema } from './schemas.ts';
import { sessionPaths } from './sessions.ts';
import { eventComponentName, webhookEventSchema, webhookEventSchemaFor, webhookOperation } from './webhooks.ts';

let cached: { key: string; doc: JsonSchema } | undefined;

export function openApiDocument(config: Config, routes: RouteDef[] = apiRoutes): JsonSchema {
  if (cached?.key === config.baseUrl && routes === apiRoutes) return cached.doc;
  const book = new SchemaBook();
  book.add('Error', errorSchema);
  book.add('WebhookEvent', webhookEventSchema);
  for (const name of EMITTED_EVENT_NAMES) book.add(eventComponentName(name), webhookEventSchemaFor(name));
  const names = responseNames(routes);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const p = openApiPath(route.path);
    paths[p] ??= {};
    paths[p][route.method.toLowerCase()] = routeOperation(route, book, names);
  }
  Object.assign(paths, sessionPaths(book));
  const doc = {
    openapi: '3.1.0',
    info: {
      title: 'Business Workspace API',
      version: API_VERSION,
      license: { name: 'MIT', identifier: 'MIT' },
      description: [
        'API REST multiempresa. Cada clave pertenece a una empresa y solo alcanza sus registros.',
        `Versión ${API_VERSION}, publicada el ${API_RELEASED_AT}. Cada respuesta lleva X-Service-API-Version y X-Service-API-Released-At.`,
        `Errores: \`{error, message, errors?}\`; ramifica con \`error\`. Límite: ${config.rateLimitPerMinute} peticiones por minuto por clave (ventana deslizante; una clave puede tener el suyo), con cabeceras RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset y Retry-After en 429.`,
        'Paginación: limit (25 por defecto, máximo 100), starting_after, ending_before, page (máximo 200), include_total, include_filtered_total.',
      ].join('\n\n'),
    },
    servers: [{ url: config.baseUrl }],
    security: [{ apiKey: [] }],
    paths,
    webhooks: Object.fromEntries(EMITTED_EVENT_NAMES.map((name) => [name, webhookOperation(name)])),
    components: {
      securitySchemes: {
        apiKey: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer service_sk_<API_KEY_SECRET>' },
        userSession: {
          type: 'http',
          scheme: 'bearer',
          description: `Authorization: Bearer service_ses_<TOKEN>, de POST /api/v1/user/sessions (correo y contraseña); válida ${SESSION_TTL_HOURS} h`,
        },
      },
      schemas: book.schemas,
    },
  };
  const json = JSON.parse(JSON.stringify(doc)) as JsonSchema; // drops undefined members
  if (routes === apiRoutes) cached = { key: config.baseUrl, doc: json };
  return json;
}
