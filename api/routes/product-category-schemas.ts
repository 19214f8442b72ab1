// Product category write payloads, list query and read shape (contract:
// Product category).
import { z } from 'zod';
import { objectIdField } from '../validation.ts';
import { paginationQuery, queryBoolean } from '../pagination.ts';
import { optionalText } from '../validation.ts';
import { imageUrlSchema, nameSchema, slugSchema } from './catalog-fields.ts';

const categoryFields = {
  name: nameSchema,
  slug: slugSchema.optional().describe('Por defecto se deriva del nombre; único en la empresa'),
  description: optionalText(5000),
  parent_id: objectIdField.nullable().optional().describe('Categoría padre; null para una raíz'),
  icon: z
    .string()
    .trim()
    .regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, 'nombre de símbolo de icono: minúsculas, dígitos, - _ .')
    .nullable()
    .optional()
    .describe('Nombre de un símbolo de icono (por ejemplo shirt, local_cafe)'),
  position: z.number().int().min(0).max(100_000).optional(),
  image_url: imageUrlSchema.describe('Imagen por URL; para subir un archivo usa POST /product-categories/{id}/image'),
};

export const categoryCreate = z.strictObject(categoryFields);
export const categoryUpdate = z.strictObject(categoryFields).partial();
export type CategoryWrite = z.infer<typeof categoryUpdate>;

export const categoryListQuery = paginationQuery.extend({
  has_products: queryBoolean.optional().describe('true: solo categorías con al menos un producto activo en su subárbol; false: solo las que no tienen'),
  parent_id: objectIdField.optional().describe('Solo las hijas directas de esta categoría'),
});
export type CategoryListQuery = z.infer<typeof categoryListQuery>;

export const categorySchema = z.object({
  id: z.string(),
  name: z.string(),
  slug: z.string(),
  description: z.string().nullable(),
  parent_id: z.string().nullable(),
  icon: z.string().nullable(),
  position: z.number().int(),
  image_url: z.string().nullable(),
  thumbnail_url: z.string().nullable(),
  product_count: z.number().int().describe('Productos activos que apuntan a esta categoría'),
  product_count_including_descendants: z.number().int().describe('Productos activos en toda la subcategoría'),
  children_count: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});
