// Field schemas shared by products, categories and brands, and the parsing of
// their id-and-slug list filters. Slugs themselves: slug-queries.ts.
import { z } from 'zod';
import { httpUrl, objectIdField, text } from '../validation.ts';
import { isObjectId } from '../../lib/objectid.ts';
import { isCurrency } from '../../lib/money.ts';
import { invalidParameter } from '../errors.ts';


const MAX_CENTS = 1_000_000_000_000; // 10 billion units: beyond any catalog price, inside a double's exact range

function centsMap(min: number) {
  return z
    .record(z.string(), z.number().int('debe ser un entero en centavos').min(min).max(MAX_CENTS))
    .superRefine((map, ctx) => {
      for (const key of Object.keys(map)) {
        if (!isCurrency(key)) {
          ctx.addIssue({ code: 'custom', path: [key], message: 'no es un código ISO 4217 en minúsculas (por ejemplo mxn, usd)' });
        }
      }
    })
    .meta({ propertyNames: { pattern: '^[a-z]{3}$' } });
}

/** `{<iso4217 lowercase>: <integer cents >= 0>}`. */
export const pricesCents = centsMap(0).describe('Mapa {<iso4217 en minúsculas>: <centavos enteros>}');
/** Product prices: at least one currency. */
export const productPricesCents = pricesCents
  .refine((m) => Object.keys(m).length > 0, { message: 'debe tener el precio en al menos una moneda' })
  .meta({ minProperties: 1 });
/** Price adjustments may be negative (a cheaper component). */
export const adjustmentCents = centsMap(-MAX_CENTS).describe('Ajuste de precio por moneda {<iso4217>: <centavos enteros, puede ser negativo>}');

/** A field removed by 1.0.02: refused with a message naming its replacement. */
export function removedField(replacement: string) {
  return z
    .never({ error: `ya no existe desde la versión 1.0.02; usa ${replacement}` })
    .optional()
    .describe(`Eliminado en 1.0.02: usa ${replacement}. Enviarlo produce 422`);
}

export const slugSchema = z
  .string()
  .trim()
  .toLowerCase()
  .min(1)
  .max(100)
  .regex(/^[a-z0-9]+(?:-[a-z0-9]+)*$/, 'solo minúsculas, dígitos y guiones')
  .refine((s) => !isObjectId(s), 'no puede tener la forma de un ObjectId');

export const nameSchema = text(200).min(1);

/** An image given by URL (http/https only: no javascript:, data: or file:). */
export const imageUrlSchema = httpUrl.nullable().optional();

/** Nested items (variants, option types, components, option values): matched by `id`, removed by `_destroy`. */
export const nestedId = objectIdField.optional();
export const destroyFlag = z.boolean().optional().describe('true elimina el elemento con ese id');

export const MAX_FILTER_VALUES = 100;

export type IdsAndSlugs = { ids: string[]; slugs: string[] };

/**
 * Comma list of ids and slugs (`?brand=a,b`). More than MAX_FILTER_VALUES
 * values is 400 invalid_parameter: cutting the list silently would answer a
 * different question than the one asked.
 */
export function splitIdsAndSlugs(value: string, parameter: string): IdsAndSlugs {
  const parts = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (parts.length > MAX_FILTER_VALUES) {
    throw invalidParameter(parameter, `El parámetro ${parameter} admite como máximo ${MAX_FILTER_VALUES} valores separados por comas; se recibieron ${parts.length}.`);
  }
  // Ids as written (24 lower-case hex digits, as every id is compared); slugs in any case, as they are stored lowercased.
  // An id in capitals is then a slug, which no record has (a slug shaped like an id is refused): it matches nothing.
  return { ids: parts.filter(isObjectId), slugs: parts.filter((p): boolean => !isObjectId(p)).map((p) => p.toLowerCase()) };
}
