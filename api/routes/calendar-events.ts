// Calendar events at /calendar/events (contract: Calendar events), scopes
// `*-calendar_events`. The host (`user_id`) must be a member of the key's
// company (422 invalid_user otherwise) and never changes. `ends_at` is after
// `starts_at`, also after a PATCH that moves only one of them. An all-day
// event runs from midnight to midnight in its `timezone` (end exclusive): its
// bounds must be local midnights there, so a DST day is 23 or 25 hours long.
import { enqueueCalendarPush } from '../../db/calendar-sync.ts';
import { windowInstants } from '../../db/companies.ts';
import { transaction } from '../../db/pool.ts';
import { isObjectId } from '../../lib/objectid.ts';
import { localDate, startOfLocalDate } from '../../lib/local-dates.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import {
  deleteCalendarEvent,
  findCalendarEvent,
  insertCalendarEvent,
  isMember,
  listCalendarEvents,
  serializeCalendarEvent,
  updateCalendarEvent,
} from './calendar-event-queries.ts';
import {
  calendarEventCreate,
  calendarEventCreateDocumented,
  calendarEventExample,
  calendarEventListQuery,
  calendarEventSchema,
  calendarEventUpdate,
  DEFAULT_TIMEZONE,
} from './calendar-event-schemas.ts';

const TAG = 'Calendar events';
const ALL_DAY =
  'Un evento de todo el día (`all_day: true`) va de medianoche a medianoche en su `timezone`, con el final exclusivo: ' +
  '`starts_at` y `ends_at` deben ser medianoches locales de esa zona (un día con cambio de horario dura 23 o 25 horas). ' +
  'Todos los instantes se devuelven en UTC.';

/**
 * Whether an instant is where a local day of `timeZone` starts: its midnight,
 * or its first moment on a day a clock change skips midnight (Santiago's
 * daylight saving starts at 00:00, so that day begins at 01:00).
 */
function isStartOfLocalDay(instant: Date, timeZone: string): boolean {
  const ms = instant.getTime();
  return startOfLocalDate(localDate(ms, timeZone), timeZone) === ms;
}

/** The rules between fields, checked on the values the event will have after the write. */
function checkTimes(event: { starts_at: string | Date; ends_at: string | Date; all_day: boolean; timezone: string }): void {
  const starts = new Date(event.starts_at);
  const ends = new Date(event.ends_at);
  if (!(ends.getTime() > starts.getTime())) throw validationFailed({ ends_at: ['debe ser posterior a starts_at'] });
  if (event.all_day) {
    const errors: Record<string, string[]> = {};
    if (!isStartOfLocalDay(starts, event.timezone)) errors.starts_at = [`un evento de todo el día empieza a medianoche en ${event.timezone}`];
    if (!isStartOfLocalDay(ends, event.timezone)) errors.ends_at = [`un evento de todo el día termina a medianoche en ${event.timezone}`];
    if (Object.keys(errors).length) throw validationFailed(errors);
  }
}

const READ_ONLY =
  'Los eventos con `source: booking` (de una reserva) o `source: google` (importados de Google Calendar) son de solo lectura: ' +
  '422 `read_only_event` (una reserva se cambia con /bookings/:id/cancel o /reschedule; un evento de Google, en Google). ' +
  'Con Google Calendar conectado, crear, cambiar o eliminar un evento se sincroniza allá en segundo plano, salvo con `sync_to_google: false`.';

/** Events of bookings and of Google Calendar are changed where they come from (422 read_only_event). */
function refuseReadOnly(event: { source: string }): void {
  if (event.source === 'booking') throw new ApiError('read_only_event', 'El evento es de una reserva: cámbialo con POST /bookings/:id/cancel o /reschedule.');
  if (event.source === 'google') throw new ApiError('read_only_event', 'El evento viene de Google Calendar: cámbialo allá y se sincroniza aquí.');
}

const idParam = { id: 'id' } as const;

export const calendarEventRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/calendar/events',
    scope: 'read-calendar_events',
    tag: TAG,
    summary: 'Lista eventos del calendario',
    description: '`from` y `to` eligen los eventos que se traslapan con la ventana: terminan después de `from` y empiezan antes de `to`. Un día `YYYY-MM-DD` se lee en la zona de la empresa: `from` desde su medianoche, `to` incluido entero.',
    query: calendarEventListQuery,
    response: calendarEventSchema,
    list: true,
    cache: 'calendar_events',
    status: 200,
    errors: ['invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) => {
      const { user_id, kind, source, from, to, ...page } = query;
      return listCalendarEvents(db, ctx.deps.totals, companyId, { user_id, kind, source, ...(await windowInstants(db, companyId, { from, to })) }, page);
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/calendar/events',
    scope: 'create-calendar_events',
    tag: TAG,
    summary: 'Crea un evento',
    description: `\`user_id\` (anfitrión) es obligatorio y debe ser miembro de la empresa: si falta o no lo es, 422 invalid_user. ${ALL_DAY}`,
    body: calendarEventCreate,
    documentedBody: calendarEventCreateDocumented,
    example: calendarEventExample,
    response: calendarEventSchema,
    status: 201,
    errors: ['invalid_user', 'validation_failed', 'parameter_missing', 'idempotency_key_reused'],
    handler: async (ctx, { data, companyId, db }) => {
      const { user_id, title, starts_at, ends_at, ...fields } = data;
      if (!user_id || !isObjectId(user_id) || !(await isMember(db, companyId, user_id))) {
        throw new ApiError('invalid_user', 'user_id falta o no es miembro de la empresa.');
      }
      // The contract names a missing title 422 validation_failed; missing times are the general rule's parameter_missing.
      if (title === undefined) throw validationFailed({ title: ['es obligatorio'] });
      for (const [name, value] of Object.entries({ starts_at, ends_at })) {
        if (value === undefined) throw new ApiError('parameter_missing', `Falta el parámetro data.${name}.`);
      }
      checkTimes({ starts_at: starts_at!, ends_at: ends_at!, all_day: fields.all_day ?? false, timezone: fields.timezone ?? DEFAULT_TIMEZONE });
      const row = await transaction(db, async (client) => {
        const created = await insertCalendarEvent(client, companyId, { ...fields, title: title!, starts_at: starts_at!, ends_at: ends_at!, user_id });
        await enqueueCalendarPush(client, ctx.deps.jobs, created, 'upsert');
        return created;
      });
      return { data: serializeCalendarEvent(row) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/calendar/events/:id',
    scope: 'read-calendar_events',
    tag: TAG,
    summary: 'Obtiene un evento',
    params: idParam,
    response: calendarEventSchema,
    status: 200,
    errors: ['invalid_id', 'not_found'],
    handler: async (_ctx, { params, companyId, db }) => {
      const row = await findCalendarEvent(db, companyId, params.id);
      if (!row) throw new ApiError('not_found');
      return { data: serializeCalendarEvent(row) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/calendar/events/:id',
    scope: 'update-calendar_events',
    tag: TAG,
    summary: 'Actualiza un evento',
    description: `Los mismos campos que al crear salvo \`user_id\`, que no cambia (422 validation_failed; elimina y vuelve a crear para cambiar de anfitrión). ${ALL_DAY} ${READ_ONLY}`,
    params: idParam,
    body: calendarEventUpdate,
    example: { title: 'Llamada reprogramada', starts_at: '2026-12-01T17:00:00Z', ends_at: '2026-12-01T17:30:00Z' },
    response: calendarEventSchema,
    status: 200,
    errors: ['invalid_id', 'not_found', 'validation_failed', 'read_only_event'],
    handler: async (ctx, { params, data, companyId, db }) => {
      const row = await transaction(db, async (client) => {
        const existing = await findCalendarEvent(client, companyId, params.id, true);
        if (!existing) throw new ApiError('not_found');
        refuseReadOnly(existing);
        checkTimes({
          starts_at: data.starts_at ?? existing.starts_at,
          ends_at: data.ends_at ?? existing.ends_at,
          all_day: data.all_day ?? existing.all_day,
          timezone: data.timezone ?? existing.timezone,
        });
        const updated = await updateCalendarEvent(client, companyId, params.id, data);
        if (!updated) return existing; // nothing changed: nothing written, nothing to send to Google
        await enqueueCalendarPush(client, ctx.deps.jobs, updated, 'upsert');
        return updated;
      });
      return { data: serializeCalendarEvent(row) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/calendar/events/:id',
    scope: 'delete-calendar_events',
    tag: TAG,
    summary: 'Elimina un evento',
    description: `Si el anfitrión tiene Google Calendar conectado, el evento también se elimina allá. ${READ_ONLY}`,
    params: idParam,
    status: 204,
    errors: ['invalid_id', 'not_found', 'read_only_event'],
    handler: async (ctx, { params, companyId, db }) => {
      await transaction(db, async (client) => {
        const existing = await findCalendarEvent(client, companyId, params.id, true);
        if (!existing) throw new ApiError('not_found');
        refuseReadOnly(existing);
        await deleteCalendarEvent(client, companyId, params.id);
        await enqueueCalendarPush(client, ctx.deps.jobs, existing, 'delete');
      });
      return undefined;
    },
  }),
];
