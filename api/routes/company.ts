// The key's company at /company (contract: Company), scopes read-company and
// update-company. PUT changes only the profile; POST /company/logo takes a
// JPG, PNG or SVG (rasterized to PNG: an SVG is never served as a document).
import { defineRoute, type RouteDef } from '../route.ts';
import { imageSlotRoutes } from '../uploads/image-route.ts';
import { readCompany, updateCompanyProfile } from './company-queries.ts';
import { companySchema, companyUpdate } from './company-schemas.ts';

const TAG = 'Company';

export const companyRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/company',
    scope: 'read-company',
    tag: TAG,
    summary: 'Obtiene la empresa de la clave',
    description: '`team` se calcula con los miembros actuales.',
    response: companySchema,
    status: 200,
    errors: [],
    handler: async (_ctx, { companyId, db }) => ({ data: await readCompany(db, companyId) }),
  }),
  defineRoute({
    method: 'PUT',
    path: '/company',
    scope: 'update-company',
    tag: TAG,
    summary: 'Actualiza el perfil de la empresa',
    description:
      'Solo name, website, legal_name, business_type, business_context y business_goals. slug, plan, cuotas, max_team_size, ' +
      'módulos, id y fechas no se cambian por la API: enviarlos es 422 validation_failed nombrando el campo.',
    body: companyUpdate,
    example: { name: 'Comercial del Norte', business_goals: ['Vender en línea'] },
    response: companySchema,
    status: 200,
    errors: ['validation_failed', 'parameter_missing', 'idempotency_key_reused'],
    handler: async (_ctx, { data, companyId, db }) => ({ data: await updateCompanyProfile(db, companyId, data) }),
  }),
  ...imageSlotRoutes({
    path: '/company/logo',
    params: {},
    scope: 'update-company',
    tag: TAG,
    summaries: { upload: 'Sube el logo de la empresa', remove: 'Quita el logo de la empresa' },
    owner: 'company',
    fields: ['logo'],
    filename: 'logo',
    accept: { types: ['image/jpeg', 'image/png'], svg: true, description: 'JPEG, PNG o SVG (el SVG se convierte a PNG de 1024 px como máximo; sin DOCTYPE, entidades ni referencias externas)' },
    locate: async (_db, companyId) => ({ ownerId: companyId }),
    response: companySchema,
    answer: (db, companyId) => readCompany(db, companyId),
  }),
];
