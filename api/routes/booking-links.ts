// Booking links at /booking-links (scopes `*-booking_links`; detail by id or
// slug) and their free slots at /booking-links/:id/slots. The host
// (`user_id`) is a member of the company and never changes.
import { transactionRead, type Queryable } from '../../db/pool.ts';
import { ApiError } from '../errors.ts';
import { slotList } from '../bookings/slots.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import {
  deleteBookingLink,
  findBookingLink,
  findBookingLinkByIdOrSlug,
  insertBookingLink,
  listBookingLinks,
  serializeBookingLink,
  updateBookingLink,
  type BookingLinkRow,
} from './booking-link-queries.ts';
import {
  bookingLinkCreate,
  bookingLinkExample,
  bookingLinkListQuery,
  bookingLinkSchema,
  bookingLinkUpdate,
  slotListSchema,
  slotQuery,
} from './booking-link-schemas.ts';
import { isMember } from './calendar-event-queries.ts';
import { resolveIdOrSlug } from './slug-queries.ts';

const TAG = 'Booking links';

const RULES =
  'La disponibilidad se escribe en la zona del enlace (`timezone`): `weekly_hours` por día ISO (1 = lunes … 7 = domingo) y ' +
  '`date_overrides` para días con su propio horario (lista vacía = día libre). Los días con cambio de horario se calculan ' +
  'con la base de zonas IANA: una hora que no existe ese día se lee como la primera que sí existe. Un horario está libre ' +
  'si empieza después de `minimum_notice_minutes`, cae en `booking_window`, su día no llegó a `max_bookings_per_day` y ' +
  'su tiempo ampliado por los márgenes (`buffer_before_minutes`, `buffer_after_minutes`) no se cruza con otra reserva ' +
  'confirmada del anfitrión ni, si el anfitrión activó `settings_preferences.block_overlapping_bookings`, con sus eventos del calendario.';

async function loadLink(db: Queryable, companyId: string, value: string): Promise<BookingLinkRow> {
  const link = await findBookingLinkByIdOrSlug(db, companyId, value);
  if (!link) throw new ApiError('not_found');
  return link;
}

const idOrSlug = { id: 'id_or_slug' } as const;

export const bookingLinkRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/booking-links',
    scope: 'read-booking_links',
    tag: TAG,
    summary: 'Lista enlaces de reserva',
    query: bookingLinkListQuery,
    response: bookingLinkSchema,
    list: true,
    cache: 'booking_links',
    status: 200,
    errors: ['invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) => {
      const { user_id, active, ...page } = query;
      return listBookingLinks(db, ctx.deps.totals, companyId, ctx.deps.config.bookingUrl, { user_id, active }, page);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/booking-links',
    scope: 'create-booking_links',
    tag: TAG,
    summary: 'Crea un enlace de reserva',
    description: `\`user_id\` (anfitrión) debe ser miembro de la empresa (422 invalid_user). ${RULES}`,
    body: bookingLinkCreate,
    example: bookingLinkExample,
    response: bookingLinkSchema,
    status: 201,
    errors: ['invalid_user', 'validation_failed', 'parameter_missing', 'idempotency_key_reused'],
    handler: async (ctx, { data, companyId, db }) => {
      const saved = await transactionRead(db, async (client) => {
        // Held to the commit: a removal of the host at the same moment waits, then switches this link off too.
        if (!(await isMember(client, companyId, data.user_id, true))) throw new ApiError('invalid_user', 'user_id no es miembro de la empresa.');
        return insertBookingLink(client, companyId, data);
      }, async (client, id) => (await findBookingLink(client, companyId, id))!);
      return { data: serializeBookingLink(saved, ctx.deps.config.bookingUrl) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/booking-links/:id',
    scope: 'read-booking_links',
    tag: TAG,
    summary: 'Obtiene un enlace de reserva (por id o slug)',
    params: idOrSlug,
    response: bookingLinkSchema,
    status: 200,
    errors: ['not_found'],
    handler: async (ctx, { params, companyId, db }) => ({ data: serializeBookingLink(await loadLink(db, companyId, params.id), ctx.deps.config.bookingUrl) }),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/booking-links/:id',
    scope: 'update-booking_links',
    tag: TAG,
    summary: 'Actualiza un enlace de reserva',
    description: `Los mismos campos que al crear salvo \`user_id\` (el anfitrión no cambia). Las reservas ya hechas no cambian. Quitar al anfitrión del equipo desactiva sus enlaces; \`active: true\` en uno de ellos es 422 invalid_user. ${RULES}`,
    params: idOrSlug,
    body: bookingLinkUpdate,
    example: { title: 'Asesoría de 45 minutos', duration_minutes: 45 },
    response: bookingLinkSchema,
    status: 200,
    errors: ['not_found', 'invalid_user', 'validation_failed'],
    handler: async (ctx, { params, data, companyId, db }) => {
      const saved = await transactionRead(db, async (client) => {
        // Removing a member switched their links off; one cannot be switched on again without a host.
        // The host's membership is held before the link, the order a removal takes them in (membership,
        // then the links it switches off), so the two wait for each other instead of deadlocking.
        const id = await resolveIdOrSlug(client, 'booking_links', companyId, params.id);
        if (data.active === true) {
          const link = await findBookingLink(client, companyId, id);
          if (!link) throw new ApiError('not_found');
          if (!(await isMember(client, companyId, link.user_id, true))) throw new ApiError('invalid_user', 'El anfitrión del enlace ya no es miembro de la empresa: el enlace no puede activarse.');
        }
        if (!(await findBookingLink(client, companyId, id, true))) throw new ApiError('not_found'); // deleted meanwhile
        await updateBookingLink(client, companyId, id, data);
        return id;
      }, async (client, id) => (await findBookingLink(client, companyId, id))!);
      return { data: serializeBookingLink(saved, ctx.deps.config.bookingUrl) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/booking-links/:id',
    scope: 'delete-booking_links',
    tag: TAG,
    summary: 'Elimina un enlace de reserva',
    description: 'Sus reservas se conservan, con `booking_link_id: null`, y siguen en el calendario del anfitrión; para dejar de recibir reservas sin perder el enlace, `active: false`.',
    params: idOrSlug,
    status: 204,
    errors: ['not_found'],
    handler: async (_ctx, { params, companyId, db }) => {
      const id = await resolveIdOrSlug(db, 'booking_links', companyId, params.id);
      if (!(await deleteBookingLink(db, companyId, id))) throw new ApiError('not_found');
      return undefined;
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/booking-links/:id/slots',
    scope: 'read-booking_links',
    tag: TAG,
    summary: 'Horarios libres de un enlace',
    description:
      'Horarios libres que empiezan en la ventana [from, to), agrupados por día local del visitante (`timezone`; por defecto la del enlace); ' +
      'cada horario con `starts_at` y `ends_at` en UTC. La ventana es de 62 días como máximo (422 validation_failed). ' +
      'Son exactamente los horarios que POST /bookings acepta en ese momento (la misma función decide ambos). Un enlace inactivo no tiene horarios. ' +
      RULES,
    params: idOrSlug,
    query: slotQuery,
    response: slotListSchema,
    status: 200,
    errors: ['not_found', 'invalid_parameter', 'validation_failed'],
    handler: async (_ctx, { params, query, companyId, db }) => ({ data: await slotList(db, await loadLink(db, companyId, params.id), query) }),
  }),
];
