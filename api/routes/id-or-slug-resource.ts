// A tenant resource addressed by id or slug, with an image slot: its detail
// routes (GET, PATCH, DELETE `<path>/:id`) and its image routes (POST, DELETE
// `<path>/:id/<segment>`), declared from one spec. Products, categories and
// brands are built with it; each declares its list and create routes beside
// it, since their filters and counts differ. The resource's queries do the
// work; the routes here only resolve the path value, open the transaction and
// answer.
import type { z } from 'zod';
import { transaction, type Client, type Queryable } from '../../db/pool.ts';
import type { MediaOwner } from '../../db/media-owners.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { imageSlotRoutes, ownerImage, ownerImageSchema } from '../uploads/image-route.ts';
import { resolveIdOrSlug, type SlugTable } from './slug-queries.ts';

export type IdOrSlugResource<Update> = {
  /** Collection path, e.g. `/brands`. */
  path: string;
  table: SlugTable;
  /** The path value may also be a SKU (products). */
  bySku?: boolean;
  /** Scope resource slug: `read-<it>`, `update-<it>`, `delete-<it>`. */
  scopeResource: string;
  tag: string;
  /** Schema of the record that GET and PATCH answer. */
  response: z.ZodType;
  summaries: { read: string; update: string; delete: string };
  descriptions?: { update?: string; delete?: string };
  updateBody: z.ZodType<Update>;
  /** A valid PATCH payload (OpenAPI example; the cross-tenant test sends it). */
  updateExample: Record<string, unknown>;
  /** Taken first in each write transaction, before the row lock (categories serialise their tree per company). */
  writeLock?: (client: Client, companyId: string) => Promise<void>;
  /** The record as the API shows it; throws not_found when the company has no such row. */
  load: (db: Queryable, companyId: string, id: string) => Promise<unknown>;
  /** Applies a PATCH to the locked row. */
  update: (client: Client, companyId: string, id: string, data: Update) => Promise<void>;
  /** Deletes the locked row and what hangs from it (its media). */
  remove: (client: Client, companyId: string, id: string) => Promise<void>;
  image: {
    /** Last path segment: `image`, or `logo` for brands; also the stored file's name when the upload gives none. */
    segment: string;
    owner: MediaOwner;
    /** Form fields that may carry the file. */
    fields: readonly string[];
    summaries: { upload: string; remove: string };
    /** What the image routes answer: `{id, image_url, thumbnail_url}`, or the whole record. */
    answer: 'image' | 'record';
  };
};

/** Detail routes and image routes apart, so the table can list them where it always has (the OpenAPI path order). */
export function idOrSlugResource<Update>(spec: IdOrSlugResource<Update>): { routes: RouteDef[]; imageRoutes: RouteDef[] } {
  const scope = (action: string) => `${action}-${spec.scopeResource}`;
  const idParam = { id: spec.bySku ? 'id_slug_or_sku' : 'id_or_slug' } as const;
  const resolve = (db: Queryable, companyId: string, value: string, lock = false) =>
    resolveIdOrSlug(db, spec.table, companyId, value, { sku: spec.bySku, lock });
  /** Write lock, then the row: the one order every writer of the resource takes them in. */
  const lockRow = async (client: Client, companyId: string, value: string) => {
    await spec.writeLock?.(client, companyId);
    return resolve(client, companyId, value, true);
  };

  const detail = { path: `${spec.path}/:id`, tag: spec.tag, params: idParam };
  const routes: RouteDef[] = [
    defineRoute({
      ...detail,
      method: 'GET',
      scope: scope('read'),
      summary: spec.summaries.read,
      response: spec.response,
      status: 200,
      errors: ['not_found'],
      handler: async (ctx, { params, companyId, db }) => {
        const id = await resolve(db, companyId, params.id);
        return { data: await spec.load(db, companyId, id) };
      },
    }),
    defineRoute({
      ...detail,
      method: 'PATCH',
      scope: scope('update'),
      summary: spec.summaries.update,
      description: spec.descriptions?.update,
      body: spec.updateBody,
      example: spec.updateExample,
      response: spec.response,
      status: 200,
      errors: ['not_found', 'validation_failed'],
      handler: async (ctx, { params, data, companyId, db }) => {
        const record = await transaction(db, async (client) => {
          const id = await lockRow(client, companyId, params.id);
          await spec.update(client, companyId, id, data);
          return spec.load(client, companyId, id);
        });
        return { data: record };
      },
    }),
    defineRoute({
      ...detail,
      method: 'DELETE',
      scope: scope('delete'),
      summary: spec.summaries.delete,
      description: spec.descriptions?.delete,
      status: 204,
      errors: ['not_found'],
      handler: async (ctx, { params, companyId, db }) => {
        await transaction(db, async (client) => {
          const id = await lockRow(client, companyId, params.id);
          await spec.remove(client, companyId, id);
        });
        return undefined;
      },
    }),
  ];

  const { image } = spec;
  const imageRoutes = imageSlotRoutes<{ ownerId: string }>({
    path: `${spec.path}/:id/${image.segment}`,
    params: idParam,
    scope: scope('update'),
    tag: spec.tag,
    summaries: image.summaries,
    owner: image.owner,
    fields: image.fields,
    filename: image.segment,
    locate: async (db, companyId, { id }) => ({ ownerId: await resolve(db, companyId, id) }),
    response: image.answer === 'record' ? spec.response : ownerImageSchema,
    answer: async (db, companyId, { ownerId }, uploadedUrl) =>
      image.answer === 'record' ? spec.load(db, companyId, ownerId) : { id: ownerId, ...(await ownerImage(db, image.owner, companyId, ownerId, uploadedUrl)) },
  });
  return { routes, imageRoutes };
}
