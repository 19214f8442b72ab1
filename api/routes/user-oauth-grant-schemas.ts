// What a person's own OAuth connection reads as (user-oauth-grants.ts, docs/oauth.md).
import { z } from 'zod';

export const grantSchema = z.object({
  id: z.string(),
  object: z.literal('oauth_grant'),
  client_id: z.string(),
  client_name: z.string().nullable().describe('El nombre que la aplicación registró; null si no dio ninguno'),
  company_id: z.string(),
  scopes: z.array(z.string()).describe('Lo que la persona aprobó'),
  active: z.boolean().describe('Sin revocar y con un token o un código vigente'),
  created_at: z.string().describe('Cuando la persona la aprobó'),
  revoked_at: z.string().nullable(),
});
