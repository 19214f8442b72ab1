// Booking links (contract: "fields not shown"; modelled on Cal.com event
// types and Calendly): the write payloads with their availability rules, the
// read, and the slot query. Decisions are written in docs/bookings.md.
import { z } from 'zod';
import { calendarDay, instant } from '../date-fields.ts';
import { isObjectId } from '../../lib/objectid.ts';
import { minutesOf } from '../../lib/booking-slots.ts';
import { paginationQuery, queryBoolean } from '../pagination.ts';
import { DEFAULT_TIMEZONE } from './calendar-event-schemas.ts';
import { lineText, objectIdField, optionalText, timeZone } from '../validation.ts';

export const LINK_SLUG = /^[a-z0-9-]{1,64}$/;
export const LOCATION_TYPES = ['google_meet', 'in_person', 'phone', 'url'] as const;
export const QUESTION_TYPES = ['text', 'long_text', 'phone', 'select', 'checkbox'] as const;
/** What the slot list may span (issue: "a window is at most 62 days"). */
export const MAX_SLOT_WINDOW_DAYS = 62;

const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$|^24:00$/, 'hora HH:MM de 00:00 a 24:00');
const localDay = calendarDay;

const timeRange = z
  .strictObject({ start: hhmm.describe('Inicio, HH:MM en la zona del enlace'), end: hhmm.describe('Fin (exclusivo), HH:MM; 24:00 es la medianoche siguiente') })
  .refine((r) => minutesOf(r.end) > minutesOf(r.start), { message: 'end debe ser posterior a start', path: ['end'] });

/**
 * Whether two ranges of one day overlap. Refused at write: a slot list walks
 * every range of every day, so 50 copies of one all-day range cost 50 times
 * the CPU of one (0.76 s per public slot request, measured by a review) for
 * slots the list then drops as repeats.
 */
function overlapping(ranges: Array<{ start: string; end: string }>): boolean {
  const sorted = ranges.map((r) => [minutesOf(r.start), minutesOf(r.end)] as const).sort((a, b) => a[0] - b[0]);
  let reached = -1;
  for (const [start, end] of sorted) {
    if (start < reached) return true;
    reached = Math.max(reached, end);
  }
  return false;
}

const weeklyHours = z
  .array(
    z.strictObject({
      days: z
        .array(z.number().int().min(1).max(7))
        .min(1)
        .max(7)
        .refine((days) => new Set(days).size === days.length, 'un día aparece dos veces (el mismo horario se traslaparía consigo mismo)')
        .describe('Días ISO: 1 = lunes … 7 = domingo; cada uno una vez'),
      start: hhmm,
      end: hhmm,
    }).refine((r) => minutesOf(r.end) > minutesOf(r.start), { message: 'end debe ser posterior a start', path: ['end'] }),
  )
  .max(50)
  .superRefine((list, ctx) => {
    for (let day = 1; day <= 7; day++) {
      const ranges = list.filter((r) => r.days.includes(day));
      if (overlapping(ranges)) ctx.addIssue({ code: 'custom', message: `los horarios del día ${day} se traslapan: cada hora del día va en un solo horario` });
    }
  })
  .describe('Horario semanal en la zona del enlace; por defecto lunes a viernes de 09:00 a 17:00. Los horarios de un mismo día no se traslapan');

const dateOverrides = z
  .array(
    z.strictObject({
      date: localDay,
      ranges: z.array(timeRange).max(10).refine((ranges) => !overlapping(ranges), 'los horarios del día se traslapan').describe('Horario de ese día; vacío = día libre; sin traslapes'),
    }),
  )
  .max(366)
  .refine((list) => new Set(list.map((o) => o.date)).size === list.length, 'una fecha aparece dos veces')
  .describe('Días con su propio horario (reemplaza al semanal ese día)');

const bookingWindow = z
  .discriminatedUnion('type', [
    z.strictObject({ type: z.literal('rolling'), days: z.number().int().min(1).max(730).describe('Días naturales desde hoy (incluido) en la zona del enlace') }),
    z.strictObject({ type: z.literal('range'), start_on: localDay, end_on: localDay }).refine((w) => w.end_on >= w.start_on, { message: 'end_on no puede ser anterior a start_on', path: ['end_on'] }),
  ])
  .describe('Hasta cuándo se puede reservar; por defecto {"type": "rolling", "days": 60}');

const location = z
  .strictObject({
    type: z.enum(LOCATION_TYPES),
    value: optionalText(500).describe('Dirección (in_person), teléfono (phone) o URL (url); google_meet no lleva valor'),
  })
  .superRefine((l, ctx) => {
    if ((l.type === 'in_person' || l.type === 'phone' || l.type === 'url') && !l.value) ctx.addIssue({ code: 'custom', message: `${l.type} necesita value`, path: ['value'] });
    if (l.type === 'url' && l.value && !/^https?:\/\/\S+$/.test(l.value)) ctx.addIssue({ code: 'custom', message: 'URL http(s) inválida', path: ['value'] });
    if (l.type === 'google_meet' && l.value) ctx.addIssue({ code: 'custom', message: 'google_meet no lleva value: la liga se crea con la reserva', path: ['value'] });
  });

const question = z
  .strictObject({
    key: z.string().regex(/^[a-z][a-z0-9_]{0,39}$/, 'clave a-z, 0-9 o _, hasta 40'),
    label: lineText(200).min(1),
    type: z.enum(QUESTION_TYPES),
    required: z.boolean().optional().describe('Por defecto false'),
    options: z
      .array(lineText(100).min(1))
      .min(1)
      .max(50)
      .refine((options) => new Set(options).size === options.length, 'una opción aparece dos veces')
      .optional()
      .describe('Solo select'),
  })
  .superRefine((q, ctx) => {
    if (q.type === 'select' && !q.options) ctx.addIssue({ code: 'custom', message: 'select necesita options', path: ['options'] });
    if (q.type !== 'select' && q.options) ctx.addIssue({ code: 'custom', message: 'solo select lleva options', path: ['options'] });
  });

const RESERVED_QUESTION_KEYS = new Set(['name', 'email', 'phone', 'timezone']);

const linkFields = {
  slug: z
    .string()
    .regex(LINK_SLUG, '1 a 64 caracteres a-z, 0-9 o -')
    .refine((s) => !isObjectId(s), 'no puede tener la forma de un ObjectId')
    .describe('Único en la empresa y entre los enlaces del anfitrión; la ruta de detalle lo acepta'),
  // One line: it is the subject of the emails and the name of the invitation's calendar.
  title: lineText(200).min(1),
  description: optionalText(5000),
  active: z.boolean().optional().describe('Por defecto true; un enlace inactivo no ofrece horarios ni acepta reservas'),
  duration_minutes: z.number().int().min(5).max(720),
  slot_interval_minutes: z.number().int().min(5).max(720).nullable().optional().describe('Cada cuánto empieza un horario; null = la duración'),
  buffer_before_minutes: z.number().int().min(0).max(720).optional().describe('Libre antes de cada reserva; por defecto 0'),
  buffer_after_minutes: z.number().int().min(0).max(720).optional().describe('Libre después de cada reserva; por defecto 0'),
  minimum_notice_minutes: z.number().int().min(0).max(525_600).optional().describe('Anticipación mínima; por defecto 60'),
  booking_window: bookingWindow.optional(),
  timezone: timeZone.optional().describe(`IANA; por defecto ${DEFAULT_TIMEZONE}`),
  weekly_hours: weeklyHours.optional(),
  date_overrides: dateOverrides.optional(),
  location: location.nullable().optional(),
  max_bookings_per_day: z.number().int().min(1).max(1000).nullable().optional().describe('Reservas confirmadas de este enlace por día local; null = sin tope'),
  questions: z
    .array(question)
    .max(20)
    .refine((list) => new Set(list.map((q) => q.key)).size === list.length, 'una clave aparece dos veces')
    .refine((list) => list.every((q) => !RESERVED_QUESTION_KEYS.has(q.key)), 'name, email, phone y timezone son datos del reservante, no preguntas')
    .optional()
    .describe('Preguntas además de nombre y correo; las respuestas van en answers'),
};

export const bookingLinkCreate = z.strictObject({
  user_id: objectIdField.describe('Anfitrión: miembro de la empresa; no cambia después'),
  ...linkFields,
});
export const bookingLinkUpdate = z.strictObject(linkFields).partial();
export type BookingLinkCreate = z.infer<typeof bookingLinkCreate>;
export type BookingLinkUpdate = z.infer<typeof bookingLinkUpdate>;

export const DEFAULT_WEEKLY_HOURS = [{ days: [1, 2, 3, 4, 5], start: '09:00', end: '17:00' }];

const rangeRead = z.object({ start: z.string(), end: z.string() });
export const bookingLinkSchema = z.object({
  id: z.string(),
  user_id: z.string(),
  slug: z.string(),
  title: z.string(),
  description: z.string().nullable(),
  active: z.boolean(),
  duration_minutes: z.number().int(),
  slot_interval_minutes: z.number().int().nullable(),
  buffer_before_minutes: z.number().int(),
  buffer_after_minutes: z.number().int(),
  minimum_notice_minutes: z.number().int(),
  booking_window: z.union([
    z.object({ type: z.literal('rolling'), days: z.number().int() }),
    z.object({ type: z.literal('range'), start_on: z.string(), end_on: z.string() }),
  ]),
  timezone: z.string(),
  weekly_hours: z.array(z.object({ days: z.array(z.number().int()), start: z.string(), end: z.string() })),
  date_overrides: z.array(z.object({ date: z.string(), ranges: z.array(rangeRead) })),
  location: z.object({ type: z.enum(LOCATION_TYPES), value: z.string().nullable() }).nullable(),
  max_bookings_per_day: z.number().int().nullable(),
  questions: z.array(
    z.object({ key: z.string(), label: z.string(), type: z.enum(QUESTION_TYPES), required: z.boolean(), options: z.array(z.string()).nullable() }),
  ),
  public_url: z.string().nullable().describe('{booking_url}/<booking_slug del anfitrión>/<slug>; null si el anfitrión no tiene booking_slug o ya no pertenece a ninguna empresa'),
  created_at: z.string(),
  updated_at: z.string(),
});

export const bookingLinkExample = {
  user_id: '665f1c2a9b1e8a0012345678',
  slug: 'asesoria-30',
  title: 'Asesoría de 30 minutos',
  duration_minutes: 30,
  timezone: 'America/Mexico_City',
  weekly_hours: [{ days: [1, 2, 3, 4, 5], start: '09:00', end: '14:00' }],
  buffer_after_minutes: 10,
  location: { type: 'google_meet' },
  questions: [{ key: 'motivo', label: '¿De qué quieres hablar?', type: 'long_text', required: true }],
};

export const bookingLinkListQuery = paginationQuery.extend({
  user_id: objectIdField.optional(),
  active: queryBoolean.optional().describe('true o false'),
});

// A slot range is computed on (default 30 days after from, up to 62, in the visitor's zone): it must end
// within year 9999, or the calendar arithmetic runs past what it can represent (it answered 500).
const LATEST_SLOT_DAY = '9999-10-01';
const instantOrDate = z
  .union([calendarDay, instant], { error: 'debe ser un día YYYY-MM-DD o un instante ISO 8601 con su zona (2027-03-14T09:00:00-06:00)' })
  .refine((value) => value.slice(0, 10) < LATEST_SLOT_DAY, `debe ser anterior a ${LATEST_SLOT_DAY}`);
export const slotQuery = z.strictObject({
  from: instantOrDate.optional().describe('YYYY-MM-DD (día local del visitante, desde su medianoche) o instante ISO 8601; por defecto ahora'),
  to: instantOrDate.optional().describe('YYYY-MM-DD (incluido) o instante ISO 8601 (excluido); por defecto 30 días después de from; como máximo 62 días'),
  timezone: timeZone.optional().describe('Zona del visitante para agrupar por día; por defecto la del enlace'),
});
export type SlotQuery = z.infer<typeof slotQuery>;

export const slotListSchema = z.object({
  booking_link_id: z.string(),
  timezone: z.string().describe('La zona con la que se agrupan los días'),
  duration_minutes: z.number().int(),
  from: z.string(),
  to: z.string(),
  days: z.array(z.object({ date: z.string().describe('Día local del visitante'), slots: z.array(z.object({ starts_at: z.string(), ends_at: z.string() })) })),
});
