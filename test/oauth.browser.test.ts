// The OAuth sign-in and consent pages in a real browser (headless Chromium
// from Debian's `chromium` package, driven by playwright-core): a person signs
// in, picks a subset of the scopes with the keyboard and the mouse, and the
// client gets a code that grants exactly that subset. Skipped, saying why,
// when no Chromium is installed (.ci/run installs it).
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { setPassword } from '../api/admin/users.ts';
import { insertClient } from '../api/oauth/store.ts';
import { seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium)`;

describe('OAuth pages in a browser', { skip }, () => {
  let app: TestApp;
  let tenant: Tenant;
  let browser: Browser;
  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { plan: 'starter' });
    await setPassword(app.pool, tenant.ownerId, 'contraseña-de-navegador');
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });
  after(async () => {
    await browser?.close();
    await app?.close();
  });

  test('sign in, approve a subset of the scopes, and the code grants exactly that subset', async () => {
    const redirect = 'http://127.0.0.1:43299/callback';
    const registered = (await (await fetch(`${app.url}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [redirect], client_name: 'Navegador' }) })).json()) as any;
    const verifier = randomBytes(32).toString('base64url');
    const params = new URLSearchParams({
      response_type: 'code', client_id: registered.client_id, redirect_uri: redirect, state: 'nav',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256', scope: 'read-customers read-company',
    });
    const email = (await app.pool.query('SELECT email FROM users WHERE id = $1', [tenant.ownerId])).rows[0].email;
    const page = await browser.newPage();
    let callback: URL | null = null;
    await page.route(`${redirect}**`, async (route) => {
      callback = new URL(route.request().url());
      await route.fulfill({ status: 200, contentType: 'text/html', body: '<p>ok</p>' });
    });
    await page.goto(`${app.url}/authorize?${params}`);
    await page.getByLabel('Correo').fill(email);
    await page.getByLabel('Contraseña').fill('mala');
    await page.getByRole('button', { name: 'Continuar' }).click();
    assert.match(await page.getByRole('alert').innerText(), /incorrectos/);
    await page.getByLabel('Correo').fill(email);
    await page.getByLabel('Contraseña').fill('contraseña-de-navegador');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Autorizar acceso' }).waitFor();
    assert.ok(await page.getByLabel('read-customers').isChecked());
    await page.getByLabel('read-company').uncheck();
    await page.getByRole('button', { name: 'Autorizar' }).click();
    await page.waitForURL(`${redirect}**`);
    const url = callback as unknown as URL;
    assert.equal(url.searchParams.get('state'), 'nav');
    const res = await fetch(`${app.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: url.searchParams.get('code')!, code_verifier: verifier, redirect_uri: redirect, client_id: registered.client_id }),
    });
    const tokens = (await res.json()) as any;
    assert.equal(tokens.scope, 'read-customers', 'only the scope left ticked is granted');
  });

  test('an app redirect URI (cursor://): the approval is not blocked by the page\'s CSP and the browser is sent back with a code', async () => {
    // Chromium checks form-action against where the form's answer redirects, and `*` covers network schemes only.
    const redirect = 'cursor://anysphere.cursor-retrieval/oauth/callback';
    const registered = await insertClient(app.pool, 'Cursor', [redirect]);
    const params = new URLSearchParams({
      response_type: 'code', client_id: registered.id, redirect_uri: redirect, state: 'app',
      code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'), code_challenge_method: 'S256', scope: 'read-customers',
    });
    const email = (await app.pool.query('SELECT email FROM users WHERE id = $1', [tenant.ownerId])).rows[0].email;
    const page = await browser.newPage();
    await page.goto(`${app.url}/authorize?${params}`);
    await page.getByLabel('Correo').fill(email);
    await page.getByLabel('Contraseña').fill('contraseña-de-navegador');
    await page.getByRole('button', { name: 'Continuar' }).click();
    await page.getByRole('heading', { name: 'Autorizar acceso' }).waitFor();
    assert.match(await page.locator('main').innerText(), /cursor:\/\/anysphere\.cursor-retrieval/, 'the page says where the person will be sent');
    // Blocked by CSP, the submission is aborted and no answer ever arrives (this times out).
    const answered = page.waitForResponse((res) => res.url().startsWith(`${app.url}/authorize`) && res.request().method() === 'POST', { timeout: 15_000 });
    await page.getByRole('button', { name: 'Autorizar' }).click();
    const approval = await answered;
    assert.equal(approval.status(), 302);
    const location = new URL((await approval.allHeaders()).location);
    assert.equal(`${location.protocol}//${location.host}${location.pathname}`, redirect);
    assert.ok(location.searchParams.get('code'));
    await page.close();
  });
});
