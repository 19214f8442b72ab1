// `GET /integrations/google/callback` (DESIGN.md URL layout): where Google
// sends the member after the consent that `wsctl calendar connect` printed.
// The signed `state` names the member (lib/signed-state.ts, one hour) and
// carries a nonce that makes the link work once (table used_consent_states); the
// code is exchanged at Google's token endpoint for a refresh token, which is
// stored sealed (db/calendar-sync.ts). Answers a short HTML page.
import Router from '@koa/router';
import { randomBytes } from 'node:crypto';
import { coversEvents, GoogleApiError, GoogleCalendarClient } from '../../lib/google-calendar.ts';
import { verifyState } from '../../lib/signed-state.ts';
import { transaction } from '../../db/pool.ts';
import { storeConnection } from '../../db/calendar-sync.ts';
import type { Config } from '../../lib/config.ts';
import { limitUnauthenticated, withinPageLimit } from '../middleware/rate-limit.ts';
import type { ApiContext, ApiContextExtension, ApiRouter, ApiState, Deps } from '../types.ts';
import { escapeHtml as esc } from '../../lib/html.ts';

export const CALLBACK_PATH = '/integrations/google/callback';

/** The redirect URI Google sends the member back to: this route on SITE_URL. */
export function callbackUrl(config: Config): string {
  return `${config.siteUrl}${CALLBACK_PATH}`;
}


function page(ctx: ApiContext, status: number, title: string, text: string): void {
  const nonce = randomBytes(16).toString('base64');
  ctx.set('Content-Security-Policy', `default-src 'none'; style-src 'nonce-${nonce}'; frame-ancestors 'none'`);
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = `<!doctype html><html lang="es"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title><style nonce="${nonce}">body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#111827}</style></head>
<body><main><h1>${esc(title)}</h1><p${status >= 400 ? ' role="alert"' : ''}>${esc(text)}</p></main></body></html>`;
}

export function googleIntegrationRouter(deps: Deps): ApiRouter {
  const router: ApiRouter = new Router<ApiState, ApiContextExtension>();
  router.get(CALLBACK_PATH, async (ctx) => {
    // A person's browser lands here: past the limit, a page that says when to try again.
    const within = await withinPageLimit(ctx, limitUnauthenticated, (seconds) =>
      page(ctx, 429, 'Demasiadas consultas', `Se hicieron demasiadas consultas desde tu red; vuelve a abrir la liga en ${seconds} segundos.`),
    );
    if (!within) return;
    const google = deps.config.google;
    if (!google) return page(ctx, 404, 'Integración no disponible', 'Google Calendar no está configurado en este servicio.');
    const state = typeof ctx.query.state === 'string' ? verifyState(deps.config.encryptionKey, ctx.query.state) : null;
    if (!state || typeof state.user !== 'string' || typeof state.nonce !== 'string') return page(ctx, 400, 'Liga vencida o inválida', 'Pide a tu administrador una liga nueva (wsctl calendar connect).');
    const nonce = state.nonce;
    const usedPage = () => page(ctx, 400, 'Liga ya usada', 'Esta liga ya conectó un calendario; pide a tu administrador una nueva (wsctl calendar connect).');
    if ((await deps.pool.query('SELECT 1 FROM used_consent_states WHERE nonce = $1', [nonce])).rowCount) return usedPage();
    if (typeof ctx.query.error === 'string') return page(ctx, 400, 'No se conectó el calendario', `Google respondió: ${ctx.query.error}.`);
    if (typeof ctx.query.code !== 'string' || !ctx.query.code) return page(ctx, 400, 'No se conectó el calendario', 'Google no envió el código de autorización.');
    try {
      const client = new GoogleCalendarClient(google);
      const { refreshToken, scopes } = await client.exchangeCode(ctx.query.code, callbackUrl(deps.config));
      if (!refreshToken) return page(ctx, 400, 'No se conectó el calendario', 'Google no entregó un token de acceso sin conexión; vuelve a abrir la liga y acepta los permisos.');
      // Google's consent screen lets the person untick the calendar permission: connected without it, every call would be refused.
      if (!coversEvents(scopes)) {
        // The grant is of no use: revoked (best effort), unless the person is connected already. Google ends a
        // whole grant on a revoke, and the consent screen merges the new one into theirs
        // (include_granted_scopes), so revoking it would also end the connection that works.
        const connected = (await deps.pool.query('SELECT 1 FROM calendar_connections WHERE user_id = $1', [state.user])).rowCount;
        if (!connected) await client.revokeToken(refreshToken).catch(() => {});
        return page(ctx, 400, 'No se conectó el calendario', 'No diste permiso para ver y editar los eventos de tu calendario; vuelve a abrir la liga y deja marcado ese permiso.');
      }
      // The link works once: its nonce is recorded with the connection, in one transaction (a second use racing this one waits, then sees it).
      const stored = await transaction(deps.pool, async (db) => {
        // A person removed from the service since the link was made connects nothing (as `wsctl calendar
        // connect --refresh-token` refuses them); the row held, a removal racing this waits and then ends it.
        const person = await db.query('SELECT 1 FROM users WHERE id = $1 AND deleted_at IS NULL FOR SHARE', [state.user]);
        if (!person.rowCount) return 'gone' as const;
        const { rowCount } = await db.query('INSERT INTO used_consent_states (nonce, expires_at) VALUES ($1, to_timestamp($2)) ON CONFLICT DO NOTHING', [nonce, state.exp]);
        if (!rowCount) return 'used' as const;
        await storeConnection(db, deps.jobs, deps.config.encryptionKey, state.user as string, refreshToken, typeof state.calendar === 'string' ? state.calendar : 'primary');
        return 'stored' as const;
      });
      if (stored === 'gone') {
        await client.revokeToken(refreshToken).catch(() => {}); // best effort: no one to connect it to
        return page(ctx, 400, 'Liga vencida o inválida', 'La persona de esta liga ya no está en el servicio; nada se conectó.');
      }
      if (stored === 'used') return usedPage();
    } catch (error) {
      if (error instanceof GoogleApiError && !error.retryable) return page(ctx, 400, 'No se conectó el calendario', `Google rechazó el código (${error.reason ?? error.status}); abre la liga otra vez.`);
      return page(ctx, 502, 'No se conectó el calendario', 'Google no respondió; intenta de nuevo en unos minutos.');
    }
    page(ctx, 200, 'Calendario conectado', 'Listo: tus eventos y reservas se sincronizarán con Google Calendar. Puedes cerrar esta ventana.');
  });
  return router;
}
