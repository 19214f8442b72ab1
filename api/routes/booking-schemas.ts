// Bookings (contract: "fields not shown"; modelled on Cal.com bookings): the
// create, cancel and reschedule payloads, the read and the list query.
import { z } from 'zod';
import { paginationQuery } from '../pagination.ts';
import { instant } from '../date-fields.ts';
import { LOCATION_TYPES } from './booking-link-schemas.ts';
import { windowBound } from '../date-fields.ts';
import { emailAddress, objectIdField, optionalLineText, optionalWrittenText, personName, text, timeZone } from '../validation.ts';

export const BOOKING_STATUSES = ['confirmed', 'cancelled'] as const;

const slotStart = instant.describe('ISO 8601; debe ser el inicio de un horario libre (GET /booking-links/:id/slots)');

export const booker = z.strictObject({
  name: personName(200),
  email: emailAddress,
  // One line, as the name: it is quoted in the host's email.
  phone: optionalLineText(40),
  timezone: timeZone.nullable().optional().describe('Zona del reservante: las horas de sus correos se escriben en ella'),
});

/** Answers to the link's questions, by question key: text, or true/false for checkboxes. */
export const answers = z
  .record(z.string().max(40), z.union([text(5000), z.boolean()], { error: 'debe ser texto (hasta 5000 caracteres) o true/false' }), {
    error: 'debe ser un objeto con las respuestas por clave de pregunta',
  })
  .describe('Respuestas a las preguntas del enlace, por clave');

export const bookingCreate = z.strictObject({
  booking_link_id: objectIdField,
  starts_at: slotStart,
  booker,
  answers: answers.optional(),
});

export const bookingCancel = z.strictObject({
  // Quoted in both emails ("Motivo: …"): lines, but no other control characters.
  reason: optionalWrittenText(1000),
});

export const bookingReschedule = z.strictObject({
  starts_at: slotStart,
  // Quoted in both emails ("Motivo: …"): lines, but no other control characters.
  reason: optionalWrittenText(1000),
});

export const bookingSchema = z.object({
  id: z.string(),
  booking_link_id: z.string().nullable().describe('null si el enlace se eliminó'),
  user_id: z.string().describe('Anfitrión'),
  calendar_event_id: z.string().nullable().describe('El evento del anfitrión (source booking); null una vez cancelada'),
  lead_id: z.string().nullable(),
  status: z.enum(BOOKING_STATUSES),
  title: z.string(),
  starts_at: z.string(),
  ends_at: z.string(),
  booker: z.object({ name: z.string(), email: z.string(), phone: z.string().nullable(), timezone: z.string().nullable() }),
  answers: z.record(z.string(), z.union([z.string(), z.boolean()])),
  location: z.object({ type: z.enum(LOCATION_TYPES), value: z.string().nullable() }).nullable(),
  meet_url: z.string().nullable().describe('Liga de Google Meet cuando el enlace la pide y el anfitrión tiene su calendario conectado'),
  cancelled_at: z.string().nullable(),
  cancellation_reason: z.string().nullable(),
  cancelled_by: z.enum(['host', 'booker']).nullable().describe('host: por la API; booker: desde la liga de gestión'),
  rescheduled_from_id: z.string().nullable(),
  rescheduled_to_id: z.string().nullable(),
  manage_url: z.string().optional().describe('Liga de gestión del reservante; solo en la respuesta que crea la reserva'),
  created_at: z.string(),
  updated_at: z.string(),
});

export const bookingExample = {
  booking_link_id: '665f1c2a9b1e8a0012345678',
  starts_at: '2026-12-01T16:00:00Z',
  booker: { name: 'Luis Pérez', email: 'luis.perez@cliente.example', timezone: 'America/Monterrey' },
  answers: { motivo: 'Cotización de un proyecto' },
};

export const bookingListQuery = paginationQuery.extend({
  booking_link_id: objectIdField.optional(),
  user_id: objectIdField.optional(),
  status: z.enum(BOOKING_STATUSES).optional(),
  from: windowBound.optional().describe('Reservas que terminan después de este instante; un día YYYY-MM-DD es su medianoche en la zona de la empresa'),
  to: windowBound.optional().describe('Reservas que empiezan antes de este instante; un día YYYY-MM-DD se incluye entero (zona de la empresa)'),
});
