// wsctl end to end: the real CLI (a child process, as an operator runs it)
// against the real app's /admin/trpc, and the effects checked through the
// public API. DESIGN.md, CLI contract: --json prints exactly one JSON document
// on stdout; errors are one line on stderr and a non-zero exit.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { issueKey } from '../api/admin/keys.ts';
import { ALL_SCOPES } from '../api/auth/scopes.ts';
import { ADMIN_TOKEN, client, startTestApp, type TestApp } from './helpers/app.ts';
import { assertOneLineError, json, wsctl } from './helpers/cli.ts';
import { visible } from '../cli/output.ts';
import { adminMutation } from './helpers/admin.ts';
import { sampleFormFile } from './helpers/forms.ts';

describe('wsctl', () => {
  let app: TestApp;
  let dir: string;
  before(async () => {
    app = await startTestApp();
    dir = await mkdtemp(path.join(tmpdir(), 'wsctl-'));
  });
  after(async () => {
    await app.close();
    await rm(dir, { recursive: true, force: true });
  });

  test('companies of one name created at once get slugs of their own; forms of one slug too (no unique-violation 500)', async () => {
    const name = `Panadería ${Date.now()}`;
    const made = await Promise.all([1, 2, 3, 4].map(() => json(app, ['company', 'create', '--name', name])));
    const slugs = made.map((m) => m.company.slug);
    assert.equal(new Set(slugs).size, 4, slugs.join(' '));
    const companyId = made[0].company.id;
    const form = (slug: string) => adminMutation(app.url, 'form.create', { companyId, form: sampleFormFile({ slug }) });
    const answers = await Promise.all([1, 2, 3].map(() => form('mismo-slug')));
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 409, 409], JSON.stringify(answers.map((a) => a.body)).slice(0, 400));
  });

  test('company create: a tenant holding the default owner email (owner@<slug>.example) neither blocks the company nor is offered it', async () => {
    const tenantCompany = await json(app, ['company', 'create', '--name', 'Inquilino Ajeno']);
    const key = await json(app, ['key', 'create', '--company', tenantCompany.company.id, '--scopes', 'create-users']);
    // Any company's key can add a member with any email: this tenant takes the next company's default.
    const squatted = await client(app.baseUrl, key.secret).post('/users', { data: { email: 'owner@gamma-nueva.example', first_name: 'Mallory' } });
    assert.equal(squatted.status, 201, squatted.text);
    const created = await json(app, ['company', 'create', '--name', 'Gamma Nueva']);
    assert.equal(created.company.slug, 'gamma-nueva');
    assert.equal(created.owner.email, 'owner-2@gamma-nueva.example', 'a default no user has');
    const { rows } = await app.pool.query('SELECT company_id, is_owner FROM memberships WHERE user_id = $1', [created.owner.id]);
    assert.deepEqual(rows, [{ company_id: created.company.id, is_owner: true }], 'the new company belongs to its own new owner alone');
  });

  test('company create/show/update/list, with the owner made from the default email', async () => {
    const created = await json(app, ['company', 'create', '--name', 'Taller Ruiz', '--plan', 'starter', '--max-team-size', '3']);
    assert.equal(created.company.name, 'Taller Ruiz');
    assert.equal(created.company.plan, 'starter');
    assert.equal(created.company.team.max_team_size, 3);
    assert.equal(created.owner.email, `owner@${created.company.slug}.example`);

    const id = created.company.id;
    assert.deepEqual(await json(app, ['company', 'show', id]), created.company);

    const updated = await json(app, ['company', 'update', id, '--modules', 'invoicing,invoicing', '--response-cache', 'on', '--storage-quota-mb', '50']);
    assert.deepEqual(updated.enabled_modules, ['invoicing'], 'a module named twice is enabled once');
    // --mcp-quota sets a number and `none` clears it (commander once turned the cleared value into '').
    assert.equal((await json(app, ['company', 'update', id, '--plan', 'enterprise', '--mcp-quota', '900'])).mcp_quota, 900);
    // The quota is the enterprise plan's: without it enterprise would refuse every call, and on another plan it would never apply.
    assertOneLineError(await wsctl(app, ['company', 'update', id, '--mcp-quota', 'none']), /enterprise plan needs/);
    assertOneLineError(await wsctl(app, ['company', 'create', '--name', 'Sin cuota', '--plan', 'enterprise']), /enterprise plan needs/);
    assertOneLineError(await wsctl(app, ['company', 'create', '--name', 'Gratis', '--mcp-quota', '5']), /only the enterprise plan/);
    // One line, as PUT /company takes it: the name is the sender's name of the company's emails.
    assertOneLineError(await wsctl(app, ['company', 'create', '--name', 'Dos\nLíneas']), /name.*one line/);
    assertOneLineError(await wsctl(app, ['company', 'update', id, '--name', 'Taller\u2028Ruiz']), /name.*one line/);
    assert.equal((await json(app, ['company', 'show', id])).mcp_quota, 900, 'a refused update changed nothing');
    const starter = await json(app, ['company', 'update', id, '--plan', 'starter', '--mcp-quota', 'none']);
    assert.deepEqual([starter.plan, starter.mcp_quota], ['starter', null]);
    // A row from before the rule (a quota on starter) still takes updates that leave plan and quota alone.
    await app.pool.query('UPDATE companies SET mcp_quota = 100 WHERE id = $1', [id]);
    assert.equal((await json(app, ['company', 'update', id, '--storage-quota-mb', '60'])).storage_quota_mb, 60);
    assert.equal(updated.response_cache, true);
    assert.equal(updated.storage_quota_mb, 50);
    // The human form shows what was changed, the time zone included.
    const zoned = await wsctl(app, ['company', 'update', id, '--timezone', 'America/Tijuana']);
    assert.equal(zoned.code, 0, zoned.stderr);
    assert.match(zoned.stdout, /^time zone:\s+America\/Tijuana$/m);
    // A name Intl reads and PostgreSQL does not know (money reads local days with AT TIME ZONE) is refused.
    assertOneLineError(await wsctl(app, ['company', 'update', id, '--timezone', 'US/Pacific-New']), /time zone/);
    assert.equal((await json(app, ['company', 'show', id])).timezone, 'America/Tijuana');

    // --owner-email on update changes the owner's sign-in email; another user's email is a conflict.
    // Stored lower-cased, as company create and the API store every email.
    await json(app, ['company', 'update', id, '--owner-email', 'Duena@Taller-Ruiz.example']);
    const { rows } = await app.pool.query('SELECT email FROM users WHERE id = $1', [created.owner.id]);
    assert.equal(rows[0].email, 'duena@taller-ruiz.example');
    const other = await json(app, ['company', 'create', '--name', 'Otra', '--owner-email', 'ocupado@otra.example']);
    assertOneLineError(await wsctl(app, ['company', 'update', other.company.id, '--owner-email', 'duena@taller-ruiz.example']), /already exists/);
    // Creating a company with a taken email is refused too (it used to make that person its owner in silence), and creates nothing.
    const before = (await json(app, ['company', 'list'])).length;
    // The error says whose the email is, so the operator sees what add-membership would hand the company to.
    assertOneLineError(await wsctl(app, ['company', 'create', '--name', 'Tercera', '--owner-email', 'DUENA@taller-ruiz.example']), new RegExp(`already exists \\(user ${created.owner.id}, member of: "Taller Ruiz" ${id}\\).*Only if.*add-membership`));
    assert.equal((await json(app, ['company', 'list'])).length, before);

    const listed = await json(app, ['company', 'list']);
    assert.ok(Array.isArray(listed));
    assert.ok(listed.some((c: any) => c.id === id));

    // Without --json: a table for people, with a header row.
    const table = await wsctl(app, ['company', 'list']);
    assert.equal(table.code, 0);
    assert.match(table.stdout, /^ID\s+NAME/);
    assert.match(table.stdout, /Taller Ruiz/);
  });

  test('key create prints the secret once; the key works on the API; key list hides it; key revoke stops it', async () => {
    const { company } = await json(app, ['company', 'create', '--name', 'Llaves SA']);
    const key = await json(app, ['key', 'create', '--company', company.id, '--scopes', 'read-customers,create-customers', '--name', 'tienda']);
    assert.match(key.secret, /^service_sk_/);
    assert.deepEqual([...key.scopes].sort(), ['create-customers', 'read-customers']);

    const api = client(app.baseUrl, key.secret);
    assert.equal((await api.post('/customers', { data: { name: 'Ana' } })).status, 201);
    const forbidden = await api.get('/leads');
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.body.error, 'insufficient_scope');

    const keys = await json(app, ['key', 'list', '--company', company.id]);
    assert.equal(keys.length, 1);
    assert.equal(keys[0].id, key.id);
    assert.equal(keys[0].secret, undefined);
    assert.ok(!JSON.stringify(keys).includes(key.secret));

    const revoked = await json(app, ['key', 'revoke', key.id]);
    assert.equal(revoked.id, key.id);
    assert.ok(revoked.revoked_at);
    const refused = await api.get('/customers');
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error, 'invalid_key');
    // A host named twice (in any letter case) is stored once.
    const fenced = await json(app, ['key', 'create', '--company', company.id, '--scopes', 'read-customers', '--origins', 'shop.example,SHOP.Example,*.shop.example']);
    assert.deepEqual(fenced.allowed_origins, ['shop.example', '*.shop.example']);
  });

  test('automation create from a file shows up in the API; form create/update from a file', async () => {
    const { company } = await json(app, ['company', 'create', '--name', 'Auto SA']); // automations are core
    const key = await json(app, ['key', 'create', '--company', company.id, '--scopes', 'all']);
    const file = path.join(dir, 'automation.json');
    await writeFile(file, JSON.stringify({ name: 'Bienvenida', description: '   ', trigger_type: 'lead.created', steps: [] }));
    const automation = await json(app, ['automation', 'create', '--company', company.id, '--file', file]);
    const read = await client(app.baseUrl, key.secret).get(`/automations/${automation.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.data.name, 'Bienvenida');
    assert.equal(read.body.data.description, null, 'a blank description is no description, as over the API');
    assert.equal(read.body.data.active, false, 'off unless the file says otherwise');
    // The example the docs point at is a file wsctl takes as it is.
    const example = await json(app, ['automation', 'create', '--company', company.id, '--file', 'examples/automation.json']);
    assert.deepEqual([example.name, example.active, example.trigger_type, example.steps.length], ['Bienvenida a prospectos', true, 'lead.created', 2]);
    // A file an editor saved with a byte-order mark is read; one that is not UTF-8 is refused, not stored as U+FFFD.
    const bom = path.join(dir, 'bom.json');
    await writeFile(bom, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify({ name: 'Con BOM', trigger_type: 'lead.created', steps: [] }))]));
    assert.equal((await json(app, ['automation', 'create', '--company', company.id, '--file', bom])).name, 'Con BOM');
    const latin1 = path.join(dir, 'latin1.json');
    await writeFile(latin1, Buffer.concat([Buffer.from('{"name":"A'), Buffer.from([0xf1]), Buffer.from('o","trigger_type":"lead.created","steps":[]}')]));
    assertOneLineError(await wsctl(app, ['automation', 'create', '--company', company.id, '--file', latin1]), /latin1\.json is not valid UTF-8 text/);

    const formFile = path.join(dir, 'form.json');
    const definition = { name: 'Contacto', title: 'Contáctanos', fields: [{ key: 'email', field_type: 'email', label: 'Correo', required: true }] };
    await writeFile(formFile, JSON.stringify(definition));
    const form = await json(app, ['form', 'create', '--company', company.id, '--file', formFile]);
    await writeFile(formFile, JSON.stringify({ ...definition, title: 'Escríbenos' }));
    const replaced = await json(app, ['form', 'update', form.id, '--file', formFile]);
    assert.equal(replaced.id, form.id);
    const publicRead = await client(app.baseUrl, key.secret).get(`/forms/${form.id}`);
    assert.equal(publicRead.status, 200);
    assert.equal(publicRead.body.data.title, 'Escríbenos');
    // wsctl's own --json read (with company_id and post_actions) goes back as a form file as it is.
    await writeFile(formFile, JSON.stringify({ ...replaced, title: 'Vuelta' }));
    assert.equal((await json(app, ['form', 'update', form.id, '--file', formFile])).title, 'Vuelta');

    // Text no column can hold is the input's fault, said without PostgreSQL's words (no SQL reaches a client).
    await writeFile(file, '{"name":"a\\u0000b","trigger_type":"lead.created","steps":[]}');
    const nul = await wsctl(app, ['automation', 'create', '--company', company.id, '--file', file]);
    assert.notEqual(nul.code, 0);
    assert.match(nul.stderr, /U\+0000/);
    assert.doesNotMatch(nul.stderr, /byte sequence|encoding|UTF8|escape sequence/);
    // A lone UTF-16 surrogate, in the steps (was a 500 from the jsonb insert) or in the name (was stored as U+FFFD).
    // The field is named once, after one `invalid input:` ("invalid input: Invalid input: ..." before).
    for (const [text, field] of [['{"name":"x","trigger_type":"lead.created","steps":[{"type":"send_email","a":"\\ud800"}]}', 'automation.steps.0.a'], ['{"name":"x\\ud800","trigger_type":"lead.created","steps":[]}', 'automation.name']]) {
      await writeFile(file, text);
      const lone = await wsctl(app, ['automation', 'create', '--company', company.id, '--file', file]);
      assertOneLineError(lone, new RegExp(`^error: invalid input: ${field.replace(/\./g, '\\.')}: holds text that cannot be stored`));
    }
    // A step is an object naming its type: anything else is refused naming the step, and nothing is created.
    for (const [steps, field] of [['[1,"a",null]', 'automation.steps.0'], ['[{"type":"send_email"},{"template":"x"}]', 'automation.steps.1.type'], ['[{"type":"  "}]', 'automation.steps.0.type'], ['{"type":"send_email"}', 'automation.steps']]) {
      await writeFile(file, `{"name":"Pasos raros","trigger_type":"lead.created","steps":${steps}}`);
      const refused = await wsctl(app, ['automation', 'create', '--company', company.id, '--file', file]);
      assertOneLineError(refused, new RegExp(`^error: invalid input: ${field.replace(/\./g, '\\.')}: `));
    }
    const names = (await client(app.baseUrl, key.secret).get('/automations?q=pasos')).body.data;
    assert.deepEqual(names, [], 'no automation was created from a refused file');
  });

  test('a reader that stops early (| head -1) ends wsctl quietly: exit 0, no stack trace on stderr', async () => {
    const { company } = await json(app, ['company', 'create', '--name', 'Muchas Llaves SA']);
    // About 1 MB of output, more than the pipe (a socket pair) holds, so the CLI is still writing when the reader goes away.
    for (let i = 0; i < 400; i++) await issueKey(app.pool, { companyId: company.id, scopes: [...ALL_SCOPES], name: `llave ${i}` });
    const child = spawn(process.execPath, [fileURLToPath(new URL('../cli/wsctl.ts', import.meta.url)), 'key', 'list', '--company', company.id, '--json'], {
      env: { PATH: process.env.PATH ?? '', ADMIN_URL: app.url, ADMIN_TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
    assert.equal(stderr, '');
    assert.equal(code, 0);
  });

  test('a list naming a company or person that does not exist is not found (exit 1), not an empty list', async () => {
    const nobody = '0'.repeat(24);
    const { owner } = await json(app, ['company', 'create', '--name', 'Existe SA']);
    for (const args of [
      ['key', 'list', '--company', nobody],
      ['webhook', 'list', '--company', nobody],
      ['mcp', 'activity', '--company', nobody],
      ['oauth', 'grants', '--company', nobody],
      ['oauth', 'grants', '--user', nobody],
      ['period', 'close', '--company', nobody, '--year', '2026', '--month', '1'],
      ['user', 'set-permissions', owner.id, '--company', nobody, '--permissions', ''],
    ]) {
      assertOneLineError(await wsctl(app, args), new RegExp(`(Company|User) ${nobody} not found`));
    }
  });

  test('an unknown module or permission is named before any request', async () => {
    assertOneLineError(await wsctl(app, ['company', 'create', '--name', 'Modulos SA', '--modules', 'invoicing,foo']), /unknown "foo": expected invoicing/);
    const { company, owner } = await json(app, ['company', 'create', '--name', 'Permisos SA']);
    assertOneLineError(await wsctl(app, ['user', 'set-permissions', owner.id, '--company', company.id, '--permissions', 'manage-developers,root']), /unknown "root": expected manage-developers/);
    assert.deepEqual((await json(app, ['user', 'set-permissions', owner.id, '--company', company.id, '--permissions', ''])).permissions, []);
  });

  test('company tax-profile says why a certificate or key file cannot be read', async () => {
    const { company } = await json(app, ['company', 'create', '--name', 'Sellos SA']);
    const args = (cer: string) => ['company', 'tax-profile', company.id, '--rfc', 'EKU9003173C9', '--legal-name', 'X', '--tax-regime', '601', '--zip', '42501', '--cer', cer, '--key', cer, '--key-password', 'p'];
    assertOneLineError(await wsctl(app, args('/nonexistent.cer')), /cannot read --cer \/nonexistent\.cer: no such file/);
    assertOneLineError(await wsctl(app, args(tmpdir())), /cannot read --cer .*: EISDIR/);
  });

  test('key create --name "" is refused, naming the field (an empty name would list as nothing)', async () => {
    const { company } = await json(app, ['company', 'create', '--name', 'Nombres SA']);
    const run = await wsctl(app, ['key', 'create', '--company', company.id, '--scopes', 'all', '--name', '  ']);
    assertOneLineError(run, /name: must not be empty/);
    assert.deepEqual(await json(app, ['key', 'list', '--company', company.id]), []);
  });

  test('a period year or month that is not plain digits is refused before any request (0x2 is not February)', async () => {
    const { company } = await json(app, ['company', 'create', '--name', 'Periodos SA']);
    for (const [year, month] of [['2026', '0x2'], ['1e3', '2'], ['2026', ''], ['2026', '2.0']]) {
      assertOneLineError(await wsctl(app, ['period', 'close', '--company', company.id, '--year', year, '--month', month]), /expected a whole number/);
    }
    for (const month of ['0', '13']) {
      assertOneLineError(await wsctl(app, ['period', 'close', '--company', company.id, '--year', '2026', '--month', month]), /expected a whole number from 1 to 12\./);
    }
    // The year's bounds are the service's, said before any request.
    for (const year of ['1800', '99999']) {
      assertOneLineError(await wsctl(app, ['period', 'close', '--company', company.id, '--year', year, '--month', '1']), /expected a whole number from 1900 to 9999\./);
    }
    const closed = await json(app, ['period', 'close', '--company', company.id, '--year', '2026', '--month', '2']);
    assert.deepEqual([closed.year, closed.month], [2026, 2]);
  });

  test('user set-password answers with the user, never the password', async () => {
    const { owner } = await json(app, ['company', 'create', '--name', 'Claves SA']);
    const user = await json(app, ['user', 'set-password', owner.id, '--password', 'correct horse battery']);
    assert.equal(user.id, owner.id);
    assert.ok(!JSON.stringify(user).includes('correct horse'));
    // Ownership is per company, and none is in view here: not shown rather than shown wrong.
    assert.equal('is_owner' in user, false);
  });

  test('direction overrides and isolates print as escapes too (an OAuth client names itself): the rest of the row keeps its order', () => {
    assert.equal(visible('App\u202eevil\u2066x\u2069'), 'App\\u202eevil\\u2066x\\u2069');
    assert.equal(visible('ok\nline\u202e', true), 'ok\nline\\u202e', 'lines kept where asked, overrides still escaped');
  });

  test('text a tenant chose never drives the operator\'s terminal: control characters print as visible escapes, one row per record', async () => {
    const { company } = await json(app, ['company', 'create', '--name', 'Terminal SA']);
    const key = await json(app, ['key', 'create', '--company', company.id, '--scopes', 'all']);
    const hostile = 'Acme\u001b[2J\u001b[31mPWNED\r\nfake row\u0007\u009b';
    // Names are one line since (PUT /company refuses this one): one stored before, as an operator's tool meets it.
    assert.equal((await client(app.baseUrl, key.secret).put('/company', { data: { name: hostile } })).status, 422);
    await app.pool.query('UPDATE companies SET name = $2 WHERE id = $1', [company.id, hostile]);
    for (const args of [['company', 'list'], ['company', 'show', company.id]]) {
      const run = await wsctl(app, args);
      assert.equal(run.code, 0, run.stderr);
      assert.doesNotMatch(run.stdout, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/, `${args.join(' ')}: no control character reaches the terminal`);
      assert.ok(run.stdout.includes('Acme\\u001b[2J\\u001b[31mPWNED\\u000d\\u000afake row\\u0007\\u009b'), run.stdout);
    }
    const listed = (await wsctl(app, ['company', 'list'])).stdout.split('\n').filter((line) => line.includes('PWNED'));
    assert.equal(listed.length, 1, 'the name stays on its own row');
    // --json carries the name as it is, JSON-escaped.
    assert.equal((await json(app, ['company', 'show', company.id])).name, hostile);

    // An MCP tool name any key holder sends is printed by `mcp activity` on its own row.
    await json(app, ['company', 'update', company.id, '--plan', 'starter']);
    const called = await fetch(`${app.url}/api/mcp/v1`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${key.secret}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'evil\u001b[2J\nforged row', arguments: {} } }),
    });
    assert.equal(called.status, 200);
    const activity = await wsctl(app, ['mcp', 'activity', '--company', company.id]);
    assert.equal(activity.code, 0, activity.stderr);
    assert.doesNotMatch(activity.stdout, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
    assert.ok(activity.stdout.split('\n').some((line) => line.includes('evil\\u001b[2J\\u000aforged row') && line.includes('-32002')), activity.stdout);
  });

  test('errors are one line on stderr with a non-zero exit, never on stdout', async () => {
    assertOneLineError(await wsctl(app, ['company', 'list', '--json'], { ADMIN_TOKEN: 'wrong-token-wrong-token' }), /admin token rejected/);
    assertOneLineError(await wsctl(app, ['company', 'show', '0123456789abcdef01234567', '--json']), /not found/i);
    assertOneLineError(await wsctl(app, ['key', 'list', '--company', 'nope', '--json']), /24-hex/);
    // Scopes name their field as every other input problem does.
    const { company: scoped } = await json(app, ['company', 'create', '--name', 'Alcances SA']);
    assertOneLineError(await wsctl(app, ['key', 'create', '--company', scoped.id, '--scopes', 'read-customers,bogus-scope', '--json']), /^error: invalid input: scopes: Unknown scope\(s\): bogus-scope$/m);
    assertOneLineError(await wsctl(app, ['key', 'create', '--company', scoped.id, '--scopes', ',', '--json']), /^error: invalid input: scopes: At least one scope is required$/m);
    assertOneLineError(await wsctl(app, ['user', 'set-password', '0123456789abcdef01234567', '--password', 'short']), /password/);
    assertOneLineError(await wsctl(app, ['user', 'set-password', '0123456789abcdef01234567', '--password', '          ']), /^error: invalid input: password: must not be only spaces$/m);
    assertOneLineError(await wsctl(app, ['user', 'set-password', '0123456789abcdef01234567', '--password', 'abc\x01defgh']), /^error: invalid input: password: must not hold control characters$/m);
    assertOneLineError(await wsctl(app, ['company', 'update', '0123456789abcdef01234567', '--modules', 'automation']), /modules/);
    assertOneLineError(await wsctl(app, ['automation', 'create', '--company', '0123456789abcdef01234567', '--file', path.join(dir, 'missing.json')]), /no such file/);
    assertOneLineError(await wsctl(app, ['company', 'list'], { ADMIN_URL: 'http://127.0.0.1:9' }), /cannot reach/);
    // Without --url or ADMIN_URL the CLI calls localhost:$PORT: a bad PORT is named as such.
    assertOneLineError(await wsctl(app, ['company', 'list'], { ADMIN_URL: '', PORT: 'abc' }), /invalid PORT "abc": wsctl calls http:\/\/localhost:\$PORT unless --url or ADMIN_URL/);
    // An option whose server-side limit is lower than a column's states that limit, as the server would.
    assertOneLineError(await wsctl(app, ['company', 'create', '--name', 'Grande', '--max-team-size', '20000']), /--max-team-size.*expected a whole number from 1 to 10000/);
    // What the web process answers before tRPC: plain HTTP in production, and an address throttled for wrong tokens.
    const front = createServer((req, res) => {
      if (req.url!.startsWith('/page')) res.writeHead(200, { 'content-type': 'text/html' }).end('<!DOCTYPE html><title>Another app</title>');
      else if (req.url!.startsWith('/silent')) return; // takes the request, never answers
      else if (req.url!.startsWith('/plain')) res.writeHead(426, { 'content-type': 'application/json' }).end('{"error":"https_required","message":"Se requiere HTTPS."}');
      else res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '42' }).end('{"error":"rate_limited","message":"Demasiadas solicitudes."}');
    });
    await new Promise<void>((r) => front.listen(0, '127.0.0.1', () => r()));
    const base = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
    try {
      assertOneLineError(await wsctl(app, ['company', 'list'], { ADMIN_URL: `${base}/plain` }), /requires HTTPS \(426 https_required, production\): use the service's https:\/\/ URL/);
      assertOneLineError(await wsctl(app, ['company', 'list'], { ADMIN_URL: `${base}/busy` }), /too many rejected admin tokens from this address \(429\): retry in 42 s/);
      assertOneLineError(await wsctl(app, ['company', 'list'], { ADMIN_URL: `${base}/page` }), /unexpected answer from .*\(not JSON\): is this the workspace service\?/);
      assertOneLineError(await wsctl(app, ['company', 'list'], { ADMIN_URL: `${base}/silent`, WSCTL_TIMEOUT_SECONDS: '1' }), /cannot reach .*: no answer in time/);
      // A wait past what Node's timers hold (about 24.8 days) would fire at once: refused before any request.
      for (const seconds of ['2592000', '4294968', '0']) {
        assertOneLineError(await wsctl(app, ['company', 'list'], { ADMIN_URL: `${base}/silent`, WSCTL_TIMEOUT_SECONDS: seconds }), /invalid WSCTL_TIMEOUT_SECONDS .*from 1 to 86400/);
      }
    } finally {
      front.closeAllConnections();
      front.close();
    }
    // Numbers past what the database's integer columns hold are refused before any request, naming the range.
    assertOneLineError(await wsctl(app, ['company', 'update', '0123456789abcdef01234567', '--storage-quota-mb', '2147483648']), /from 0 to 2147483647/);
    assertOneLineError(await wsctl(app, ['key', 'create', '--company', '0123456789abcdef01234567', '--scopes', 'all', '--rate-limit', '99999999999']), /from 1 to 2147483647/);
    // A misspelt key in an automation file is refused, not dropped.
    const typo = path.join(dir, 'typo.json');
    await writeFile(typo, JSON.stringify({ name: 'A1', trigger_type: 'lead.created', 'trigger-config': { x: 1 } }));
    assertOneLineError(await wsctl(app, ['automation', 'create', '--company', '0123456789abcdef01234567', '--file', typo]), /trigger-config/);
    // A deployment without Google credentials: said as the server's configuration, not as the operator's input.
    const { owner } = await json(app, ['company', 'create', '--name', 'Sin Google SA']);
    assertOneLineError(await wsctl(app, ['calendar', 'connect', '--user', owner.id]), /^error: not available on .*: Google Calendar no está configurado: define GOOGLE_CLIENT_ID/);
  });

  test('form create warns on stderr when the form emails the address a visitor types; --json stdout stays one document', async () => {
    const { company } = await json(app, ['company', 'create', '--name', 'Aviso SA']);
    const file = path.join(dir, 'relay.json');
    await writeFile(
      file,
      JSON.stringify({
        name: 'Contacto',
        title: 'Contáctanos',
        fields: [{ key: 'email', field_type: 'email', label: 'Correo', required: true, maps_to: 'lead.email' }],
        post_actions: { email: { to: ['ventas@example.com'], send_to_submitter: true } },
      }),
    );
    const run = await wsctl(app, ['form', 'create', '--company', company.id, '--file', file, '--json']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /^warning: .*send_to_submitter is on/);
    assert.equal(JSON.parse(run.stdout).slug, 'contacto');
  });

  test('user add-membership puts one person in a second company (owner or not); twice is a conflict', async () => {
    const first = await json(app, ['company', 'create', '--name', 'Primera SA', '--owner-email', 'dos-empresas@example.com']);
    const second = await json(app, ['company', 'create', '--name', 'Segunda SA']);
    const added = await json(app, ['user', 'add-membership', first.owner.id, '--company', second.company.id, '--owner']);
    assert.deepEqual([added.user_id, added.company_id, added.is_owner], [first.owner.id, second.company.id, true]);
    assert.equal((await json(app, ['company', 'show', second.company.id])).team.current_team_size, 2);
    assertOneLineError(await wsctl(app, ['user', 'add-membership', first.owner.id, '--company', second.company.id]), /already a member/);
    // In a full company the person is checked first: an unknown one is not found, a member already one (both were "team full").
    const full = await json(app, ['company', 'create', '--name', 'Llena SA', '--max-team-size', '1']);
    assertOneLineError(await wsctl(app, ['user', 'add-membership', full.owner.id, '--company', full.company.id]), /already a member/);
    assertOneLineError(await wsctl(app, ['user', 'add-membership', '6b0c99e0ae825f5fb37d5600', '--company', full.company.id]), /User 6b0c99e0ae825f5fb37d5600 not found/);
    assertOneLineError(await wsctl(app, ['user', 'add-membership', first.owner.id, '--company', full.company.id]), /límite de miembros/);
    // Of two owners, --owner-email changes the first's: the one whose membership is oldest (docs/cli.md).
    await json(app, ['company', 'update', second.company.id, '--owner-email', 'primera-duena@segunda.example']);
    const { rows } = await app.pool.query('SELECT id, email FROM users WHERE id = ANY($1) ORDER BY email', [[first.owner.id, second.owner.id]]);
    assert.deepEqual(rows, [
      { id: first.owner.id, email: 'dos-empresas@example.com' },
      { id: second.owner.id, email: 'primera-duena@segunda.example' },
    ]);
  });
});
