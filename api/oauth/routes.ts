// The OAuth 2.1 authorization server for MCP clients (contract:
// Authentication, OAuth 2.1 flow; DESIGN.md URL layout): discovery (RFC 8414,
// RFC 9728), dynamic registration of public clients (RFC 7591), /authorize
// with a sign-in, company and consent page, /oauth/token (authorization_code
// with PKCE S256 only, refresh_token rotated on every use, a reused refresh
// token revoking the whole grant) and /oauth/revoke (RFC 7009). Token and
// registration errors are RFC 6749 JSON ({error, error_description}). The
// grants behind the token endpoint are api/oauth/grants.ts; the queries,
// api/oauth/store.ts; the pages, api/oauth/pages.ts.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { koaBody } from 'koa-body';
import { z } from 'zod';
import { isStorableText } from '../validation.ts';
import { parseBody } from '../middleware/body.ts';
import { ApiError } from '../errors.ts';
import { toApiError } from '../middleware/request.ts';
import { checkPassword, consumeSignInAttempt } from '../auth/sessions.ts';
import { authorizationOf } from '../middleware/authenticate.ts';
import { MCP_PATH } from '../mcp/server.ts';
import { MCP_SCOPES } from '../mcp/tools.ts';
import type { ApiContext, ApiContextExtension, ApiRouter, ApiState } from '../types.ts';
import { consentPage, errorPage, hasVisibleText, signInPage } from './pages.ts';
import { exchangeCode, refreshGrant, revokeToken } from './grants.ts';
import { closeSession, companiesOf, denyRequest, findClient, findSignInSession, findSignInUser, hasApproved, insertClient, issueCode, openSession, type SignInSession } from './store.ts';

const SESSION_COOKIE = 'ws_oauth';
const CSRF_COOKIE = 'ws_oauth_csrf';
/** Client registrations per client address per minute. */
export const REGISTRATIONS_PER_MINUTE = 20;

function issuer(ctx: ApiContext): string {
  return ctx.deps.config.siteUrl;
}

function oauthError(ctx: ApiContext, status: number, error: string, description: string): void {
  ctx.status = status;
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Pragma', 'no-cache');
  ctx.body = { error, error_description: description };
}

function cors(ctx: ApiContext): void {
  ctx.set('Access-Control-Allow-Origin', '*');
  ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type, MCP-Protocol-Version');
  ctx.set('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
}

/** A redirect URI a client may register: https, loopback http, or a private-use scheme; never a script, data or file URL, userinfo, a fragment or a wildcard. */
function acceptableRedirect(value: string): boolean {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  // Userinfo (https://trusted.example@evil.example/cb) only serves to make one host read as another.
  // `#` alone: an empty fragment, which URL reports as no hash (RFC 6749 3.1.2: no fragment component).
  if (url.hash || value.includes('#') || url.username || url.password || value.includes('*') || value.length > 2000) return false;
  if (['javascript:', 'data:', 'file:', 'vbscript:', 'blob:', 'about:', 'ftp:', 'ws:', 'wss:', 'mailto:', 'tel:', 'sms:'].includes(url.protocol)) return false;
  // A host is letters, digits, dots and hyphens (or a bracketed IPv6): it goes into the pages' CSP.
  if (url.host && !/^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d+)?$/.test(url.host)) return false;
  if (url.protocol === 'https:') return true;
  if (url.protocol === 'http:') return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  return /^[a-z][a-z0-9+.-]*\.?[a-z0-9+.-]*:$/.test(url.protocol); // private-use scheme (cursor://, vscode://)
}

/**
 * The pages' Content-Security-Policy. `form-action` also governs where a
 * submitted form's redirect may land (Chromium), so once the redirect URI is
 * known to be registered it is added: its origin, or for an app's own scheme
 * (`cursor://`, `vscode://`) the scheme, which `*` does not cover.
 */
function pageCsp(redirectUri?: string): string {
  let target = '';
  if (redirectUri) {
    const url = new URL(redirectUri);
    target = url.protocol === 'http:' || url.protocol === 'https:' ? ` ${url.origin}` : ` ${url.protocol}`;
  }
  // img-src data: for the empty icon the pages declare (api/oauth/pages.ts), so no /favicon.ico is asked for.
  return `default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'${target}; frame-ancestors 'none'`;
}

/** Where the consent page says the person will be sent back: the host, or an app's scheme and host. */
function redirectLabel(redirectUri: string): string {
  const url = new URL(redirectUri);
  if (url.protocol === 'http:' || url.protocol === 'https:') return url.host;
  return url.host ? `${url.protocol}//${url.host}` : `${url.protocol}${url.pathname}`.slice(0, 200);
}

/** A loopback redirect's port, as written (RFC 8252 §7.3: the one part that may vary). */
const LOOPBACK_PORT = /^(http:\/\/(?:localhost|127\.0\.0\.1|\[::1\]))(?::[1-9][0-9]{0,4})?(?=[/?#]|$)/;

/**
 * Exact match of the strings, except that a loopback redirect may use any port (RFC 8252 §7.3): the
 * port is cut from both as written, and nothing else is normalized, so `/a/../cb`, `HTTP://` or
 * `127.1` are other URIs, as the token endpoint (bound to the string sent here) sees them.
 */
function redirectMatches(registered: string[], given: string): boolean {
  if (registered.includes(given)) return true;
  if (!LOOPBACK_PORT.test(given)) return false;
  // The pattern reads five digits; a port past 65535 (`:99999`) is no URL (the pages would fail to parse it).
  if (!URL.canParse(given)) return false;
  const portless = (uri: string) => uri.replace(LOOPBACK_PORT, '$1');
  return registered.some((r) => LOOPBACK_PORT.test(r) && portless(r) === portless(given));
}

const AUTHORIZE_PARAMS = ['response_type', 'client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'state', 'scope', 'resource'] as const;

/**
 * The authorization request's parameters. A parameter sent more than once
 * (RFC 6749 §3.1: "MUST NOT be included more than once") is named in
 * `repeated` and answered invalid_request. On the pages' own POSTs the
 * requested scope travels as `requested_scope`, because `scope` is the name
 * of the consent checkboxes (DESIGN.md), whose values are what is granted.
 */
function paramsOf(source: Record<string, unknown>, method: string): { params: Record<string, string>; repeated: string[] } {
  const params: Record<string, string> = {};
  const repeated: string[] = [];
  for (const name of AUTHORIZE_PARAMS) {
    // Only the consent step's `scope` is the checkboxes; an authorization request sent by POST
    // (RFC 6749 §3.1) or a sign-in posted by hand with the request's parameters calls it `scope`.
    const value = method === 'POST' && name === 'scope' ? (source.requested_scope ?? (source.step === 'consent' ? undefined : source.scope)) : source[name];
    if (typeof value === 'string') params[name] = value;
    else if (Array.isArray(value)) repeated.push(method === 'POST' && name === 'scope' ? 'requested_scope' : name);
  }
  return { params, repeated };
}

/**
 * The consent form's seal: an HMAC of the authorization request the page was
 * shown for, under the sign-in session's `form_key`, which never leaves the
 * server. The request travels in the form's hidden fields; without the seal
 * the person could change them before answering (another scope, another
 * client, another PKCE challenge) and be granted what no client asked for.
 */
function sealOf(formKey: string, params: Record<string, string>): string {
  return createHmac('sha256', formKey).update(JSON.stringify(AUTHORIZE_PARAMS.map((name) => params[name] ?? null))).digest('base64url');
}

function sealMatches(formKey: string, params: Record<string, string>, given: unknown): boolean {
  const expected = Buffer.from(sealOf(formKey, params));
  const actual = Buffer.from(typeof given === 'string' ? given : '');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** RFC 7636 §4.2: an S256 challenge is the base64url SHA-256 of the verifier, 43 characters. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/**
 * The redirect URI with `values` added to its query. The registered query is kept as written (RFC 6749
 * §3.1.2: "MUST be retained"): appended to, never re-serialized (`flag` stays `flag`, `%20` stays).
 */
function redirectWith(ctx: ApiContext, redirectUri: string, values: Record<string, string | undefined>): void {
  const url = new URL(redirectUri);
  const added = new URLSearchParams(Object.entries(values).filter((entry): entry is [string, string] => entry[1] !== undefined)).toString();
  const query = url.search.slice(1);
  url.search = query ? `${query}${query.endsWith('&') ? '' : '&'}${added}` : added;
  ctx.redirect(url.href);
}

/**
 * Checks an authorization request. Problems that cannot be redirected safely
 * (unknown client, unregistered redirect URI) are shown on the page; the rest
 * go back to the client as `error` on its redirect URI.
 */
async function checkRequest(ctx: ApiContext, params: Record<string, string>, repeated: string[]) {
  // Shown on the page: which of two client_ids would decide where an error goes back to?
  if (repeated.includes('client_id')) return { page: 'La aplicación (client_id) aparece más de una vez en la solicitud.' } as const;
  const client = params.client_id ? await findClient(ctx.deps.pool, params.client_id) : null;
  if (!client) return { page: 'La aplicación no está registrada (client_id desconocido).' } as const;
  // Shown on the page, never redirected: without one exact redirect_uri there is nowhere safe to send an error.
  if (repeated.includes('redirect_uri')) return { page: 'La dirección de regreso (redirect_uri) aparece más de una vez en la solicitud.' } as const;
  if (!params.redirect_uri) return { page: 'Falta la dirección de regreso (redirect_uri) en la solicitud.' } as const;
  if (!redirectMatches(client.redirect_uris, params.redirect_uri)) return { page: 'La dirección de regreso (redirect_uri) no está registrada para esta aplicación.' } as const;
  const fail = (error: string, description: string) => ({ redirect: { error, error_description: description } }) as const;
  if (repeated.length) return fail('invalid_request', `${repeated.join(', ')} aparece más de una vez`);
  if (params.response_type !== 'code') return fail('unsupported_response_type', 'response_type debe ser code');
  if (!params.code_challenge || params.code_challenge_method !== 'S256') return fail('invalid_request', 'PKCE con code_challenge_method=S256 es obligatorio');
  if (!S256_CHALLENGE.test(params.code_challenge)) return fail('invalid_request', 'code_challenge debe ser el SHA-256 del verificador en base64url (43 caracteres)');
  if (params.resource && !isOurResource(ctx, params.resource)) return fail('invalid_target', 'resource no es el servidor MCP');
  // Each scope once: the consent page shows a checkbox per scope, and a scope asked for twice would
  // need both boxes unticked to be refused.
  const requested = [...new Set((params.scope ?? '').split(' ').filter(Boolean))];
  // The one resource is the read-only MCP server: scopes its tools do not use are dropped
  // (documented, as scopes_supported says); none asked for means all of them.
  const scopes = requested.length ? requested.filter((s) => (MCP_SCOPES as readonly string[]).includes(s)) : [...MCP_SCOPES];
  if (!scopes.length) return fail('invalid_scope', 'ninguno de los permisos solicitados lo usa el servidor MCP');
  return { client, scopes } as const;
}

/** Bodies of /authorize (its pages' forms) and of the OAuth endpoints: JSON or a form, small. */
const parse = koaBody({ json: true, urlencoded: true, multipart: false, text: false, jsonLimit: '16kb', formLimit: '16kb' });
/**
 * The body parser, for the OAuth endpoints: a body that does not parse is
 * answered in RFC 6749/7591 shape ({error, error_description}), as every
 * other refusal of these endpoints, not in the REST API's.
 */
function oauthForm(error: string): Middleware<ApiState, ApiContextExtension> {
  return (ctx, next) =>
    parseBody(parse, ctx, next, (thrown) => {
      const problem = toApiError(thrown);
      if (!problem) throw thrown;
      cors(ctx);
      // The REST API's hint names its {"data": …} wrapper, which OAuth bodies do not have.
      const description = problem.code === 'invalid_json' && problem.message.includes('"data"') ? 'El cuerpo debe ser un objeto JSON o un formulario (application/x-www-form-urlencoded).' : problem.message;
      oauthError(ctx, problem.status, error, description);
    });
}

/** RFC 8414 (also served as openid-configuration, docs/oauth.md). */
function authorizationServerMetadata(ctx: ApiContext): void {
  cors(ctx);
  const iss = issuer(ctx);
  ctx.body = {
    issuer: iss,
    authorization_endpoint: `${iss}/authorize`,
    token_endpoint: `${iss}/oauth/token`,
    registration_endpoint: `${iss}/oauth/register`,
    revocation_endpoint: `${iss}/oauth/revoke`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: ['none'],
    revocation_endpoint_auth_methods_supported: ['none'],
    // The one resource is the read-only MCP server: the scopes its tools use (RFC 9728, 8414).
    scopes_supported: [...MCP_SCOPES],
    authorization_response_iss_parameter_supported: true,
  };
}

/**
 * RFC 9728: each document names the resource its address was formed from (§3.3, which strict client
 * libraries check): the MCP server for the path-specific one, the site (`{site_url}/`) for the root one
 * the contract gives. Either identifier, sent as `resource`, gets a token for the MCP server, the one
 * resource OAuth tokens open (`isOurResource`).
 */
function protectedResourceMetadata(ctx: ApiContext): void {
  cors(ctx);
  const resource = ctx.path.replace(/\/$/, '').endsWith(MCP_PATH) ? `${issuer(ctx)}${MCP_PATH}` : `${issuer(ctx)}/`;
  ctx.body = { resource, authorization_servers: [issuer(ctx)], scopes_supported: [...MCP_SCOPES], bearer_methods_supported: ['header'] };
}

/** RFC 8707: a `resource` this server issues tokens for: the MCP server, or the site as the root metadata names it. */
function isOurResource(ctx: ApiContext, resource: string): boolean {
  const value = resource.replace(/\/$/, '');
  return value === `${issuer(ctx)}${MCP_PATH}` || value === issuer(ctx);
}

/** RFC 7591 dynamic registration of a public client (no secret), rate-limited per address. */
async function register(ctx: ApiContext): Promise<void> {
  cors(ctx);
  const limit = await ctx.deps.rateLimiter.consume(`oauth-register:${ctx.ip}`, REGISTRATIONS_PER_MINUTE);
  if (!limit.allowed) {
    ctx.set('Retry-After', String(Math.min(60, Math.max(1, limit.resetSeconds))));
    // The contract's code for 429 (RFC 7591 names none), so a client branching on `error` meets one name.
    return oauthError(ctx, 429, 'rate_limited', 'demasiados registros desde esta dirección; espera un minuto');
  }
  const input = z
    .object({
      redirect_uris: z.array(z.string().max(2000).refine(isStorableText)).min(1).max(10),
      client_name: z.string().trim().max(200).refine(isStorableText, 'contiene un carácter nulo o un sustituto sin pareja').optional(),
    })
    .safeParse(ctx.request.body);
  if (!input.success) {
    const field = String(input.error.issues[0]?.path[0] ?? 'redirect_uris');
    const description = field === 'client_name' ? 'client_name debe ser texto (200 caracteres como máximo)' : 'redirect_uris es obligatorio (1 a 10 direcciones de texto)';
    return oauthError(ctx, 400, 'invalid_client_metadata', description);
  }
  const bad = input.data.redirect_uris.find((u) => !acceptableRedirect(u));
  if (bad) return oauthError(ctx, 400, 'invalid_redirect_uri', `redirect_uri no aceptada: ${bad.slice(0, 200)}`);
  // A name with nothing to show (blank, or only direction controls, which the pages drop) is no name:
  // the pages then show the client_id rather than an empty one.
  const name = hasVisibleText(input.data.client_name) ? input.data.client_name : null;
  const client = await insertClient(ctx.deps.pool, name, input.data.redirect_uris);
  ctx.status = 201;
  ctx.body = {
    client_id: client.id,
    client_id_issued_at: Math.floor(client.created_at.getTime() / 1000),
    redirect_uris: client.redirect_uris,
    ...(client.client_name ? { client_name: client.client_name } : {}),
    token_endpoint_auth_method: 'none',
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  };
}

/**
 * The authorization endpoint: checks the request, then shows the sign-in page, or the company and
 * consent page once signed in; the consent's answer redirects with a code (or access_denied).
 */
async function authorize(ctx: ApiContext): Promise<void> {
  ctx.set('X-Frame-Options', 'DENY');
  // The page's URL holds the request (state, code_challenge): not sent on to the redirect's target.
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Cache-Control', 'no-store');
  // The pages' forms post here only; until the request is checked, nothing else is allowed.
  ctx.set('Content-Security-Policy', pageCsp());
  const body = (ctx.method === 'POST' ? ctx.request.body : ctx.query) as Record<string, unknown>;
  const { params, repeated } = paramsOf(body ?? {}, ctx.method);
  const check = await checkRequest(ctx, params, repeated);
  ctx.type = 'html';
  if ('page' in check) {
    ctx.status = 400;
    ctx.body = errorPage(String(check.page));
    return;
  }
  // The redirect URI is registered: the consent form's answer (a 302 to it) may go there, app schemes included.
  ctx.set('Content-Security-Policy', pageCsp(params.redirect_uri));
  const secure = ctx.deps.config.isProduction;
  const cookieName = (name: string) => (secure ? `__Host-${name}` : name);
  const cookieOptions = { httpOnly: true, sameSite: 'lax' as const, secure, path: '/', overwrite: true };
  let session = await findSignInSession(ctx.deps.pool, ctx.cookies.get(cookieName(SESSION_COOKIE)));
  if ('redirect' in check) {
    // RFC 9700 §4.11.2: a server that redirects errors to an address nobody here trusted is an open
    // redirector (anyone can register a client with a phishing page as its redirect URI and link here).
    // Errors go back to the client only for a person signed in who approved this client before;
    // otherwise, signed in or not, they are shown here.
    if (!session || !(await hasApproved(ctx.deps.pool, session.userId, params.client_id))) {
      ctx.status = 400;
      ctx.body = errorPage(`La aplicación envió una solicitud de autorización no válida: ${check.redirect.error_description} (${check.redirect.error}).`);
      return;
    }
    return redirectWith(ctx, params.redirect_uri, { ...check.redirect, state: params.state, iss: issuer(ctx) });
  }
  const clientName = hasVisibleText(check.client.client_name) ? check.client.client_name : check.client.id;
  const step = body?.step;
  /** The consent page for this request, its hidden fields sealed under the session's key. */
  const consent = (session: SignInSession, error: string | undefined, companies: Awaited<ReturnType<typeof companiesOf>>) =>
    consentPage({ ...params, seal: sealOf(session.formKey, params) }, session.csrf, { name: clientName, redirectHost: redirectLabel(params.redirect_uri) }, companies, check.scopes, session.email, error);

  if (ctx.method === 'POST' && step === 'sign-in') {
    if (!body.csrf || body.csrf !== ctx.cookies.get(cookieName(CSRF_COOKIE))) {
      ctx.status = 400;
      ctx.body = errorPage('La sesión del formulario expiró; vuelve a intentarlo desde la aplicación.');
      return;
    }
    // An email no column can hold matches no user (and must not reach the query).
    const email = isStorableText(String(body.email ?? '')) ? String(body.email ?? '').toLowerCase() : '';
    const refused = await consumeSignInAttempt(ctx, email);
    const user = await findSignInUser(ctx.deps.pool, email);
    const ok = !refused && (await checkPassword(ctx.deps.pool, user ?? undefined, String(body.password ?? '')));
    if (!ok || !user) {
      ctx.status = refused ? 429 : 401;
      if (refused) ctx.set('Retry-After', String(Math.min(60, Math.max(1, refused.resetSeconds))));
      const typed = typeof body.email === 'string' && isStorableText(body.email) ? body.email.slice(0, 320) : '';
      ctx.body = signInPage(params, String(body.csrf), clientName, refused ? 'Demasiados intentos; espera un minuto.' : 'Correo o contraseña incorrectos.', typed);
      return;
    }
    const opened = await openSession(ctx.deps.pool, { id: user.id, email });
    ctx.cookies.set(cookieName(SESSION_COOKIE), opened.token, cookieOptions);
    session = opened;
  } else if (ctx.method === 'POST' && step === 'sign-out') {
    // "Not you?" on the consent page: the session ends (its CSRF token proves the form is the page's),
    // and the same request starts again at the sign-in page.
    if (session && body.csrf !== session.csrf) {
      ctx.status = 400;
      ctx.body = errorPage('La sesión del formulario expiró; vuelve a intentarlo desde la aplicación.');
      return;
    }
    if (session) await closeSession(ctx.deps.pool, ctx.cookies.get(cookieName(SESSION_COOKIE))!);
    ctx.cookies.set(cookieName(SESSION_COOKIE), null, cookieOptions);
    session = null;
  } else if (ctx.method === 'POST' && step === 'consent') {
    if (!session || body.csrf !== session.csrf) {
      ctx.status = 400;
      ctx.body = errorPage('La sesión del formulario expiró; vuelve a intentarlo desde la aplicación.');
      return;
    }
    if (!sealMatches(session.formKey, params, body.seal)) {
      ctx.status = 400;
      ctx.body = errorPage('La solicitud de autorización cambió en el formulario; vuelve a intentarlo desde la aplicación.');
      return;
    }
    const alreadyAnswered = () => {
      ctx.status = 400;
      ctx.body = errorPage('Esta solicitud de autorización ya se respondió; vuelve a la aplicación (si no recibió la respuesta, que la pida de nuevo).');
    };
    // One answer per authorization request, whichever button: a denial after a code, or a code after a denial, is refused.
    if (body.decision !== 'approve') {
      if (!(await denyRequest(ctx.deps.pool, check.client.id, params.code_challenge))) return alreadyAnswered();
      return redirectWith(ctx, params.redirect_uri, { error: 'access_denied', state: params.state, iss: issuer(ctx) });
    }
    const companies = await companiesOf(ctx.deps.pool, session.userId);
    const company = companies.find((c) => c.id === body.company_id && c.mcp);
    const chosen = [...new Set(([] as unknown[]).concat(body.scope ?? []).map(String))].filter((s) => check.scopes.includes(s));
    if (!company || !chosen.length) {
      ctx.status = 400;
      ctx.body = consent(session, 'Elige una empresa con MCP y al menos un permiso.', companies);
      return;
    }
    const code = await issueCode(ctx.deps.pool, { clientId: check.client.id, userId: session.userId, companyId: company.id, scopes: chosen, redirectUri: params.redirect_uri, codeChallenge: params.code_challenge });
    if (!code) return alreadyAnswered();
    return redirectWith(ctx, params.redirect_uri, { code, state: params.state, iss: issuer(ctx) });
  }

  if (!session) {
    // A second sign-in page in the same browser (another tab, a client that opened the page again) keeps the
    // browser's token, so the first page's form still signs in; only a browser without one gets a new one.
    const held = ctx.cookies.get(cookieName(CSRF_COOKIE));
    const csrf = held && /^[A-Za-z0-9_-]{43}$/.test(held) ? held : randomBytes(32).toString('base64url');
    ctx.cookies.set(cookieName(CSRF_COOKIE), csrf, cookieOptions);
    ctx.body = signInPage(params, csrf, clientName);
    return;
  }
  ctx.body = consent(session, undefined, await companiesOf(ctx.deps.pool, session.userId));
}

/**
 * The client a token or revocation request names: `client_id` in the body, or the user part of HTTP
 * Basic (RFC 6749 §2.3.1: form-encoded), which some libraries send for a public client with an empty
 * password. Clients registered here are public (token_endpoint_auth_method `none`): a password, another
 * scheme, or two different client_ids are refused; a Basic attempt is answered 401 with a Basic
 * challenge (RFC 6749 §5.2). Undefined when the request names no client.
 */
function clientOf(ctx: ApiContext, bodyClientId: unknown): { clientId: string | undefined; viaHeader: boolean } | { refused: true } {
  const refuse = (status: number, error: string, description: string) => {
    oauthError(ctx, status, error, description);
    if (status === 401) ctx.set('WWW-Authenticate', 'Basic realm="oauth"');
    return { refused: true } as const;
  };
  if (bodyClientId !== undefined && typeof bodyClientId !== 'string') return refuse(400, 'invalid_request', 'client_id debe ser un texto');
  const header = authorizationOf(ctx);
  if (header === '') return { clientId: bodyClientId || undefined, viaHeader: false };
  const basic = header === null ? null : /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (!basic) return refuse(401, 'invalid_client', 'la autenticación del cliente es client_id en el cuerpo, o HTTP Basic con la contraseña vacía (token_endpoint_auth_method none)');
  const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  let user: string;
  try {
    user = decodeURIComponent((colon < 0 ? decoded : decoded.slice(0, colon)).replace(/\+/g, ' '));
  } catch {
    return refuse(401, 'invalid_client', 'el usuario de HTTP Basic no es un client_id codificado como formulario');
  }
  if (colon < 0 || !user) return refuse(401, 'invalid_client', 'HTTP Basic debe llevar client_id: y la contraseña vacía');
  if (decoded.length > colon + 1) return refuse(401, 'invalid_client', 'los clientes registrados aquí son públicos: sin contraseña (token_endpoint_auth_method none)');
  if (bodyClientId && bodyClientId !== user) return refuse(400, 'invalid_request', 'client_id del cuerpo y el de HTTP Basic no coinciden');
  return { clientId: user, viaHeader: true };
}

/** The token endpoint (RFC 6749 §3.2): authorization_code with PKCE, or refresh_token (api/oauth/grants.ts). */
async function token(ctx: ApiContext): Promise<void> {
  cors(ctx);
  // RFC 6749 §5.1: token responses are never cached.
  ctx.set('Cache-Control', 'no-store');
  ctx.set('Pragma', 'no-cache');
  const sent = (ctx.request.body ?? {}) as Record<string, unknown>;
  // RFC 6749 §3.2: parameters "MUST NOT be included more than once". Taking one of the values would
  // skip the checks of the other (a second resource, another client_id).
  const repeated = Object.keys(sent).filter((name) => Array.isArray(sent[name]));
  if (repeated.length) return oauthError(ctx, 400, 'invalid_request', `${repeated.join(', ')} aparece más de una vez`);
  // Form fields are strings; anything else (a JSON body's object or number) counts as absent.
  const body = Object.fromEntries(Object.entries(sent).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
  const pool = ctx.deps.pool;
  // RFC 8707: the only resource this server issues tokens for is its MCP endpoint.
  if (body.resource && !isOurResource(ctx, body.resource)) return oauthError(ctx, 400, 'invalid_target', 'resource no es el servidor MCP');
  const named = clientOf(ctx, body.client_id);
  if ('refused' in named) return;
  const clientId = named.clientId;
  // RFC 6749 §5.2: a client_id this server never registered is invalid_client (401), not a bad grant.
  if (clientId && !(await findClient(pool, clientId))) return unknownClient(ctx, named.viaHeader);
  if (body.grant_type === 'authorization_code') {
    // A missing parameter is invalid_request; a verifier that is not one (RFC 7636 §4.1 syntax) cannot match: invalid_grant.
    // client_id may be left out (the contract's token request names only the code and its verifier): the
    // code is bound to its client and to PKCE. One that names another client is refused below.
    // redirect_uri too (OAuth 2.1 dropped it from the token request: PKCE binds the code); when sent, it must match.
    if (!body.code || !body.code_verifier) return oauthError(ctx, 400, 'invalid_request', 'code y code_verifier son obligatorios');
    if (!/^[A-Za-z0-9._~-]{43,128}$/.test(body.code_verifier)) return oauthError(ctx, 400, 'invalid_grant', 'code_verifier debe tener de 43 a 128 caracteres sin reservar');
    const result = await exchangeCode(pool, { code: body.code, verifier: body.code_verifier, clientId, redirectUri: body.redirect_uri });
    if ('error' in result) return oauthError(ctx, 400, 'invalid_grant', result.error);
    ctx.body = result.tokens;
    return;
  }
  if (body.grant_type === 'refresh_token') {
    if (!body.refresh_token) return oauthError(ctx, 400, 'invalid_request', 'refresh_token es obligatorio');
    const result = await refreshGrant(pool, { refreshToken: body.refresh_token, clientId, scope: body.scope });
    if ('error' in result) return oauthError(ctx, 400, result.error, result.text);
    ctx.body = result.tokens;
    return;
  }
  // RFC 6749 §5.2: a missing (or repeated) grant_type is a malformed request; an unknown one is unsupported.
  if (!body.grant_type) return oauthError(ctx, 400, 'invalid_request', 'grant_type es obligatorio (una vez)');
  oauthError(ctx, 400, 'unsupported_grant_type', 'grant_type debe ser authorization_code o refresh_token');
}

/** 401 invalid_client for a client_id never registered here; with a Basic challenge when it came in HTTP Basic (RFC 6749 §5.2). */
function unknownClient(ctx: ApiContext, viaHeader: boolean): void {
  oauthError(ctx, 401, 'invalid_client', 'client_id no está registrado');
  if (viaHeader) ctx.set('WWW-Authenticate', 'Basic realm="oauth"');
}

/** RFC 7009 revocation. */
async function revoke(ctx: ApiContext): Promise<void> {
  cors(ctx);
  const sent = (ctx.request.body as Record<string, unknown>)?.token;
  // RFC 7009 §2.1: token is REQUIRED; an unknown one is not an error (below).
  if (typeof sent !== 'string' || !sent) return oauthError(ctx, 400, 'invalid_request', 'token es obligatorio');
  const named = clientOf(ctx, (ctx.request.body as Record<string, unknown>).client_id);
  if ('refused' in named) return;
  const clientId = named.clientId;
  // As at the token endpoint (RFC 6749 §5.2): a client_id never registered here is invalid_client, not "another's token".
  if (clientId && !(await findClient(ctx.deps.pool, clientId))) return unknownClient(ctx, named.viaHeader);
  // RFC 7009 §2.1: a token issued to another client is refused; RFC 6749 §5.2 names that invalid_grant.
  if ((await revokeToken(ctx.deps.pool, sent, clientId)) === 'other_client') {
    return oauthError(ctx, 400, 'invalid_grant', 'el token es de otra aplicación');
  }
  ctx.status = 200; // RFC 7009: an unknown token is not an error
  ctx.body = {};
}

/** The discovery documents (RFC 8414, RFC 9728, and OpenID's name for the first). */
const METADATA_PATHS = ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration', '/.well-known/oauth-protected-resource', `/.well-known/oauth-protected-resource${MCP_PATH}`];

export function oauthRouter(): ApiRouter {
  const router: ApiRouter = new Router<ApiState, ApiContextExtension>();
  router.get(['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration'], authorizationServerMetadata);
  router.get(['/.well-known/oauth-protected-resource', `/.well-known/oauth-protected-resource${MCP_PATH}`], protectedResourceMetadata);
  // Browser clients send MCP-Protocol-Version with discovery requests, which makes them preflighted.
  router.options(METADATA_PATHS, (ctx) => {
    cors(ctx);
    ctx.status = 204;
  });
  router.all('/.well-known/*rest', (ctx) => {
    // A browser client probing addresses that do not exist here (RFC 8414's path-inserted forms) reads a 404,
    // not a network error: the preflight and the answer carry CORS like the documents do.
    cors(ctx);
    if (ctx.method === 'OPTIONS') {
      ctx.status = 204;
      return;
    }
    // A metadata document asked with another method than GET: 405 naming what it allows (RFC 9110), not 404.
    if (METADATA_PATHS.includes(ctx.path.replace(/\/+$/, ''))) {
      ctx.set('Allow', 'GET, HEAD, OPTIONS');
      throw new ApiError('method_not_allowed');
    }
    ctx.status = 404;
    ctx.body = { error: 'not_found', message: 'El recurso no existe.' };
  });
  router.options(['/oauth/register', '/oauth/token', '/oauth/revoke'], (ctx) => {
    cors(ctx);
    ctx.status = 204;
  });
  router.post('/oauth/register', oauthForm('invalid_client_metadata'), register);
  router.get('/authorize', authorize);
  router.post('/authorize', parse, authorize);
  router.post('/oauth/token', oauthForm('invalid_request'), token);
  router.post('/oauth/revoke', oauthForm('invalid_request'), revoke);
  return router;
}
