// Sign-in and sign-out of the user session that `/user/...` routes take
// (api/auth/sessions.ts). They are mounted by api/app.ts outside the route
// table, so their operations are written here by hand.
import { SESSION_TTL_HOURS, SIGN_IN_LIMITS, signInSchema } from '../auth/sessions.ts';
import { COMMON_HEADERS, ERROR_HEADERS, VERSION_HEADERS, WWW_AUTHENTICATE } from './operations.ts';
import type { SchemaBook } from './schemas.ts';

export function sessionPaths(book: SchemaBook): Record<string, Record<string, unknown>> {
  const error = (description: string, headers: Record<string, unknown> = VERSION_HEADERS) => ({
    description,
    headers,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  });
  return {
    '/user/sessions': {
      post: {
        operationId: 'createUserSession',
        tags: ['Sesiones de usuario'],
        summary: 'Inicia sesión con correo y contraseña',
        description: `Devuelve un token \`service_ses_...\` válido ${SESSION_TTL_HOURS} h para las rutas \`/user/...\`. Credenciales incorrectas: 401 invalid_key. Intentos por minuto: ${SIGN_IN_LIMITS.perEmailAndAddress} por correo y dirección, ${SIGN_IN_LIMITS.perAddress} por dirección, ${SIGN_IN_LIMITS.perEmail} por correo (compartidos con el inicio de sesión de OAuth); después 429 rate_limited con Retry-After.`,
        security: [],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['data'], properties: { data: book.inline(signInSchema, 'input') } } } } },
        responses: {
          '201': {
            description: 'Sesión abierta',
            headers: VERSION_HEADERS,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['data'],
                  properties: {
                    data: {
                      type: 'object',
                      required: ['object', 'token', 'user_id', 'company_id', 'expires_at'],
                      properties: { object: { const: 'user_session' }, token: { type: 'string' }, user_id: { type: 'string' }, company_id: { type: 'string' }, expires_at: { type: 'string', format: 'date-time' } },
                    },
                  },
                },
              },
            },
          },
          '400': error('invalid_json'),
          '401': error('invalid_key', { ...VERSION_HEADERS, ...WWW_AUTHENTICATE }),
          '413': error('request_too_large'),
          '415': error('unsupported_media_type'),
          '422': error('validation_failed, parameter_missing. Una persona de varias empresas sin company_id: validation_failed en company_id, con `companies: [{id, name}]` (sus empresas, para elegir una; solo tras la contraseña correcta)'),
          '426': error('https_required (producción, por HTTP sin TLS)', ERROR_HEADERS[426]),
          '429': error('rate_limited', { ...VERSION_HEADERS, 'Retry-After': { schema: { type: 'integer' }, description: 'Segundos enteros a esperar' } }),
          '500': error('internal_error'),
          '503': error('service_unavailable', { ...VERSION_HEADERS, 'Retry-After': { schema: { type: 'integer' }, description: 'Segundos enteros a esperar' } }),
        },
      },
    },
    '/user/sessions/current': {
      delete: {
        operationId: 'deleteCurrentUserSession',
        tags: ['Sesiones de usuario'],
        summary: 'Cierra la sesión del token enviado',
        security: [{ userSession: [] }],
        description: 'Cuenta en el límite de peticiones de la sesión, como toda ruta `/user/...`.',
        responses: {
          '204': { description: 'Sesión cerrada', headers: COMMON_HEADERS },
          '401': error('invalid_key', ERROR_HEADERS[401]),
          '426': error('https_required (producción, por HTTP sin TLS)', ERROR_HEADERS[426]),
          '429': error('rate_limited', ERROR_HEADERS[429]),
          '500': error('internal_error', COMMON_HEADERS),
          '503': error('service_unavailable', ERROR_HEADERS[503]),
        },
      },
    },
  };
}
