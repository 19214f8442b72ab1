// wsctl webhook/delivery commands end to end (DESIGN.md, CLI contract:
// `webhook list --company`, `webhook rotate-secret`, `delivery list/show/
// replay`): the real CLI as a child process against the real app's
// /admin/trpc, effects checked through the public API. --json prints exactly
// one JSON document on stdout; errors are one stderr line and a non-zero exit.
// No worker runs, so deliveries stay `pending`.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { assertOneLineError, json, wsctl } from './helpers/cli.ts';

const MISSING_ID = '0123456789abcdef01234567';

type Api = ReturnType<typeof client>;

describe('wsctl webhook and delivery', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  /** A company with one endpoint on `events`, and the API client of its key. */
  async function setup(events: string[] = ['*']) {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const res = await api.post('/webhook-endpoints', { data: { url: 'https://hooks.example.com/cli', enabled_events: events } });
    assert.equal(res.status, 201, res.text);
    return { ...t, api, endpoint: res.body.data as Record<string, any> };
  }

  async function customer(api: Api, name: string): Promise<string> {
    const res = await api.post('/customers', { data: { name } });
    assert.equal(res.status, 201, res.text);
    return res.body.data.id;
  }

  test('webhook list --json: the company\'s endpoints with health fields, never a secret', async () => {
    const { companyId, api, endpoint } = await setup(['customer.created']);
    const second = (await api.post('/webhook-endpoints', { data: { url: 'https://hooks.example.com/two', enabled_events: ['*'] } })).body.data;
    const other = await setup();

    const listed = await json(app, ['webhook', 'list', '--company', companyId]);
    assert.ok(Array.isArray(listed));
    assert.deepEqual(listed.map((e: any) => e.id), [second.id, endpoint.id], 'only this company, newest first');
    for (const e of listed) {
      assert.equal(e.object, 'webhook_endpoint');
      assert.equal('secret' in e, false);
      assert.equal(typeof e.secret_last_four, 'string');
      assert.equal(e.consecutive_failures, 0);
      assert.equal(e.active, true);
    }
    const text = JSON.stringify(listed);
    for (const secret of [endpoint.secret, second.secret, other.endpoint.secret]) assert.ok(!text.includes(secret));
    assert.deepEqual(listed[1].enabled_events, ['customer.created']);
  });

  test('webhook rotate-secret --json answers {id, secret}; the API then shows the new last four', async () => {
    const { api, endpoint } = await setup();
    const rotated = await json(app, ['webhook', 'rotate-secret', endpoint.id]);
    assert.deepEqual(Object.keys(rotated).sort(), ['id', 'secret']);
    assert.equal(rotated.id, endpoint.id);
    assert.match(rotated.secret, /^whsec_/);
    assert.notEqual(rotated.secret, endpoint.secret);
    const read = await api.get(`/webhook-endpoints/${endpoint.id}`);
    assert.equal(read.body.data.secret_last_four, rotated.secret.slice(-4));
    assert.equal(read.body.data.consecutive_failures, 0, 'rotation changes only the secret');
  });

  test('delivery list --json with --status and --event filters', async () => {
    const { api, endpoint } = await setup();
    await customer(api, 'Uno');
    await customer(api, 'Dos');
    assert.equal((await api.post('/leads', { data: { name: 'Prospecto' } })).status, 201);

    const all = await json(app, ['delivery', 'list', '--endpoint', endpoint.id]);
    assert.equal(all.length, 3);
    for (const d of all) {
      assert.equal(d.object, 'webhook_delivery');
      assert.equal(d.endpoint_id, endpoint.id);
      assert.equal(d.status, 'pending');
      assert.equal(d.max_attempts, 6);
      assert.match(d.event_id, /^evt_/);
    }
    const viaApi = (await api.get(`/webhook-endpoints/${endpoint.id}/deliveries`)).body.data;
    assert.deepEqual(all.map((d: any) => d.id), viaApi.map((d: any) => d.id), 'same deliveries, same order as the API');

    const pending = await json(app, ['delivery', 'list', '--endpoint', endpoint.id, '--status', 'pending']);
    assert.equal(pending.length, 3);
    assert.deepEqual(await json(app, ['delivery', 'list', '--endpoint', endpoint.id, '--status', 'succeeded']), []);
    const customers = await json(app, ['delivery', 'list', '--endpoint', endpoint.id, '--event', 'customer.created']);
    assert.equal(customers.length, 2);
    assert.ok(customers.every((d: any) => d.event === 'customer.created'));
    const both = await json(app, ['delivery', 'list', '--endpoint', endpoint.id, '--status', 'pending', '--event', 'lead.created']);
    assert.equal(both.length, 1);
    assert.equal(both[0].event, 'lead.created');
  });

  test('delivery show --json has the payload the API shows; replay makes a new delivery with the same event_id and identical payload', async () => {
    const { api, endpoint } = await setup(['customer.created']);
    const customerId = await customer(api, 'Ana');
    const [listed] = await json(app, ['delivery', 'list', '--endpoint', endpoint.id]);

    const shown = await json(app, ['delivery', 'show', listed.id]);
    assert.equal(shown.id, listed.id);
    assert.equal(typeof shown.payload, 'string');
    assert.equal(JSON.parse(shown.payload).data.id, customerId);
    assert.equal(JSON.parse(shown.payload).id, shown.event_id);
    const viaApi = (await api.get(`/webhook-endpoints/${endpoint.id}/deliveries/${listed.id}`)).body.data;
    assert.equal(shown.payload, viaApi.payload);

    const replayed = await json(app, ['delivery', 'replay', listed.id]);
    assert.match(replayed.id, /^[0-9a-f]{24}$/);
    assert.notEqual(replayed.id, listed.id);
    assert.equal(replayed.endpoint_id, endpoint.id);
    assert.equal(replayed.event, 'customer.created');
    assert.equal(replayed.event_id, shown.event_id);
    assert.equal(replayed.payload, shown.payload, 'the same bytes: a receiver de-duplicating by event id sees a repeat');
    assert.equal(replayed.status, 'pending');

    const after = await json(app, ['delivery', 'list', '--endpoint', endpoint.id]);
    assert.equal(after.length, 2);
    assert.deepEqual(new Set(after.map((d: any) => d.id)), new Set([listed.id, replayed.id]));
    const read = await api.get(`/webhook-endpoints/${endpoint.id}/deliveries/${replayed.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.data.payload, shown.payload);
  });

  test('unknown or malformed ids: one stderr line, non-zero exit, empty stdout', async () => {
    assertOneLineError(await wsctl(app, ['webhook', 'rotate-secret', MISSING_ID, '--json']), /not found/i);
    assertOneLineError(await wsctl(app, ['delivery', 'list', '--endpoint', MISSING_ID, '--json']), /not found/i);
    assertOneLineError(await wsctl(app, ['delivery', 'show', MISSING_ID, '--json']), /not found/i);
    assertOneLineError(await wsctl(app, ['delivery', 'replay', MISSING_ID, '--json']), /not found/i);
    assertOneLineError(await wsctl(app, ['delivery', 'show', MISSING_ID]), /not found/i);
    assertOneLineError(await wsctl(app, ['webhook', 'list', '--company', 'nope', '--json']), /24-hex/);
    assertOneLineError(await wsctl(app, ['delivery', 'show', 'nope', '--json']), /24-hex/);
    const { endpoint } = await setup();
    assertOneLineError(await wsctl(app, ['delivery', 'list', '--endpoint', endpoint.id, '--status', 'bogus', '--json']), /status/);
    assert.equal((await json(app, ['delivery', 'list', '--endpoint', endpoint.id])).length, 0, 'a failed command changed nothing');
  });

  test('without --json: tables for people (webhook list, delivery list) and details with the payload (delivery show)', async () => {
    const { companyId, api, endpoint } = await setup();
    await customer(api, 'Tabla');

    const endpoints = await wsctl(app, ['webhook', 'list', '--company', companyId]);
    assert.equal(endpoints.code, 0, endpoints.stderr);
    assert.equal(endpoints.stderr, '');
    assert.match(endpoints.stdout, /^ID\s+URL\s+EVENTS\s+ACTIVE\s+FAILURES/);
    assert.match(endpoints.stdout, new RegExp(endpoint.id));
    assert.match(endpoints.stdout, /https:\/\/hooks\.example\.com\/cli/);
    assert.ok(!endpoints.stdout.includes(endpoint.secret));
    assert.throws(() => JSON.parse(endpoints.stdout));

    const deliveries = await wsctl(app, ['delivery', 'list', '--endpoint', endpoint.id]);
    assert.equal(deliveries.code, 0, deliveries.stderr);
    assert.match(deliveries.stdout, /^ID\s+EVENT\s+STATUS\s+ATTEMPTS/);
    assert.match(deliveries.stdout, /customer\.created\s+pending\s+0\/6/);

    const [d] = await json(app, ['delivery', 'list', '--endpoint', endpoint.id]);
    const shown = await wsctl(app, ['delivery', 'show', d.id]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`id:\\s+${d.id}`));
    assert.match(shown.stdout, /payload:\n\{/);
    assert.ok(shown.stdout.includes(d.event_id));
    // A receiver's answer is quoted line by line: its control characters escaped, none of its lines passing for ours.
    await app.pool.query('UPDATE webhook_deliveries SET response_body = $2 WHERE id = $1', [d.id, 'ok\u001b[31mRED\r\nstatus:  succeeded\nfin']);
    const answered = (await wsctl(app, ['delivery', 'show', d.id])).stdout;
    assert.ok(answered.endsWith('response body:\n| ok\\u001b[31mRED\n| status:  succeeded\n| fin\n'), answered);
    assert.doesNotMatch(answered, /^status:\s+succeeded$/m, 'no forged line');

    const empty = await setup();
    const none = await wsctl(app, ['delivery', 'list', '--endpoint', empty.endpoint.id]);
    assert.equal(none.code, 0);
    assert.match(none.stdout, /no deliveries/);
  });

  test('user set-permissions grants manage-developers: the member\'s session then reaches the in-application webhook routes', async () => {
    const t = await seedTenant(app.pool);
    const member = '0badc0ffee0badc0ffee0bad';
    await app.pool.query(`INSERT INTO users (id, email) VALUES ($1, 'dev-member@cli.example')`, [member]);
    await app.pool.query('INSERT INTO memberships (company_id, user_id) VALUES ($1, $2)', [t.companyId, member]);
    await json(app, ['user', 'set-password', member, '--password', 'clave-del-miembro']);
    const signIn = await fetch(`${app.baseUrl}/user/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ data: { email: 'dev-member@cli.example', password: 'clave-del-miembro' } }),
    });
    const token = ((await signIn.json()) as any).data.token;
    const session = client(app.baseUrl, token);
    const before = await session.get('/user/developers/webhook-endpoints');
    assert.equal(before.status, 403);
    assert.equal(before.body.required, 'manage-developers');

    const granted = await json(app, ['user', 'set-permissions', member, '--company', t.companyId, '--permissions', 'manage-developers']);
    assert.deepEqual(granted.permissions, ['manage-developers']);
    assert.equal((await session.get('/user/developers/webhook-endpoints')).status, 200);

    const cleared = await json(app, ['user', 'set-permissions', member, '--company', t.companyId, '--permissions', '']);
    assert.deepEqual(cleared.permissions, []);
    assert.equal((await session.get('/user/developers/webhook-endpoints')).status, 403);
    assertOneLineError(await wsctl(app, ['user', 'set-permissions', member, '--company', t.companyId, '--permissions', 'root']), /permissions/);
    assertOneLineError(await wsctl(app, ['user', 'set-permissions', member, '--company', MISSING_ID, '--permissions', 'manage-developers']), new RegExp(`Company ${MISSING_ID} not found`));
    const elsewhere = await seedTenant(app.pool);
    assertOneLineError(await wsctl(app, ['user', 'set-permissions', member, '--company', elsewhere.companyId, '--permissions', 'manage-developers']), /not a member/);
  });
});
