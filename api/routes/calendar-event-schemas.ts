// Calendar events (contract: "Calendar event" and "Calendar events"): the
// write payloads, the read and the list query. Read-only fields (`source`,
// `meet_url`, `google_event_id`, `booking_*`) are refused on write like any
// unknown field; `user_id` is refused on PATCH (the host never changes).
import { z } from 'zod';
import { instant as anInstant, windowBound } from '../date-fields.ts';
import { paginationQuery } from '../pagination.ts';
import { emailAddress, hexColor, objectIdField, optionalText, text, timeZone } from '../validation.ts';

export const EVENT_KINDS = ['event', 'meeting', 'task'] as const;
export const EVENT_SOURCES = ['native', 'booking', 'google'] as const;
export const DEFAULT_COLOR = '#2563eb';
export const DEFAULT_TIMEZONE = 'America/Mexico_City';

const instant = anInstant.describe('ISO 8601; se guarda y se devuelve en UTC');

const eventFields = {
  title: text(300).min(1),
  description: optionalText(10_000),
  location: optionalText(500),
  color: hexColor.optional().describe(`Por defecto ${DEFAULT_COLOR}`),
  starts_at: instant,
  ends_at: instant.describe('Posterior a starts_at'),
  all_day: z.boolean().optional().describe('Por defecto false; de medianoche a medianoche en `timezone` (ver la descripción)'),
  timezone: timeZone.optional().describe(`IANA; por defecto ${DEFAULT_TIMEZONE}`),
  kind: z.enum(EVENT_KINDS).optional().describe('Por defecto event'),
  attendees: z.array(z.strictObject({ name: optionalText(200), email: emailAddress })).max(100).optional(),
  reminders_minutes: z.array(z.number().int().min(0).max(40_320)).max(10).optional().describe('Minutos antes del evento; por defecto [15]'),
  create_meet: z.boolean().optional().describe('Pide una videollamada al calendario externo (no aplica a kind task)'),
  sync_to_google: z.boolean().optional().describe('Solo escritura: false evita sincronizar con el calendario externo conectado'),
};

// The contract names the errors of a create: a missing or foreign host is
// 422 invalid_user and a missing title is 422 validation_failed (a missing
// time is the general rule's 422 parameter_missing), so those presence
// checks are the handler's (api/routes/calendar-events.ts), in that order.
export const calendarEventCreate = z.strictObject({
  // A malformed host (123, null, {}) is the contract's invalid_user too, not validation_failed: caught as absent.
  user_id: z.string().optional().catch(undefined).describe('Anfitrión: miembro de la empresa; obligatorio; no cambia después'),
  ...eventFields,
  title: eventFields.title.optional().describe('Obligatorio'),
  starts_at: eventFields.starts_at.optional().describe('Obligatorio'),
  ends_at: eventFields.ends_at.optional().describe('Obligatorio; posterior a starts_at'),
});
/** The create as clients must send it (the OpenAPI document): the four fields the contract requires, required. */
export const calendarEventCreateDocumented = z.strictObject({
  user_id: z.string().describe('Anfitrión: miembro de la empresa; no cambia después. Ausente, o de otra empresa: 422 invalid_user'),
  ...eventFields,
  title: eventFields.title.describe('Ausente: 422 validation_failed'),
});
export const calendarEventUpdate = z.strictObject(eventFields).partial();
export type CalendarEventCreate = z.infer<typeof calendarEventCreate>;
export type CalendarEventUpdate = z.infer<typeof calendarEventUpdate>;

export const calendarEventSchema = z.object({
  id: z.string(),
  user_id: z.string(),
  title: z.string(),
  description: z.string().nullable(),
  location: z.string().nullable(),
  color: z.string(),
  starts_at: z.string(),
  ends_at: z.string(),
  all_day: z.boolean(),
  timezone: z.string(),
  kind: z.enum(EVENT_KINDS),
  source: z.enum(EVENT_SOURCES),
  meet_url: z.string().nullable(),
  create_meet: z.boolean(),
  attendees: z.array(z.object({ name: z.string().nullable(), email: z.string() })),
  reminders_minutes: z.array(z.number().int()),
  google_event_id: z.string().nullable(),
  booking_link_id: z.string().nullable(),
  booking_id: z.string().nullable(),
  booker_lead_id: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

const refId = objectIdField;

export const calendarEventListQuery = paginationQuery.extend({
  user_id: refId.optional().describe('Solo eventos de este anfitrión'),
  kind: z.enum(EVENT_KINDS).optional(),
  source: z.enum(EVENT_SOURCES).optional(),
  from: windowBound.optional().describe('Eventos que terminan después de este instante; un día YYYY-MM-DD es su medianoche en la zona de la empresa'),
  to: windowBound.optional().describe('Eventos que empiezan antes de este instante; un día YYYY-MM-DD se incluye entero (zona de la empresa)'),
});

export const calendarEventExample = {
  user_id: '64b7f0c2a1e4d5f6a7b8c9d0',
  title: 'Llamada con Comercial del Norte',
  starts_at: '2026-12-01T16:00:00Z',
  ends_at: '2026-12-01T16:30:00Z',
  kind: 'meeting',
  attendees: [{ name: 'Ana', email: 'ana@norte.example' }],
};
