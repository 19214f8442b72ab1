// A real HTTP receiver for webhook tests: one server, one behaviour per path,
// every request recorded with its raw body. Signatures are checked in the
// tests with node:crypto directly, never with the project's signer.
import { createHmac, timingSafeEqual } from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Received = { path: string; headers: IncomingHttpHeaders; body: string; at: number };

/** What a path answers; `hang` never answers (until the server closes); `until`: answers once it settles. */
export type Behaviour = (req: Received, count: number) => { status?: number; body?: string | Buffer; headers?: Record<string, string>; hang?: boolean; delayMs?: number; until?: Promise<unknown> };

export type Receiver = {
  url: (path: string) => string;
  received: Received[];
  on: (path: string, behaviour: Behaviour) => void;
  at: (path: string) => Received[];
  close: () => Promise<void>;
};

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const behaviours = new Map<string, Behaviour>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry: Received = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(entry);
      const behaviour: Behaviour = behaviours.get(entry.path) ?? (() => ({ status: 200, body: 'ok' }));
      const answer = behaviour(entry, received.filter((r) => r.path === entry.path).length);
      if (answer.hang) return;
      const send = () => {
        res.writeHead(answer.status ?? 200, answer.headers ?? {});
        res.end(answer.body ?? '');
      };
      if (answer.until) void answer.until.then(send, send);
      else if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    received,
    on: (path, behaviour) => behaviours.set(path, behaviour),
    at: (path) => received.filter((r) => r.path === path),
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * An independent check of `X-Service-Signature` (contract, Events:
 * "Signature"): `t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, keyed
 * with the whole secret, compared in constant time, |now - t| <= 300 s.
 */
export function verifySignature(header: string | string[] | undefined, body: string, secret: string, nowSeconds = Math.floor(Date.now() / 1000)): boolean {
  if (typeof header !== 'string') return false;
  const parts = Object.fromEntries(header.split(',').map((kv) => kv.split('=', 2) as [string, string]));
  const t = Number(parts.t);
  if (!/^\d+$/.test(parts.t ?? '') || Math.abs(nowSeconds - t) > 300 || !/^[0-9a-f]{64}$/.test(parts.v1 ?? '')) return false;
  const expected = createHmac('sha256', secret).update(`${parts.t}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(parts.v1, 'hex'));
}

