// Brand write payloads, list query and read shape (contract: Brand).
import { z } from 'zod';
import { httpUrl, optionalHttpUrl } from '../validation.ts';
import { customPropertiesWrite } from '../custom-properties.ts';
import { searchableQuery } from '../pagination.ts';
import { optionalText } from '../validation.ts';
import { imageUrlSchema, nameSchema, slugSchema } from './catalog-fields.ts';

const brandFields = {
  name: nameSchema,
  slug: slugSchema.optional().describe('Por defecto se deriva del nombre; único en la empresa'),
  description: optionalText(5000),
  website: optionalHttpUrl,
  logo_url: imageUrlSchema.describe('Logo por URL de imagen; para subir un archivo usa POST /brands/{id}/logo. No se envía junto con logo (su sinónimo): ambos es 422'),
  // As read, `logo` is the media object: written back, its `url` is what counts (the rest is read-only).
  logo: z
    .union([
      httpUrl,
      z
        .strictObject({
          url: httpUrl,
          thumbnail_url: z.string().nullable().optional(),
          content_type: z.string().nullable().optional(),
          width: z.number().nullable().optional(),
          height: z.number().nullable().optional(),
          size_bytes: z.number().nullable().optional(),
        })
        .transform((media) => media.url),
    ], { error: 'debe ser una URL http(s), o el objeto logo tal como se leyó' })
    .nullable()
    .optional()
    .describe('Sinónimo de logo_url en escritura: una URL, o el objeto logo tal como se leyó (cuenta su url). Envía uno de los dos, no ambos (ni con null en uno): ambos es 422'),
  custom_properties: customPropertiesWrite.optional(),
};

export const brandCreate = z.strictObject(brandFields);
export const brandUpdate = z.strictObject(brandFields).partial();
export type BrandWrite = z.infer<typeof brandUpdate>;

export const brandListQuery = searchableQuery('nombre');
export type BrandListQuery = z.infer<typeof brandListQuery>;

const logoMedia = z
  .object({
    url: z.string(),
    thumbnail_url: z.string().nullable(),
    content_type: z.string().nullable(),
    width: z.number().int().nullable(),
    height: z.number().int().nullable(),
    size_bytes: z.number().int().nullable(),
  })
  .nullable()
  .describe('Elemento de medios del logo (null sin logo)');

export const brandSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    slug: z.string(),
    description: z.string().nullable(),
    website: z.string().nullable(),
    logo_url: z.string().nullable(),
    logo: logoMedia,
    product_count: z.number().int().describe('Productos de la empresa que apuntan a la marca'),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .catchall(z.unknown())
  .describe('Marca; las propiedades personalizadas aparecen como claves adicionales');

/** Keys a custom property may not take: the brand's own fields. */
export const BRAND_RESERVED: ReadonlySet<string> = new Set([
  ...Object.keys(brandSchema.shape),
  'logo_thumbnail_url',
  'custom_properties',
  'object',
  'company_id',
  'metadata',
]);
