// Webhook endpoints (contract: Webhook endpoint, Webhook delivery, Events).
// The same operations are served twice: under /webhook-endpoints with an API
// key and `*-webhook_endpoints` scopes, and under
// /user/developers/webhook-endpoints with a user session holding
// `manage-developers` (api/auth/sessions.ts). Delivery itself is the worker's
// (worker/webhooks/dispatcher.ts); nothing here calls a customer URL.
import { z } from 'zod';
import { transaction, type Queryable } from '../../db/pool.ts';
import { checkWebhookUrl } from '../../lib/ssrf.ts';
import { EMITTED_EVENT_NAMES, EVENT_NAMES, enabledEventChoices, enabledEventError } from '../../lib/webhook-events.ts';
import type { Permission } from '../auth/sessions.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { listMetaSchema, listPage, paginationQuery } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { optionalText } from '../validation.ts';
import type { ApiContext } from '../types.ts';
import {
  countEndpoints,
  deleteEndpoint,
  findDelivery,
  findEndpoint,
  insertEndpoint,
  MAX_ENDPOINTS_PER_COMPANY,
  rotateSecret,
  serializeDelivery,
  serializeEndpoint,
  updateEndpoint,
  DELIVERY_STATUSES,
  lockEndpointsOf,
  type DeliveryRow,
  type EndpointRow,
} from './webhook-endpoint-queries.ts';

const url = z.string().trim().max(2048).describe('URL del receptor; https en producción, sin direcciones privadas').meta({ format: 'uri' });
const enabledEvents = z
  .array(z.string().trim().max(100))
  .min(1, 'debe incluir al menos un evento')
  .max(EVENT_NAMES.length + 10)
  .superRefine((entries, ctx) => {
    entries.forEach((entry, i) => {
      const problem = enabledEventError(entry);
      if (problem) ctx.addIssue({ code: 'custom', message: problem, path: [i] });
    });
  })
  .describe('Nombres de evento, "<prefijo>.*" o "*"')
  .meta({ items: { type: 'string', enum: enabledEventChoices() } });
const description = optionalText(500);

const endpointCreate = z.strictObject({ url, enabled_events: enabledEvents, description });
const endpointUpdate = z.strictObject({ url: url.optional(), enabled_events: enabledEvents.optional(), description, active: z.boolean().optional() });

const endpointSchema = z.object({
  id: z.string(),
  object: z.literal('webhook_endpoint'),
  url: z.string(),
  description: z.string().nullable(),
  enabled_events: z.array(z.string()),
  active: z.boolean(),
  secret_last_four: z.string(),
  consecutive_failures: z.number().int(),
  last_delivery_at: z.string().nullable().describe('Cuándo se envió el último intento (el t de su firma)'),
  last_delivery_status: z.enum(['succeeded', 'failed']).nullable(),
  disabled_at: z.string().nullable().describe('Solo lo fija el apagado automático tras 20 fallos seguidos'),
  disabled_reason: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

/** What a create and a secret rotation answer: the endpoint with its whole secret, shown this once. */
const endpointWithSecretSchema = endpointSchema
  .extend({
    secret: z
      .string()
      .nullable()
      .describe('whsec_...: guárdalo ahora, no vuelve a mostrarse. null solo en la repetición de una respuesta por Idempotency-Key cuando ese secreto ya no firma (rotado después, o el endpoint eliminado)'),
  })
  .meta({ id: 'WebhookEndpointWithSecret' });

/** The list's meta: the pagination fields and the events the service emits (contract). */
const endpointListMeta = listMetaSchema.extend({ available_events: z.array(z.string()).describe('Los eventos que el servicio emite') });

const deliverySchema = z.object({
  id: z.string(),
  object: z.literal('webhook_delivery'),
  endpoint_id: z.string(),
  event: z.string(),
  event_id: z.string(),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number().int(),
  max_attempts: z.number().int(),
  next_attempt_at: z.string().nullable(),
  delivered_at: z.string().nullable(),
  response_status: z.number().int().nullable(),
  error_message: z.string().nullable(),
  created_at: z.string(),
});

/** The single-delivery read: the contract adds the signed body and the receiver's answer. */
const deliveryDetailSchema = deliverySchema.extend({
  payload: z.string().describe('El cuerpo exacto firmado'),
  response_body: z.string().nullable().describe('Los primeros 8 KB de la respuesta del receptor'),
});

const deliveriesQuery = paginationQuery.extend({
  event: z.enum(EVENT_NAMES).optional().describe('Solo entregas de este evento'),
  status: z.enum(DELIVERY_STATUSES).optional().describe('Solo entregas en este estado'),
});

/** Registration-time URL check (the worker checks again on the resolved IP when it connects). */
async function acceptableUrl(ctx: ApiContext, value: string): Promise<void> {
  const problem = await checkWebhookUrl(value, { httpsOnly: ctx.deps.config.isProduction, guard: ctx.deps.config.ssrfGuard });
  if (problem) throw validationFailed({ url: [problem] });
}

async function ownEndpoint(db: Queryable, companyId: string, id: string): Promise<EndpointRow> {
  const endpoint = await findEndpoint(db, companyId, id);
  if (!endpoint) throw new ApiError('not_found');
  return endpoint;
}

function routes(prefix: string, session?: Permission): RouteDef[] {
  const tag = session ? 'Webhook endpoints (sesión de usuario)' : 'Webhook endpoints';
  const idParam = { id: 'id' } as const;
  const common = { tag, ...(session ? { session } : {}) };
  const example = { url: 'https://example.com/webhooks/service', enabled_events: ['customer.created', 'invoice.*'], description: 'ERP' };
  return [
    defineRoute({
      ...common,
      method: 'GET',
      path: prefix,
      scope: 'read-webhook_endpoints',
      summary: 'Lista endpoints de webhook',
      description: '`meta.available_events` lista los eventos que el servicio emite hoy (crece cuando llegan los recursos que emiten los demás); `enabled_events` acepta cualquier evento del contrato.',
      query: paginationQuery,
      response: endpointSchema,
      list: true,
      meta: endpointListMeta,
      status: 200,
      errors: ['invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
      handler: async (ctx, { query, companyId, db }) => {
        const page = await listPage<EndpointRow>(
          db,
          ctx.deps.totals,
          { table: 'webhook_endpoints', columns: '*', companyId, serialize: (row) => serializeEndpoint(row) },
          query,
        );
        return { data: page.data, meta: { ...page.meta, available_events: EMITTED_EVENT_NAMES } };
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: prefix,
      scope: 'create-webhook_endpoints',
      summary: 'Crea un endpoint de webhook',
      description: `La respuesta incluye \`secret\` (whsec_...), que no vuelve a mostrarse. Máximo ${MAX_ENDPOINTS_PER_COMPANY} endpoints por empresa.`,
      body: endpointCreate,
      example,
      response: endpointWithSecretSchema,
      status: 201,
      errors: ['validation_failed', 'parameter_missing', 'idempotency_key_reused'],
      handler: async (ctx, { data, companyId, db }) => {
        await acceptableUrl(ctx, data.url);
        const row = await transaction(db, async (client) => {
          await lockEndpointsOf(client, companyId);
          if ((await countEndpoints(client, companyId)) >= MAX_ENDPOINTS_PER_COMPANY) {
            throw validationFailed({ url: [`la empresa ya tiene ${MAX_ENDPOINTS_PER_COMPANY} endpoints; elimina uno antes de crear otro`] });
          }
          return insertEndpoint(client, companyId, data);
        });
        ctx.state.withheld = ['secret'];
        return { data: serializeEndpoint(row, { withSecret: true }) };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: `${prefix}/:id`,
      scope: 'read-webhook_endpoints',
      summary: 'Obtiene un endpoint de webhook',
      params: idParam,
      response: endpointSchema,
      status: 200,
      errors: ['invalid_id', 'not_found'],
      handler: async (ctx, { params, companyId, db }) => ({ data: serializeEndpoint(await ownEndpoint(db, companyId, params.id)) }),
    }),
    defineRoute({
      ...common,
      method: 'PUT',
      path: `${prefix}/:id`,
      scope: 'update-webhook_endpoints',
      summary: 'Actualiza un endpoint de webhook',
      description:
        '`active: false` pausa el endpoint (conserva configuración y secreto; `disabled_at` queda null). `active: true` lo reanuda, también tras el apagado automático, y pone `consecutive_failures` en 0 (en un endpoint ya activo no cambia nada); toda entrega que aún se le debía (pendiente, o fallida con intentos por hacer) se programa de nuevo: un reintento en cola a su hora, las demás de inmediato.',
      params: idParam,
      body: endpointUpdate,
      example: { description: 'ERP (producción)', active: true },
      response: endpointSchema,
      status: 200,
      errors: ['invalid_id', 'not_found', 'validation_failed'],
      handler: async (ctx, { params, data, companyId, db }) => {
        if (data.url !== undefined) await acceptableUrl(ctx, data.url);
        // One transaction: a pause and the unscheduling of its deliveries' retries, a switch-on and their new jobs.
        const row = await transaction(db, (client) => updateEndpoint(client, companyId, params.id, data));
        if (!row) throw new ApiError('not_found');
        return { data: serializeEndpoint(row) };
      },
    }),
    defineRoute({
      ...common,
      method: 'DELETE',
      path: `${prefix}/:id`,
      scope: 'delete-webhook_endpoints',
      summary: 'Elimina un endpoint de webhook y su historial de entregas',
      params: idParam,
      status: 204,
      errors: ['invalid_id', 'not_found'],
      handler: async (ctx, { params, companyId, db }) => {
        if (!(await deleteEndpoint(db, companyId, params.id))) throw new ApiError('not_found');
        return undefined;
      },
    }),
    defineRoute({
      ...common,
      method: 'POST',
      path: `${prefix}/:id/rotate-secret`,
      scope: 'create-webhook_endpoints',
      summary: 'Genera un secreto nuevo',
      description:
        'Efectivo de inmediato: el siguiente intento de cualquier entrega ya se firma con el secreto nuevo. La respuesta incluye `secret`. ' +
        'Sin cuerpo (o `{}`, `{"data": {}}`); un campo en él es 422 `validation_failed`, como en toda escritura.',
      params: idParam,
      // The contract's body is "none": an empty body, `{}` or `{data: {}}`; any field is unknown (docs/api.md).
      body: z.strictObject({}),
      bodyOptional: true,
      response: endpointWithSecretSchema,
      status: 200,
      errors: ['invalid_id', 'not_found', 'validation_failed'],
      handler: async (ctx, { params, companyId, db }) => {
        const row = await rotateSecret(db, companyId, params.id);
        if (!row) throw new ApiError('not_found');
        ctx.state.withheld = ['secret'];
        return { data: serializeEndpoint(row, { withSecret: true }) };
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: `${prefix}/:id/deliveries`,
      scope: 'read-webhook_endpoints',
      summary: 'Historial de entregas de un endpoint (30 días)',
      params: idParam,
      query: deliveriesQuery,
      response: deliverySchema,
      list: true,
      status: 200,
      errors: ['invalid_id', 'not_found', 'invalid_cursor', 'invalid_parameter'],
      handler: async (ctx, { params, query, companyId, db }) => {
        await ownEndpoint(db, companyId, params.id);
        return listPage<DeliveryRow>(
          db,
          ctx.deps.totals,
          {
            table: 'webhook_deliveries',
            columns: '*',
            companyId,
            collection: (p) => [`endpoint_id = ${p.add(params.id)}`],
            where: (p) => [
              ...(query.event ? [`event = ${p.add(query.event)}`] : []),
              ...(query.status ? [`status = ${p.add(query.status)}`] : []),
            ],
            serialize: (row) => serializeDelivery(row),
          },
          query,
        );
      },
    }),
    defineRoute({
      ...common,
      method: 'GET',
      path: `${prefix}/:id/deliveries/:delivery_id`,
      scope: 'read-webhook_endpoints',
      summary: 'Una entrega, con el cuerpo firmado y la respuesta del receptor',
      params: { id: 'id', delivery_id: 'id' },
      response: deliveryDetailSchema,
      status: 200,
      errors: ['invalid_id', 'not_found'],
      handler: async (ctx, { params, companyId, db }) => {
        const delivery = await findDelivery(db, companyId, params.delivery_id, params.id);
        if (!delivery) throw new ApiError('not_found');
        return { data: serializeDelivery(delivery, { full: true }) };
      },
    }),
  ];
}

export const webhookEndpointRoutes = routes('/webhook-endpoints');
export const userWebhookEndpointRoutes = routes('/user/developers/webhook-endpoints', 'manage-developers');
