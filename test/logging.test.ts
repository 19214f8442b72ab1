// One structured log line per request, carrying the request id the client
// sees in X-Request-Id; a 500 is logged with its stack on stderr while the
// client gets only the id.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { freePort, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { waitFor } from './helpers/wait.ts';
import { repeatDecision } from '../lib/log.ts';

describe('request log', () => {
  let app: TestApp;
  let tenant: Tenant;
  let child: ReturnType<typeof spawn>;
  let stdout = '';
  let base = '';
  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool);
    const port = await freePort();
    child = spawn(process.execPath, ['api/server.ts'], {
      env: { ...process.env, DATABASE_URL: app.databaseUrl, PORT: String(port), LOG_LEVEL: 'info', NODE_ENV: 'development', ADMIN_TOKEN: 'x'.repeat(20) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (stdout += d));
    base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        if ((await fetch(`${base}/healthz`)).ok) break;
      } catch {}
      assert.ok(Date.now() < deadline, 'server did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  after(async () => {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    await app.close();
  });

  test('each request writes one JSON line with its request id, status and tenant, and never the key', async () => {
    const res = await fetch(`${base}/api/v1/customers`, { headers: { authorization: `Bearer ${tenant.key}`, 'x-request-id': 'trace-from-router-123' } });
    assert.equal(res.headers.get('x-request-id'), 'trace-from-router-123');
    const generated = await fetch(`${base}/api/v1/customers/123`, { headers: { authorization: `Bearer ${tenant.key}` } });
    const generatedId = generated.headers.get('x-request-id')!;
    await waitFor(() => stdout.includes(generatedId), 10_000, 'both request lines to be written');
    const lines = stdout.trim().split('\n').map((l) => JSON.parse(l));
    const first = lines.filter((l) => l.event === 'request' && l.request_id === 'trace-from-router-123');
    assert.equal(first.length, 1);
    assert.equal(first[0].status, 200);
    assert.equal(first[0].path, '/api/v1/customers');
    assert.equal(first[0].company_id, tenant.companyId);
    assert.equal(typeof first[0].duration_ms, 'number');
    const second = lines.find((l) => l.request_id === generatedId);
    assert.equal(second.status, 400);
    assert.ok(!stdout.includes(tenant.key), 'the secret never reaches the log');
  });

  const lines = () => stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));

  test('an image upload the client cuts off mid-body is logged as the hang-up it is (400), not as a bad image (422)', async () => {
    const product = await fetch(`${base}/api/v1/products`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ data: { name: 'Cortada', prices_cents: { mxn: 100 } } }),
    });
    assert.equal(product.status, 201);
    const id = ((await product.json()) as any).data.id;
    const { port } = new URL(base);
    const socket = connect(Number(port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    // Expect: 100-continue: the server's "100 Continue" says the request has begun, before the body is cut.
    const begun = new Promise((resolve) => socket.once('data', resolve));
    socket.write(
      `POST /api/v1/products/${id}/image HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${tenant.key}\r\nX-Request-Id: cut-upload-1\r\n` +
        `Content-Type: multipart/form-data; boundary=b0undary\r\nContent-Length: 500000\r\nExpect: 100-continue\r\n\r\n`,
    );
    assert.match(String(await begun), /^HTTP\/1\.1 100 Continue/);
    socket.write('--b0undary\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n');
    socket.write(Buffer.alloc(20_000, 1));
    socket.destroy(); // the client hangs up, 480,000 bytes short
    const line = await waitFor(() => lines().find((l) => l.event === 'request' && l.request_id === 'cut-upload-1'), 10_000, 'the cut upload\'s request line');
    assert.equal(line.status, 400, JSON.stringify(line));
  });

  test('every admin call writes an audit line (procedure, outcome, company, address), never the token', async () => {
    const admin = (procedure: string, body: unknown, address: string) =>
      fetch(`${base}/admin/trpc/${procedure}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${'x'.repeat(20)}`, 'content-type': 'application/json', 'x-forwarded-for': address },
        body: JSON.stringify(body),
      });
    const created = await admin('company.create', { name: 'Auditada' }, '198.51.100.77');
    assert.equal(created.status, 200);
    const { company, owner } = ((await created.json()) as any).result.data;
    const issued = await admin('key.create', { companyId: company.id, scopes: 'all' }, '198.51.100.77');
    assert.equal(issued.status, 200);
    const key = ((await issued.json()) as any).result.data;
    const line = await waitFor(() => lines().find((l) => l.event === 'admin.call' && l.procedure === 'key.create'), 10_000, 'the audit line of key.create');
    assert.equal(line.ok, true);
    assert.equal(line.company_id, company.id);
    assert.equal(line.target_id, key.id, 'a create names what it made');
    const made = lines().find((l) => l.event === 'admin.call' && l.procedure === 'company.create');
    assert.equal(made?.company_id, company.id);
    assert.equal(line.address, '198.51.100.77');
    // A record named by another key than id (wsctl calendar status --user, delivery list --endpoint) is the target too.
    const status = await fetch(`${base}/admin/trpc/calendar.status?input=${encodeURIComponent(JSON.stringify({ userId: owner.id }))}`, { headers: { authorization: `Bearer ${'x'.repeat(20)}`, 'x-forwarded-for': '198.51.100.77' } });
    assert.equal(status.status, 200, await status.clone().text());
    const byUser = await waitFor(() => lines().find((l) => l.event === 'admin.call' && l.procedure === 'calendar.status'), 10_000, 'the audit line of calendar.status');
    assert.equal(byUser.target_id, owner.id);
    const missing = await admin('key.revoke', { id: '0123456789abcdef01234567' }, '198.51.100.77');
    assert.equal(missing.status, 404);
    const failed = await waitFor(() => lines().find((l) => l.event === 'admin.call' && l.procedure === 'key.revoke'), 10_000, 'the audit line of a failed call');
    assert.equal(failed.ok, false);
    assert.equal(failed.error, 'not_found');
    // One vocabulary, the API's error codes, whoever refused: tRPC's own check of the input is validation_failed,
    // and an id the call refused names no record (company_id and target_id null).
    const malformed = await fetch(`${base}/admin/trpc/company.show?input=${encodeURIComponent(JSON.stringify({ id: 'nothex' }))}`, { headers: { authorization: `Bearer ${'x'.repeat(20)}`, 'x-forwarded-for': '198.51.100.79' } });
    assert.equal(malformed.status, 400);
    const refused = await waitFor(() => lines().find((l) => l.event === 'admin.call' && l.procedure === 'company.show' && l.address === '198.51.100.79'), 10_000, 'the audit line of a refused input');
    assert.deepEqual([refused.ok, refused.error, refused.company_id, refused.target_id], [false, 'validation_failed', null, null]);
    // Every key on every line: a call about no company or record writes them as null (a log parser reads fixed fields).
    assert.equal((await fetch(`${base}/admin/trpc/company.list`, { headers: { authorization: `Bearer ${'x'.repeat(20)}`, 'x-forwarded-for': '198.51.100.78' } })).status, 200);
    const listed = await waitFor(() => lines().find((l) => l.event === 'admin.call' && l.procedure === 'company.list' && l.address === '198.51.100.78'), 10_000, 'the audit line of company.list');
    assert.deepEqual([listed.company_id, listed.target_id, listed.error], [null, null, null]);
    // A key no procedure takes is refused, not dropped (a misspelt ownerEmail would have made the default owner).
    const misspelt = await admin('company.create', { name: 'Con typo', owner_email: 'dueno@example.com' }, '198.51.100.77');
    assert.equal(misspelt.status, 400);
    assert.match(((await misspelt.json()) as any).error.message, /owner_email/);
    assert.ok(!stdout.includes('x'.repeat(20)), 'the admin token never reaches the log');
  });

  test('wrong admin tokens are throttled per address: after 10 a minute the address is refused, even with the right token', async () => {
    const call = (token: string, address: string) =>
      fetch(`${base}/admin/trpc/company.list`, { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': address } });
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await call(`wrong-token-${i}-000000`, '198.51.100.90')).status);
    assert.deepEqual(statuses, [...Array(10).fill(401), 429]);
    // Refusals are in tRPC's error shape, as every other admin answer (what @trpc/client reads), with a challenge.
    const refused = await fetch(`${base}/admin/trpc/company.list`, { headers: { 'x-forwarded-for': '198.51.100.92' } });
    assert.equal(refused.headers.get('www-authenticate'), 'Bearer realm="admin"');
    assert.deepEqual(((await refused.json()) as any).error.data, { code: 'UNAUTHORIZED', httpStatus: 401, path: 'company.list' });
    const blocked = await call('x'.repeat(20), '198.51.100.90');
    assert.equal(blocked.status, 429, 'guessing cannot go on through the 429s');
    assert.equal(((await blocked.clone().json()) as any).error.data.code, 'TOO_MANY_REQUESTS');
    const retryAfter = Number(blocked.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60);
    assert.equal((await call('x'.repeat(20), '198.51.100.91')).status, 200, 'another address is not affected');
    await waitFor(() => lines().some((l) => l.event === 'admin.refused' && l.throttled === true && l.address === '198.51.100.90'), 10_000, 'the refusal to be logged');
    // Each of the 12 refusals at that address is a line, those answered while it was already refused too.
    const refusals = await waitFor(() => {
      const mine = lines().filter((l) => l.event === 'admin.refused' && l.address === '198.51.100.90');
      return mine.length === 12 && mine;
    }, 10_000, 'every refusal logged');
    assert.deepEqual(refusals.map((l) => l.throttled), [...Array(10).fill(false), true, true], 'the 11th and the one answered while refused say so');
  });

  test('an admin file download writes its audit line whatever its outcome: address, company, file, error', async () => {
    const download = (company: string, id: string) =>
      fetch(`${base}/admin/files/${id}?company=${company}`, { headers: { authorization: `Bearer ${'x'.repeat(20)}`, 'x-forwarded-for': '198.51.100.95' } });
    const missing = await download('0123456789abcdef01234567', 'abcdef0123456789abcdef01');
    assert.equal(missing.status, 404);
    const line = await waitFor(() => lines().find((l) => l.event === 'admin.file_download' && l.address === '198.51.100.95'), 10_000, 'the audit line of a refused download');
    assert.deepEqual([line.ok, line.error, line.company_id, line.file_id], [false, 'not_found', '0123456789abcdef01234567', 'abcdef0123456789abcdef01']);
    const noCompany = await fetch(`${base}/admin/files/abcdef0123456789abcdef01`, { headers: { authorization: `Bearer ${'x'.repeat(20)}`, 'x-forwarded-for': '198.51.100.96' } });
    assert.equal(noCompany.status, 422);
    const missingParameter = await waitFor(() => lines().find((l) => l.event === 'admin.file_download' && l.address === '198.51.100.96'), 10_000, 'the audit line of a download without its company');
    assert.deepEqual([missingParameter.ok, missingParameter.error, missingParameter.company_id], [false, 'parameter_missing', null]);
  });
});

describe('repeating errors', () => {
  test('one line a minute per kind of failure, with how many were left out: pg-boss pollers in an outage', () => {
    const t0 = 1_000_000_000;
    const refused = (queue: string, port: number) => `connect ECONNREFUSED 127.0.0.1:${port} (Queue: ${queue}, Worker: 0f3a-${queue})`;
    assert.deepEqual(repeatDecision('test.outage', refused('thumbnail', 5432), t0), { write: true, repeated: 0 });
    // Every queue's poller, every second: the same failure.
    for (let s = 1; s < 60; s++) for (const queue of ['thumbnail', 'webhook-delivery', 'form-post-actions']) assert.equal(repeatDecision('test.outage', refused(queue, 5432), t0 + s * 1000).write, false);
    // Another kind of failure is written at once.
    assert.equal(repeatDecision('test.outage', 'password authentication failed for user "x"', t0 + 2000).write, true);
    // A minute on: written again, saying how many were left out.
    assert.deepEqual(repeatDecision('test.outage', refused('thumbnail', 5433), t0 + 60_000), { write: true, repeated: 177 });
    assert.equal(repeatDecision('test.outage', refused('thumbnail', 5432), t0 + 61_000).write, false);
  });
});
