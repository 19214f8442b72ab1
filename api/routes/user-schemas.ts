// Team members (contract: User (team member)): the write payload, with
// settings_preferences validated value by value, and the read. Credential
// fields (password, tokens) are not accepted: like any unknown field, 422.
import { z } from 'zod';
import { calendarDay } from '../date-fields.ts';
import { emailAddress, hexColor, optionalLineText, optionalText } from '../validation.ts';

export const BG_MODES = ['solid', 'linear', 'radial'] as const;
export const DASHBOARD_THEMES = ['light', 'dark', 'schedule'] as const;
export const BRANDING_THEMES = ['light', 'dark'] as const;

export const BOOKING_SLUG = /^[a-z0-9-]{3,64}$/;
/** Paths of the public booking page beside `<booking_slug>/<link_slug>`. */
export const RESERVED_BOOKING_SLUGS = new Set(['manage', 'assets']);

// null clears a value (it then reads null, as one never set), so a read can be written back as it is.
const background = z.strictObject({
  bg_mode: z.enum(BG_MODES).nullable().optional(),
  bg_color_from: hexColor.nullable().optional(),
  bg_color_to: hexColor.nullable().optional().describe('Solo degradados'),
  bg_angle: z.number().int().min(0).max(360).nullable().optional().describe('Solo degradado lineal'),
});
export type Background = z.infer<typeof background>;

const bookingBranding = z
  .strictObject({
    theme: z.enum(BRANDING_THEMES).nullable().optional().describe('Solo una pista para el panel; la página pública elige el tema por la hora local del visitante'),
    light: background.optional(),
    dark: background.optional(),
    // The flat form (contract): these three apply to the light theme.
    bg_mode: z.enum(BG_MODES).nullable().optional().describe('Forma plana: se aplica al tema claro (light)'),
    bg_color_from: hexColor.nullable().optional().describe('Forma plana: light.bg_color_from'),
    bg_color_to: hexColor.nullable().optional().describe('Forma plana: light.bg_color_to'),
  })
  // One form or the other for the light theme: both would leave one of two values silently unused.
  .refine((b) => !(b.light && (b.bg_mode !== undefined || b.bg_color_from !== undefined || b.bg_color_to !== undefined)), {
    message: 'usa la forma plana (bg_mode, bg_color_from, bg_color_to) o light, no ambas',
    path: ['light'],
  })
  .describe('Forma anidada (light, dark) o plana (bg_mode, bg_color_from, bg_color_to = light); al leer, siempre anidada');

export const settingsPreferences = z.strictObject({
  theme: z.enum(DASHBOARD_THEMES).nullable().optional(),
  block_overlapping_bookings: z.boolean().optional().describe('Si los enlaces de reserva bloquean horarios ocupados'),
  booking_branding: bookingBranding.optional(),
});
export type SettingsPreferencesWrite = z.infer<typeof settingsPreferences>;

const userFields = {
  // One line each: the name heads a booking's emails and its invitation (`<title> con <name>`), where a
  // line break in it would read as a line of ours (`Lugar: …`).
  first_name: optionalLineText(100),
  last_name: optionalLineText(100),
  email: emailAddress,
  phone: optionalText(50),
  username: optionalText(100),
  // Not after tomorrow's date anywhere (UTC+14): a birth is in the past wherever the person is.
  birthdate: calendarDay
    .refine((day) => day <= new Date(Date.now() + 14 * 3_600_000).toISOString().slice(0, 10), 'no puede ser una fecha futura')
    .nullable()
    .optional()
    .describe('YYYY-MM-DD, no futura'),
  booking_slug: z
    .string()
    .regex(BOOKING_SLUG, '3 a 64 caracteres a-z, 0-9 o -')
    .refine((slug) => !RESERVED_BOOKING_SLUGS.has(slug), 'es una ruta reservada de la página de reservas')
    .nullable()
    .optional()
    .describe('Único en todo el servicio; manage y assets están reservados ({booking_url}/manage/… es la liga del reservante)'),
  is_owner: z.boolean().optional().describe('Dueño: todos los permisos de la empresa (se guarda en la membresía)'),
  settings_preferences: settingsPreferences.optional(),
};

export const userCreate = z.strictObject(userFields);
export const userUpdate = z.strictObject(userFields).partial();
export type UserCreate = z.infer<typeof userCreate>;
export type UserUpdate = z.infer<typeof userUpdate>;

const backgroundRead = z.object({
  bg_mode: z.enum(BG_MODES).nullable(),
  bg_color_from: z.string().nullable(),
  bg_color_to: z.string().nullable(),
  bg_angle: z.number().int().nullable(),
});

export const userSchema = z.object({
  id: z.string(),
  first_name: z.string().nullable(),
  last_name: z.string().nullable(),
  full_name: z.string().nullable(),
  email: z.string(),
  phone: z.string().nullable(),
  username: z.string().nullable(),
  booking_slug: z.string().nullable(),
  booking_url: z.string().nullable().describe('{booking_url}/<booking_slug>; null sin slug'),
  avatar_url: z.string().nullable(),
  is_owner: z.boolean(),
  settings_preferences: z.object({
    theme: z.enum(DASHBOARD_THEMES).nullable(),
    block_overlapping_bookings: z.boolean(),
    booking_branding: z.object({ theme: z.enum(BRANDING_THEMES).nullable(), light: backgroundRead, dark: backgroundRead }),
  }),
  created_at: z.string(),
  updated_at: z.string().describe('El más reciente de los cambios de la persona y de su membresía en esta empresa (is_owner)'),
});

export const userExample = { first_name: 'Ana', last_name: 'López', email: 'ana.lopez@norte.example', booking_slug: 'ana-lopez' };
