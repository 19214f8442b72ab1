// The document's `webhooks`: what a receiver gets for each event
// (lib/webhook-events.ts), signed and retried by the worker. Each event has
// its own component (`SalePaidEvent`) whose `data` lists the fields the
// service sends for it (docs/webhooks.md, money.md, invoicing.md): the
// contract's `object`, `id` and `metadata`, and the fields it leaves to us.
// `data` stays open to fields added later; test/webhooks.emitted.test.ts
// checks every delivered body against its event's schema.
import { INVOICE_STATUSES } from '../../db/invoicing.ts';
import { FREQUENCIES } from '../../db/money/recurring.ts';
import { SALE_STATUSES } from '../../db/money/sales.ts';
import type { EventName } from '../../lib/webhook-events.ts';
import { retryDelaysText } from '../../lib/webhook-retry.ts';
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

const text = { type: 'string' };
const textOrNull = { type: ['string', 'null'] };
const cents = { type: 'integer' };
const instant = { type: 'string', format: 'date-time' };
const day = { type: 'string', format: 'date' };

type Fields = Record<string, JsonSchema>;
const contact = (object: string): Fields => ({ object: { const: object }, id: text, name: text, email: textOrNull });
const income: Fields = {
  object: { const: 'income' }, id: text, status: { enum: ['paid', 'pending'] }, amount_cents: cents, paid_cents: cents,
  currency: text, occurred_at: instant, sale_id: textOrNull,
};
const sale: Fields = {
  object: { const: 'sale' }, id: text, status: { enum: [...SALE_STATUSES] }, amount_cents: { ...cents, description: 'El total de la venta' },
  paid_cents: cents, refunded_cents: cents, currency: text, occurred_at: instant,
};
const recurring: Fields = {
  object: { const: 'recurring_transaction' }, id: text, type: { enum: ['income', 'expense'] },
  status: { enum: ['active', 'ended', 'inactive'], description: 'active; ended al agotarse; inactive al apagarse' },
  amount_cents: cents, frequency: { enum: [...FREQUENCIES] }, interval: { type: 'integer' }, next_occurrence_on: { ...day, type: ['string', 'null'] },
  occurrences_count: { type: 'integer' }, created_at: instant,
};
const invoice: Fields = {
  object: { const: 'invoice' }, id: text, sale_id: text, status: { enum: [...INVOICE_STATUSES] }, uuid: textOrNull,
  amount_cents: { ...cents, description: 'El total de la factura' }, currency: text,
};

/** Each event's `data` beyond `metadata`: always-present fields, and those only some deliveries carry. */
const EVENT_DATA: Record<EventName, { fields: Fields; optional?: Fields }> = {
  'customer.created': { fields: contact('customer') },
  'lead.created': { fields: contact('lead') },
  'income.created': { fields: income },
  'income.paid': { fields: { ...income, payment_cents: { ...cents, description: 'Este pago' }, paid_at: instant } },
  'income.deleted': { fields: income },
  'sale.created': { fields: sale },
  'sale.paid': { fields: sale },
  'sale.refunded': { fields: { ...sale, refund_id: text, refund_cents: { ...cents, description: 'Esta devolución' }, reason: textOrNull } },
  'recurring.created': { fields: recurring },
  'recurring.occurrence_created': { fields: { ...recurring, recurring_occurrence_on: { ...day, description: 'El día de la ocurrencia' } } },
  'recurring.ended': { fields: recurring },
  'recurring.deactivated': { fields: recurring, optional: { deleted: { const: true, description: 'Solo cuando la apagó un DELETE' } } },
  'invoice.emitted': { fields: invoice },
  'invoice.cancelled': { fields: { ...invoice, motive: { type: 'string', description: 'Motivo del SAT, 01 a 04' } } },
  'invoice.substituted': { fields: { ...invoice, substituted_uuid: text, substituted_id: text } },
  'invoice.payment_complement_added': { fields: { ...invoice, complement_id: text, complement_uuid: text, payment_cents: cents, installment: { type: 'integer' } } },
};

/** `SalePaidEvent` for `sale.paid`. */
export function eventComponentName(name: string): string {
  return `${name.split(/[._]/).map((w) => w[0]!.toUpperCase() + w.slice(1)).join('')}Event`;
}

/** The envelope of one event: WebhookEvent (allOf) with its name fixed and its `data` described. */
export function webhookEventSchemaFor(name: EventName): JsonSchema {
  const { fields, optional = {} } = EVENT_DATA[name];
  return {
    allOf: [
      { $ref: '#/components/schemas/WebhookEvent' },
      {
        type: 'object',
        properties: {
          evento: { const: name },
          event: { const: name },
          data: { type: 'object', required: Object.keys(fields), properties: { ...fields, ...optional } },
        },
      },
    ],
  };
}

/** One entry of the document's `webhooks`: what a receiver gets for `name`. */
export function webhookOperation(name: string) {
  const header = (h: string, description: string) => ({ name: h, in: 'header', required: true, schema: { type: 'string' }, description });
  return {
    post: {
      operationId: webhookOperationId(name),
      summary: name,
      description: `Firma: \`X-Service-Signature: t=<unix>,v1=<hex HMAC-SHA256 de "<t>.<cuerpo crudo>">\` con el secreto completo del endpoint (whsec_...). Rechaza t a más de 300 s de tu reloj. Éxito: cualquier 2xx con la respuesta completa (10 s de lectura, 15 s en total; una respuesta cortada es un fallo, y las redirecciones no se siguen); reintentos a ${retryDelaysText()} del primer intento (cada espera cuenta desde el intento anterior: uno hecho tarde conserva la separación).`,
      parameters: [
        header('X-Service-Signature', 't=<unix>,v1=<hex>'),
        header('X-Service-Event', 'Nombre del evento'),
        header('X-Service-Event-Id', 'Igual que el id del cuerpo'),
        header('X-Service-Delivery', 'Id de este intento: `<delivery_id>-<intento>` (la entrega: GET /webhook-endpoints/{id}/deliveries/{delivery_id})'),
        header('X-Service-Attempt', 'Número de intento, desde 1'),
      ],
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: `#/components/schemas/${eventComponentName(name)}` } } } },
      responses: { '2XX': { description: 'Recibido; cualquier otra respuesta es un fallo y se reintenta' } },
    },
  };
}
