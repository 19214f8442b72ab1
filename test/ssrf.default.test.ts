// The SSRF guard is the default in every environment, not only production
// (issue 13): with no opt-out, NODE_ENV=test and development refuse internal
// webhook targets at registration and at delivery. Only
// ALLOW_PRIVATE_WEBHOOK_TARGETS=1 turns it off, and production refuses that.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../lib/config.ts';
import { createGuardedAgent, NOT_A_PUBLIC_HOST, type LookupFn } from '../lib/ssrf.ts';
import { attemptDelivery } from '../worker/webhooks/attempt.ts';
import { startWorker, type Worker } from '../worker/worker.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';
import { startReceiver, type Receiver } from './helpers/receiver.ts';
import { waitFor } from './helpers/wait.ts';

describe('configuration: the guard is on unless explicitly opted out', () => {
  test('on by default in test, development and production', () => {
    for (const NODE_ENV of ['test', 'development']) assert.equal(loadConfig({ NODE_ENV }).ssrfGuard, true, NODE_ENV);
    assert.equal(loadConfig({ NODE_ENV: 'production', SITE_URL: 'https://api.example', DATABASE_URL: 'postgres://x/y', ADMIN_TOKEN: 'x'.repeat(20), BOOKING_TOKEN_KEY: 'k'.repeat(32) }).ssrfGuard, true);
    assert.equal(loadConfig({ NODE_ENV: 'test', ALLOW_PRIVATE_WEBHOOK_TARGETS: '' }).ssrfGuard, true);
    assert.equal(loadConfig({ NODE_ENV: 'test', ALLOW_PRIVATE_WEBHOOK_TARGETS: '0' }).ssrfGuard, true);
  });

  test('ALLOW_PRIVATE_WEBHOOK_TARGETS=1 turns it off outside production', () => {
    assert.equal(loadConfig({ NODE_ENV: 'development', ALLOW_PRIVATE_WEBHOOK_TARGETS: '1' }).ssrfGuard, false);
    assert.equal(loadConfig({ NODE_ENV: 'test', ALLOW_PRIVATE_WEBHOOK_TARGETS: 'true' }).ssrfGuard, false);
  });

  test('production refuses the opt-out at start with a message naming the setting', () => {
    const env = { NODE_ENV: 'production', SITE_URL: 'https://api.example', DATABASE_URL: 'postgres://x/y', ADMIN_TOKEN: 'x'.repeat(20), BOOKING_TOKEN_KEY: 'k'.repeat(32), ALLOW_PRIVATE_WEBHOOK_TARGETS: '1' };
    assert.throws(() => loadConfig(env), /ALLOW_PRIVATE_WEBHOOK_TARGETS no se admite en producción/);
  });

  test('a value that is not a yes or a no is refused rather than guessed', () => {
    assert.throws(() => loadConfig({ NODE_ENV: 'test', ALLOW_PRIVATE_WEBHOOK_TARGETS: 'maybe' }), /ALLOW_PRIVATE_WEBHOOK_TARGETS debe ser 1 o 0/);
  });
});

const ENDPOINT_IDS = {
  loopback: 'e00000000000000000000001',
  localhost: 'e00000000000000000000002',
  redirect: 'e00000000000000000000003',
  private: 'e00000000000000000000004',
  ipv6: 'e00000000000000000000005',
  metadata: 'e00000000000000000000006',
} as const;

for (const NODE_ENV of ['test', 'development'] as const) {
  describe(`NODE_ENV=${NODE_ENV} with no opt-out: internal webhook targets are refused`, () => {
    let app: TestApp;
    let worker: Worker;
    let receiver: Receiver;
    let port: number;

    before(async () => {
      app = await startTestApp({ NODE_ENV, ALLOW_PRIVATE_WEBHOOK_TARGETS: '' });
      receiver = await startReceiver();
      port = Number(new URL(receiver.url('/')).port);
      // The redirector answers with a redirect to another internal address.
      receiver.on('/redirect', () => ({ status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data' } }));
      worker = await startWorker(app.config, app.pool, app.databaseUrl, { boss: { supervise: false, schedule: false } });
    });
    after(async () => {
      await worker?.stop();
      await receiver?.close();
      await app?.close();
    });

    const targets = () => ({
      loopback: [`http://127.0.0.1:${port}/hook`, 'loopback'],
      localhost: [`http://localhost:${port}/hook`, 'loopback'], // a hostname the real resolver maps to loopback
      redirect: [`http://127.0.0.1:${port}/redirect`, 'loopback'],
      private: ['http://10.0.0.1/hook', 'private'],
      ipv6: ['http://[::1]/hook', 'loopback'],
      metadata: ['http://169.254.169.254/latest/meta-data', 'metadata'],
    });

    test('the app runs with the guard on', () => {
      assert.equal(app.config.ssrfGuard, true);
    });

    test('registration answers 422 naming the reason, and stores nothing', async () => {
      const t = await seedTenant(app.pool);
      const api = client(app.baseUrl, t.key);
      for (const [name, [url, reason]] of Object.entries(targets())) {
        const res = await api.post('/webhook-endpoints', { data: { url, enabled_events: ['*'] } });
        assert.equal(res.status, 422, `${name}: ${res.text}`);
        // An address: its range. A name (localhost): what a name that does not resolve is told too.
        assert.deepEqual(res.body.errors?.url, [name === 'localhost' ? NOT_A_PUBLIC_HOST : `la URL apunta a una dirección privada (${reason})`], name);
      }
      assert.equal((await app.pool.query('SELECT count(*) AS n FROM webhook_endpoints WHERE company_id = $1', [t.companyId])).rows[0].n, 0);
    });

    test('delivery to an endpoint stored before (or around) the check fails with the guard error; the receiver gets nothing', async () => {
      const t = await seedTenant(app.pool);
      const api = client(app.baseUrl, t.key);
      // Rows written directly: as if DNS had answered otherwise at registration (rebinding) or the row predates the guard.
      for (const [name, [url]] of Object.entries(targets())) {
        await app.pool.query(`INSERT INTO webhook_endpoints (id, company_id, url, enabled_events, secret) VALUES ($1, $2, $3, '{*}', 'whsec_test')`, [
          ENDPOINT_IDS[name as keyof typeof ENDPOINT_IDS],
          t.companyId,
          url,
        ]);
      }
      assert.equal((await api.post('/customers', { data: { name: 'SSRF por defecto' } })).status, 201);
      for (const [name, [, reason]] of Object.entries(targets())) {
        const id = ENDPOINT_IDS[name as keyof typeof ENDPOINT_IDS];
        const d = await waitFor(async () => {
          const list = (await api.get(`/webhook-endpoints/${id}/deliveries`)).body.data;
          return list?.[0]?.attempts >= 1 && list[0];
        }, 15_000, `the refused attempt to ${name}`);
        assert.equal(d.status, 'failed', name);
        assert.equal(d.response_status, null, name);
        // An address the endpoint names: its range (the tenant wrote it); a name: not the address it resolved to.
        if (name === 'localhost') assert.equal(d.error_message, `Error de conexión: ${NOT_A_PUBLIC_HOST}`, 'as a name that does not resolve');
        else assert.match(d.error_message, new RegExp(`^Conexión rechazada: destino bloqueado \\(SSRF\\): \\S+ no es una dirección pública \\(${reason}\\)$`), name);
      }
      assert.deepEqual(receiver.received, [], 'nothing reached the local receiver');
    });
  });
}

describe('a redirect from an allowed host to an internal one is not followed', () => {
  test('the attempt fails with the 3xx and the internal target gets nothing', async () => {
    const hits: string[] = [];
    const server = http.createServer((req, res) => {
      hits.push(req.url!);
      if (req.url === '/hook') res.writeHead(307, { location: `http://internal.test:${port}/secret` }).end();
      else res.end('secret');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    // public.test plays a public host (admitted by the allow hook); internal.test resolves to a blocked address.
    const lookup: LookupFn = async (host) => [{ address: host === 'public.test' ? '127.0.0.1' : '127.0.0.2', family: 4 }];
    const agent = createGuardedAgent({ guard: true, lookup, allow: (ip) => ip === '127.0.0.1' });
    try {
      const out = await attemptDelivery(agent, {
        url: `http://public.test:${port}/hook`,
        secret: 'whsec_test',
        payload: '{}',
        event: 'customer.created',
        eventId: 'evt_x',
        deliveryId: 'wd_x',
        attempt: 1,
      });
      assert.equal(out.ok, false);
      assert.equal(out.status, 307);
      assert.deepEqual(hits, ['/hook'], 'the redirect target was never requested');
    } finally {
      await agent.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('a delivery to a host name tells nothing of where an internal name points, nor whether it exists', () => {
  test('a name resolving inside and a name that does not resolve fail with one message; an address the URL names gets its range', async () => {
    const lookup: LookupFn = async (host) => {
      if (host === 'internal.test') return [{ address: '10.1.2.3', family: 4 }];
      throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    };
    const agent = createGuardedAgent({ guard: true, lookup });
    const attempt = (url: string) => attemptDelivery(agent, { url, secret: 'whsec_test', payload: '{}', event: 'customer.created', eventId: 'evt_x', deliveryId: 'wd_x', attempt: 1 });
    try {
      const inside = await attempt('http://internal.test/hook');
      const missing = await attempt('http://missing.test/hook');
      assert.equal(inside.error, `Error de conexión: ${NOT_A_PUBLIC_HOST}`);
      assert.equal(missing.error, inside.error);
      assert.doesNotMatch(inside.error!, /10\.1\.2\.3|private/);
      assert.equal((await attempt('http://10.1.2.3/hook')).error, 'Conexión rechazada: destino bloqueado (SSRF): 10.1.2.3 no es una dirección pública (private)');
    } finally {
      await agent.close();
    }
  });
});
