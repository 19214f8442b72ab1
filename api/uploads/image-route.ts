// The image slot of a record: `POST <path>` takes one image as
// multipart/form-data and `DELETE <path>` removes it. The web process judges
// the bytes (storage/images.ts), stores the original, points the owner at it
// and enqueues the thumbnail in the same transaction, then answers at once;
// the worker sets the thumbnail URL. The catalog's images are built with it;
// another record with an image adds its owner kind to MEDIA_OWNERS
// (storage/media-items.ts) and declares its slot with imageSlotRoutes.
import { z } from 'zod';
import { transaction, type Queryable } from '../../db/pool.ts';
import { inspectImage, MAX_IMAGE_BYTES, NOT_AN_IMAGE, safeFilename } from '../../storage/images.ts';
import { looksLikeSvg, rasterizeSvg, SvgBusyError } from '../../storage/svg.ts';
import { THUMBNAIL } from '../../db/queues.ts';
import { freeBytes, lockFreeBytes } from '../../storage/files.ts';
import type { MediaOwner } from '../../db/media-owners.ts';
import { deleteMedia, mediaBytes, storeMedia } from '../../storage/media-items.ts';
import { deleteBlob } from '../../storage/blobs.ts';
import { ApiError, validationFailed, type ErrorCode } from '../errors.ts';
import { defineRoute, type ParamKind, type RouteDef, type UploadedFile } from '../route.ts';
import type { ApiContext, Deps } from '../types.ts';
import { lockOwnerMedia, readOwnerImage, readOwnerMediaId, setOwnerImage, type OwnerImage } from './image-queries.ts';

/** `{id, image_url, thumbnail_url}`: what an image route answers unless it answers the whole record. */
export const ownerImageSchema = z.object({ id: z.string(), image_url: z.string().nullable(), thumbnail_url: z.string().nullable() });

/** Judges the file, then stores it and points the owner at it; returns the owner's new image URL. */
export async function attachImage(
  db: Queryable,
  deps: Pick<Deps, 'config' | 'jobs' | 'blobs'>,
  owner: MediaOwner,
  companyId: string,
  ownerId: string,
  upload: UploadedFile | undefined,
  fallbackFilename: string,
  accept?: ImageSlot<{ ownerId: string }>['accept'],
  fields: readonly string[] = ['file', 'image'],
): Promise<string> {
  // Named as this route takes it (the company logo in `logo`, as the contract says).
  if (!upload) throw validationFailed({ [fields[0]]: [`envía la imagen como multipart/form-data en el campo ${fields.join(' o ')}`] });
  let file = upload;
  if (accept?.svg && looksLikeSvg(file.bytes)) {
    const raster = await rasterizeSvg(file.bytes).catch((error) => {
      // Retry-After: 2 (the default of a 503); the SVGs ahead of it take up to 5 s each.
      if (error instanceof SvgBusyError) throw new ApiError('service_unavailable', 'Hay demasiados SVG en espera de dibujarse; vuelve a intentarlo en unos segundos.');
      throw error;
    });
    if (!raster.ok) throw validationFailed({ [file.field]: [raster.reason] });
    file = { ...file, bytes: raster.png, filename: (file.filename ?? fallbackFilename).replace(/\.svgz?$/i, '') + '.png' };
  }
  const inspection = await inspectImage(file.bytes);
  if (!inspection.ok) {
    // Content that is no image at all: the slot's own formats, not every format images take elsewhere.
    const reason = accept && inspection.reason === NOT_AN_IMAGE ? `el contenido no es una imagen ${accept.description}` : inspection.reason;
    throw validationFailed({ [file.field]: [reason] });
  }
  if (accept && !accept.types.includes(inspection.image.contentType)) {
    throw validationFailed({ [file.field]: [`formato no admitido aquí: se aceptan ${accept.description}`] });
  }
  // The image itself: what the file carried after its end (a camera's trailer, another file) is not kept.
  file = { ...file, bytes: inspection.bytes };
  // The bytes first, outside the transaction that points the owner at them:
  // with BLOB_STORE=s3 the upload is a PUT to another service, which should
  // hold no row lock, and a rollback after it must not leave an object the
  // database does not know (the blob deleted below queues its object; a crash
  // here leaves an unreferenced blob that the hourly orphan purge deletes).
  // A first look at the quota, unlocked, before any byte is written: an upload that cannot fit never
  // reaches the store (with BLOB_STORE=s3 a refused object would wait for the hourly purge, and a
  // company at its quota could keep filling the bucket). The locked check below is what decides.
  const previousBytes = await mediaBytes(db, companyId, [(await readOwnerMediaId(db, owner, companyId, ownerId))]);
  if (file.bytes.length > (await freeBytes(db, companyId)) + previousBytes) {
    throw validationFailed({ [file.field]: ['almacenamiento de la empresa agotado: la imagen no cabe en su cuota'] });
  }
  const written = await deps.blobs.write(db, companyId, file.bytes, { contentType: inspection.image.contentType });
  if (!written.ok) throw new Error('unreachable: no size limit was given');
  try {
    return await transaction(db, async (client) => {
      // The owner's row first, then the company's: the order a team edit (PUT /users/:id) takes them in.
      const previous = await lockOwnerMedia(client, owner, companyId, ownerId);
      // The storage quota counts images too (docs/forms.md, Storage and quota), with the company row
      // locked so concurrent uploads take turns; the image this one replaces gives its bytes back.
      const free = await lockFreeBytes(client, companyId);
      if (written.blob.sizeBytes > free + (await mediaBytes(client, companyId, [previous]))) {
        throw validationFailed({ [file.field]: ['almacenamiento de la empresa agotado: la imagen no cabe en su cuota'] });
      }
      const media = await storeMedia(client, deps.config.siteUrl, {
        companyId,
        ownerType: owner,
        ownerId,
        blob: written.blob,
        image: inspection.image,
        filename: safeFilename(file.filename, inspection.image.ext, fallbackFilename),
      });
      await setOwnerImage(client, owner, companyId, ownerId, { url: media.url, mediaId: media.id });
      await deleteMedia(client, companyId, [previous]);
      await deps.jobs.send(client, THUMBNAIL, { media_id: media.id });
      return media.url;
    });
  } catch (error) {
    await deleteBlob(db, written.blob.id).catch(() => {});
    throw error;
  }
}

/** Points the owner at no image and deletes the files of the one it had. */
export async function detachImage(db: Queryable, owner: MediaOwner, companyId: string, ownerId: string): Promise<void> {
  await transaction(db, async (client) => {
    const previous = await lockOwnerMedia(client, owner, companyId, ownerId);
    await setOwnerImage(client, owner, companyId, ownerId, null);
    await deleteMedia(client, companyId, [previous]);
  });
}

/** The owner's URLs as an answer gives them: right after an upload, the new image and no thumbnail yet. */
export async function ownerImage(db: Queryable, owner: MediaOwner, companyId: string, ownerId: string, uploadedUrl: string | null): Promise<OwnerImage> {
  return uploadedUrl ? { image_url: uploadedUrl, thumbnail_url: null } : readOwnerImage(db, owner, companyId, ownerId);
}

export type ImageSlot<Target extends { ownerId: string }> = {
  /** Koa path of the slot, e.g. `/products/:id/image`. */
  path: string;
  params: Record<string, ParamKind>;
  scope: string;
  tag: string;
  summaries: { upload: string; remove: string };
  owner: MediaOwner;
  /** Form fields that may carry the file, in the order the description names them. */
  fields: readonly string[];
  /** Name of the stored file when the upload gives none usable. */
  filename: string;
  /** The owner the path names; throws not_found when the company has none. */
  locate: (db: Queryable, companyId: string, params: Record<string, string>, ctx: ApiContext) => Promise<Target>;
  response: z.ZodType;
  /** The answer's `data`: `uploadedUrl` is the new image's URL after an upload, null after a removal. */
  answer: (db: Queryable, companyId: string, target: Target, uploadedUrl: string | null, deps: Pick<Deps, 'config'>) => Promise<unknown>;
  /** Narrower formats than the catalog's (JPEG, PNG, WebP, AVIF, GIF); `svg`: SVG accepted and rasterized to PNG. */
  accept?: { types: readonly string[]; svg?: boolean; description: string };
  /** Errors `locate` may answer besides not_found (the avatar of an owner: owner_required). */
  errors?: ErrorCode[];
  /** The answer has no `thumbnail_url` (a member's avatar: `avatar_url` only), so the description names none. */
  noThumbnail?: true;
};

/** "`logo`, `file` o `image`" */
function fieldList(fields: readonly string[]): string {
  const quoted = fields.map((f) => `\`${f}\``);
  return quoted.length > 1 ? `${quoted.slice(0, -1).join(', ')} o ${quoted.at(-1)}` : quoted.join('');
}

function uploadDescription(fields: readonly string[], thumbnail: boolean): string {
  return (
    `multipart/form-data con el archivo en ${fieldList(fields)}. Formatos: JPEG, PNG, WebP, AVIF, GIF (se juzga el contenido, no el tipo declarado); ` +
    `máximo ${MAX_IMAGE_BYTES / 1024 / 1024} MB y 40 megapíxeles contando todos los cuadros; un solo archivo. Se guarda la imagen sola: lo que el archivo traiga ` +
    `después de su final (el bloque de una cámara, otro archivo) no se conserva, y un zip al final o dentro se rechaza. Otro contenido: 422 validation_failed.` +
    (thumbnail ? ' La miniatura (thumbnail_url) la genera el worker poco después; mientras tanto es null.' : '')
  );
}

/** The slot's two routes: POST uploads (multipart, one file of MAX_IMAGE_BYTES at most), DELETE removes; both answer 200. */
export function imageSlotRoutes<Target extends { ownerId: string }>(slot: ImageSlot<Target>): RouteDef[] {
  // A strict ObjectId among the path parameters (a variant) can also be refused as malformed.
  const invalidId: ErrorCode[] = Object.values(slot.params).includes('id') ? ['invalid_id'] : [];
  const common = { path: slot.path, params: slot.params, scope: slot.scope, tag: slot.tag, response: slot.response, status: 200 };
  return [
    defineRoute({
      ...common,
      method: 'POST',
      summary: slot.summaries.upload,
      description: slot.accept
        ? uploadDescription(slot.fields, !slot.noThumbnail).replace('JPEG, PNG, WebP, AVIF, GIF', slot.accept.description)
        : uploadDescription(slot.fields, !slot.noThumbnail),
      errors: ['not_found', 'validation_failed', ...invalidId, ...(slot.errors ?? [])],
      multipart: { fields: slot.fields, maxFileBytes: MAX_IMAGE_BYTES },
      handler: async (ctx, { params, companyId, file, db }) => {
        const target = await slot.locate(db, companyId, params, ctx);
        const url = await attachImage(db, ctx.deps, slot.owner, companyId, target.ownerId, file, slot.filename, slot.accept, slot.fields);
        return { data: await slot.answer(db, companyId, target, url, ctx.deps) };
      },
    }),
    defineRoute({
      ...common,
      method: 'DELETE',
      summary: slot.summaries.remove,
      errors: ['not_found', ...invalidId, ...(slot.errors ?? [])],
      handler: async (ctx, { params, companyId, db }) => {
        const target = await slot.locate(db, companyId, params, ctx);
        await detachImage(db, slot.owner, companyId, target.ownerId);
        return { data: await slot.answer(db, companyId, target, null, ctx.deps) };
      },
    }),
  ];
}
