// Image uploads of the catalog: product image, variant image, brand logo,
// category image. The web process judges the bytes (storage/images.ts),
// stores the original, points the record at it and enqueues the thumbnail in
// the same transaction, then answers at once; the worker sets thumbnail_url.
import { z } from 'zod';
import { transaction } from '../../db/pool.ts';
import type { Queryable } from '../../db/pool.ts';
import { inspectImage, MAX_IMAGE_BYTES, safeFilename } from '../../storage/images.ts';
import { THUMBNAIL } from '../../db/queues.ts';
import { deleteMedia, MEDIA_OWNERS, storeMedia, type MediaOwner } from '../../storage/media.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { defineRoute, type RouteDef, type UploadedFile } from '../route.ts';
import type { ApiContext } from '../types.ts';
import { loadBrand, brandSchema } from './brands.ts';
import { resolveIdOrSlug } from './catalog-fields.ts';

const IMAGE_FIELDS = ['file', 'image'] as const;
const LOGO_FIELDS = ['logo', 'file', 'image'] as const;
const multipart = (fields: readonly string[]) => ({ fields, maxFileBytes: MAX_IMAGE_BYTES });

const imageResult = z.object({ id: z.string(), image_url: z.string().nullable(), thumbnail_url: z.string().nullable() });
const variantImageResult = imageResult.extend({ variant_id: z.string() });

const UPLOAD_DESCRIPTION =
  'multipart/form-data con el archivo en `file` o `image`. Formatos: JPEG, PNG, WebP, AVIF, GIF (se juzga el contenido, no el tipo declarado); ' +
  `máximo ${MAX_IMAGE_BYTES / 1024 / 1024} MB y 40 megapíxeles contando todos los cuadros. Otro contenido: 422 validation_failed. ` +
  'La miniatura (thumbnail_url) la genera el worker poco después; mientras tanto es null.';

async function ownerMedia(db: Queryable, owner: MediaOwner, companyId: string, id: string, lock = false): Promise<string | null> {
  const spec = MEDIA_OWNERS[owner];
  const { rows } = await db.query(
    `SELECT ${spec.media} AS media_id FROM ${spec.table} WHERE company_id = $1 AND id = $2${lock ? ' FOR UPDATE' : ''}`,
    [companyId, id],
  );
  if (!rows[0]) throw new ApiError('not_found');
  return rows[0].media_id;
}

/** Judges the file, then stores it and points the owner at it; returns the owner's new image URL. */
async function attachImage(ctx: ApiContext, owner: MediaOwner, companyId: string, ownerId: string, file: UploadedFile | undefined): Promise<string> {
  if (!file) throw validationFailed({ file: ['envía la imagen como multipart/form-data en el campo file o image'] });
  const inspection = await inspectImage(file.bytes);
  if (!inspection.ok) throw validationFailed({ [file.field]: [inspection.reason] });
  const spec = MEDIA_OWNERS[owner];
  return transaction(ctx.deps.pool, async (client) => {
    const previous = await ownerMedia(client, owner, companyId, ownerId, true);
    const media = await storeMedia(client, ctx.deps.config.siteUrl, {
      companyId,
      ownerType: owner,
      ownerId,
      bytes: file.bytes,
      image: inspection.image,
      filename: safeFilename(file.filename, inspection.image.ext, owner === 'brand' ? 'logo' : 'image'),
    });
    await client.query(
      `UPDATE ${spec.table} SET ${spec.url} = $3, ${spec.thumbnail} = NULL, ${spec.media} = $4, updated_at = now() WHERE company_id = $1 AND id = $2`,
      [companyId, ownerId, media.url, media.id],
    );
    await deleteMedia(client, companyId, [previous]);
    await ctx.deps.jobs.send(client, THUMBNAIL, { media_id: media.id });
    return media.url;
  });
}

async function detachImage(ctx: ApiContext, owner: MediaOwner, companyId: string, ownerId: string): Promise<void> {
  const spec = MEDIA_OWNERS[owner];
  await transaction(ctx.deps.pool, async (client) => {
    const previous = await ownerMedia(client, owner, companyId, ownerId, true);
    await client.query(
      `UPDATE ${spec.table} SET ${spec.url} = NULL, ${spec.thumbnail} = NULL, ${spec.media} = NULL, updated_at = now() WHERE company_id = $1 AND id = $2`,
      [companyId, ownerId],
    );
    await deleteMedia(client, companyId, [previous]);
  });
}

async function imageOf(db: Queryable, owner: MediaOwner, companyId: string, id: string) {
  const spec = MEDIA_OWNERS[owner];
  const { rows } = await db.query(`SELECT ${spec.url} AS url, ${spec.thumbnail} AS thumbnail FROM ${spec.table} WHERE company_id = $1 AND id = $2`, [companyId, id]);
  return { image_url: rows[0]?.url ?? null, thumbnail_url: rows[0]?.thumbnail ?? null };
}

async function variantOf(db: Queryable, companyId: string, product: string, variantId: string): Promise<{ productId: string; variantId: string }> {
  const productId = await resolveIdOrSlug(db, 'products', companyId, product, { sku: true });
  const { rowCount } = await db.query('SELECT 1 FROM product_variants WHERE company_id = $1 AND product_id = $2 AND id = $3', [companyId, productId, variantId]);
  if (!rowCount) throw new ApiError('not_found');
  return { productId, variantId };
}

const common = { status: 200, errors: ['not_found', 'validation_failed'] as const };

export const catalogImageRoutes: RouteDef[] = [
  defineRoute({
    ...common,
    errors: [...common.errors],
    method: 'POST',
    path: '/products/:id/image',
    scope: 'update-products',
    tag: 'Products',
    summary: 'Sube la imagen principal de un producto',
    description: UPLOAD_DESCRIPTION,
    params: { id: 'id_or_slug' },
    multipart: multipart(IMAGE_FIELDS),
    response: imageResult,
    handler: async (ctx, { params, companyId, file }) => {
      const id = await resolveIdOrSlug(ctx.deps.pool, 'products', companyId, params.id, { sku: true });
      const url = await attachImage(ctx, 'product', companyId, id, file);
      return { data: { id, image_url: url, thumbnail_url: null } };
    },
  }),
  defineRoute({
    ...common,
    errors: ['not_found'],
    method: 'DELETE',
    path: '/products/:id/image',
    scope: 'update-products',
    tag: 'Products',
    summary: 'Quita la imagen principal de un producto (y borra sus archivos)',
    params: { id: 'id_or_slug' },
    response: imageResult,
    handler: async (ctx, { params, companyId }) => {
      const id = await resolveIdOrSlug(ctx.deps.pool, 'products', companyId, params.id, { sku: true });
      await detachImage(ctx, 'product', companyId, id);
      return { data: { id, ...(await imageOf(ctx.deps.pool, 'product', companyId, id)) } };
    },
  }),
  defineRoute({
    ...common,
    errors: [...common.errors, 'invalid_id'],
    method: 'POST',
    path: '/products/:id/variants/:variant_id/image',
    scope: 'update-products',
    tag: 'Products',
    summary: 'Sube la imagen de una variante',
    description: UPLOAD_DESCRIPTION,
    params: { id: 'id_or_slug', variant_id: 'id' },
    multipart: multipart(IMAGE_FIELDS),
    response: variantImageResult,
    handler: async (ctx, { params, companyId, file }) => {
      const { productId, variantId } = await variantOf(ctx.deps.pool, companyId, params.id, params.variant_id);
      const url = await attachImage(ctx, 'variant', companyId, variantId, file);
      return { data: { id: productId, variant_id: variantId, image_url: url, thumbnail_url: null } };
    },
  }),
  defineRoute({
    ...common,
    errors: ['not_found', 'invalid_id'],
    method: 'DELETE',
    path: '/products/:id/variants/:variant_id/image',
    scope: 'update-products',
    tag: 'Products',
    summary: 'Quita la imagen de una variante',
    params: { id: 'id_or_slug', variant_id: 'id' },
    response: variantImageResult,
    handler: async (ctx, { params, companyId }) => {
      const { productId, variantId } = await variantOf(ctx.deps.pool, companyId, params.id, params.variant_id);
      await detachImage(ctx, 'variant', companyId, variantId);
      return { data: { id: productId, variant_id: variantId, ...(await imageOf(ctx.deps.pool, 'variant', companyId, variantId)) } };
    },
  }),
  defineRoute({
    ...common,
    errors: [...common.errors],
    method: 'POST',
    path: '/brands/:id/logo',
    scope: 'update-products',
    tag: 'Brands',
    summary: 'Sube el logo de una marca',
    description: UPLOAD_DESCRIPTION.replace('`file` o `image`', '`logo`, `file` o `image`'),
    params: { id: 'id_or_slug' },
    multipart: multipart(LOGO_FIELDS),
    response: brandSchema,
    handler: async (ctx, { params, companyId, file }) => {
      const id = await resolveIdOrSlug(ctx.deps.pool, 'brands', companyId, params.id);
      await attachImage(ctx, 'brand', companyId, id, file);
      return { data: await loadBrand(ctx.deps.pool, companyId, id) };
    },
  }),
  defineRoute({
    ...common,
    errors: ['not_found'],
    method: 'DELETE',
    path: '/brands/:id/logo',
    scope: 'update-products',
    tag: 'Brands',
    summary: 'Quita el logo de una marca',
    params: { id: 'id_or_slug' },
    response: brandSchema,
    handler: async (ctx, { params, companyId }) => {
      const id = await resolveIdOrSlug(ctx.deps.pool, 'brands', companyId, params.id);
      await detachImage(ctx, 'brand', companyId, id);
      return { data: await loadBrand(ctx.deps.pool, companyId, id) };
    },
  }),
  defineRoute({
    ...common,
    errors: [...common.errors],
    method: 'POST',
    path: '/product-categories/:id/image',
    scope: 'update-product_categories',
    tag: 'Product categories',
    summary: 'Sube la imagen de una categoría',
    description: UPLOAD_DESCRIPTION,
    params: { id: 'id_or_slug' },
    multipart: multipart(IMAGE_FIELDS),
    response: imageResult,
    handler: async (ctx, { params, companyId, file }) => {
      const id = await resolveIdOrSlug(ctx.deps.pool, 'product_categories', companyId, params.id);
      const url = await attachImage(ctx, 'product_category', companyId, id, file);
      return { data: { id, image_url: url, thumbnail_url: null } };
    },
  }),
  defineRoute({
    ...common,
    errors: ['not_found'],
    method: 'DELETE',
    path: '/product-categories/:id/image',
    scope: 'update-product_categories',
    tag: 'Product categories',
    summary: 'Quita la imagen de una categoría',
    params: { id: 'id_or_slug' },
    response: imageResult,
    handler: async (ctx, { params, companyId }) => {
      const id = await resolveIdOrSlug(ctx.deps.pool, 'product_categories', companyId, params.id);
      await detachImage(ctx, 'product_category', companyId, id);
      return { data: { id, ...(await imageOf(ctx.deps.pool, 'product_category', companyId, id)) } };
    },
  }),
];
