// Product write payloads, list query and read shapes (contract: Product). Decisions on
// the fields the contract leaves open are in docs/catalog.md.
import { z } from 'zod';
import { commaList, httpUrl, objectIdField, optionalText, satProductKey, satUnitKey, text } from '../validation.ts';
import { customPropertiesWrite } from '../custom-properties.ts';
import { searchableQuery } from '../pagination.ts';
import {
  adjustmentCents,
  destroyFlag,
  imageUrlSchema,
  nameSchema,
  nestedId,
  pricesCents,
  productPricesCents,
  removedField,
  slugSchema,
} from './catalog-fields.ts';

export const PRODUCT_STATUSES = ['active', 'archived'] as const;

const refId = objectIdField;
const position = z.number().int().min(0).max(100_000).optional();
/**
 * The most items a product holds in each nested list (and values per option type), counted after a
 * write merges into what is stored: a payload can carry at most as many, and a PATCH that adds more
 * than fit is 422 naming the list.
 */
export const ITEM_LIMITS = { variants: 200, option_types: 20, components: 100, inventory: 500, values: 100 } as const;

const sku = text(100).min(1).nullable().optional();

export const variantWrite = z.strictObject({
  id: nestedId,
  _destroy: destroyFlag,
  name: nameSchema.optional().describe('Obligatorio al crear la variante'),
  sku,
  prices_cents: pricesCents.optional().describe('Mapa vacío: la variante hereda el precio del producto'),
  position,
  image_url: imageUrlSchema,
  price_cents: removedField('prices_cents'),
  currency: removedField('prices_cents'),
});

export const optionValueWrite = z.strictObject({
  id: nestedId,
  _destroy: destroyFlag,
  name: nameSchema.optional().describe('Obligatorio al crear el valor'),
  extra_price_cents: z.number().int().min(-1_000_000_000_000).max(1_000_000_000_000).optional().describe('Ajuste escalar en centavos'),
  position,
});

export const optionTypeWrite = z.strictObject({
  id: nestedId,
  _destroy: destroyFlag,
  name: nameSchema.optional().describe('Obligatorio al crear el tipo de opción'),
  position,
  values: z.array(optionValueWrite).max(ITEM_LIMITS.values).optional(),
});

export const componentWrite = z.strictObject({
  id: nestedId,
  _destroy: destroyFlag,
  name: nameSchema.optional().describe('Obligatorio al crear el componente'),
  component_product_id: refId.nullable().optional().describe('Producto del catálogo que forma este componente, si lo hay'),
  quantity: z.number().int().min(1).max(100_000).optional(),
  required: z.boolean().optional(),
  extra_prices_cents: adjustmentCents.optional(),
  position,
  extra_price_cents: removedField('extra_prices_cents'),
});

export const inventoryWrite = z
  .strictObject({
    warehouse: text(100).min(1),
    // null too: the read shows a location without a rack as `rack: null`, and a row read is written back as it is.
    rack: optionalText(100).describe('Vacío, null o ausente: sin rack'),
    variant_id: refId.nullable().optional(),
    quantity: z.number().int().min(0).max(1_000_000_000).describe('Existencia absoluta en esa ubicación; 0 la elimina'),
  })
  .describe('Fija la existencia de una ubicación (almacén y rack); las ubicaciones no enviadas no cambian');

const imageItem = z.strictObject({
  url: httpUrl,
  alt: optionalText(300),
  position,
});

const productFields = {
  name: nameSchema,
  slug: slugSchema.optional().describe('Por defecto se deriva del nombre; único en la empresa'),
  sku: sku.describe('Único en la empresa'),
  description: optionalText(20_000),
  status: z.enum(PRODUCT_STATUSES).optional().describe('active (por defecto) o archived'),
  unit: optionalText(50).describe('Unidad de venta mostrada (pieza, kg, servicio…)'),
  prices_cents: productPricesCents,
  vat_rate: z.union([z.literal(16), z.literal(8), z.literal(0)]).optional().describe('IVA en %: 16 (por defecto), 8 (frontera) o 0'),
  vat_exempt: z.boolean().optional().describe('Exento de IVA (distinto de tasa 0)'),
  prices_include_vat: z.boolean().optional().describe('Los precios incluyen IVA (por defecto true)'),
  sat_product_key: satProductKey.nullable().optional(),
  sat_unit_key: satUnitKey.nullable().optional(),
  brand_id: refId.nullable().optional(),
  product_category_id: refId.nullable().optional(),
  image_url: imageUrlSchema.describe('Imagen principal por URL; para subir un archivo usa POST /products/{id}/image'),
  images: z.array(imageItem).max(30).optional().describe('Galería {url, alt, position}; reemplaza la anterior'),
  custom_properties: customPropertiesWrite.optional(),
  variants: z.array(variantWrite).max(ITEM_LIMITS.variants).optional(),
  option_types: z.array(optionTypeWrite).max(ITEM_LIMITS.option_types).optional(),
  components: z.array(componentWrite).max(ITEM_LIMITS.components).optional(),
  inventory: z.array(inventoryWrite).max(ITEM_LIMITS.inventory).optional(),
  currency: removedField('prices_cents'),
  price_cents: removedField('prices_cents'),
};

export const productCreate = z.strictObject(productFields);
export const productUpdate = z.strictObject(productFields).partial();
export type ProductWrite = z.infer<typeof productUpdate>;

const ref = z.object({ id: z.string(), name: z.string(), slug: z.string() });

export const variantSchema = z.object({
  id: z.string(),
  name: z.string(),
  sku: z.string().nullable(),
  prices_cents: z.record(z.string(), z.number().int()),
  position: z.number().int(),
  image_url: z.string().nullable(),
  thumbnail_url: z.string().nullable(),
});

export const optionTypeSchema = z.object({
  id: z.string(),
  name: z.string(),
  position: z.number().int(),
  values: z.array(z.object({ id: z.string(), name: z.string(), extra_price_cents: z.number().int(), position: z.number().int() })),
});

export const componentSchema = z.object({
  id: z.string(),
  name: z.string(),
  component_product_id: z.string().nullable(),
  quantity: z.number().int(),
  required: z.boolean(),
  extra_prices_cents: z.record(z.string(), z.number().int()),
  position: z.number().int(),
});

export const inventorySchema = z.object({
  total_quantity: z.number().int(),
  warehouses: z.array(
    z.object({
      warehouse: z.string(),
      quantity: z.number().int(),
      racks: z.array(z.object({ rack: z.string().nullable(), variant_id: z.string().nullable(), quantity: z.number().int() })),
    }),
  ),
});

const productBase = {
  id: z.string(),
  name: z.string(),
  slug: z.string(),
  sku: z.string().nullable(),
  description: z.string().nullable(),
  status: z.enum(PRODUCT_STATUSES),
  unit: z.string().nullable(),
  prices_cents: z.record(z.string(), z.number().int()),
  vat_rate: z.number().int(),
  vat_exempt: z.boolean(),
  prices_include_vat: z.boolean(),
  sat_product_key: z.string().nullable(),
  sat_unit_key: z.string().nullable(),
  brand_id: z.string().nullable(),
  brand: ref.nullable().describe('Copia desnormalizada de la marca'),
  product_category_id: z.string().nullable(),
  product_category: ref.nullable(),
  category_name: z.string().nullable().describe('Obsoleto: usa product_category.name').meta({ deprecated: true }),
  image_url: z.string().nullable(),
  thumbnail_url: z.string().nullable(),
  images: z.array(z.object({ url: z.string(), alt: z.string().nullable(), position: z.number().int() })),
  created_at: z.string(),
  updated_at: z.string(),
};

export const productSchema = z.object(productBase).catchall(z.unknown()).describe('Producto; las propiedades personalizadas aparecen como claves adicionales');

export const productDetailSchema = z
  .object({
    ...productBase,
    variants: z.array(variantSchema),
    option_types: z.array(optionTypeSchema),
    components: z.array(componentSchema),
    inventory: inventorySchema,
  })
  .catchall(z.unknown())
  .describe('Producto con variantes, opciones, componentes e inventario');

export const PRODUCT_RESERVED: ReadonlySet<string> = new Set([
  ...Object.keys(productDetailSchema.shape),
  'custom_properties',
  'object',
  'company_id',
  'metadata',
  'currency',
  'price_cents',
]);

export const productExample = {
  name: 'Playera básica',
  sku: 'PLY-001',
  prices_cents: { mxn: 19900, usd: 1100 },
  variants: [{ name: 'Talla M', sku: 'PLY-001-M', prices_cents: {} }],
  option_types: [{ name: 'Talla', values: [{ name: 'M', extra_price_cents: 0 }] }],
  components: [{ name: 'Empaque', extra_prices_cents: { mxn: 500 } }],
  inventory: [{ warehouse: 'Central', rack: 'A1', quantity: 10 }],
  custom_properties: [{ key: 'material', value: 'algodón' }],
};

/** A filter's value as the list reads it: empty, blank or only separators (`brand=`, `brand=,`) names nothing, and the filter is absent. */
export function namedFilter(value: string | undefined): string | undefined {
  return value && /[^\s,]/.test(value) ? value : undefined;
}

const filterValue = z.string().max(4000).optional().transform(namedFilter);

export const productListQuery = searchableQuery('nombre, SKU y marca').extend({
  brand: commaList(filterValue.describe('Una o varias marcas separadas por comas: ObjectIds o slugs, mezclados')),
  brand_id: commaList(filterValue.describe('Alias de brand; se ignora si brand está presente')),
  category: commaList(filterValue.describe('Una o varias categorías separadas por comas: ObjectIds o slugs, mezclados')),
  product_category_id: commaList(filterValue.describe('Alias de category; se ignora si category está presente')),
  status: z.enum(PRODUCT_STATUSES).optional().describe('Solo productos con ese estado'),
});
export type ProductListQuery = z.infer<typeof productListQuery>;
