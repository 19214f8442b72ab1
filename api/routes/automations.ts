// Automations (contract: Automation). Created by operators with
// `wsctl automation create`; through the API only `active` (the on/off
// switch), `name` and `description` change. trigger_type, trigger_config and
// steps are refused on PATCH with 422 validation_failed naming the field.
// Automations are core (DESIGN.md): every company reaches them with the `*-automations` scopes.
import { deleteRow, findRow, updateRow } from '../../db/tables.ts';
import { ApiError } from '../errors.ts';
import { listPage, searchableQuery, searchTerm, searchWhere } from '../pagination.ts';
import { defineRoute } from '../route.ts';
import { serializeAutomation, type AutomationRow } from './automation-queries.ts';
import { automationSchema, automationUpdate } from './automation-schemas.ts';

const TABLE = { table: 'automations', jsonColumns: new Set(['trigger_config', 'steps']) };

export const automationRoutes = [
  defineRoute({
    method: 'GET',
    path: '/automations',
    scope: 'read-automations',
    tag: 'Automations',
    summary: 'Lista automatizaciones',
    query: searchableQuery('nombre o descripción'),
    response: automationSchema,
    list: true,
    cache: 'automations',
    status: 200,
    handler: async (ctx, { query, companyId, db }) => {
      const term = searchTerm(query);
      return listPage(
        db,
        ctx.deps.totals,
        {
          table: 'automations',
          columns: '*',
          companyId,
          searching: !!term,
          where: searchWhere(term, ['name', 'description']),
          serialize: serializeAutomation,
        },
        query,
      );
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/automations',
    scope: 'create-automations',
    tag: 'Automations',
    summary: 'No soportado: las automatizaciones se crean en la aplicación',
    status: 422,
    errors: ['not_supported_yet'],
    ignoresBody: true,
    handler: async () => {
      throw new ApiError('not_supported_yet', 'Crear automatizaciones por la API no está soportado todavía.');
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/automations/:id',
    scope: 'read-automations',
    tag: 'Automations',
    summary: 'Obtiene una automatización',
    params: { id: 'id' },
    response: automationSchema,
    status: 200,
    errors: ['invalid_id', 'not_found'],
    handler: async (ctx, { params, companyId, db }) => {
      const row = await findRow<AutomationRow>(db, TABLE, companyId, params.id);
      if (!row) throw new ApiError('not_found');
      return { data: serializeAutomation(row) };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/automations/:id',
    scope: 'update-automations',
    tag: 'Automations',
    summary: 'Enciende/apaga o renombra una automatización',
    params: { id: 'id' },
    body: automationUpdate,
    example: { active: true, name: 'Bienvenida', description: 'Correo de bienvenida a prospectos' },
    response: automationSchema,
    status: 200,
    errors: ['invalid_id', 'not_found', 'validation_failed'],
    handler: async (ctx, { params, data, companyId, db }) => {
      const row = await updateRow<AutomationRow>(db, TABLE, companyId, params.id, data);
      if (!row) throw new ApiError('not_found');
      return { data: serializeAutomation(row) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/automations/:id',
    scope: 'delete-automations',
    tag: 'Automations',
    summary: 'Elimina una automatización',
    params: { id: 'id' },
    status: 204,
    errors: ['invalid_id', 'not_found'],
    handler: async (ctx, { params, companyId, db }) => {
      if (!(await deleteRow(db, TABLE, companyId, params.id))) throw new ApiError('not_found');
      return undefined;
    },
  }),
];
