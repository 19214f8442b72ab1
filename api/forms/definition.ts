// A form definition: the file operators give to `wsctl form create --file`
// (DESIGN.md: the shape of the Form read plus `post_actions`), its checks,
// and the localized read (contract: Form, Form field, File constraints).
//
// Texts: each translatable text is a `*_translations` map; a plain text field
// (`title`, `label`, …) gives the default-locale text and wins over the map's
// entry for that locale. On read every map lists every locale of the form, a
// missing translation falling back to the default-locale text.
import { z } from 'zod';
import { iso } from '../../db/timestamps.ts';
import { isObjectId } from '../../lib/objectid.ts';
import { FIELD_TYPES, FILE_KINDS, LOCALES, MAPS_TO, type FormRow, type Locale, type PostActions, type StoredField } from '../../db/forms.ts';
import { acceptAttribute, BLOCKED_EXTENSIONS, KNOWN_EXTENSIONS } from './file-rules.ts';
import { emailAddress, optionalText, text } from '../validation.ts';

export { LOCALES, type FormRow, type Locale, type PostActions, type StoredField };
const WITH_OPTIONS: ReadonlySet<string> = new Set(['select', 'checkbox', 'radio']);
const MIB = 1024 * 1024;
export const MAX_FILE_SIZE_BYTES = 1024 * MIB; // contract: a field can allow up to 1 GB

const locale = z.enum(LOCALES);
const texts = (max: number) => z.partialRecord(locale, text(max));

const fileInput = z.strictObject({
  max_files: z.number().int().min(1).max(10).default(1),
  // 0 only beside max_file_size_bytes (a read of a limit under 1 MiB sent back): alone it must be at least 1.
  max_file_size_mb: z.number().int().min(0).max(MAX_FILE_SIZE_BYTES / MIB).optional(),
  max_file_size_bytes: z.number().int().min(1).max(MAX_FILE_SIZE_BYTES).optional(),
  allowed_kinds: z.array(z.enum(FILE_KINDS)).default([]),
  allowed_extensions: z
    .array(z.string().trim().toLowerCase().regex(/^[a-z0-9]{1,10}$/, 'sin punto, solo letras y números'))
    .default([]),
  allowed_content_types: z.array(z.string().trim().toLowerCase().regex(/^[a-z]+\/[a-z0-9.+-]+$/, 'no es un tipo MIME')).default([]),
  accept: z.string().optional().describe('Calculado; se ignora al escribir'),
});

const postActionsInput = z.strictObject({
  lead: z.boolean().optional().describe('Crear o actualizar el prospecto; por defecto sí cuando un campo apunta a lead.*'),
  customer: z.boolean().optional().describe('Asociar el cliente; por defecto sí cuando un campo apunta a customer.*'),
  email: z
    .strictObject({
      enabled: z.boolean().default(true),
      to: z.array(emailAddress).max(20).default([]),
      send_to_submitter: z.boolean().default(false),
      attach_files: z.boolean().default(true),
      templates: z.partialRecord(locale, z.strictObject({ subject: text(300).min(1), body: text(20_000).min(1) })).default({}),
    })
    .optional(),
  notify_team: z
    .strictObject({
      enabled: z.boolean().default(true),
      to: z.array(emailAddress).max(50).optional().describe('Por defecto, todos los miembros de la empresa'),
    })
    .optional(),
}) satisfies z.ZodType<PostActions, unknown>;

const fieldInput = z.strictObject({
  key: z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'letras, números, _ o -; empieza con letra'),
  field_type: z.enum(FIELD_TYPES),
  label: text(500).optional(),
  label_translations: texts(500).optional(),
  placeholder: text(500).optional(),
  placeholder_translations: texts(500).optional(),
  options: z.array(text(200).min(1)).max(200).optional(),
  options_translations: z.partialRecord(locale, z.array(text(200).min(1)).max(200)).optional(),
  help_text: optionalText(2000),
  required: z.boolean().default(false),
  maps_to: z.enum(MAPS_TO).nullable().default(null),
  position: z.number().int().min(0).optional(),
  file: fileInput.optional(),
});

/** The form file (`wsctl form create --file`). Read-only members of the Form read are accepted and ignored. */
export const formFileSchema = z
  .strictObject({
    name: text(200).min(1),
    slug: z
      .string()
      .regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/, 'minúsculas, números y guiones')
      .max(100)
      // A path takes an id or a slug: a slug spelled as an id would always be read as that id.
      .refine((slug) => !isObjectId(slug), 'no puede tener la forma de un id (24 caracteres hexadecimales)')
      .optional(),
    locales: z.array(locale).min(1).default(['es']),
    default_locale: locale.optional(),
    title: text(500).optional(),
    title_translations: texts(500).optional(),
    description: text(5000).optional(),
    description_translations: texts(5000).optional(),
    active: z.boolean().default(true),
    fields: z.array(fieldInput).max(200),
    post_actions: postActionsInput.default({}),
    // Present in a Form read (and `company_id` in wsctl's); ignored here, but for `locale`: the language
    // of the plain text fields.
    id: z.string().optional(),
    company_id: z.string().optional(),
    locale: z.string().optional(),
    submissions_count: z.number().optional(),
    created_at: z.string().optional(),
    updated_at: z.string().optional(),
  })
  .superRefine((form, ctx) => {
    const issue = (path: PropertyKey[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    const locales = new Set(form.locales);
    const def = form.default_locale ?? form.locales[0];
    if (!locales.has(def)) issue(['default_locale'], 'debe ser uno de locales');
    // The plain texts are the default locale's only when the file is not a read in another one.
    const inDefault = plainLocaleOf(form) === def;
    const plain = <T>(value: T | undefined) => (inDefault ? value : undefined);
    const checkMap = (map: Record<string, unknown> | undefined, path: PropertyKey[]) => {
      for (const key of Object.keys(map ?? {})) if (!locales.has(key as Locale)) issue([...path, key], 'idioma que no está en locales');
    };
    checkMap(form.title_translations, ['title_translations']);
    checkMap(form.description_translations, ['description_translations']);
    if (!(plain(form.title) ?? form.title_translations?.[def])) issue(['title'], `falta el título en el idioma por defecto (${def})`);
    const keys = new Set<string>();
    form.fields.forEach((field, i) => {
      const at = (...rest: PropertyKey[]) => ['fields', i, ...rest];
      if (keys.has(field.key)) issue(at('key'), `la clave ${field.key} está repetida`);
      keys.add(field.key);
      checkMap(field.label_translations, at('label_translations'));
      checkMap(field.placeholder_translations, at('placeholder_translations'));
      checkMap(field.options_translations, at('options_translations'));
      if (!(plain(field.label) ?? field.label_translations?.[def])) issue(at('label'), `falta la etiqueta en el idioma por defecto (${def})`);
      const hasOptions = !!(field.options?.length || Object.values(field.options_translations ?? {}).some((o) => o?.length));
      if (WITH_OPTIONS.has(field.field_type)) {
        const defaults = plain(field.options) ?? field.options_translations?.[def];
        if ((field.field_type === 'select' || field.field_type === 'radio') && !defaults?.length) {
          issue(at('options'), `un campo ${field.field_type} necesita opciones en el idioma por defecto`);
        }
        // Each locale's list translates the default one, option by option: a shorter list would hide
        // options from that locale's visitors, a repeated option would be two choices that are one.
        if (defaults && new Set(defaults).size !== defaults.length) issue(at('options'), 'tiene opciones repetidas');
        for (const [code, list] of Object.entries(field.options_translations ?? {})) {
          if (!list || !defaults) continue;
          if (list.length !== defaults.length) issue(at('options_translations', code), `debe tener ${defaults.length} opciones, una por cada opción del idioma por defecto y en su orden`);
          else if (new Set(list).size !== list.length) issue(at('options_translations', code), 'tiene opciones repetidas');
        }
      } else if (hasOptions) {
        issue(at('options'), 'solo los campos select, radio y checkbox tienen opciones');
      }
      if (field.field_type === 'file') {
        if (field.maps_to !== null) issue(at('maps_to'), 'debe ser null en un campo file');
        if (!field.file) issue(at('file'), 'un campo file necesita sus restricciones (file)');
        const f = field.file;
        if (f) {
          if (f.max_file_size_mb === undefined && f.max_file_size_bytes === undefined) {
            issue(at('file', 'max_file_size_mb'), 'indica max_file_size_mb o max_file_size_bytes');
          }
          if (f.max_file_size_mb === 0 && f.max_file_size_bytes === undefined) issue(at('file', 'max_file_size_mb'), 'debe ser al menos 1');
          // They agree when mb is bytes in whole MiB rounded down (what a read gives) or up (what reads gave before).
          const mib = f.max_file_size_bytes === undefined ? null : f.max_file_size_bytes / MIB;
          if (f.max_file_size_mb !== undefined && mib !== null && Math.floor(mib) !== f.max_file_size_mb && Math.ceil(mib) !== f.max_file_size_mb) {
            issue(at('file', 'max_file_size_bytes'), 'no coincide con max_file_size_mb');
          }
          f.allowed_extensions.forEach((ext, j) => {
            if (BLOCKED_EXTENSIONS.has(ext)) issue(at('file', 'allowed_extensions', j), `.${ext} está siempre bloqueada`);
            else if (!KNOWN_EXTENSIONS[ext]) issue(at('file', 'allowed_extensions', j), `.${ext} no es un tipo que el servicio sepa verificar`);
          });
          const knownTypes = new Set(Object.values(KNOWN_EXTENSIONS));
          f.allowed_content_types.forEach((type, j) => {
            if (!knownTypes.has(type)) issue(at('file', 'allowed_content_types', j), `${type} no es un tipo que el servicio sepa verificar`);
          });
        }
      } else if (field.file) {
        issue(at('file'), 'solo los campos file tienen restricciones de archivo');
      }
    });
    const email = form.post_actions.email;
    if (email?.enabled && !email.to.length && !email.send_to_submitter) {
      issue(['post_actions', 'email', 'to'], 'indica destinatarios o send_to_submitter');
    }
    if (email?.send_to_submitter && !form.fields.some((f) => f.maps_to?.endsWith('.email'))) {
      issue(['post_actions', 'email', 'send_to_submitter'], 'ningún campo apunta a lead.email o customer.email');
    }
    checkMap(email?.templates, ['post_actions', 'email', 'templates']);
  });

export type FormFile = z.infer<typeof formFileSchema>;


/**
 * The language of a file's plain text fields (`title`, `label`, …): the file's `locale` when it is one
 * of its locales (a Form read says which one it was read in, and its plain fields are in it), else the
 * default locale. So a read in `en` written back keeps the Spanish texts Spanish.
 */
function plainLocaleOf(file: { locale?: string; locales: Locale[]; default_locale?: Locale }): Locale {
  const wanted = file.locales.find((l) => l === file.locale);
  return wanted ?? file.default_locale ?? file.locales[0];
}

/** Normalized columns of the `forms` row from a validated file. */
export function formColumns(file: FormFile) {
  const def = file.default_locale ?? file.locales[0];
  const plainLocale = plainLocaleOf(file);
  const withDefault = <T>(map: Partial<Record<Locale, T>> | undefined, plain: T | undefined) => {
    const out = { ...(map ?? {}) };
    if (plain !== undefined) out[plainLocale] = plain;
    return out;
  };
  const fields: StoredField[] = file.fields
    .map((f, index) => ({ f, index }))
    .sort((a, b) => (a.f.position ?? a.index) - (b.f.position ?? b.index) || a.index - b.index)
    .map(({ f }, index) => {
      const field: StoredField = {
        key: f.key,
        field_type: f.field_type,
        label_translations: withDefault(f.label_translations, f.label),
        placeholder_translations: withDefault(f.placeholder_translations, f.placeholder),
        options_translations: WITH_OPTIONS.has(f.field_type) ? withDefault(f.options_translations, f.options) : {},
        help_text: f.help_text ?? null,
        required: f.required,
        maps_to: f.field_type === 'file' ? null : f.maps_to,
        position: f.position ?? index,
      };
      if (f.field_type === 'file' && f.file) {
        field.file = {
          max_files: f.file.max_files,
          max_file_size_bytes: f.file.max_file_size_bytes ?? f.file.max_file_size_mb! * MIB,
          allowed_kinds: [...new Set(f.file.allowed_kinds)],
          allowed_extensions: [...new Set(f.file.allowed_extensions)],
          allowed_content_types: [...new Set(f.file.allowed_content_types)],
        };
      }
      return field;
    });
  return {
    name: file.name,
    slug: file.slug,
    locales: [...new Set(file.locales)],
    default_locale: def,
    title_translations: withDefault(file.title_translations, file.title),
    description_translations: withDefault(file.description_translations, file.description),
    active: file.active,
    fields,
    post_actions: file.post_actions,
  };
}

/** `es-MX` → `es`; anything not among the form's locales → the default locale. */
export function resolveLocale(form: Pick<FormRow, 'locales' | 'default_locale'>, requested: unknown): Locale {
  if (typeof requested === 'string') {
    const primary = requested.trim().toLowerCase().split(/[-_]/)[0];
    if ((form.locales as string[]).includes(primary)) return primary as Locale;
  }
  return form.default_locale;
}

function fullMap<T>(form: FormRow, map: Partial<Record<Locale, T>>, empty: T): Record<string, T> {
  const out: Record<string, T> = {};
  for (const l of form.locales) out[l] = map[l] ?? map[form.default_locale] ?? empty;
  return out;
}

export function serializeForm(form: FormRow, requested?: unknown) {
  const locale = resolveLocale(form, requested);
  const titles = fullMap(form, form.title_translations, '');
  const descriptions = fullMap(form, form.description_translations, '');
  return {
    id: form.id,
    name: form.name,
    slug: form.slug,
    locale,
    locales: form.locales,
    default_locale: form.default_locale,
    title: titles[locale],
    description: descriptions[locale],
    title_translations: titles,
    description_translations: descriptions,
    active: form.active,
    submissions_count: form.submissions_count,
    fields: [...form.fields]
      .sort((a, b) => a.position - b.position)
      .map((f) => {
        const labels = fullMap(form, f.label_translations, '');
        const placeholders = fullMap(form, f.placeholder_translations, '');
        const options = fullMap(form, f.options_translations, [] as string[]);
        const out: Record<string, unknown> = {
          key: f.key,
          label: labels[locale],
          placeholder: placeholders[locale],
          label_translations: labels,
          placeholder_translations: placeholders,
          help_text: f.help_text,
          field_type: f.field_type,
          required: f.required,
          maps_to: f.maps_to,
          position: f.position,
        };
        if (WITH_OPTIONS.has(f.field_type)) {
          out.options = options[locale];
          out.options_translations = options;
        }
        if (f.file) {
          out.file = {
            max_files: f.file.max_files,
            // Whole MiB, rounded down: a client that keeps files within it is never refused (1.5 MB reads 1).
            max_file_size_mb: Math.floor(f.file.max_file_size_bytes / MIB),
            max_file_size_bytes: f.file.max_file_size_bytes,
            allowed_kinds: f.file.allowed_kinds,
            allowed_extensions: f.file.allowed_extensions,
            allowed_content_types: f.file.allowed_content_types,
            accept: acceptAttribute(f.file),
          };
        }
        return out;
      }),
    created_at: iso(form.created_at),
    updated_at: iso(form.updated_at),
  };
}

const translationsOut = z.record(z.string(), z.string());
export const formFieldSchema = z.object({
  key: z.string(),
  label: z.string(),
  placeholder: z.string(),
  options: z.array(z.string()).optional().describe('Solo en select, radio y checkbox'),
  label_translations: translationsOut,
  placeholder_translations: translationsOut,
  options_translations: z.record(z.string(), z.array(z.string())).optional(),
  help_text: z.string().nullable(),
  field_type: z.enum(FIELD_TYPES),
  file: z
    .object({
      max_files: z.number().int(),
      max_file_size_mb: z.number().int(),
      max_file_size_bytes: z.number().int(),
      allowed_kinds: z.array(z.enum(FILE_KINDS)),
      allowed_extensions: z.array(z.string()),
      allowed_content_types: z.array(z.string()),
      accept: z.string(),
    })
    .optional()
    .describe('Solo en campos file'),
  required: z.boolean(),
  maps_to: z.enum(MAPS_TO).nullable(),
  position: z.number().int(),
});

export const formSchema = z.object({
  id: z.string(),
  name: z.string(),
  slug: z.string(),
  locale: z.enum(LOCALES),
  locales: z.array(z.enum(LOCALES)),
  default_locale: z.enum(LOCALES),
  title: z.string(),
  description: z.string(),
  title_translations: translationsOut,
  description_translations: translationsOut,
  active: z.boolean(),
  submissions_count: z.number().int(),
  fields: z.array(formFieldSchema),
  created_at: z.string(),
  updated_at: z.string(),
});
