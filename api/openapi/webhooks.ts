// The document's `webhooks`: what a receiver gets for each event
// (lib/webhook-events.ts), signed and retried by the worker.
import { webhookOperationId } from './names.ts';
import type { JsonSchema } from './schemas.ts';

export const webhookEventSchema: JsonSchema = {
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
export function webhookOperation(name: string) {
  const header = (h: string, description: string) => ({ name: h, in: 'header', required: true, schema: { type: 'string' }, description });
  return {
    post: {
      operationId: webhookOperationId(name),
      summary: name,
      description: 'Firma: `X-Service-Signature: t=<unix>,v1=<hex HMAC-SHA256 de "<t>.<cuerpo crudo>">` con el secreto completo del endpoint (whsec_...). Rechaza t a más de 300 s de tu reloj. Éxito: cualquier 2xx con la respuesta completa (10 s de lectura, 15 s en total; una respuesta cortada es un fallo, y las redirecciones no se siguen); reintentos a +1 min, +5 min, +30 min, +2 h y +6 h.',
      parameters: [
        header('X-Service-Signature', 't=<unix>,v1=<hex>'),
        header('X-Service-Event', 'Nombre del evento'),
        header('X-Service-Event-Id', 'Igual que el id del cuerpo'),
        header('X-Service-Delivery', 'Id de este intento: `<delivery_id>-<intento>` (la entrega: GET /webhook-endpoints/{id}/deliveries/{delivery_id})'),
        header('X-Service-Attempt', 'Número de intento, desde 1'),
      ],
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/WebhookEvent' } } } },
      responses: { '2XX': { description: 'Recibido; cualquier otra respuesta es un fallo y se reintenta' } },
    },
  };
}
