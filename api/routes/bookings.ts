// Bookings at /bookings (scopes `*-bookings`): the list and reads, a booking
// made by an integrator on a visitor's behalf, cancel and reschedule. The
// writes themselves are api/bookings/book.ts, shared with the public page.
import { cancelBooking, createBooking, rescheduleBooking } from '../bookings/book.ts';
import { ApiError } from '../errors.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { windowInstants } from '../../db/companies.ts';
import { findBooking, listBookings, serializeBooking } from './booking-queries.ts';
import { bookingCancel, bookingCreate, bookingExample, bookingListQuery, bookingReschedule, bookingSchema } from './booking-schemas.ts';

const TAG = 'Bookings';
const idParam = { id: 'id' } as const;

const ATOMIC =
  'En una sola transacción: el evento del anfitrión en su calendario (`source: booking`, con el reservante como invitado), ' +
  'el prospecto (el de ese correo, o uno nuevo con su evento `lead.created`) y la reserva; después, el correo de confirmación ' +
  'con su invitación .ics y el aviso al anfitrión. Dos reservas que compiten por un horario terminan con exactamente una: ' +
  'la otra recibe 409 `slot_unavailable`.';

export const bookingRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/bookings',
    scope: 'read-bookings',
    tag: TAG,
    summary: 'Lista reservas',
    description:
      '`from` y `to` eligen las reservas que se traslapan con la ventana: terminan después de `from` y empiezan antes de `to`. Un día `YYYY-MM-DD` se lee en la zona de la empresa, como en `/calendar/events`: `from` desde su medianoche, `to` incluido entero.',
    query: bookingListQuery,
    response: bookingSchema,
    list: true,
    cache: 'bookings',
    status: 200,
    errors: ['invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) => {
      const { booking_link_id, user_id, status, from, to, ...page } = query;
      const window = await windowInstants(db, companyId, { from, to });
      return listBookings(db, ctx.deps.totals, companyId, { booking_link_id, user_id, status, ...window }, page);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/bookings',
    scope: 'create-bookings',
    tag: TAG,
    summary: 'Reserva un horario en nombre de un visitante',
    description:
      '`starts_at` debe ser el inicio de un horario libre del enlace (GET /booking-links/:id/slots): las mismas reglas valen aquí, ' +
      `si no, 409 \`slot_unavailable\`. Un enlace inactivo es 422 \`booking_link_inactive\`. ${ATOMIC} ` +
      'La respuesta trae `manage_url`, la liga con la que el reservante cancela o reprograma (solo se muestra aquí y en su correo).',
    body: bookingCreate,
    example: bookingExample,
    response: bookingSchema,
    status: 201,
    errors: ['validation_failed', 'parameter_missing', 'slot_unavailable', 'booking_link_inactive', 'idempotency_key_reused'],
    handler: async (ctx, { data, companyId, db }) => {
      const { booking, manageUrl } = await createBooking(db, ctx.deps, companyId, {
        linkId: data.booking_link_id,
        startsAt: data.starts_at,
        booker: data.booker,
        answers: data.answers,
      });
      ctx.state.withheld = ['manage_url'];
      return { data: { ...serializeBooking(booking), manage_url: manageUrl } };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/bookings/:id',
    scope: 'read-bookings',
    tag: TAG,
    summary: 'Obtiene una reserva',
    params: idParam,
    response: bookingSchema,
    status: 200,
    errors: ['invalid_id', 'not_found'],
    handler: async (_ctx, { params, companyId, db }) => {
      const row = await findBooking(db, companyId, params.id);
      if (!row) throw new ApiError('not_found');
      return { data: serializeBooking(row) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/bookings/:id/cancel',
    scope: 'update-bookings',
    tag: TAG,
    summary: 'Cancela una reserva',
    description:
      'La reserva queda `cancelled` (con `cancelled_by: host` y el motivo) y su evento se elimina del calendario del anfitrión; ' +
      'el reservante recibe la cancelación (.ics METHOD:CANCEL). Una reserva ya cancelada o reprogramada: 409 `booking_cancelled`.',
    params: idParam,
    body: bookingCancel,
    bodyOptional: true,
    example: { reason: 'El anfitrión no estará disponible' },
    response: bookingSchema,
    status: 200,
    errors: ['invalid_id', 'not_found', 'booking_cancelled', 'validation_failed'],
    handler: async (ctx, { params, data, companyId, db }) => ({
      data: serializeBooking(await cancelBooking(db, ctx.deps, companyId, params.id, 'host', data?.reason ?? null)),
    }),
  }),
  defineRoute({
    method: 'POST',
    path: '/bookings/:id/reschedule',
    scope: 'update-bookings',
    tag: TAG,
    summary: 'Reprograma una reserva',
    description:
      'Crea una reserva nueva en `starts_at` (mismo reservante, respuestas y prospecto; `rescheduled_from_id`) y cancela la anterior ' +
      '(`rescheduled_to_id`); el evento del anfitrión se mueve. El tiempo de la propia reserva cuenta como libre. El reservante ' +
      'recibe la invitación actualizada (mismo UID, SEQUENCE mayor). Horario ocupado: 409 `slot_unavailable`; reserva ya cancelada: 409 `booking_cancelled`.',
    params: idParam,
    body: bookingReschedule,
    example: { starts_at: '2026-12-02T17:00:00Z' },
    response: bookingSchema,
    status: 201,
    errors: ['invalid_id', 'not_found', 'slot_unavailable', 'booking_cancelled', 'booking_link_inactive', 'validation_failed'],
    handler: async (ctx, { params, data, companyId, db }) => {
      const { booking, manageUrl } = await rescheduleBooking(db, ctx.deps, companyId, params.id, {
        startsAt: data.starts_at,
        by: 'host',
        reason: data.reason ?? null,
      });
      ctx.state.withheld = ['manage_url'];
      return { data: { ...serializeBooking(booking), manage_url: manageUrl } };
    },
  }),
];
