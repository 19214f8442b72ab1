// SSRF guard (lib/ssrf.ts): address classification, the registration check and
// the connect-time agent. Hostile input first. Every connection made here goes
// to 127.0.0.1; "public" answers are only ever judged, never connected to.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { request } from 'undici';
import { blockedReason, checkWebhookUrl, createGuardedAgent, NOT_A_PUBLIC_HOST } from '../lib/ssrf.ts';
import type { LookupFn } from '../lib/ssrf.ts';

const PUBLIC_IP = '93.184.216.34';

// Self-signed EC certificate for rebind.test (SAN DNS:rebind.test, valid to
// 2126), so TLS can be checked against a local server without openssl at test time.
const TLS_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgABfb8pSRRg/WFJUk
7Er10hxz30WA3X14GfuVT5HewL6hRANCAATz7mpehsPP/W3D4TZK8KguAHKDHqS2
MaR3XvKFVzmyeBnt3bCIfOUTvaZWAOikLVhE8iGXsifgfGDjoQX6p0QD
-----END PRIVATE KEY-----
`;
const TLS_CERT = `-----BEGIN CERTIFICATE-----
MIIBmzCCAUGgAwIBAgIUc8L+xM91F0YPuUiKwdOdcjU5INMwCgYIKoZIzj0EAwIw
FjEUMBIGA1UEAwwLcmViaW5kLnRlc3QwIBcNMjYxMTIzMjI0MjQ0WhgPMjEyNjEw
MzAyMjQyNDRaMBYxFDASBgNVBAMMC3JlYmluZC50ZXN0MFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAE8+5qXobDz/1tw+E2SvCoLgBygx6ktjGkd17yhVc5sngZ7d2w
iHzlE72mVgDopC1YRPIhl7In4Hxg46EF+qdEA6NrMGkwHQYDVR0OBBYEFKkcaZKA
6r0iPZ5Ru64SC9wKqDSrMB8GA1UdIwQYMBaAFKkcaZKA6r0iPZ5Ru64SC9wKqDSr
MA8GA1UdEwEB/wQFMAMBAf8wFgYDVR0RBA8wDYILcmViaW5kLnRlc3QwCgYIKoZI
zj0EAwIDSAAwRQIgaY65EYTtXWZKGqW2y8zFj59JZ27gq4KF8sRAq6oNXScCIQDW
5wV5ETwQtv2o3iZvilc1CItPniVmKJhSeQnVUmYs1Q==
-----END CERTIFICATE-----
`;

/** A lookup answering `answers[i]` on its i-th call (the last one repeats), counting calls. */
function scripted(...answers: string[][]): LookupFn & { calls: string[] } {
  const calls: string[] = [];
  const fn = async (hostname: string) => {
    const ips = answers[Math.min(calls.length, answers.length - 1)];
    calls.push(hostname);
    return ips.map((address) => ({ address, family: (address.includes(':') ? 6 : 4) as 4 | 6 }));
  };
  return Object.assign(fn, { calls });
}

const noDns: LookupFn = async (hostname) => {
  throw new Error(`DNS must not be used for ${hostname}`);
};

const notFound: LookupFn = async (hostname) => {
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
};

type Receiver = { port: number; hits: number; connections: number; seen: Array<{ local: string; servername?: string }>; close(): Promise<void> };

/** A real receiver on 127.0.0.1:<random>, counting TCP connections and requests. */
async function receiver(tls = false): Promise<Receiver> {
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    state.hits++;
    state.seen.push({ local: req.socket.localAddress ?? '', servername: (req.socket as TLSSocket).servername || undefined });
    // One request per connection, so each request needs a fresh connect (and lookup).
    res.writeHead(200, { connection: 'close' }).end('ok');
  };
  const server = tls ? https.createServer({ key: TLS_KEY, cert: TLS_CERT }, handler) : http.createServer(handler);
  server.on('connection', () => state.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const state: Receiver = {
    port: (server.address() as AddressInfo).port,
    hits: 0,
    connections: 0,
    seen: [],
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
  return state;
}

/** Remote addresses of the sockets undici opened while `fn` ran. */
async function connectedTo(fn: () => Promise<void>): Promise<string[]> {
  const remotes: string[] = [];
  const onConnected = (message: unknown) => remotes.push((message as { socket: { remoteAddress: string } }).socket.remoteAddress);
  subscribe('undici:client:connected', onConnected);
  try {
    await fn();
  } finally {
    unsubscribe('undici:client:connected', onConnected);
  }
  return remotes;
}

describe('blockedReason: only public unicast addresses pass', () => {
  const blocked: Array<[string, string]> = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['168.63.129.16', 'metadata'],
    ['::ffff:168.63.129.16', 'metadata'],
    ['169.254.1.1', 'link-local'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['198.18.0.1', 'benchmark'],
    ['198.19.255.255', 'benchmark'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['0.0.0.0', 'unspecified'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fd00:ec2::254', 'metadata'],
    ['FD00:0EC2:0:0:0:0:0:0254', 'metadata'],
    ['fec0::1', 'private'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:0:7f00:1', 'loopback'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['64:ff9b:1::1', 'reserved'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['::7f00:1', 'loopback'],
    ['::8.8.8.8', 'reserved'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['2001::1', 'reserved'],
    ['4000::1', 'reserved'],
  ];
  for (const [ip, reason] of blocked) {
    test(`${ip} is blocked as ${reason}`, () => {
      assert.equal(blockedReason(ip), reason);
    });
  }

  for (const ip of ['93.184.216.34', '8.8.8.8', '100.128.0.1', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2002:808:808::1']) {
    test(`${ip} is public`, () => {
      assert.equal(blockedReason(ip), null);
    });
  }

  test('anything that is not a canonical IP literal is refused, not guessed at', () => {
    for (const input of ['127.1', '0x7f.1', '2130706433', '0177.0.0.1', '[::1]', 'localhost', '', '1.2.3.4.5', '::ffff:127.0.0.1x']) {
      assert.equal(blockedReason(input), 'invalid', input);
    }
  });
});

describe('the WHATWG URL parser canonicalises odd loopback spellings (the guard relies on it)', () => {
  const spellings: Array<[string, string]> = [
    ['2130706433', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['127.0.0.1.', '127.0.0.1'],
    ['[::1]', '[::1]'],
    ['[0:0:0:0:0:ffff:7f00:1]', '[::ffff:7f00:1]'],
    ['[::ffff:127.0.0.1]', '[::ffff:7f00:1]'],
  ];
  for (const [spelling, canonical] of spellings) {
    test(`https://${spelling}/ has hostname ${canonical}`, () => {
      assert.equal(new URL(`https://${spelling}/`).hostname, canonical);
    });
  }
});

describe('checkWebhookUrl in production', () => {
  const prod = (lookup: LookupFn = noDns) => ({ httpsOnly: true, guard: true, lookup });

  test('http is refused: https only', async () => {
    assert.equal(await checkWebhookUrl('http://example.com/hook', prod(scripted([PUBLIC_IP]))), 'la URL debe usar https');
  });

  test('other schemes are refused', async () => {
    for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'gopher://127.0.0.1:6379/_INFO', 'javascript:alert(1)']) {
      assert.equal(await checkWebhookUrl(url, prod()), 'la URL debe usar https', url);
    }
  });

  test('userinfo is refused', async () => {
    const message = await checkWebhookUrl('https://user:pw@example.com/', prod(scripted([PUBLIC_IP])));
    assert.equal(message, 'la URL no puede incluir usuario ni contraseña');
    assert.equal(await checkWebhookUrl('https://user@example.com/', prod(scripted([PUBLIC_IP]))), message);
    assert.equal(await checkWebhookUrl('https://example.com@127.0.0.1/', prod()), message);
  });

  test('parser-confusion URLs are judged by the host the WHATWG parser sees', async () => {
    assert.equal(await checkWebhookUrl('https://127.0.0.1?@example.com/', prod()), 'la URL apunta a una dirección privada (loopback)');
    // A fragment is never sent: refused, so a stored URL cannot read as another host (`#@`), whatever the host.
    for (const url of ['https://127.0.0.1#@example.com/', 'http://1.1.1.1#@127.0.0.1/', 'https://example.com/hook#x', 'https://example.com/hook#']) {
      assert.equal(await checkWebhookUrl(url, { httpsOnly: false, guard: true, lookup: scripted([PUBLIC_IP]) }), 'la URL no puede llevar fragmento (#): nunca se envía al receptor', url);
    }
    assert.equal(await checkWebhookUrl('https://127.0.0.1%2f@example.com/', prod(scripted([PUBLIC_IP]))), 'la URL no puede incluir usuario ni contraseña');
  });

  test('a backslash, a space or a control character is refused: other tools read such a URL differently from the WHATWG parser', async () => {
    const refused = 'la URL no puede contener barras invertidas, espacios ni caracteres de control';
    // The WHATWG parser sees host 93.184.215.14 here (public); curl and others may see 127.0.0.1.
    for (const url of ['http://93.184.215.14\\@127.0.0.1/', 'https://127.0.0.1\\@example.com/', 'https://example.com/a b', 'https://example.com/\tx', 'https://exa\nmple.com/']) {
      assert.equal(await checkWebhookUrl(url, { httpsOnly: false, guard: true, lookup: scripted([PUBLIC_IP]) }), refused, JSON.stringify(url));
    }
  });

  test('a URL not written scheme://host, or with port 0, is refused even with the guard off: the parser adds the slashes, other tools do not', async () => {
    for (const guard of [true, false]) {
      const options = { httpsOnly: false, guard, lookup: scripted([PUBLIC_IP]) };
      for (const url of ['http:example.com/hook', 'https:/example.com/hook', 'HTTPS:example.com', 'http:///example.com/hook']) {
        assert.equal(await checkWebhookUrl(url, options), 'la URL debe empezar por http:// o https:// seguido del host', `${url} (guard ${guard})`);
      }
      assert.equal(await checkWebhookUrl('https://example.com:0/hook', options), 'el puerto de la URL no puede ser 0');
      assert.equal(await checkWebhookUrl('HTTPS://Example.com:8443/Hook', options), null, 'the scheme in capitals is still scheme://host');
    }
  });

  test('garbage is refused', async () => {
    assert.equal(await checkWebhookUrl('not a url', prod()), 'la URL no es válida');
    assert.equal(await checkWebhookUrl('https://1.2.3.4.5/', prod()), 'la URL no es válida');
  });

  test('IP-literal loopback in every spelling is refused without DNS', async () => {
    for (const host of ['127.0.0.1', '2130706433', '0x7f.1', '127.1', '0177.0.0.1', '[::1]', '[::ffff:127.0.0.1]', '[0:0:0:0:0:ffff:7f00:1]', '[::127.0.0.1]']) {
      assert.equal(await checkWebhookUrl(`https://${host}/`, prod()), 'la URL apunta a una dirección privada (loopback)', host);
    }
  });

  test('private, metadata and other internal literals are refused', async () => {
    assert.equal(await checkWebhookUrl('https://10.0.0.1/', prod()), 'la URL apunta a una dirección privada (private)');
    assert.equal(await checkWebhookUrl('https://169.254.169.254/latest/meta-data', prod()), 'la URL apunta a una dirección privada (metadata)');
    assert.equal(await checkWebhookUrl('https://[fd00:ec2::254]/', prod()), 'la URL apunta a una dirección privada (metadata)');
    assert.equal(await checkWebhookUrl('https://[64:ff9b::7f00:1]/', prod()), 'la URL apunta a una dirección privada (loopback)');
    assert.equal(await checkWebhookUrl('https://100.64.0.1/', prod()), 'la URL apunta a una dirección privada (cgnat)');
  });

  test('localhost is refused through the real (default) resolver', async () => {
    // A name: the same answer as a name that does not resolve (the check tells no one where an internal name points).
    assert.equal(await checkWebhookUrl('https://localhost/', { httpsOnly: true, guard: true }), NOT_A_PUBLIC_HOST);
  });

  test('a hostname is refused when ANY resolved address is blocked, even listed after a public one', async () => {
    const lookup = scripted([PUBLIC_IP, '127.0.0.1']);
    assert.equal(await checkWebhookUrl('https://mixed.example/', prod(lookup)), NOT_A_PUBLIC_HOST);
    assert.deepEqual(lookup.calls, ['mixed.example']);
  });

  test('a hostname resolving to an IPv4-mapped internal address is refused', async () => {
    assert.equal(await checkWebhookUrl('https://sneaky.example/', prod(scripted(['::ffff:a9fe:a9fe']))), NOT_A_PUBLIC_HOST);
  });

  test('a hostname that does not resolve is refused', async () => {
    assert.equal(await checkWebhookUrl('https://nope.invalid/', prod(notFound)), NOT_A_PUBLIC_HOST);
    assert.equal(await checkWebhookUrl('https://empty.example/', prod(scripted([]))), NOT_A_PUBLIC_HOST);
  });

  test('a public hostname is accepted', async () => {
    const lookup = scripted([PUBLIC_IP, '2606:4700::1111']);
    assert.equal(await checkWebhookUrl('https://hooks.example.com:8443/in?x=1', prod(lookup)), null);
    assert.deepEqual(lookup.calls, ['hooks.example.com']);
  });
});

describe('checkWebhookUrl outside production: the guard is on, http is allowed', () => {
  const staging = (lookup: LookupFn = noDns) => ({ httpsOnly: false, guard: true, lookup });

  test('a public http or https URL is accepted', async () => {
    assert.equal(await checkWebhookUrl('http://hooks.example.com/in', staging(scripted([PUBLIC_IP]))), null);
    assert.equal(await checkWebhookUrl('https://hooks.example.com/in', staging(scripted([PUBLIC_IP]))), null);
  });

  test('internal targets are refused over http as over https', async () => {
    assert.equal(await checkWebhookUrl('http://10.0.0.1/hook', staging()), 'la URL apunta a una dirección privada (private)');
    assert.equal(await checkWebhookUrl('http://127.0.0.1:3000/', staging()), 'la URL apunta a una dirección privada (loopback)');
    assert.equal(await checkWebhookUrl('http://[::1]/', staging()), 'la URL apunta a una dirección privada (loopback)');
    assert.equal(await checkWebhookUrl('http://169.254.169.254/latest/meta-data', staging()), 'la URL apunta a una dirección privada (metadata)');
    assert.equal(await checkWebhookUrl('http://rebind.example/', staging(scripted(['127.0.0.1']))), NOT_A_PUBLIC_HOST);
    assert.equal(await checkWebhookUrl('http://localhost:3000/', { httpsOnly: false, guard: true }), NOT_A_PUBLIC_HOST);
  });
});

describe('checkWebhookUrl with the guard opted out (ALLOW_PRIVATE_WEBHOOK_TARGETS=1)', () => {
  const dev = { httpsOnly: false, guard: false, lookup: noDns };

  test('a local http receiver is allowed (no DNS)', async () => {
    assert.equal(await checkWebhookUrl('http://127.0.0.1:3000/hook', dev), null);
    assert.equal(await checkWebhookUrl('http://localhost:3000/hook', dev), null);
  });

  test('userinfo is still refused', async () => {
    assert.equal(await checkWebhookUrl('http://user:pw@127.0.0.1:3000/hook', dev), 'la URL no puede incluir usuario ni contraseña');
  });

  test('only http and https schemes', async () => {
    assert.equal(await checkWebhookUrl('ftp://127.0.0.1/', dev), 'la URL debe usar http o https');
  });
});

describe('createGuardedAgent with the guard on (connect-time check, real local receiver)', () => {
  test('a hostname resolving to loopback is refused at connect and nothing reaches the receiver', async () => {
    const server = await receiver();
    const lookup = scripted(['127.0.0.1']);
    const agent = createGuardedAgent({ guard: true, lookup });
    try {
      await assert.rejects(
        request(`http://rebind.test:${server.port}/`, { dispatcher: agent, method: 'POST', body: '{}' }),
        // The message (a delivery's error_message, which the tenant reads) names the host, not where it resolved;
        // the address and its range are fields, for the server's log.
        (error: NodeJS.ErrnoException & { address?: string; reason?: string }) =>
          error.code === 'ERR_SSRF_BLOCKED' && error.message === 'destino bloqueado (SSRF): rebind.test no resuelve a una dirección pública' && error.address === '127.0.0.1' && error.reason === 'loopback',
      );
      assert.deepEqual(lookup.calls, ['rebind.test']);
      assert.equal(server.connections, 0);
      assert.equal(server.hits, 0);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  test('an IP-literal URL is refused without DNS (net would never call lookup for it)', async () => {
    const server = await receiver();
    const agent = createGuardedAgent({ guard: true, lookup: noDns });
    try {
      for (const origin of [`http://127.0.0.1:${server.port}`, `http://[::ffff:127.0.0.1]:${server.port}`]) {
        await assert.rejects(request(`${origin}/`, { dispatcher: agent, method: 'POST' }), { code: 'ERR_SSRF_BLOCKED' }, origin);
      }
      assert.equal(server.connections, 0);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  test('one blocked address among public ones refuses the connection before any connect', async () => {
    const server = await receiver();
    const agent = createGuardedAgent({ guard: true, lookup: scripted([PUBLIC_IP, '127.0.0.1']) });
    try {
      await assert.rejects(request(`http://mixed.test:${server.port}/`, { dispatcher: agent, method: 'POST' }), { code: 'ERR_SSRF_BLOCKED' });
      assert.equal(server.connections, 0);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  test('DNS rebinding over TLS: public at registration, loopback at connect → refused at connect', async () => {
    const server = await receiver(true);
    const url = `https://rebind.test:${server.port}/hook`;
    const lookup = scripted([PUBLIC_IP], ['127.0.0.1']);
    const agent = createGuardedAgent({ guard: true, lookup, agent: { connect: { ca: TLS_CERT } } });
    try {
      assert.equal(await checkWebhookUrl(url, { httpsOnly: true, guard: true, lookup }), null);
      await assert.rejects(request(url, { dispatcher: agent, method: 'POST', body: '{}' }), { code: 'ERR_SSRF_BLOCKED' });
      assert.deepEqual(lookup.calls, ['rebind.test', 'rebind.test']);
      assert.equal(server.connections, 0);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  test('connects to exactly the checked address with one lookup per connection (allow hook admits loopback)', async () => {
    const server = await receiver();
    const lookup = scripted(['127.0.0.1']);
    const agent = createGuardedAgent({ guard: true, lookup, allow: (ip) => ip === '127.0.0.1' });
    try {
      const remotes = await connectedTo(async () => {
        for (let i = 0; i < 2; i++) {
          const res = await request(`http://rebind.test:${server.port}/`, { dispatcher: agent, method: 'POST', body: '{}' });
          assert.equal(res.statusCode, 200);
          await res.body.text();
        }
      });
      assert.deepEqual(remotes, ['127.0.0.1', '127.0.0.1']);
      assert.equal(server.connections, 2);
      assert.equal(lookup.calls.length, 2);
      assert.deepEqual(server.seen.map((s) => s.local), ['127.0.0.1', '127.0.0.1']);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  test('TLS keeps the hostname for SNI and certificate validation while connecting to the checked IP', async () => {
    const server = await receiver(true);
    const lookup = scripted(['127.0.0.1']);
    const agent = createGuardedAgent({ guard: true, lookup, allow: (ip) => ip === '127.0.0.1', agent: { connect: { ca: TLS_CERT } } });
    try {
      const remotes = await connectedTo(async () => {
        const res = await request(`https://rebind.test:${server.port}/`, { dispatcher: agent, method: 'POST', body: '{}' });
        assert.equal(res.statusCode, 200);
        await res.body.text();
      });
      assert.deepEqual(remotes, ['127.0.0.1']);
      assert.deepEqual(server.seen, [{ local: '127.0.0.1', servername: 'rebind.test' }]);
      assert.equal(lookup.calls.length, 1);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  test('the allow hook admits only what it names', async () => {
    const server = await receiver();
    const agent = createGuardedAgent({ guard: true, lookup: scripted(['127.0.0.2']), allow: (ip) => ip === '127.0.0.1' });
    try {
      await assert.rejects(request(`http://rebind.test:${server.port}/`, { dispatcher: agent }), { code: 'ERR_SSRF_BLOCKED' });
      assert.equal(server.connections, 0);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  test('a resolver failure fails the request with the resolver error', async () => {
    const agent = createGuardedAgent({ guard: true, lookup: notFound });
    try {
      await assert.rejects(request('http://nope.invalid:9/', { dispatcher: agent }), { code: 'ENOTFOUND' });
    } finally {
      await agent.close();
    }
  });

  test('options that would route around the guard are refused at construction', () => {
    assert.throws(() => createGuardedAgent({ guard: true, agent: { connect: (_opts, cb) => cb(new Error('x'), null) } }), TypeError);
    assert.throws(() => createGuardedAgent({ guard: true, agent: { socketPath: '/tmp/x.sock' } }), TypeError);
    assert.throws(() => createGuardedAgent({ guard: true, agent: { connect: { path: '/tmp/x.sock' } } }), TypeError);
  });

  test('undici Agent options pass through (connectTimeout reaches the connector)', async () => {
    // A lookup that never answers: only the connect timeout can end the request.
    const hang: LookupFn = () => new Promise(() => {});
    const agent = createGuardedAgent({ guard: true, lookup: hang, agent: { connectTimeout: 50, headersTimeout: 1000 } });
    try {
      await assert.rejects(request('http://slow.test:9/', { dispatcher: agent }), { code: 'UND_ERR_CONNECT_TIMEOUT' });
    } finally {
      await agent.close();
    }
  });
});

describe('createGuardedAgent with the guard opted out', () => {
  test('the guard is off: a plain agent reaches a local receiver', async () => {
    const server = await receiver();
    const agent = createGuardedAgent({ guard: false });
    try {
      const res = await request(`http://127.0.0.1:${server.port}/`, { dispatcher: agent, method: 'POST', body: '{}' });
      assert.equal(res.statusCode, 200);
      await res.body.text();
      assert.equal(server.hits, 1);
    } finally {
      await agent.close();
      await server.close();
    }
  });

  test('the request the guard refuses goes through, with the injected resolver honoured', async () => {
    const server = await receiver();
    const lookup = scripted(['127.0.0.1']);
    const agent = createGuardedAgent({ guard: false, lookup });
    try {
      const res = await request(`http://rebind.test:${server.port}/`, { dispatcher: agent, method: 'POST', body: '{}' });
      assert.equal(res.statusCode, 200);
      await res.body.text();
      assert.equal(server.hits, 1);
      assert.deepEqual(lookup.calls, ['rebind.test']);
    } finally {
      await agent.close();
      await server.close();
    }
  });
});
