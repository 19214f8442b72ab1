// The sign-in and consent pages of /authorize: server-rendered HTML in
// Spanish, no script, every field labelled, errors tied to their field.
import { escapeHtml as esc } from '../../lib/html.ts';

/**
 * Text someone else chose (an application's client_name, a company's name, the redirect host), shown
 * isolated: direction controls dropped and the text in its own <bdi>, so a name holding U+202E cannot
 * reverse what follows it (the "Te devolverá a <host>" line read as another host).
 */
const DIRECTION_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const isolated = (s: string) => `<bdi>${esc(s.replace(DIRECTION_CONTROLS, ''))}</bdi>`;

/** Whether a client's name has anything the pages would show (not blank, not direction controls only, which they drop). */
export function hasVisibleText(name: string | null | undefined): name is string {
  return !!name?.replace(DIRECTION_CONTROLS, '').trim();
}

function page(title: string, body: string): string {
  return `<!doctype html><html lang="es"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<title>${esc(title)}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#111827}
label{display:block;margin:.75rem 0 .25rem;font-weight:600}input[type=email],input[type=password]{width:100%;padding:.5rem;font:inherit;border:1px solid #4b5563;border-radius:.25rem}
button{margin-top:1rem;padding:.6rem 1.2rem;font:inherit;background:#1d4ed8;color:#fff;border:0;border-radius:.25rem}button:focus,input:focus{outline:3px solid #f59e0b}
.error{color:#991b1b;font-weight:600}fieldset{border:1px solid #d1d5db;margin:1rem 0}.check{font-weight:400;display:flex;gap:.5rem}</style></head>
<body><main>${body}</main></body></html>`;
}

// The requested scope rides as `requested_scope`: `scope` is the consent checkboxes' name.
const hidden = (params: Record<string, string>) =>
  Object.entries(params)
    .map(([k, v]) => `<input type="hidden" name="${esc(k === 'scope' ? 'requested_scope' : k)}" value="${esc(v)}">`)
    .join('');

export function errorPage(message: string): string {
  return page('No se puede autorizar', `<h1>No se puede autorizar</h1><p class="error" role="alert">${esc(message)}</p>`);
}

/** `email`: what the person typed, filled in again after a refused sign-in (only the password is typed again). */
export function signInPage(params: Record<string, string>, csrf: string, clientName: string, error?: string, email = ''): string {
  return page(
    'Inicia sesión',
    `<h1>Inicia sesión</h1><p>${isolated(clientName)} quiere acceder a tu empresa.</p>
<form method="post" action="/authorize">${hidden({ ...params, csrf, step: 'sign-in' })}
${error ? `<p class="error" id="signin-error" role="alert">${esc(error)}</p>` : ''}
<label for="email">Correo</label><input id="email" name="email" type="email" autocomplete="username" required${email ? ` value="${esc(email)}"` : ''}${error ? ' aria-describedby="signin-error"' : ''}>
<label for="password">Contraseña</label><input id="password" name="password" type="password" autocomplete="current-password" required${email ? ' autofocus' : ''}${error ? ' aria-describedby="signin-error"' : ''}>
<button type="submit">Continuar</button></form>`,
  );
}

export function consentPage(
  params: Record<string, string>,
  csrf: string,
  client: { name: string; redirectHost: string },
  companies: Array<{ id: string; name: string; mcp: boolean }>,
  scopes: string[],
  signedInAs: string,
  error?: string,
): string {
  const firstAvailable = companies.find((c) => c.mcp)?.id;
  const companyOptions = companies
    .map((c) => `<label class="check"><input type="radio" name="company_id" value="${esc(c.id)}"${c.id === firstAvailable ? ' checked' : ''}${c.mcp ? '' : ' disabled'}> ${isolated(c.name)}${c.mcp ? '' : ' (su plan no incluye MCP)'}</label>`)
    .join('');
  const scopeOptions = scopes.map((s) => `<label class="check"><input type="checkbox" name="scope" value="${esc(s)}" checked> ${esc(s)}</label>`).join('');
  return page(
    'Autorizar acceso',
    `<h1>Autorizar acceso</h1><p><strong>${isolated(client.name)}</strong> (aplicación no verificada) pide acceso de solo lectura.
Te devolverá a <strong>${isolated(client.redirectHost)}</strong>.</p>
<form method="post" action="/authorize">${hidden({ ...params, csrf, step: 'consent' })}
${error ? `<p class="error" role="alert">${esc(error)}</p>` : ''}
<fieldset><legend>Empresa</legend>${companyOptions}</fieldset>
<fieldset><legend>Permisos</legend>${scopeOptions}</fieldset>
<button type="submit" name="decision" value="approve">Autorizar</button>
<button type="submit" name="decision" value="deny">Cancelar</button></form>
<form method="post" action="/authorize">${hidden({ ...params, csrf, step: 'sign-out' })}
<p>Sesión iniciada como <strong>${isolated(signedInAs)}</strong>. <button type="submit">No soy yo: usar otra cuenta</button></p></form>`,
  );
}
