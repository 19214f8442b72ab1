// Webhook endpoints' and deliveries' zod schemas (contract: Webhook endpoint, Webhook delivery): what a
// create and an update take, what reads answer (the serializers in webhook-endpoint-queries.ts are typed
// by them), and the deliveries list's query.
import { z } from 'zod';
import { EVENT_NAMES, enabledEventChoices, enabledEventError } from '../../lib/webhook-events.ts';
import { listMetaSchema, paginationQuery } from '../pagination.ts';
import { optionalText } from '../validation.ts';

/** A delivery's `status` (contract, Webhook delivery). */
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed', 'exhausted'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

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

export const endpointCreate = z.strictObject({ url, enabled_events: enabledEvents, description });
export const endpointUpdate = z.strictObject({ url: url.optional(), enabled_events: enabledEvents.optional(), description, active: z.boolean().optional() });

export const endpointSchema = z.object({
  id: z.string(),
  object: z.literal('webhook_endpoint'),
  url: z.string(),
  description: z.string().nullable(),
  enabled_events: z.array(z.string()).meta({ items: { type: 'string', enum: enabledEventChoices() } }),
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
export const endpointWithSecretSchema = endpointSchema
  .extend({
    secret: z
      .string()
      .nullable()
      .describe('whsec_...: guárdalo ahora, no vuelve a mostrarse. null solo en la repetición de una respuesta por Idempotency-Key cuando ese secreto ya no firma (rotado después, o el endpoint eliminado)'),
  })
  .meta({ id: 'WebhookEndpointWithSecret' });

/** The list's meta: the pagination fields and the events the service emits (contract). */
export const endpointListMeta = listMetaSchema.extend({ available_events: z.array(z.string()).describe('Los eventos que el servicio emite') });

export const deliverySchema = z.object({
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
export const deliveryDetailSchema = deliverySchema.extend({
  payload: z.string().describe('El cuerpo exacto firmado'),
  response_body: z.string().nullable().describe('Los primeros 8 KB de la respuesta del receptor'),
});

export const deliveriesQuery = paginationQuery.extend({
  event: z.enum(EVENT_NAMES).optional().describe('Solo entregas de este evento'),
  status: z.enum(DELIVERY_STATUSES).optional().describe('Solo entregas en este estado'),
});
