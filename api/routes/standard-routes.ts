// The five standard operations of a tenant-scoped resource (list, create,
// read, update, delete), declared from one description. Customers and leads
// are built with it; a resource with different rules declares its routes by hand.
import { z } from 'zod';
import { recordEvent, type EventData } from '../../db/events.ts';
import type { EventName } from '../../lib/webhook-events.ts';
import { transaction } from '../../db/pool.ts';
import { deleteRow, findRow, insertRow, updateRow, type TableSpec } from '../../db/tables.ts';
import { mergeCustomProperties, type CustomPropertiesWrite } from '../custom-properties.ts';
import { ApiError } from '../errors.ts';
import { likePattern, listPage, paginationQuery, searchableQuery, searchTerm, textMatch, type Params } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';

/** What the factory needs of a row; each resource names its full row type (CustomerRow, LeadRow). */
type BaseRow = { id: string; custom_properties?: Record<string, unknown> };
type Write = Record<string, unknown> & { custom_properties?: CustomPropertiesWrite };

export type StandardSpec<Row extends BaseRow, Read extends z.ZodType = z.ZodType> = TableSpec & {
  /** URL segment, e.g. `/customers`. */
  path: string;
  /** Scope resource slug, e.g. `customers`. */
  scopeResource: string;
  tag: string;
  singular: string;
  /** The list's summary noun, in the API's language (`los clientes`): the tag is the document's English grouping. */
  plural: string;
  createSchema: z.ZodType<Write>;
  updateSchema: z.ZodType<Write>;
  /** The read, as the OpenAPI document describes it; `serialize` must answer it (the compiler checks). */
  responseSchema: Read;
  /** A valid create payload (OpenAPI example; cross-tenant test fixture). */
  example: Record<string, unknown>;
  serialize: (row: Row) => z.output<Read>;
  /** Resource field names: custom properties may not use them. */
  reserved: ReadonlySet<string>;
  /** Expression searched by `q`/`search` (trigram-indexed). */
  searchExpression?: string;
  createdEvent?: { name: EventName; data: (row: Row) => EventData };
  /** Filters of the list beyond search and pagination: their query parameters and the conditions they add. */
  listFilters?: { query: z.ZodRawShape; where: (query: Record<string, unknown>, p: Params) => string[] };
};

const searchQuery = searchableQuery('nombre, correo, teléfono');

/** Maps a write payload to columns; custom properties merge into the stored object. */
function columns<Row extends BaseRow>(spec: StandardSpec<Row, z.ZodType>, data: Write, existing: Row | null): Record<string, unknown> {
  const { custom_properties, ...fields } = data;
  const values: Record<string, unknown> = { ...fields };
  if (custom_properties !== undefined) {
    values.custom_properties = mergeCustomProperties(existing?.custom_properties ?? {}, custom_properties, spec.reserved);
  }
  return values;
}

export function standardRoutes<Row extends BaseRow, Read extends z.ZodType>(spec: StandardSpec<Row, Read>): RouteDef[] {
  const scope = (action: string) => `${action}-${spec.scopeResource}`;
  const idParam = { id: 'id' } as const;
  const table = spec.table;

  return [
    defineRoute({
      method: 'GET',
      path: spec.path,
      scope: scope('read'),
      tag: spec.tag,
      summary: `Lista ${spec.plural}`,
      query: (spec.searchExpression ? searchQuery : paginationQuery).extend(spec.listFilters?.query ?? {}),
      response: spec.responseSchema,
      list: true,
      cache: table,
      status: 200,
      errors: ['invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
      handler: async (ctx, { query, companyId, db }) => {
        const term = searchTerm(query as { q?: string; search?: string });
        return listPage<Row>(
          db,
          ctx.deps.totals,
          {
            table,
            columns: '*',
            companyId,
            searching: !!term,
            where: (p) => [
              ...(spec.listFilters?.where(query as Record<string, unknown>, p) ?? []),
              ...(term && spec.searchExpression ? [textMatch(spec.searchExpression, p.add(likePattern(term)))] : []),
            ],
            serialize: spec.serialize,
          },
          query,
        );
      },
    }),
    defineRoute({
      method: 'POST',
      path: spec.path,
      scope: scope('create'),
      tag: spec.tag,
      summary: `Crea ${spec.singular}`,
      body: spec.createSchema,
      example: spec.example,
      response: spec.responseSchema,
      status: 201,
      errors: ['validation_failed', 'parameter_missing', 'idempotency_key_reused'],
      handler: async (ctx, { data, companyId, db }) => {
        const row = await transaction(db, async (client) => {
          const created = await insertRow<Row>(client, spec, companyId, columns(spec, data, null));
          if (spec.createdEvent) await recordEvent(client, companyId, spec.createdEvent.name, spec.createdEvent.data(created));
          return created;
        });
        return { data: spec.serialize(row) };
      },
    }),
    defineRoute({
      method: 'GET',
      path: `${spec.path}/:id`,
      scope: scope('read'),
      tag: spec.tag,
      summary: `Obtiene ${spec.singular}`,
      params: idParam,
      response: spec.responseSchema,
      status: 200,
      errors: ['invalid_id', 'not_found'],
      handler: async (ctx, { params, companyId, db }) => {
        const row = await findRow<Row>(db, spec, companyId, params.id);
        if (!row) throw new ApiError('not_found');
        return { data: spec.serialize(row) };
      },
    }),
    defineRoute({
      method: 'PATCH',
      path: `${spec.path}/:id`,
      scope: scope('update'),
      tag: spec.tag,
      summary: `Actualiza ${spec.singular}`,
      params: idParam,
      body: spec.updateSchema,
      example: spec.example,
      response: spec.responseSchema,
      status: 200,
      errors: ['invalid_id', 'not_found', 'validation_failed'],
      handler: async (ctx, { params, data, companyId, db }) => {
        const row = await transaction(db, async (client) => {
          const existing = await findRow<Row>(client, spec, companyId, params.id, true);
          if (!existing) throw new ApiError('not_found');
          return updateRow<Row>(client, spec, companyId, params.id, columns(spec, data, existing));
        });
        return { data: spec.serialize(row!) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${spec.path}/:id`,
      scope: scope('delete'),
      tag: spec.tag,
      summary: `Elimina ${spec.singular}`,
      params: idParam,
      status: 204,
      errors: ['invalid_id', 'not_found'],
      handler: async (ctx, { params, companyId, db }) => {
        if (!(await deleteRow(db, spec, companyId, params.id))) throw new ApiError('not_found');
        return undefined;
      },
    }),
  ];
}
