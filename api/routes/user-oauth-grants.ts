// A person's own OAuth connections (contract, Authentication: "the user can
// revoke access at any time"): the AI clients they approved on /authorize in
// the session's company, listed and revoked under their user session, with no
// permission needed. Revoking stops the grant's tokens at once: every MCP
// request checks its grant (api/oauth/grants.ts). Operators have the same
// through `wsctl oauth grants|revoke` (api/admin/oauth.ts).
import { revokeGrant } from '../../db/oauth-grants.ts';
import { ApiError } from '../errors.ts';
import { paginationQuery } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { findUserGrant, listUserGrants, serializeGrant } from './user-oauth-grant-queries.ts';
import { grantSchema } from './user-oauth-grant-schemas.ts';

const TAG = 'Conexiones OAuth (sesión de usuario)';

export const userOAuthGrantRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/user/oauth-grants',
    scope: 'read-oauth_grants',
    session: 'signed-in',
    tag: TAG,
    summary: 'Lista las aplicaciones que conectaste (OAuth)',
    description: 'Las conexiones que la persona de la sesión aprobó en `/authorize` para la empresa de la sesión, revocadas incluidas, de la más nueva a la más vieja.',
    query: paginationQuery,
    response: grantSchema,
    list: true,
    status: 200,
    errors: ['invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) => listUserGrants(db, ctx.deps.totals, companyId, ctx.state.session!.userId, query),
  }),
  defineRoute({
    method: 'GET',
    path: '/user/oauth-grants/:id',
    scope: 'read-oauth_grants',
    session: 'signed-in',
    tag: TAG,
    summary: 'Obtiene una aplicación conectada (OAuth)',
    description: 'La conexión de otra persona o de otra empresa: 404.',
    params: { id: 'id' },
    response: grantSchema,
    status: 200,
    errors: ['invalid_id', 'not_found'],
    handler: async (ctx, { params, companyId, db }) => {
      const grant = await findUserGrant(db, companyId, ctx.state.session!.userId, params.id);
      if (!grant) throw new ApiError('not_found');
      return { data: serializeGrant(grant) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/user/oauth-grants/:id',
    scope: 'delete-oauth_grants',
    session: 'signed-in',
    tag: TAG,
    summary: 'Revoca una aplicación conectada (OAuth)',
    description:
      'Sus tokens dejan de servir de inmediato y su refresh_token ya no renueva nada; la aplicación tendría que pedir acceso de nuevo. Revocar una ya revocada responde igual. La conexión de otra persona o de otra empresa: 404.',
    params: { id: 'id' },
    status: 204,
    errors: ['invalid_id', 'not_found'],
    handler: async (ctx, { params, companyId, db }) => {
      if (!(await revokeGrant(db, params.id, { userId: ctx.state.session!.userId, companyId }))) throw new ApiError('not_found');
      return undefined;
    },
  }),
];
