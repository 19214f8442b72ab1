// OAuth 2.1 for MCP clients, end to end over HTTP as a browser and a client
// library would drive it: discovery, registration, sign-in, company and
// consent, the code exchange with PKCE, MCP calls with the token, refresh
// rotation, reuse detection, revocation, and the refusals on the way.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import * as oauth from 'oauth4webapi';
import { addMembership, setPassword } from '../api/admin/users.ts';
import { insertClient } from '../api/oauth/store.ts';
import { request, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { json, wsctl } from './helpers/cli.ts';
import { waitFor } from './helpers/wait.ts';

const PASSWORD = 'contraseña-segura-1';

describe('OAuth 2.1 authorization server', () => {
  let app: TestApp;
  let tenant: Tenant;
  let email: string;
  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { plan: 'starter', rateLimitPerMinute: 100_000 });
    await setPassword(app.pool, tenant.ownerId, PASSWORD);
    email = (await app.pool.query('SELECT email FROM users WHERE id = $1', [tenant.ownerId])).rows[0].email;
  });
  after(() => app.close());

  // Each registration from its own address: registrations are limited to 20 a minute per address.
  let registrations = 0;
  const register = async (redirect = 'http://127.0.0.1:43210/callback') => {
    const res = await fetch(`${app.url}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': `203.0.113.${(++registrations % 250) + 1}` }, body: JSON.stringify({ redirect_uris: [redirect], client_name: 'Cliente de prueba' }) });
    return { status: res.status, body: (await res.json()) as any };
  };
  const pkce = () => {
    const verifier = randomBytes(32).toString('base64url');
    return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
  };
  const hiddenCsrf = (html: string) => /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
  const unescape = (v: string) => v.replace(/&(amp|lt|gt|quot|#39);/g, (_, e) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e as string]!);
  /** The hidden fields of a page's (first) form, as a browser would post them. */
  const hiddenFields = (html: string) => new URLSearchParams([...(/<form[^]*?<\/form>/.exec(html)?.[0] ?? html).matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m): [string, string] => [m[1]!, unescape(m[2]!)]));
  // Each sign-in comes from its own address (the test app trusts one proxy hop): the sign-in limits
  // count 30 a minute per address, and this file signs in more often than that.
  let addresses = 0;
  const signInHeaders = (cookie: string) => ({ 'content-type': 'application/x-www-form-urlencoded', cookie, 'x-forwarded-for': `198.51.100.${(++addresses % 250) + 1}` });
  const cookieOf = (res: Response) => res.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');

  /** Drives the pages as a browser: sign-in, then consent; returns the redirect Location. */
  async function authorize(clientId: string, challenge: string, options: { redirect?: string; scopes?: string[]; pick?: string[]; as?: { email: string; companyId: string }; resource?: string } = {}) {
    const person = options.as ?? { email, companyId: tenant.companyId };
    const redirect = options.redirect ?? 'http://127.0.0.1:43210/callback';
    const params = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirect, code_challenge: challenge, code_challenge_method: 'S256', state: 'xyz', scope: (options.scopes ?? ['read-customers', 'read-company']).join(' ') });
    if (options.resource) params.set('resource', options.resource);
    const first = await fetch(`${app.url}/authorize?${params}`);
    assert.equal(first.status, 200, await first.clone().text());
    assert.equal(first.headers.get('x-frame-options'), 'DENY');
    // The page's URL (state, code_challenge) is not sent on as a Referer; nor is a type guessed.
    assert.deepEqual([first.headers.get('referrer-policy'), first.headers.get('x-content-type-options')], ['no-referrer', 'nosniff']);
    const signInHtml = await first.text();
    assert.match(signInHtml, /<label for="email">/);
    let cookies = cookieOf(first);
    const signIn = await fetch(`${app.url}/authorize`, {
      method: 'POST',
      headers: signInHeaders(cookies),
      body: new URLSearchParams({ ...Object.fromEntries(params), step: 'sign-in', csrf: hiddenCsrf(signInHtml), email: person.email, password: PASSWORD }),
    });
    assert.equal(signIn.status, 200);
    const consentHtml = await signIn.text();
    assert.match(consentHtml, /type="checkbox" name="scope" value="read-customers" checked/);
    cookies = `${cookies}; ${cookieOf(signIn)}`;
    // What the form posts: its hidden fields (the request, csrf, step), the company, the ticked scopes.
    const consent = hiddenFields(consentHtml);
    assert.equal(consent.get('step'), 'consent');
    consent.set('company_id', person.companyId);
    consent.set('decision', 'approve');
    for (const s of options.pick ?? ['read-customers']) consent.append('scope', s);
    const approved = await fetch(`${app.url}/authorize`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookies }, body: consent });
    assert.equal(approved.status, 302, await approved.text());
    return new URL(approved.headers.get('location')!);
  }

  /** A browser's cookies after signing in on the page (a session, no consent given yet). */
  async function signedInCookies(params: URLSearchParams): Promise<string> {
    const first = await fetch(`${app.url}/authorize?${params}`);
    const cookies = cookieOf(first);
    const signIn = await fetch(`${app.url}/authorize`, {
      method: 'POST',
      headers: signInHeaders(cookies),
      body: new URLSearchParams({ ...Object.fromEntries(params), step: 'sign-in', csrf: hiddenCsrf(await first.text()), email, password: PASSWORD }),
    });
    assert.equal(signIn.status, 200);
    return `${cookies}; ${cookieOf(signIn)}`;
  }

  const token = async (body: Record<string, string>) => {
    const res = await fetch(`${app.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body) });
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  };
  const mcp = async (accessToken: string) => {
    const res = await fetch(`${app.url}/api/mcp/v1`, { method: 'POST', headers: { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    return { status: res.status, body: res.status === 200 ? ((await res.json()) as any) : null };
  };

  test('discovery: the issuer is SITE_URL exactly, S256 only, public clients; other /.well-known paths are JSON 404', async () => {
    const meta = (await (await fetch(`${app.url}/.well-known/oauth-authorization-server`)).json()) as any;
    assert.equal(meta.issuer, app.config.siteUrl);
    assert.deepEqual(meta.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(meta.token_endpoint_auth_methods_supported, ['none']);
    assert.equal(meta.authorization_response_iss_parameter_supported, true);
    const resource = await fetch(`${app.url}/.well-known/oauth-protected-resource/api/mcp/v1`);
    assert.equal(resource.headers.get('access-control-allow-origin'), '*');
    const rs = (await resource.json()) as any;
    assert.equal(rs.resource, `${app.config.siteUrl}/api/mcp/v1`);
    // The same document asked with a trailing slash still names the MCP server, not the site.
    assert.equal(((await (await fetch(`${app.url}/.well-known/oauth-protected-resource/api/mcp/v1/`)).json()) as any).resource, `${app.config.siteUrl}/api/mcp/v1`);
    assert.deepEqual(rs.authorization_servers, [meta.issuer]);
    // Only the scopes of the contract's MCP tools are offered (the SDK's flow asks for what is listed).
    const used = ['read-accounts', 'read-calendar_events', 'read-company', 'read-customers', 'read-expenses', 'read-incomes', 'read-leads', 'read-products', 'read-reports'];
    for (const scopes of [meta.scopes_supported, rs.scopes_supported]) assert.deepEqual([...scopes].sort(), used);
    assert.ok(!meta.scopes_supported.includes('read-users'), 'a read scope no tool uses is not offered');
    const other = await fetch(`${app.url}/.well-known/something-else`);
    assert.equal(other.status, 404);
    assert.match(other.headers.get('content-type') ?? '', /json/);
    // A browser client probing an address that is not here (RFC 8414's path-inserted form) can read that 404:
    // its preflight passes and the answer carries CORS, as the documents' do.
    const probe = `${app.url}/.well-known/oauth-authorization-server/api/mcp/v1`;
    const preflight = await fetch(probe, { method: 'OPTIONS', headers: { origin: 'http://localhost:6274', 'access-control-request-method': 'GET', 'access-control-request-headers': 'mcp-protocol-version' } });
    assert.equal(preflight.status, 204);
    assert.equal(preflight.headers.get('access-control-allow-origin'), '*');
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /MCP-Protocol-Version/i);
    const missing = await fetch(probe, { headers: { origin: 'http://localhost:6274', 'mcp-protocol-version': '2025-11-25' } });
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('access-control-allow-origin'), '*');
    // A metadata document with another method: 405 and what it allows, not 404 (it exists).
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource/api/mcp/v1/']) {
      const posted = await fetch(`${app.url}${path}`, { method: 'POST' });
      assert.equal(posted.status, 405, path);
      assert.equal(posted.headers.get('allow'), 'GET, HEAD, OPTIONS');
      assert.equal(((await posted.json()) as any).error, 'method_not_allowed');
    }
    const head = await fetch(`${app.url}/.well-known/oauth-authorization-server`, { method: 'HEAD' });
    assert.equal(head.status, 200, 'HEAD is answered as GET');
  });

  test('two sign-in pages open in one browser: the first one still signs in (the second page keeps the browser\'s CSRF token)', async () => {
    const { body: registered } = await register();
    const page = () => new URLSearchParams({ response_type: 'code', client_id: registered.client_id, redirect_uri: 'http://127.0.0.1:43210/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 'one' });
    const firstParams = page();
    const first = await fetch(`${app.url}/authorize?${firstParams}`);
    const firstHtml = await first.text();
    const cookies = cookieOf(first);
    // The second tab (or a client that opened the page again) in the same browser, before signing in.
    const second = await fetch(`${app.url}/authorize?${page()}`, { headers: { cookie: cookies } });
    assert.equal(second.status, 200);
    assert.equal(hiddenCsrf(await second.text()), hiddenCsrf(firstHtml));
    const jar = [cookies, cookieOf(second)].filter(Boolean).join('; ');
    const signIn = await fetch(`${app.url}/authorize`, {
      method: 'POST',
      headers: signInHeaders(jar),
      body: new URLSearchParams({ ...Object.fromEntries(firstParams), step: 'sign-in', csrf: hiddenCsrf(firstHtml), email, password: PASSWORD }),
    });
    assert.equal(signIn.status, 200, await signIn.clone().text());
    assert.equal(hiddenFields(await signIn.text()).get('step'), 'consent');
    // A cookie that is not of a token's shape is replaced. (One of the right shape is kept: whoever can plant
    // a cookie can post its value too, which double-submit never stopped; production's __Host- prefix keeps
    // other sites and subdomains from planting it.)
    const forged = await fetch(`${app.url}/authorize?${page()}`, { headers: { cookie: 'ws_oauth_csrf=short' } });
    assert.notEqual(hiddenCsrf(await forged.text()), 'short');
  });

  test('a client_name with direction controls cannot reverse the page around it: isolated in <bdi>, controls dropped', async () => {
    const res = await fetch(`${app.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_name: 'Claude\u202e', redirect_uris: ['https://moc.edualc.ni/cb'] }),
    });
    assert.equal(res.status, 201);
    const client = (await res.json()) as { client_id: string };
    const page = await fetch(`${app.url}/authorize?${new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: 'https://moc.edualc.ni/cb', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 's' })}`);
    const html = await page.text();
    assert.match(html, /<bdi>Claude<\/bdi> quiere acceder/);
    assert.doesNotMatch(html, /[\u202a-\u202e\u2066-\u2069]/);
    // A name with nothing left to show (blank, or only controls) is no name: the page shows the client_id.
    for (const client_name of ['   ', '\u202e\u2066']) {
      const blank = await fetch(`${app.url}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ client_name, redirect_uris: ['https://app.example/cb'] }) });
      const registered = (await blank.json()) as { client_id: string; client_name?: string };
      assert.equal(registered.client_name, undefined, JSON.stringify(client_name));
      const shown = await (await fetch(`${app.url}/authorize?${new URLSearchParams({ response_type: 'code', client_id: registered.client_id, redirect_uri: 'https://app.example/cb', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 's' })}`)).text();
      assert.ok(shown.includes(`<bdi>${registered.client_id}</bdi> quiere acceder`), JSON.stringify(client_name));
    }
  });

  test('registration refuses hostile redirect URIs', async () => {
    // A host with ; or , would write into the pages' CSP header (form-action names the redirect's origin).
    for (const uri of ['javascript:alert(1)', 'data:text/html,x', 'file:///etc/passwd', 'http://evil.example/cb', 'https://a.example/cb#frag', 'https://a.example/cb#', 'mailto:a@b.example', 'https://*.example/cb', 'https://a;sandbox/cb', 'https://x,script-src/cb', 'https://trusted.example@evil.example/cb', 'https://user:pw@app.example/cb']) {
      const res = await register(uri);
      assert.equal(res.status, 400, uri);
      assert.equal(res.body.error, 'invalid_redirect_uri', uri);
    }
    for (const uri of ['https://app.example/cb', 'http://localhost:5173/cb', 'cursor://anysphere.cursor-mcp/oauth/callback']) assert.equal((await register(uri)).status, 201, uri);
    // Text no column can hold: 400 invalid_client_metadata (it reached the insert and answered 500).
    for (const body of [{ redirect_uris: ['https://app.example/cb'], client_name: 'a\u0000b' }, { redirect_uris: ['https://app.example/c\u0000b'] }]) {
      const res = await fetch(`${app.url}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      assert.equal(res.status, 400, JSON.stringify(body));
      assert.equal(((await res.json()) as { error: string }).error, 'invalid_client_metadata');
    }
  });

  test('the whole flow: a chosen subset of scopes, the code exchanged with PKCE, MCP calls with the token, rotation and reuse', async () => {
    const client = (await register()).body;
    assert.equal(client.token_endpoint_auth_method, 'none');
    const { verifier, challenge } = pkce();
    const location = await authorize(client.client_id, challenge, { redirect: 'http://127.0.0.1:50001/callback' }); // loopback port change allowed
    assert.equal(location.searchParams.get('state'), 'xyz');
    assert.equal(location.searchParams.get('iss'), app.config.siteUrl);
    const code = location.searchParams.get('code')!;
    const wrong = await token({ grant_type: 'authorization_code', code, code_verifier: pkce().verifier, redirect_uri: 'http://127.0.0.1:50001/callback', client_id: client.client_id });
    assert.equal(wrong.body.error, 'invalid_grant', 'a wrong verifier fails');
    // RFC 6749 §5.2: an unregistered client is invalid_client; a missing parameter is invalid_request. The code survives both.
    const stranger = await token({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:50001/callback', client_id: 'no-such-client' });
    assert.equal(stranger.status, 401);
    assert.equal(stranger.body.error, 'invalid_client');
    const incomplete = await token({ grant_type: 'authorization_code', code, redirect_uri: 'http://127.0.0.1:50001/callback', client_id: client.client_id });
    assert.equal(incomplete.status, 400);
    assert.equal(incomplete.body.error, 'invalid_request');
    // Hostile values are answered, not crashed on: a NUL byte in client_id (PostgreSQL refuses it in text), a JSON object as code.
    const nul = await token({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:50001/callback', client_id: '\u0000' });
    assert.equal(nul.body.error, 'invalid_client');
    const objectCode = await fetch(`${app.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'authorization_code', code: { $ne: 1 }, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:50001/callback' }),
    });
    assert.equal(objectCode.status, 400);
    assert.equal(((await objectCode.json()) as { error: string }).error, 'invalid_request');
    const target = await token({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:50001/callback', resource: 'https://other.example/mcp' });
    assert.equal(target.body.error, 'invalid_target');
    // RFC 6749 §3.2: a parameter sent twice is invalid_request, never one of its values taken (two foreign
    // resources, or two client_ids, would skip their checks). The code survives it.
    for (const [name, value] of [['resource', 'https://other.example/mcp'], ['client_id', client.client_id]]) {
      const form = new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier });
      form.append(name, value);
      form.append(name, value);
      const twice = await fetch(`${app.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form });
      assert.equal(twice.status, 400, name);
      assert.deepEqual(await twice.json(), { error: 'invalid_request', error_description: `${name} aparece más de una vez` });
    }
    const tokens = await token({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:50001/callback', client_id: client.client_id });
    assert.equal(tokens.status, 200, JSON.stringify(tokens.body));
    assert.equal(tokens.headers.get('cache-control'), 'no-store');
    assert.equal(tokens.headers.get('pragma'), 'no-cache');
    assert.match(tokens.body.access_token, /^service_oat_/);
    assert.match(tokens.body.refresh_token, /^service_ort_/);
    assert.equal(tokens.body.expires_in, 3600);
    assert.equal(tokens.body.scope, 'read-customers');
    const listed = await mcp(tokens.body.access_token);
    assert.deepEqual(listed.body.result.tools.map((t: any) => t.name), ['list_customers'], 'only the approved scope');
    const rest = await fetch(`${app.baseUrl}/customers`, { headers: { authorization: `Bearer ${tokens.body.access_token}` } });
    assert.equal(rest.status, 401, 'OAuth tokens are for MCP, not the REST API');

    const rotated = await token({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token, client_id: client.client_id });
    assert.equal(rotated.status, 200);
    assert.notEqual(rotated.body.refresh_token, tokens.body.refresh_token);
    assert.equal((await mcp(rotated.body.access_token)).status, 200);
    const widen = await token({ grant_type: 'refresh_token', refresh_token: rotated.body.refresh_token, scope: 'read-customers read-company' });
    assert.equal(widen.body.error, 'invalid_scope');
    // Clients refresh in parallel: within 60 s the rotated token answers the same successor pair.
    const parallel = await Promise.all([1, 2, 3].map(() => token({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token })));
    for (const res of parallel) {
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.refresh_token, rotated.body.refresh_token);
      assert.equal(res.body.access_token, rotated.body.access_token);
    }
    // A wider scope is refused within the grace too (RFC 6749 §6), and the pair is not handed out.
    const widerInGrace = await token({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token, scope: 'read-leads' });
    assert.deepEqual([widerInGrace.status, widerInGrace.body.error, widerInGrace.body.access_token], [400, 'invalid_scope', undefined]);
    // The same pair answered later says how long its access token has left, not a fresh hour.
    await app.pool.query(`UPDATE oauth_tokens SET expires_at = expires_at - interval '40 seconds' WHERE digest = $1`, [createHash('sha256').update(rotated.body.access_token).digest()]);
    const later = await token({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token });
    assert.equal(later.body.access_token, rotated.body.access_token);
    assert.ok(later.body.expires_in <= 3600 - 40 && later.body.expires_in > 3500, String(later.body.expires_in));
    // After the grace, a reuse is theft: the whole grant goes.
    await app.pool.query(`UPDATE oauth_tokens SET rotated_at = now() - interval '61 seconds' WHERE rotated_at IS NOT NULL`);
    const reuse = await token({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token });
    assert.equal(reuse.body.error, 'invalid_grant');
    assert.equal((await mcp(rotated.body.access_token)).status, 401, 'reusing a rotated refresh token revokes the whole grant');
  });

  test('the code exchange without redirect_uri (OAuth 2.1); a refresh token replayed after its successor was used revokes the grant', async () => {
    const client = await sharedClient();
    const { verifier, challenge } = pkce();
    const code = (await authorize(client.client_id, challenge)).searchParams.get('code')!;
    const mismatch = await token({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:43210/other' });
    assert.equal(mismatch.body.error, 'invalid_grant', 'a redirect_uri that is sent must match');
    const first = await token({ grant_type: 'authorization_code', code, code_verifier: verifier });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const second = await token({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token });
    assert.equal(second.status, 200);
    const third = await token({ grant_type: 'refresh_token', refresh_token: second.body.refresh_token });
    assert.equal(third.status, 200);
    assert.equal((await mcp(third.body.access_token)).status, 200);
    // Within the grace of 60 s, but the successor has already been used: a replay, not a parallel refresh.
    const replay = await token({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token });
    assert.equal(replay.status, 400);
    assert.equal(replay.body.error, 'invalid_grant');
    assert.equal((await mcp(third.body.access_token)).status, 401, 'the whole grant is revoked');
    assert.equal((await token({ grant_type: 'refresh_token', refresh_token: third.body.refresh_token })).body.error, 'invalid_grant');
  });

  test('a replay racing its successor\'s own refresh waits for it and revokes the grant', async () => {
    const client = await sharedClient();
    const { verifier, challenge } = pkce();
    const code = (await authorize(client.client_id, challenge)).searchParams.get('code')!;
    const first = await token({ grant_type: 'authorization_code', code, code_verifier: verifier });
    const second = await token({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token });
    assert.equal(second.status, 200);
    // The successor's refresh, caught between its rotation and its commit (as a concurrent
    // request would be): its row is locked and rotated, not yet committed.
    const successor = createHash('sha256').update(second.body.refresh_token).digest();
    const inFlight = await app.pool.connect();
    try {
      await inFlight.query('BEGIN');
      await inFlight.query(`SELECT 1 FROM oauth_tokens WHERE digest = $1 FOR UPDATE`, [successor]);
      await inFlight.query(`UPDATE oauth_tokens SET rotated_at = now() WHERE digest = $1`, [successor]);
      let settled = false;
      const replay = token({ grant_type: 'refresh_token', refresh_token: first.body.refresh_token }).finally(() => { settled = true; });
      // Until the replay either answers or waits on the successor's row lock.
      await waitFor(
        async () => settled || (await app.pool.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FROM oauth_tokens%FOR SHARE%'`)).rowCount,
        10_000,
        'the replay to answer or wait for the successor',
      );
      await inFlight.query('COMMIT');
      const res = await replay;
      assert.equal(res.status, 400, `the replay must not get the pair of a successor being used: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, 'invalid_grant');
      assert.equal((await mcp(second.body.access_token)).status, 401, 'the whole grant is revoked');
    } finally {
      await inFlight.query('ROLLBACK').catch(() => {});
      inFlight.release();
    }
  });

  test('the consent page says who is signed in, and "not you?" ends that session and asks to sign in again', async () => {
    const client = await sharedClient();
    const params = new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: 'http://127.0.0.1:43210/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 's' });
    const cookie = await signedInCookies(params);
    const consentHtml = await (await fetch(`${app.url}/authorize?${params}`, { headers: { cookie } })).text();
    assert.match(consentHtml, new RegExp(`Sesión iniciada como <strong><bdi>${email.replace(/[.+]/g, '\\$&')}</bdi></strong>`));
    // The sign-out form: the request's hidden fields, the session's CSRF token, step=sign-out.
    const form = [...consentHtml.matchAll(/<form method="post" action="\/authorize">([^]*?)<\/form>/g)].map((m) => hiddenFields(m[1]!)).find((f) => f.get('step') === 'sign-out');
    assert.ok(form, 'a sign-out form');
    const forged = new URLSearchParams(form);
    forged.set('csrf', 'otro');
    const refused = await fetch(`${app.url}/authorize`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie }, body: forged });
    assert.equal(refused.status, 400, 'a sign-out without the page\'s CSRF token changes nothing');
    assert.match(await (await fetch(`${app.url}/authorize?${params}`, { headers: { cookie } })).text(), /Autorizar acceso/, 'still signed in');
    const out = await fetch(`${app.url}/authorize`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie }, body: form });
    assert.equal(out.status, 200);
    assert.match(await out.text(), /<h1>Inicia sesión<\/h1>/);
    assert.ok(out.headers.getSetCookie().some((c) => /^ws_oauth=;/.test(c)), 'the session cookie is cleared');
    // The old cookie no longer opens the consent page: the session is gone from the server too.
    assert.match(await (await fetch(`${app.url}/authorize?${params}`, { headers: { cookie } })).text(), /<h1>Inicia sesión<\/h1>/);
  });

  test('sign-in on the page: its guesses count with the API sign-in\'s (same limits), a wrong and an unknown email read alike', async () => {
    const client = await sharedClient();
    const params = new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: 'http://127.0.0.1:43210/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 's' });
    const address = '192.0.2.77';
    const attempt = async (who: string, password: string) => {
      const first = await fetch(`${app.url}/authorize?${params}`);
      const res = await fetch(`${app.url}/authorize`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieOf(first), 'x-forwarded-for': address },
        body: new URLSearchParams({ ...Object.fromEntries(params), step: 'sign-in', csrf: hiddenCsrf(await first.text()), email: who, password }),
      });
      return { status: res.status, retryAfter: res.headers.get('retry-after'), html: await res.text() };
    };
    const wrong = await attempt(email, 'no-es-la-contraseña');
    const unknown = await attempt('nadie@example.com', 'no-es-la-contraseña');
    assert.deepEqual([wrong.status, unknown.status], [401, 401]);
    assert.match(wrong.html, /Correo o contraseña incorrectos/);
    assert.match(unknown.html, /Correo o contraseña incorrectos/);
    // What was typed is filled in again (only the password is typed again), escaped.
    assert.match(unknown.html, /<input id="email" name="email" type="email" autocomplete="username" required value="nadie@example.com"/);
    assert.match((await attempt('"><b>x@example.com', 'mala')).html, /value="&quot;&gt;&lt;b&gt;x@example.com"/);
    // Nine more wrong guesses through the API's sign-in from the same address spend the shared bucket (10 a minute).
    for (let i = 0; i < 9; i++) {
      const res = await fetch(`${app.baseUrl}/user/sessions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': address }, body: JSON.stringify({ data: { email, password: `mala-${i}` } }) });
      assert.equal(res.status, 401);
    }
    const limited = await attempt(email, PASSWORD);
    assert.equal(limited.status, 429, 'even the right password waits');
    assert.match(limited.html, /Demasiados intentos/);
    assert.ok(Number(limited.retryAfter) >= 1);
  });

  test('the pages\' CSP lets the forms post here only, and the approval reach the registered redirect (its origin, or an app\'s scheme)', async () => {
    const csp = async (clientId: string, redirect: string) => {
      const params = new URLSearchParams({ response_type: 'code', client_id: clientId, redirect_uri: redirect, code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 's' });
      const res = await fetch(`${app.url}/authorize?${params}`);
      return /form-action ([^;]*)/.exec(res.headers.get('content-security-policy') ?? '')?.[1];
    };
    const loopback = await sharedClient();
    assert.equal(await csp(loopback.client_id, 'http://127.0.0.1:43210/callback'), "'self' http://127.0.0.1:43210");
    assert.equal(await csp(loopback.client_id, 'http://127.0.0.1:51234/callback'), "'self' http://127.0.0.1:51234", 'the loopback port the request uses');
    const app1 = await insertClient(app.pool, 'Cursor', ['cursor://anysphere.cursor-mcp/oauth/callback']);
    assert.equal(await csp(app1.id, 'cursor://anysphere.cursor-mcp/oauth/callback'), "'self' cursor:");
    assert.equal(await csp(app1.id, 'https://phish.example/cb'), "'self'", 'an unregistered redirect adds nothing');
    assert.equal(await csp('client_nope', 'https://phish.example/cb'), "'self'");
  });

  test('a code used twice revokes what the first use issued; revocation and removed membership cut tokens at once', async () => {
    const client = (await register()).body;
    const { verifier, challenge } = pkce();
    const code = (await authorize(client.client_id, challenge)).searchParams.get('code')!;
    const exchange = { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:43210/callback', client_id: client.client_id };
    const first = await token(exchange);
    assert.equal((await mcp(first.body.access_token)).status, 200);
    assert.equal((await token(exchange)).body.error, 'invalid_grant');
    assert.equal((await mcp(first.body.access_token)).status, 401);

    const p2 = pkce();
    const code2 = (await authorize(client.client_id, p2.challenge)).searchParams.get('code')!;
    const second = await token({ ...exchange, code: code2, code_verifier: p2.verifier });
    const revoke = (fields: Record<string, string>) =>
      fetch(`${app.url}/oauth/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(fields) });
    // RFC 7009 §2.1: another client naming this client's token is refused, and the token lives on.
    const stranger = (await register()).body;
    for (const kind of ['access_token', 'refresh_token'] as const) {
      const refused = await revoke({ token: second.body[kind], client_id: stranger.client_id });
      assert.deepEqual([refused.status, ((await refused.json()) as any).error], [400, 'invalid_grant'], kind);
      assert.equal((await mcp(second.body.access_token)).status, 200, `${kind} refused: nothing revoked`);
    }
    const revoked = await revoke({ token: second.body.refresh_token, client_id: client.client_id });
    assert.equal(revoked.status, 200);
    assert.equal((await mcp(second.body.access_token)).status, 401);
  });

  test('removing a person from the company revokes their OAuth grant: access and refresh stop, and a membership given back revives nothing', async () => {
    const company = await seedTenant(app.pool, { plan: 'starter', rateLimitPerMinute: 100_000 });
    const staying = await seedTenant(app.pool, { plan: 'starter' }); // a second company keeps the person (not soft-deleted)
    const memberEmail = `member-${Math.random().toString(36).slice(2, 10)}@test.example`;
    const created = await request(app.url, 'POST', '/api/v1/users', { key: company.key, body: { data: { first_name: 'Ana', last_name: 'Miembro', email: memberEmail } } });
    assert.equal(created.status, 201, created.text);
    const memberId = created.body.data.id;
    await setPassword(app.pool, memberId, PASSWORD);
    await addMembership(app.pool, memberId, staying.companyId, false);
    const client = await sharedClient();
    const { verifier, challenge } = pkce();
    const location = await authorize(client.client_id, challenge, { as: { email: memberEmail, companyId: company.companyId } });
    const pair = await token({ grant_type: 'authorization_code', code: location.searchParams.get('code')!, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:43210/callback' });
    assert.equal(pair.status, 200, JSON.stringify(pair.body));
    assert.equal((await mcp(pair.body.access_token)).status, 200);

    // A code the person got before the removal, exchanged after it.
    const late = pkce();
    const lateCode = (await authorize(client.client_id, late.challenge, { as: { email: memberEmail, companyId: company.companyId } })).searchParams.get('code')!;

    assert.equal((await request(app.url, 'DELETE', `/api/v1/users/${memberId}`, { key: company.key })).status, 204);
    assert.equal((await mcp(pair.body.access_token)).status, 401);
    const lateExchange = await token({ grant_type: 'authorization_code', code: lateCode, code_verifier: late.verifier, redirect_uri: 'http://127.0.0.1:43210/callback' });
    assert.deepEqual([lateExchange.status, lateExchange.body.error], [400, 'invalid_grant']);
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: pair.body.refresh_token });
    assert.deepEqual([refreshed.status, refreshed.body.error], [400, 'invalid_grant']);
    const grants = await app.pool.query('SELECT revoked_at FROM oauth_grants WHERE user_id = $1 AND company_id = $2', [memberId, company.companyId]);
    assert.equal(grants.rowCount, 2, 'one grant per consent');
    for (const g of grants.rows) assert.notEqual(g.revoked_at, null, 'each grant is revoked, as wsctl oauth grants shows');

    await addMembership(app.pool, memberId, company.companyId, false);
    assert.equal((await mcp(pair.body.access_token)).status, 401, 'the old access token stays dead');
    assert.equal((await token({ grant_type: 'refresh_token', refresh_token: pair.body.refresh_token })).body.error, 'invalid_grant');
  });

  test('authorize refusals: unknown client and unregistered redirect shown on the page, missing PKCE redirected as an error', async () => {
    const client = (await register()).body;
    const base = { response_type: 'code', client_id: client.client_id, redirect_uri: 'http://127.0.0.1:43210/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 's' };
    const unknown = await fetch(`${app.url}/authorize?${new URLSearchParams({ ...base, client_id: 'client_nope' })}`, { redirect: 'manual' });
    assert.equal(unknown.status, 400);
    const elsewhere = await fetch(`${app.url}/authorize?${new URLSearchParams({ ...base, redirect_uri: 'https://evil.example/cb' })}`, { redirect: 'manual' });
    assert.equal(elsewhere.status, 400, 'never redirected to an unregistered address');
    // RFC 9700 §4.11.2: before the person has signed in, an invalid request is shown on the page, never
    // redirected (any client can register a phishing page as its redirect URI and link here).
    const invalid = [
      { params: { ...base, code_challenge_method: 'plain' }, error: 'invalid_request' },
      { params: { ...base, resource: 'https://other.example/mcp' }, error: 'invalid_target' },
      // The MCP server is read-only: write scopes are never granted, and asking for nothing else is invalid_scope.
      { params: { ...base, scope: 'create-customers delete-customers' }, error: 'invalid_scope' },
      { params: { ...base, response_type: 'token' }, error: 'unsupported_response_type' },
    ];
    for (const { params, error } of invalid) {
      const anonymous = await fetch(`${app.url}/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });
      assert.equal(anonymous.status, 400, error);
      assert.equal(anonymous.headers.get('location'), null, `${error}: not redirected before sign-in`);
      assert.match(await anonymous.text(), new RegExp(error));
    }
    // Signed in, but never having approved this client: still shown here (signed in for another
    // client, a person must not be sent on to any address this one registered).
    const cookie = await signedInCookies(new URLSearchParams(base));
    for (const { params, error } of invalid) {
      const shown = await fetch(`${app.url}/authorize?${new URLSearchParams(params)}`, { redirect: 'manual', headers: { cookie } });
      assert.equal(shown.status, 400, error);
      assert.equal(shown.headers.get('location'), null, `${error}: not redirected for a client the person never approved`);
    }
    // Once the person has approved the client, the same requests go back to it as error on its redirect URI.
    const approved = pkce();
    assert.ok((await authorize(client.client_id, approved.challenge)).searchParams.get('code'));
    for (const { params, error } of invalid) {
      const redirected = await fetch(`${app.url}/authorize?${new URLSearchParams(params)}`, { redirect: 'manual', headers: { cookie } });
      assert.equal(redirected.status, 302, error);
      const location = new URL(redirected.headers.get('location')!);
      assert.equal(location.origin + location.pathname, 'http://127.0.0.1:43210/callback');
      assert.equal(location.searchParams.get('error'), error);
    }
    // Revoked (the person no longer trusts it): shown on the page again.
    await app.pool.query('UPDATE oauth_grants SET revoked_at = now() WHERE client_id = $1', [client.client_id]);
    const afterRevoke = await fetch(`${app.url}/authorize?${new URLSearchParams(invalid[0].params)}`, { redirect: 'manual', headers: { cookie } });
    assert.deepEqual([afterRevoke.status, afterRevoke.headers.get('location')], [400, null]);
    // Asked for a read and a write scope, and the write one sent back ticked as if offered: only the read one is granted.
    const p = pkce();
    const code = (await authorize(client.client_id, p.challenge, { scopes: ['read-customers', 'create-customers'], pick: ['read-customers', 'create-customers'] })).searchParams.get('code')!;
    const granted = await token({ grant_type: 'authorization_code', code, code_verifier: p.verifier, redirect_uri: 'http://127.0.0.1:43210/callback', client_id: client.client_id });
    assert.equal(granted.body.scope, 'read-customers');
    // A sign-in email holding U+0000 is a failed sign-in on the page (it reached the query and answered 500).
    const params = new URLSearchParams(base);
    const page = await fetch(`${app.url}/authorize?${params}`);
    const html = await page.text();
    const nul = await fetch(`${app.url}/authorize`, {
      method: 'POST',
      headers: signInHeaders(cookieOf(page)),
      body: new URLSearchParams({ ...base, step: 'sign-in', csrf: hiddenCsrf(html), email: 'a\u0000@example.com', password: PASSWORD }),
    });
    assert.equal(nul.status, 401);
    assert.match(await nul.text(), /Correo o contraseña incorrectos/);
  });

  // The tests below share one client and sign in as a person of their own: registrations are
  // limited to 20 a minute per address and sign-ins to 10 per person and address.
  let shared: { client_id: string } | null = null;
  const sharedClient = async () => (shared ??= (await register()).body as { client_id: string });
  let second: { email: string; companyId: string } | null = null;
  const secondPerson = async () => {
    if (second) return second;
    const other = await seedTenant(app.pool, { plan: 'starter', rateLimitPerMinute: 100_000 });
    await setPassword(app.pool, other.ownerId, PASSWORD);
    const { rows } = await app.pool.query('SELECT email FROM users WHERE id = $1', [other.ownerId]);
    return (second = { email: rows[0].email, companyId: other.companyId });
  };

  test('consent grants the ticked scopes only, once each; parameters sent twice and malformed challenges are invalid_request', async () => {
    const client = await sharedClient();
    const exchange = async (location: URL, verifier: string) =>
      token({ grant_type: 'authorization_code', code: location.searchParams.get('code')!, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:43210/callback', client_id: client.client_id });
    // One scope asked for and approved: granted once ("read-customers read-customers" before).
    const person = await secondPerson();
    const one = pkce();
    const single = await exchange(await authorize(client.client_id, one.challenge, { scopes: ['read-customers'], pick: ['read-customers'], as: person }), one.verifier);
    assert.equal(single.body.scope, 'read-customers', JSON.stringify(single.body));
    // A scope the request did not ask for, posted as if ticked, is not granted (the request's scope rode in the same field).
    const two = pkce();
    const extra = await exchange(await authorize(client.client_id, two.challenge, { scopes: ['read-customers'], pick: ['read-customers', 'read-reports'], as: person }), two.verifier);
    assert.equal(extra.body.scope, 'read-customers');
    // Nothing ticked: the page again with its error, no code (the hidden request scope was taken as ticked).
    const three = pkce();
    const params = new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: 'http://127.0.0.1:43210/callback', code_challenge: three.challenge, code_challenge_method: 'S256', state: 's', scope: 'read-customers' });
    const first = await fetch(`${app.url}/authorize?${params}`);
    const signInHtml = await first.text();
    const signInForm = hiddenFields(signInHtml);
    assert.equal(signInForm.get('requested_scope'), 'read-customers');
    assert.equal(signInForm.has('scope'), false, 'the consent checkboxes alone are named scope');
    signInForm.set('email', person.email);
    signInForm.set('password', PASSWORD);
    const signIn = await fetch(`${app.url}/authorize`, { method: 'POST', headers: signInHeaders(cookieOf(first)), body: signInForm });
    const consentHtml = await signIn.text();
    assert.match(consentHtml, /name="scope" value="read-customers" checked/);
    assert.doesNotMatch(consentHtml, /value="read-reports"/, 'only the requested scope is offered');
    const none = hiddenFields(consentHtml);
    none.set('company_id', person.companyId);
    none.set('decision', 'approve');
    const refused = await fetch(`${app.url}/authorize`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `${cookieOf(first)}; ${cookieOf(signIn)}` }, body: none });
    assert.equal(refused.status, 400);
    assert.match(await refused.text(), /al menos un permiso/);
    assert.doesNotMatch(await (await fetch(`${app.url}/authorize?${params}`)).text(), /read-reports/);

    // An authorization request sent by POST (RFC 6749 §3.1) keeps its scope.
    const posted = await fetch(`${app.url}/authorize`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: params });
    assert.equal(posted.status, 200);
    assert.equal(hiddenFields(await posted.text()).get('requested_scope'), 'read-customers');
    // RFC 6749 §3.1: a parameter sent twice is invalid_request (scope twice offered every read scope).
    const twice = new URLSearchParams(params);
    twice.append('scope', 'read-reports');
    // Signed in, having approved this client (a live grant), an invalid request goes back to it.
    await authorize(client.client_id, pkce().challenge);
    const cookie = await signedInCookies(params);
    const repeated = await fetch(`${app.url}/authorize?${twice}`, { redirect: 'manual', headers: { cookie } });
    assert.equal(repeated.status, 302);
    const back = new URL(repeated.headers.get('location')!);
    assert.equal(back.searchParams.get('error'), 'invalid_request');
    assert.match(back.searchParams.get('error_description')!, /scope/);
    // A scope named twice in one scope parameter is offered once: one checkbox, so unticking it refuses it.
    const doubled = new URLSearchParams({ ...Object.fromEntries(params), scope: 'read-customers read-customers read-leads' });
    const doubledPage = await (await fetch(`${app.url}/authorize?${doubled}`, { headers: { cookie } })).text();
    assert.equal(doubledPage.match(/name="scope" value="read-customers"/g)?.length, 1, doubledPage);
    // RFC 7636: an S256 challenge is 43 base64url characters; a NUL in it answered 500 at approval.
    for (const challenge of ['abc\u0000def', 'x'.repeat(6000), `${three.challenge}=`, 'short']) {
      const res = await fetch(`${app.url}/authorize?${new URLSearchParams({ ...Object.fromEntries(params), code_challenge: challenge })}`, { redirect: 'manual', headers: { cookie } });
      assert.equal(res.status, 302, challenge.slice(0, 20));
      assert.equal(new URL(res.headers.get('location')!).searchParams.get('error'), 'invalid_request', challenge.slice(0, 20));
    }
  });

  test('the consent form is sealed to its request: a scope, client or PKCE challenge changed in the form is refused, no code', async () => {
    const client = await sharedClient();
    const other = (await register()).body as { client_id: string };
    const { challenge } = pkce();
    const params = new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: 'http://127.0.0.1:43210/callback', code_challenge: challenge, code_challenge_method: 'S256', state: 's', scope: 'read-customers' });
    const cookie = await signedInCookies(params);
    const page = await fetch(`${app.url}/authorize?${params}`, { headers: { cookie } });
    const form = hiddenFields(await page.text());
    assert.match(form.get('seal') ?? '', /^[A-Za-z0-9_-]{43}$/);
    const post = (fields: URLSearchParams) =>
      fetch(`${app.url}/authorize`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie }, body: fields });
    const answer = (changes: Record<string, string | null>) => {
      const fields = new URLSearchParams(form);
      for (const [name, value] of Object.entries(changes)) value === null ? fields.delete(name) : fields.set(name, value);
      fields.set('company_id', tenant.companyId);
      fields.set('decision', 'approve');
      fields.append('scope', 'read-customers');
      fields.append('scope', 'read-company');
      return post(fields);
    };
    const tampered: Array<Record<string, string | null>> = [
      { requested_scope: 'read-customers read-company' },
      { client_id: other.client_id },
      { code_challenge: pkce().challenge },
      { state: 'other' },
      { seal: null },
      { seal: 'x'.repeat(43) },
    ];
    for (const changes of tampered) {
      const res = await answer(changes);
      assert.equal(res.status, 400, JSON.stringify(changes));
      assert.match(await res.text(), /cambió en el formulario/, JSON.stringify(changes));
    }
    // The form as shown: a code, for the scope asked for only.
    const approved = await answer({});
    assert.equal(approved.status, 302, await approved.text());
    assert.ok(new URL(approved.headers.get('location')!).searchParams.get('code'));
    // Another session's seal does not fit this one.
    const elsewhere = hiddenFields(await (await fetch(`${app.url}/authorize?${params}`, { headers: { cookie: await signedInCookies(params) } })).text());
    assert.notEqual(elsewhere.get('seal'), form.get('seal'));
    assert.equal((await answer({ seal: elsewhere.get('seal')! })).status, 400);
  });

  test('a refresh asking for less narrows that access token only; the grant keeps what was approved', async () => {
    const client = await sharedClient();
    const { verifier, challenge } = pkce();
    const person = await secondPerson();
    const location = await authorize(client.client_id, challenge, { scopes: ['read-customers', 'read-company'], pick: ['read-customers', 'read-company'], as: person });
    const tokens = await token({ grant_type: 'authorization_code', code: location.searchParams.get('code')!, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:43210/callback', client_id: client.client_id });
    assert.equal(tokens.body.scope, 'read-customers read-company');
    const tools = async (accessToken: string) => (await mcp(accessToken)).body.result.tools.map((t: any) => t.name);
    const narrow = await token({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token, client_id: client.client_id, scope: 'read-customers read-customers' });
    assert.equal(narrow.status, 200, JSON.stringify(narrow.body));
    assert.equal(narrow.body.scope, 'read-customers');
    assert.deepEqual(await tools(narrow.body.access_token), ['list_customers']);
    // The omitted scope is the one originally granted (RFC 6749 §6), and the earlier access token kept its own.
    const full = await token({ grant_type: 'refresh_token', refresh_token: narrow.body.refresh_token, client_id: client.client_id });
    assert.equal(full.body.scope, 'read-customers read-company');
    assert.deepEqual(await tools(full.body.access_token), ['list_customers', 'get_company']);
    assert.deepEqual(await tools(tokens.body.access_token), ['list_customers', 'get_company']);
    const { rows } = await app.pool.query('SELECT scopes FROM oauth_grants WHERE company_id = $1 AND client_id = $2 ORDER BY created_at DESC LIMIT 1', [person.companyId, client.client_id]);
    assert.deepEqual(rows[0].scopes, ['read-customers', 'read-company']);
  });

  test('token, registration and revocation refusals in RFC 6749/7591/7009 shape', async () => {
    const client = await sharedClient();
    const { verifier, challenge } = pkce();
    const location = await authorize(client.client_id, challenge, { as: await secondPerson() });
    const code = location.searchParams.get('code')!;
    // The contract's token request names the code and its verifier only: client_id may be left out
    // (the code is bound to its client and to PKCE), but one naming another client is refused.
    // (Another registered client, made directly: registrations over HTTP are limited to 20 a minute.)
    const otherClient = await insertClient(app.pool, 'Otra aplicación', ['http://127.0.0.1:43210/callback']);
    const foreign = await token({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:43210/callback', client_id: otherClient.id });
    assert.equal(foreign.body.error, 'invalid_grant');
    const p2 = pkce();
    const code2 = (await authorize(client.client_id, p2.challenge, { as: await secondPerson() })).searchParams.get('code')!;
    const anonymous = await token({ grant_type: 'authorization_code', code: code2, code_verifier: p2.verifier, redirect_uri: 'http://127.0.0.1:43210/callback' });
    assert.equal(anonymous.status, 200, JSON.stringify(anonymous.body));
    // §5.2: no grant_type is a malformed request; an unknown one is unsupported.
    assert.equal((await token({ code })).body.error, 'invalid_request');
    assert.equal((await token({ grant_type: 'password' })).body.error, 'unsupported_grant_type');
    const bodyTwice = await fetch(`${app.url}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'grant_type=refresh_token&grant_type=refresh_token' });
    assert.equal(((await bodyTwice.json()) as any).error, 'invalid_request');
    // A body that does not parse: the endpoint's own error shape, not the REST API's.
    for (const [path, expected] of [['/oauth/register', 'invalid_client_metadata'], ['/oauth/token', 'invalid_request'], ['/oauth/revoke', 'invalid_request']]) {
      const res = await fetch(`${app.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{not json' });
      const body = (await res.json()) as any;
      assert.equal(res.status, 400, path);
      assert.deepEqual(Object.keys(body).sort(), ['error', 'error_description'], path);
      assert.equal(body.error, expected, path);
      // JSON that is not an object: the hint is the endpoint's, not the REST API's {"data": …} wrapper.
      for (const notObject of ['"texto"', '123', 'notjson']) {
        const other = await fetch(`${app.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: notObject });
        const otherBody = (await other.json()) as any;
        assert.deepEqual([other.status, otherBody.error], [400, expected], `${path} ${notObject}`);
        assert.doesNotMatch(otherBody.error_description, /"data"/, `${path} ${notObject}`);
      }
    }
    const badName = await fetch(`${app.url}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['https://app.example/cb'], client_name: 123 }) });
    assert.match(((await badName.json()) as any).error_description, /client_name/);
    // RFC 7009 §2.1: token is required; an unknown one is still 200.
    const noToken = await fetch(`${app.url}/oauth/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: '' });
    assert.equal(noToken.status, 400);
    assert.equal(((await noToken.json()) as any).error, 'invalid_request');
    const unknown = await fetch(`${app.url}/oauth/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'token=service_oat_nope' });
    assert.equal(unknown.status, 200);
    // A client_id never registered is invalid_client, as at the token endpoint (not "another client's token").
    const stranger = await fetch(`${app.url}/oauth/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'token=service_oat_nope&client_id=client_nope' });
    assert.deepEqual([stranger.status, ((await stranger.json()) as any).error], [401, 'invalid_client']);
    // Registrations past 20 a minute from one address: 429 with the contract's code for it and Retry-After.
    const from = { 'content-type': 'application/json', 'x-forwarded-for': '192.0.2.78' };
    const answers: number[] = [];
    let limited: Response | undefined;
    for (let n = 0; n < 21 && !limited; n++) {
      const res = await fetch(`${app.url}/oauth/register`, { method: 'POST', headers: from, body: JSON.stringify({ redirect_uris: ['https://app.example/cb'] }) });
      answers.push(res.status);
      if (res.status === 429) limited = res;
      else await res.body?.cancel();
    }
    assert.deepEqual(answers, [...Array(20).fill(201), 429]);
    assert.equal(((await limited!.json()) as any).error, 'rate_limited');
    assert.ok(Number(limited!.headers.get('retry-after')) > 0);
  });

  test('a client named in HTTP Basic (client_id and an empty password) is the client, as in the body; a secret, another scheme or two names are refused', async () => {
    const client = await sharedClient();
    const basic = (user: string, password = '') => `Basic ${Buffer.from(`${encodeURIComponent(user)}:${password}`).toString('base64')}`;
    const post = async (path: string, body: Record<string, string>, authorization: string) => {
      const res = await fetch(`${app.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization }, body: new URLSearchParams(body) });
      return { status: res.status, challenge: res.headers.get('www-authenticate'), body: (await res.json()) as any };
    };
    const { verifier, challenge } = pkce();
    const code = (await authorize(client.client_id, challenge, { as: await secondPerson() })).searchParams.get('code')!;
    const exchange = { grant_type: 'authorization_code', code, code_verifier: verifier };
    // Refused before the code is looked at (the code survives them): a secret (clients here are public),
    // an unregistered client, another scheme, two different client_ids.
    const refusals: [string, Record<string, string>, number, string][] = [
      [basic(client.client_id, 'secret'), exchange, 401, 'invalid_client'],
      [basic('client_nope'), exchange, 401, 'invalid_client'],
      ['Bearer abc', exchange, 401, 'invalid_client'],
      [basic(client.client_id), { ...exchange, client_id: 'client_other' }, 400, 'invalid_request'],
    ];
    for (const [authorization, body, status, error] of refusals) {
      const refused = await post('/oauth/token', body, authorization);
      assert.deepEqual([refused.status, refused.body.error], [status, error], authorization);
      if (status === 401) assert.equal(refused.challenge, 'Basic realm="oauth"', `${authorization}: RFC 6749 §5.2 challenge`);
    }
    const issued = await post('/oauth/token', exchange, basic(client.client_id));
    assert.equal(issued.status, 200, JSON.stringify(issued.body));
    // Another registered client named in Basic is refused as it is in the body (it refreshed before).
    const otherClient = await insertClient(app.pool, 'Otra aplicación', ['http://127.0.0.1:43210/callback']);
    const foreign = await post('/oauth/token', { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token }, basic(otherClient.id));
    assert.deepEqual([foreign.status, foreign.body.error], [400, 'invalid_grant']);
    const foreignRevoke = await post('/oauth/revoke', { token: issued.body.refresh_token }, basic(otherClient.id));
    assert.deepEqual([foreignRevoke.status, foreignRevoke.body.error], [400, 'invalid_grant']);
    assert.equal((await mcp(issued.body.access_token)).status, 200, 'refused revocations cut nothing');
    const revoked = await post('/oauth/revoke', { token: issued.body.refresh_token }, basic(client.client_id));
    assert.equal(revoked.status, 200);
    assert.equal((await mcp(issued.body.access_token)).status, 401, 'the grant is revoked');
  });

  /** A person signed in on the consent page of a new authorization request; `send` posts its form with a decision. */
  async function consentPage(state: string) {
    const client = await sharedClient();
    const person = await secondPerson();
    const { verifier, challenge } = pkce();
    const params = new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: 'http://127.0.0.1:43210/callback', code_challenge: challenge, code_challenge_method: 'S256', state, scope: 'read-customers' });
    const first = await fetch(`${app.url}/authorize?${params}`);
    let cookies = cookieOf(first);
    const signIn = await fetch(`${app.url}/authorize`, {
      method: 'POST',
      headers: signInHeaders(cookies),
      body: new URLSearchParams({ ...Object.fromEntries(params), step: 'sign-in', csrf: hiddenCsrf(await first.text()), email: person.email, password: PASSWORD }),
    });
    assert.equal(signIn.status, 200);
    cookies = `${cookies}; ${cookieOf(signIn)}`;
    const form = hiddenFields(await signIn.text());
    form.set('company_id', person.companyId);
    form.append('scope', 'read-customers');
    const send = (decision: 'approve' | 'deny') => {
      const body = new URLSearchParams(form);
      body.set('decision', decision);
      return fetch(`${app.url}/authorize`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookies }, body });
    };
    return { client, person, verifier, send };
  }

  test('a consent form sent again (resubmitted, or two submits at once) issues one code and one connection', async () => {
    const { client, person, verifier, send } = await consentPage('once');
    const grants = async () => (await app.pool.query('SELECT count(*)::int AS n FROM oauth_grants WHERE client_id = $1 AND user_id = (SELECT id FROM users WHERE email = $2)', [client.client_id, person.email])).rows[0].n as number;
    const before = await grants();
    const answers = [...(await Promise.all([send('approve'), send('approve')])), await send('approve')];
    const codes = answers.filter((res) => res.status === 302).map((res) => new URL(res.headers.get('location')!).searchParams.get('code'));
    assert.equal(codes.length, 1, answers.map((res) => res.status).join(' '));
    const again = answers.find((res) => res.status !== 302)!;
    assert.equal(again.status, 400);
    assert.match(await again.text(), /ya se respondió/);
    const issued = await token({ grant_type: 'authorization_code', code: codes[0]!, code_verifier: verifier });
    assert.equal(issued.status, 200, JSON.stringify(issued.body));
    assert.equal((await grants()) - before, 1, 'one connection');
  });

  test('one answer per authorization request whichever button: Cancelar then Autorizar (or the reverse) gives the client one answer, and the second is refused', async () => {
    const denied = await consentPage('deny-first');
    const no = await denied.send('deny');
    assert.equal(no.status, 302);
    assert.equal(new URL(no.headers.get('location')!).searchParams.get('error'), 'access_denied');
    for (const decision of ['approve', 'deny'] as const) {
      const again = await denied.send(decision);
      assert.equal(again.status, 400, `${decision} after a denial: ${again.headers.get('location')}`);
      assert.match(await again.text(), /ya se respondió/);
    }
    const approved = await consentPage('approve-first');
    const yes = await approved.send('approve');
    const code = new URL(yes.headers.get('location')!).searchParams.get('code');
    assert.ok(code, 'a code');
    const late = await approved.send('deny');
    assert.equal(late.status, 400, `a denial after the code: ${late.headers.get('location')}`);
    assert.match(await late.text(), /ya se respondió/);
    const issued = await token({ grant_type: 'authorization_code', code: code!, code_verifier: approved.verifier });
    assert.equal(issued.status, 200, 'the one answer stands');
  });

  test('redirect URIs are compared as written (a loopback one may change its port only); the registered query is kept as written when the code is added', async () => {
    const client = (await register()).body;
    const base = { response_type: 'code', client_id: client.client_id, redirect_uri: 'http://127.0.0.1:43210/callback', code_challenge: pkce().challenge, code_challenge_method: 'S256', state: 's' };
    const page = async (params: URLSearchParams) => {
      const res = await fetch(`${app.url}/authorize?${params}`, { redirect: 'manual' });
      return { status: res.status, location: res.headers.get('location'), text: await res.text() };
    };
    assert.equal((await page(new URLSearchParams({ ...base, redirect_uri: 'http://127.0.0.1:5555/callback' }))).status, 200, 'another port of the loopback');
    for (const redirect_uri of [
      'http://127.0.0.1:5555/a/../callback',
      'http://127.0.0.1:43210/./callback',
      'HTTP://127.0.0.1:5555/callback',
      'http://127.1:5555/callback',
      'http://2130706433:5555/callback',
      ' http://127.0.0.1:5555/callback',
      'http://127.0.0.1:5555\\callback',
      'http://localhost:5555/callback',
      // Five digits match the loopback's port pattern, but no port is past 65535 (this answered 500).
      'http://127.0.0.1:99999/callback',
      'http://127.0.0.1:65536/callback',
    ]) {
      const shown = await page(new URLSearchParams({ ...base, redirect_uri }));
      assert.deepEqual([shown.status, shown.location], [400, null], redirect_uri);
      assert.match(shown.text, /no está registrada/, redirect_uri);
    }
    const { redirect_uri: _none, ...without } = base;
    assert.match((await page(new URLSearchParams(without))).text, /Falta la dirección de regreso/);
    const twice = new URLSearchParams(base);
    twice.append('redirect_uri', base.redirect_uri);
    const repeated = await page(twice);
    assert.deepEqual([repeated.status, repeated.location], [400, null]);
    assert.match(repeated.text, /más de una vez/);
    // A repeated client_id is said to be repeated, not unknown.
    const twoClients = new URLSearchParams(base);
    twoClients.append('client_id', base.client_id);
    const shownTwice = await page(twoClients);
    assert.deepEqual([shownTwice.status, shownTwice.location], [400, null]);
    assert.match(shownTwice.text, /\(client_id\) aparece más de una vez/);
    // RFC 6749 §3.1.2: the query of the registered URI is retained as written, the code and state appended.
    const withQuery = 'https://app.example.com/cb?next=/home&flag&q=a%20b';
    const own = (await register(withQuery)).body;
    const location = await authorize(own.client_id, pkce().challenge, { redirect: withQuery });
    assert.ok(location.href.startsWith(`${withQuery}&code=`), location.href);
    assert.equal(location.searchParams.get('state'), 'xyz');
  });

  test('wsctl oauth grants lists a person’s connections and oauth revoke cuts one at once', async () => {
    const client = (await register()).body;
    const { verifier, challenge } = pkce();
    const code = (await authorize(client.client_id, challenge)).searchParams.get('code')!;
    const tokens = await token({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:43210/callback', client_id: client.client_id });
    const grants = await json(app, ['oauth', 'grants', '--user', tenant.ownerId]);
    const grant = grants.find((g: any) => g.client_id === client.client_id);
    assert.equal(grant.client_name, 'Cliente de prueba');
    assert.deepEqual(grant.scopes, ['read-customers']);
    assert.equal(grant.active, true);
    const perCompany = await json(app, ['oauth', 'grants', '--company', tenant.companyId]);
    assert.ok(perCompany.some((g: any) => g.id === grant.id), 'operators see the connections of a company');
    const revoked = await json(app, ['oauth', 'revoke', grant.id]);
    // The shape of a row of `oauth grants`, now revoked.
    assert.deepEqual(Object.keys(revoked).sort(), Object.keys(grant).sort());
    assert.deepEqual([revoked.client_name, revoked.active, typeof revoked.revoked_at], ['Cliente de prueba', false, 'string']);
    assert.equal((await mcp(tokens.body.access_token)).status, 401);
    const people = await wsctl(app, ['oauth', 'grants', '--user', tenant.ownerId]);
    assert.match(people.stdout.split('\n')[0]!, /^ID\s+CLIENT\s+COMPANY\s+SCOPES\s+STATE$/, 'a header row');
    assert.match(people.stdout, new RegExp(`${grant.id}.*revoked`));
  });

  test('a person lists and revokes their own connections under their user session: tokens stop at once, no one else\'s is reachable', async () => {
    const client = (await register()).body;
    const { verifier, challenge } = pkce();
    const code = (await authorize(client.client_id, challenge)).searchParams.get('code')!;
    const tokens = await token({ grant_type: 'authorization_code', code, code_verifier: verifier, client_id: client.client_id });
    assert.equal((await mcp(tokens.body.access_token)).status, 200);
    const session = async (who: string, password: string) => {
      const res = await request(app.baseUrl, 'POST', '/user/sessions', { headers: { 'x-forwarded-for': `192.0.2.${(++addresses % 250) + 1}` }, body: { data: { email: who, password } } });
      assert.equal(res.status, 201, res.text);
      return { authorization: `Bearer ${res.body.data.token}` };
    };
    const mine = await session(email, PASSWORD);
    const listed = await request(app.baseUrl, 'GET', '/user/oauth-grants', { headers: mine });
    assert.equal(listed.status, 200, listed.text);
    const grant = listed.body.data.find((g: any) => g.client_id === client.client_id);
    assert.deepEqual({ ...grant, id: undefined, created_at: undefined }, {
      id: undefined, object: 'oauth_grant', client_id: client.client_id, client_name: 'Cliente de prueba', company_id: tenant.companyId,
      scopes: ['read-customers'], active: true, created_at: undefined, revoked_at: null,
    });
    assert.equal(listed.body.meta.limit, 25);
    // The OpenAPI document declares what these routes can answer: no origin allow-list, no permission, so no 403.
    const doc = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as any;
    assert.equal(doc.paths['/user/oauth-grants'].get.responses['403'], undefined);
    assert.ok(doc.paths['/user/oauth-grants'].get.responses['401']);
    assert.deepEqual((await request(app.baseUrl, 'GET', `/user/oauth-grants/${grant.id}`, { headers: mine })).body.data, grant);
    // Another member of the company, with no permission at all: sees none of it, cannot revoke it.
    const member = randomBytes(12).toString('hex');
    await app.pool.query(`INSERT INTO users (id, email) VALUES ($1, $2)`, [member, `${member}@oauth.example`]);
    await addMembership(app.pool, member, tenant.companyId, false);
    await setPassword(app.pool, member, PASSWORD);
    const theirs = await session(`${member}@oauth.example`, PASSWORD);
    assert.deepEqual((await request(app.baseUrl, 'GET', '/user/oauth-grants', { headers: theirs })).body.data, []);
    assert.equal((await request(app.baseUrl, 'GET', `/user/oauth-grants/${grant.id}`, { headers: theirs })).status, 404);
    const foreign = await request(app.baseUrl, 'DELETE', `/user/oauth-grants/${grant.id}`, { headers: theirs });
    assert.equal(foreign.status, 404);
    assert.equal(foreign.body.error, 'not_found');
    assert.equal((await mcp(tokens.body.access_token)).status, 200, 'untouched');
    // An API key is not a session; a malformed id is the contract's 400.
    assert.equal((await request(app.baseUrl, 'GET', '/user/oauth-grants', { headers: { authorization: `Bearer ${tenant.key}` } })).status, 401);
    assert.equal((await request(app.baseUrl, 'DELETE', '/user/oauth-grants/nope', { headers: mine })).body.error, 'invalid_id');
    // Revoked by its person: the access token stops, the refresh token renews nothing; again is the same 204.
    assert.equal((await request(app.baseUrl, 'DELETE', `/user/oauth-grants/${grant.id}`, { headers: mine })).status, 204);
    assert.equal((await mcp(tokens.body.access_token)).status, 401);
    assert.equal((await token({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token })).body.error, 'invalid_grant');
    assert.equal((await request(app.baseUrl, 'DELETE', `/user/oauth-grants/${grant.id}`, { headers: mine })).status, 204);
    const after = (await request(app.baseUrl, 'GET', '/user/oauth-grants', { headers: mine })).body.data.find((g: any) => g.id === grant.id);
    assert.equal(after.active, false);
    assert.match(after.revoked_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  test('a connection whose code was never exchanged is listed as expired once the code is', async () => {
    const client = (await register()).body;
    const { challenge } = pkce();
    await authorize(client.client_id, challenge); // approved, then abandoned: the code is never exchanged
    const listed = async () => (await json(app, ['oauth', 'grants', '--user', tenant.ownerId])).find((g: any) => g.client_id === client.client_id);
    const grant = await listed();
    assert.deepEqual([grant.active, grant.revoked_at], [true, null], 'live while its code can still be exchanged');
    await app.pool.query(`UPDATE oauth_codes SET expires_at = now() - interval '1 second' WHERE grant_id = $1`, [grant.id]);
    assert.deepEqual([(await listed()).active, (await listed()).revoked_at], [false, null]);
    const text = await wsctl(app, ['oauth', 'grants', '--user', tenant.ownerId]);
    assert.match(text.stdout, new RegExp(`^${grant.id} .*expired$`, 'm'));
  });

  test('a code whose grant was revoked before the exchange issues nothing: 400 invalid_grant', async () => {
    const client = (await register()).body;
    const { verifier, challenge } = pkce();
    const code = (await authorize(client.client_id, challenge)).searchParams.get('code')!;
    const grant = (await json(app, ['oauth', 'grants', '--user', tenant.ownerId])).find((g: any) => g.client_id === client.client_id);
    await json(app, ['oauth', 'revoke', grant.id]);
    const exchanged = await token({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:43210/callback', client_id: client.client_id });
    assert.deepEqual([exchanged.status, exchanged.body.error, exchanged.body.access_token], [400, 'invalid_grant', undefined]);
    const issued = await app.pool.query('SELECT count(*)::int AS n FROM oauth_tokens WHERE grant_id = $1', [grant.id]);
    assert.equal(issued.rows[0].n, 0);
  });

  test('the official MCP SDK client runs its own OAuth flow: discovery from the 401, registration, PKCE, tokens, tool calls', async () => {
    const redirect = 'http://127.0.0.1:43211/callback';
    let info: any;
    let saved: any;
    let verifier = '';
    let authorizationUrl: URL | null = null;
    const provider: OAuthClientProvider = {
      get redirectUrl() {
        return redirect;
      },
      get clientMetadata() {
        return { client_name: 'SDK de prueba', redirect_uris: [redirect], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
      },
      clientInformation: () => info,
      saveClientInformation: (value) => void (info = value),
      tokens: () => saved,
      saveTokens: (value) => void (saved = value),
      redirectToAuthorization: (url) => void (authorizationUrl = url),
      saveCodeVerifier: (value) => void (verifier = value),
      codeVerifier: () => verifier,
    };
    const mcpUrl = new URL(`${app.url}/api/mcp/v1`);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
    const sdk = new Client({ name: 'sdk-oauth', version: '1.0.0' });
    await assert.rejects(sdk.connect(first), (error) => error instanceof UnauthorizedError);
    assert.ok(authorizationUrl, 'the SDK found the authorization server from the 401 and sent the person to /authorize');
    const url = authorizationUrl as unknown as URL;
    assert.equal(url.origin + url.pathname, `${app.config.siteUrl}/authorize`);
    assert.equal(url.searchParams.get('code_challenge_method'), 'S256');
    // The person signs in and approves in the browser (the pages, driven over HTTP).
    const location = await authorize(url.searchParams.get('client_id')!, url.searchParams.get('code_challenge')!, {
      redirect,
      scopes: (url.searchParams.get('scope') ?? 'read-customers').split(' '),
      pick: ['read-customers', 'read-company'],
    });
    await first.finishAuth(location.searchParams.get('code')!);
    assert.match(saved.access_token, /^service_oat_/);
    const client = new Client({ name: 'sdk-oauth', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['list_customers', 'get_company']);
    const company = await client.callTool({ name: 'get_company', arguments: {} });
    assert.equal((company.structuredContent as any).company.id, tenant.companyId);
    await client.close();
  });

  test('a standard client library (oauth4webapi) completes discovery, registration, the code grant with PKCE and a refresh', async () => {
    const insecure = { [oauth.allowInsecureRequests]: true }; // the test server is plain http on loopback
    const issuer = new URL(app.config.siteUrl);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }));
    const redirect = 'http://127.0.0.1:43212/callback';
    const registered = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(as, { redirect_uris: [redirect], client_name: 'oauth4webapi', token_endpoint_auth_method: 'none' }, insecure),
    );
    const client: oauth.Client = { client_id: registered.client_id, token_endpoint_auth_method: 'none' };
    // RFC 9728 discovery, checked strictly (§3.3: `resource` is the identifier the address was formed
    // from), from the MCP URL and from the site root the contract gives; the root's identifier is a
    // resource tokens are issued for (RFC 8707), as the MCP server's is.
    const mcpUrl = new URL(`${app.config.siteUrl}/api/mcp/v1`);
    const atMcp = await oauth.processResourceDiscoveryResponse(mcpUrl, await oauth.resourceDiscoveryRequest(mcpUrl, insecure));
    assert.equal(atMcp.resource, mcpUrl.href);
    const atRoot = await oauth.processResourceDiscoveryResponse(issuer, await oauth.resourceDiscoveryRequest(issuer, insecure));
    assert.equal(atRoot.resource, issuer.href);
    assert.deepEqual([atRoot.authorization_servers, atRoot.scopes_supported], [atMcp.authorization_servers, atMcp.scopes_supported]);
    const verifier = oauth.generateRandomCodeVerifier();
    const challenge = await oauth.calculatePKCECodeChallenge(verifier);
    const location = await authorize(client.client_id, challenge, { redirect, resource: atRoot.resource });
    const params = oauth.validateAuthResponse(as, client, location, 'xyz');
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirect, verifier, { ...insecure, additionalParameters: { resource: atRoot.resource } }),
    );
    assert.match(tokens.access_token, /^service_oat_/);
    assert.equal((await mcp(tokens.access_token)).status, 200);
    const refreshed = await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure));
    assert.notEqual(refreshed.refresh_token, tokens.refresh_token);
    assert.equal((await mcp(refreshed.access_token)).status, 200);
  });

  test('an expired access token is refused; the consent page shows a company without MCP as unavailable', async () => {
    const client = (await register()).body;
    const { verifier, challenge } = pkce();
    const code = (await authorize(client.client_id, challenge)).searchParams.get('code')!;
    const tokens = await token({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: 'http://127.0.0.1:43210/callback', client_id: client.client_id });
    assert.equal((await mcp(tokens.body.access_token)).status, 200);
    await app.pool.query(`UPDATE oauth_tokens SET expires_at = now() - interval '1 second' WHERE kind = 'access'`);
    assert.equal((await mcp(tokens.body.access_token)).status, 401, 'an access token lives one hour');
    const refreshed = await token({ grant_type: 'refresh_token', refresh_token: tokens.body.refresh_token });
    assert.equal((await mcp(refreshed.body.access_token)).status, 200, 'the refresh token gets a new one');

    const free = await seedTenant(app.pool, { plan: 'free' });
    await app.pool.query('INSERT INTO memberships (company_id, user_id) VALUES ($1, $2)', [free.companyId, tenant.ownerId]);
    const params = new URLSearchParams({ response_type: 'code', client_id: client.client_id, redirect_uri: 'http://127.0.0.1:43210/callback', code_challenge: challenge, code_challenge_method: 'S256', state: 's' });
    const first = await fetch(`${app.url}/authorize?${params}`);
    const html = await first.text();
    const signIn = await fetch(`${app.url}/authorize`, {
      method: 'POST',
      headers: signInHeaders(cookieOf(first)),
      body: new URLSearchParams({ ...Object.fromEntries(params), step: 'sign-in', csrf: hiddenCsrf(html), email, password: PASSWORD }),
    });
    const consent = await signIn.text();
    assert.match(consent, new RegExp(`value="${free.companyId}" disabled> <bdi>[^<]*</bdi> \\(su plan no incluye MCP\\)`));
  });
});
