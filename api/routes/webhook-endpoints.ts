// Webhook endpoints (contract: Webhook endpoint, Webhook delivery, Events).
// The same operations are served twice: under /webhook-endpoints with an API
// key and `*-webhook_endpoints` scopes, and under
// /user/developers/webhook-endpoints with a user session holding
// `manage-developers` (api/auth/sessions.ts). Delivery itself is the worker's
// (worker/webhooks/dispatcher.ts); nothing here calls a customer URL.
import { z } from 'zod';
import { transaction, type Queryable } from '../../db/pool.ts';
import { checkWebhookUrl } from '../../lib/ssrf.ts';
import { EMITTED_EVENT_NAMES } from '../../lib/webhook-events.ts';
import type { Permission } from '../auth/scopes.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { listPage, paginationQuery } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';
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
  lockEndpointsOf,
  type DeliveryRow,
  type EndpointRow,
} from './webhook-endpoint-queries.ts';
import { deliveriesQuery, deliveryDetailSchema, deliverySchema, endpointCreate, endpointListMeta, endpointSchema, endpointUpdate, endpointWithSecretSchema } from './webhook-endpoint-schemas.ts';

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
        '`active: false` pausa el endpoint (conserva configuración y secreto; `disabled_at` queda null). `active: true` lo reanuda, también tras el apagado automático, y pone `consecutive_failures` en 0 (en un endpoint ya activo no cambia nada); toda entrega que aún se le debía (pendiente, o fallida con intentos por hacer) vuelve a tocar de inmediato, también un reintento que esperaba su hora (como en docs/webhooks.md).',
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
