// Brands at /brands, shaped like /product-categories (DESIGN.md). The
// contract's scope list has no brand slug, so brands use the `products`
// scopes (read-products, create-products…): a brand is part of the product
// catalog, and inventing `*-brands` scopes would grant nothing a documented
// key could hold (docs/catalog.md).
import { z } from 'zod';
import { transaction, type Client, type Queryable } from '../../db/pool.ts';
import { insertRow, iso, updateRow } from '../../db/rows.ts';
import { deleteMedia } from '../../storage/media.ts';
import { customPropertiesWrite, flattenCustomProperties, mergeCustomProperties } from '../custom-properties.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { likePattern, listPage, paginationQuery } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { freeSlug, imageUrlSchema, nameSchema, optionalText, resolveIdOrSlug, slugSchema, uniqueViolation } from './catalog-fields.ts';

const TABLE = { table: 'brands', jsonColumns: new Set(['custom_properties']) };

const brandFields = {
  name: nameSchema,
  slug: slugSchema.optional().describe('Por defecto se deriva del nombre; único en la empresa'),
  description: optionalText(5000),
  website: z.url({ protocol: /^https?$/ }).max(2000).nullable().optional(),
  logo_url: imageUrlSchema.describe('Logo por URL de imagen; para subir un archivo usa POST /brands/{id}/logo'),
  logo: imageUrlSchema.describe('Sinónimo de logo_url en escritura'),
  custom_properties: customPropertiesWrite.optional(),
};

export const brandCreate = z.strictObject(brandFields);
export const brandUpdate = z.strictObject(brandFields).partial();
type BrandWrite = z.infer<typeof brandUpdate>;

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

const RESERVED: ReadonlySet<string> = new Set([...Object.keys(brandSchema.shape), 'logo_thumbnail_url', 'custom_properties', 'object', 'company_id', 'metadata']);

const BRAND_COLUMNS = `brands.*,
  (SELECT json_build_object('content_type', m.content_type, 'width', m.width, 'height', m.height, 'size_bytes', m.size_bytes)
     FROM media m WHERE m.id = brands.logo_media_id) AS logo_media`;

export function serializeBrand(row: Record<string, any>, productCount: number): Record<string, unknown> {
  const media = row.logo_media;
  return flattenCustomProperties(
    {
      id: row.id,
      name: row.name,
      slug: row.slug,
      description: row.description,
      website: row.website,
      logo_url: row.logo_url,
      logo: row.logo_url
        ? {
            url: row.logo_url,
            thumbnail_url: row.logo_thumbnail_url,
            content_type: media?.content_type ?? null,
            width: media?.width ?? null,
            height: media?.height ?? null,
            size_bytes: media?.size_bytes ?? null,
          }
        : null,
      product_count: productCount,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
    },
    row.custom_properties,
    RESERVED,
  );
}

/** One aggregation for a whole page of brands (contract, Brand: product_count). */
async function productCounts(db: Queryable, companyId: string, ids: string[]): Promise<Map<string, number>> {
  if (ids.length === 0) return new Map();
  const { rows } = await db.query(
    'SELECT brand_id, count(*)::int AS n FROM products WHERE company_id = $1 AND brand_id = ANY($2) GROUP BY brand_id',
    [companyId, ids],
  );
  return new Map(rows.map((r) => [r.brand_id, r.n]));
}

export async function loadBrand(db: Queryable, companyId: string, id: string): Promise<Record<string, unknown>> {
  const { rows } = await db.query(`SELECT ${BRAND_COLUMNS} FROM brands WHERE company_id = $1 AND id = $2`, [companyId, id]);
  if (!rows[0]) throw new ApiError('not_found');
  const counts = await productCounts(db, companyId, [id]);
  return serializeBrand(rows[0], counts.get(id) ?? 0);
}

async function brandColumns(client: Client, companyId: string, data: BrandWrite, existing: Record<string, any> | null) {
  const { custom_properties, logo, logo_url, slug, ...fields } = data;
  const values: Record<string, unknown> = { ...fields };
  if (logo !== undefined && logo_url !== undefined && logo !== logo_url) {
    throw validationFailed({ logo: ['logo y logo_url son sinónimos; envía solo uno'] });
  }
  const url = logo_url !== undefined ? logo_url : logo;
  if (url !== undefined) {
    if (existing) await deleteMedia(client, companyId, [existing.logo_media_id]);
    Object.assign(values, { logo_url: url, logo_thumbnail_url: null, logo_media_id: null });
  }
  if (slug !== undefined || !existing) {
    values.slug = await freeSlug(client, 'brands', companyId, { explicit: slug, name: data.name ?? existing?.name }, existing?.id);
  }
  if (custom_properties !== undefined) {
    values.custom_properties = mergeCustomProperties(existing?.custom_properties ?? {}, custom_properties, RESERVED);
  }
  return values;
}

export const brandRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/brands',
    scope: 'read-products',
    tag: 'Brands',
    summary: 'Lista marcas',
    query: paginationQuery.extend({
      q: z.string().trim().max(200).optional().describe('Búsqueda por nombre'),
      search: z.string().trim().max(200).optional().describe('Alias de q'),
    }),
    response: brandSchema,
    list: true,
    cache: 'brands',
    status: 200,
    errors: ['invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId }) => {
      const term = query.q || query.search || undefined;
      const page = await listPage<Record<string, any>>(
        ctx.deps.pool,
        ctx.deps.totals,
        {
          table: 'brands',
          columns: BRAND_COLUMNS,
          companyId,
          searching: !!term,
          where: (p) => (term ? [`name ILIKE ${p.add(likePattern(term))}`] : []),
          serialize: (row) => row,
        },
        query,
      );
      const rows = page.data as Array<Record<string, any>>;
      const counts = await productCounts(ctx.deps.pool, companyId, rows.map((r) => r.id));
      return { data: rows.map((row) => serializeBrand(row, counts.get(row.id) ?? 0)), meta: page.meta };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/brands',
    scope: 'create-products',
    tag: 'Brands',
    summary: 'Crea una marca',
    body: brandCreate,
    example: { name: 'Acme', logo_url: 'https://cdn.example.com/acme.png', custom_properties: [{ key: 'pais', value: 'MX' }] },
    response: brandSchema,
    status: 201,
    errors: ['validation_failed', 'parameter_missing', 'idempotency_key_reused'],
    handler: async (ctx, { data, companyId }) => {
      const brand = await transaction(ctx.deps.pool, async (client) => {
        const row = await insertRow<{ id: string }>(client, TABLE, companyId, await brandColumns(client, companyId, data, null)).catch(uniqueViolation);
        return loadBrand(client, companyId, row.id);
      });
      return { data: brand };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/brands/:id',
    scope: 'read-products',
    tag: 'Brands',
    summary: 'Obtiene una marca (por id o slug)',
    params: { id: 'id_or_slug' },
    response: brandSchema,
    status: 200,
    errors: ['not_found'],
    handler: async (ctx, { params, companyId }) => {
      const id = await resolveIdOrSlug(ctx.deps.pool, 'brands', companyId, params.id);
      return { data: await loadBrand(ctx.deps.pool, companyId, id) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/brands/:id',
    scope: 'update-products',
    tag: 'Brands',
    summary: 'Actualiza una marca',
    description: 'Un cambio de nombre o slug se copia en la marca desnormalizada de sus productos, en la misma transacción.',
    params: { id: 'id_or_slug' },
    body: brandUpdate,
    example: { name: 'Acme 2' },
    response: brandSchema,
    status: 200,
    errors: ['not_found', 'validation_failed'],
    handler: async (ctx, { params, data, companyId }) => {
      const brand = await transaction(ctx.deps.pool, async (client) => {
        const id = await resolveIdOrSlug(client, 'brands', companyId, params.id, { lock: true });
        const { rows } = await client.query('SELECT * FROM brands WHERE id = $1', [id]);
        const row = await updateRow<Record<string, any>>(client, TABLE, companyId, id, await brandColumns(client, companyId, data, rows[0])).catch(uniqueViolation);
        if (row!.name !== rows[0].name || row!.slug !== rows[0].slug) {
          await client.query('UPDATE products SET brand_name = $3, brand_slug = $4, updated_at = now() WHERE company_id = $1 AND brand_id = $2', [
            companyId,
            id,
            row!.name,
            row!.slug,
          ]);
        }
        return loadBrand(client, companyId, id);
      });
      return { data: brand };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/brands/:id',
    scope: 'delete-products',
    tag: 'Brands',
    summary: 'Elimina una marca (sus productos quedan sin marca)',
    params: { id: 'id_or_slug' },
    status: 204,
    errors: ['not_found'],
    handler: async (ctx, { params, companyId }) => {
      await transaction(ctx.deps.pool, async (client) => {
        const id = await resolveIdOrSlug(client, 'brands', companyId, params.id, { lock: true });
        const { rows } = await client.query('SELECT logo_media_id FROM brands WHERE id = $1', [id]);
        await client.query(
          'UPDATE products SET brand_id = NULL, brand_name = NULL, brand_slug = NULL, updated_at = now() WHERE company_id = $1 AND brand_id = $2',
          [companyId, id],
        );
        await deleteMedia(client, companyId, [rows[0].logo_media_id]);
        await client.query('DELETE FROM brands WHERE company_id = $1 AND id = $2', [companyId, id]);
      });
      return undefined;
    },
  }),
];
