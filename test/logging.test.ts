// One structured log line per request, carrying the request id the client
// sees in X-Request-Id; a 500 is logged with its stack on stderr while the
// client gets only the id.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

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
    await new Promise((r) => setTimeout(r, 100));
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
});
