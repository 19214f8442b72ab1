// Team members at /users (contract: Users), scopes `*-users`: members of the
// key's company only. A person (email unique across the service) can belong
// to several companies; the membership carries is_owner. Create refuses at
// max_team_size (422 team_limit_reached, one seat never given twice: the
// company row is locked), an email already in the service is 409 email_taken
// (operators add an existing person to another company with
// `wsctl user add-membership`), a taken booking_slug 422.
import { notifyAuthChange } from '../auth/key-cache.ts';
import { transaction } from '../../db/pool.ts';
import { ApiError } from '../errors.ts';
import { searchableQuery, searchTerm } from '../pagination.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { imageSlotRoutes } from '../uploads/image-route.ts';
import { assertActingOwner, assertProfileEditable, createMember, findMember, listMembers, lockSeat, removeMember, serializeMember, updateMember } from './user-queries.ts';
import { userCreate, userExample, userSchema, userUpdate } from './user-schemas.ts';

const TAG = 'Users';
const idParam = { id: 'id' } as const;

export const userRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/users',
    scope: 'read-users',
    tag: TAG,
    summary: 'Lista los miembros del equipo',
    query: searchableQuery('nombre o correo'),
    response: userSchema,
    list: true,
    status: 200,
    errors: ['invalid_id', 'invalid_cursor', 'offset_too_deep', 'invalid_parameter'],
    handler: async (ctx, { query, companyId, db }) => listMembers(db, ctx.deps.totals, companyId, ctx.deps.config.bookingUrl, query, searchTerm(query)),
  }),
  defineRoute({
    method: 'POST',
    path: '/users',
    scope: 'create-users',
    tag: TAG,
    summary: 'Agrega un miembro al equipo',
    description:
      'Sin contraseña: nadie inicia sesión como la persona hasta que un operador le asigna una (wsctl user set-password). 422 team_limit_reached en max_team_size; 409 email_taken si el correo ya existe en el servicio; ' +
      '422 validation_failed si el booking_slug está tomado o no es válido. Crear a un dueño (`is_owner: true`) lo hace solo un dueño (403 owner_required). `settings_preferences.booking_branding` acepta la forma anidada (light, dark) ' +
      'o la plana (bg_mode, bg_color_from, bg_color_to, que se aplican a light); al leer siempre es anidada.',
    body: userCreate,
    example: userExample,
    response: userSchema,
    status: 201,
    errors: ['team_limit_reached', 'email_taken', 'owner_required', 'validation_failed', 'parameter_missing', 'idempotency_key_reused'],
    handler: async (ctx, { data, companyId, db }) => {
      const member = await transaction(db, async (client) => {
        await lockSeat(client, companyId);
        return createMember(client, companyId, data, ctx.state.auth!.userId);
      });
      return { data: serializeMember(member, ctx.deps.config.bookingUrl) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/users/:id',
    scope: 'read-users',
    tag: TAG,
    summary: 'Obtiene un miembro',
    params: idParam,
    response: userSchema,
    status: 200,
    errors: ['invalid_id', 'not_found'],
    handler: async (ctx, { params, companyId, db }) => {
      const member = await findMember(db, companyId, params.id);
      if (!member) throw new ApiError('not_found');
      return { data: serializeMember(member, ctx.deps.config.bookingUrl) };
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/users/:id',
    scope: 'update-users',
    tag: TAG,
    summary: 'Actualiza un miembro',
    description: 'Cualquier subconjunto de los campos de creación. Solo un dueño (el usuario de la clave o de la sesión) cambia is_owner: si no, 403 owner_required; quitarlo al último dueño es 422 last_owner. Los datos personales de alguien que pertenece también a otra empresa solo los cambia esa persona con su propia clave (422 validation_failed nombrando cada campo); los de un dueño, solo él o otro dueño (403 owner_required); is_owner es de cada empresa.',
    params: idParam,
    body: userUpdate,
    example: { phone: '+52 81 5555 0101' },
    response: userSchema,
    status: 200,
    errors: ['invalid_id', 'not_found', 'email_taken', 'owner_required', 'last_owner', 'validation_failed'],
    handler: async (ctx, { params, data, companyId, db }) => {
      const member = await transaction(db, async (client) => {
        const existing = await findMember(client, companyId, params.id, true);
        if (!existing) throw new ApiError('not_found');
        return updateMember(client, companyId, existing, data, ctx.state.auth!.userId);
      });
      return { data: serializeMember(member, ctx.deps.config.bookingUrl) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/users/:id',
    scope: 'delete-users',
    tag: TAG,
    summary: 'Quita a un miembro del equipo',
    description:
      'Quita la membresía; si era su única empresa, la persona queda borrada lógicamente (su correo y booking_slug vuelven a estar libres). ' +
      'Sus claves de API de la empresa se revocan y sus sesiones dejan de valer al instante. 403 self_delete_forbidden para el dueño de la clave; a un dueño lo quita solo otro dueño (403 owner_required); ' +
      '422 last_owner para el último dueño.',
    params: idParam,
    status: 204,
    errors: ['invalid_id', 'not_found', 'self_delete_forbidden', 'owner_required', 'last_owner'],
    handler: async (ctx, { params, companyId, db }) => {
      await transaction(db, async (client) => {
        const member = await findMember(client, companyId, params.id, true);
        if (!member) throw new ApiError('not_found');
        if (member.id === ctx.state.auth!.userId) throw new ApiError('self_delete_forbidden');
        if (member.is_owner) await assertActingOwner(client, companyId, ctx.state.auth!.userId);
        await removeMember(client, ctx.deps.jobs, companyId, member);
        await notifyAuthChange(client);
      });
      ctx.deps.keyCache.invalidate();
      return undefined;
    },
  }),
  ...imageSlotRoutes({
    path: '/users/:id/avatar',
    params: idParam,
    scope: 'update-users',
    tag: TAG,
    summaries: { upload: 'Sube el avatar de un miembro', remove: 'Quita el avatar de un miembro' },
    owner: 'user',
    fields: ['avatar'],
    filename: 'avatar',
    accept: { types: ['image/jpeg', 'image/png'], description: 'JPEG o PNG' },
    errors: ['owner_required', 'validation_failed'],
    noThumbnail: true,
    locate: async (db, companyId, params, ctx) => {
      if (!(await findMember(db, companyId, params.id))) throw new ApiError('not_found');
      await assertProfileEditable(db, companyId, params.id, ctx.state.auth?.userId, ['avatar']);
      return { ownerId: params.id };
    },
    response: userSchema,
    answer: async (db, companyId, target, _url, deps) => serializeMember((await findMember(db, companyId, target.ownerId))!, deps.config.bookingUrl),
  }),
];
