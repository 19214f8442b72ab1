// Field schemas shared by customers and leads (DESIGN.md fixes `name`,
// `email`, `phone`; leads add `company_name` and `job_title`).
import { z } from 'zod';
import { CONTACT_LIMITS } from '../../db/contacts.ts';
import { isCountryCode } from '../../lib/iso-3166.ts';
import { emailAddress, optionalText, text } from '../validation.ts';


/**
 * What `q`/`search` matches on customers and leads (REST and MCP): written exactly as in the trigram
 * indexes (migration 102, on fold_accents() of this), or PostgreSQL cannot use them and every search
 * reads the whole table.
 */
export const CONTACT_SEARCH = "(coalesce(name, '') || ' ' || coalesce(email, '') || ' ' || coalesce(phone, ''))";

export const contactFields = {
  name: text(CONTACT_LIMITS.name).min(1).describe('Nombre completo o razón comercial'),
  // Trimmed like every other text field (`" ana@example.com "` is that address).
  email: z.preprocess((value) => (typeof value === 'string' ? value.trim() : value), emailAddress.max(CONTACT_LIMITS.email).nullable().optional()),
  phone: optionalText(CONTACT_LIMITS.phone).describe('Formato libre'),
  notes: optionalText(CONTACT_LIMITS.notes),
  // A tag given twice is one tag (the first spelling kept; tags are case-sensitive: `VIP` and `vip` are two).
  // The limit counts what is stored: 51 entries with one repeated are 50 tags.
  tags: z
    .array(text(50).min(1))
    .overwrite((tags) => [...new Set(tags)])
    .max(50)
    .optional()
    .describe('Etiquetas libres, hasta 50 distintas (maxItems las cuenta ya sin repetidas); una repetida se guarda una vez'),
};

export const addressSchema = z.strictObject({
  line1: optionalText(200),
  line2: optionalText(200),
  city: optionalText(100),
  state: optionalText(100),
  postal_code: optionalText(20),
  // Upper-cased as `tax_id` is: `mx` is MX. An assigned code only (`ZZ`, `EU` are two letters, no country).
  country: z
    .string()
    .trim()
    .toUpperCase()
    .refine(isCountryCode, 'código de país ISO 3166-1 alfa-2 asignado, como MX o US')
    .meta({ pattern: '^[A-Za-z]{2}$' })
    .nullable()
    .optional(),
});

/** An address as read: every key of the contract's shape, in its order, null when not given (as Stripe answers). */
export const ADDRESS_KEYS = ['line1', 'line2', 'city', 'state', 'postal_code', 'country'] as const;
export const addressRead = z.object(Object.fromEntries(ADDRESS_KEYS.map((key) => [key, z.string().nullable()])) as Record<(typeof ADDRESS_KEYS)[number], z.ZodNullable<z.ZodString>>);
export type AddressRead = z.infer<typeof addressRead>;

/** Null for no address, an address with nothing in it included (`{}` or all nulls written: nothing to show). */
export function serializeAddress(stored: Partial<Record<(typeof ADDRESS_KEYS)[number], string | null>> | null): AddressRead | null {
  if (!stored || ADDRESS_KEYS.every((key) => stored[key] == null)) return null;
  return { line1: stored.line1 ?? null, line2: stored.line2 ?? null, city: stored.city ?? null, state: stored.state ?? null, postal_code: stored.postal_code ?? null, country: stored.country ?? null };
}

export const timestamps = {
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
};
