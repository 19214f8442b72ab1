// Webhook receivers for the webhooks bench, a child process of its own so
// their CPU is neither the web's nor the worker's: RECEIVERS node:http servers
// (one port each: three origins, like three customers' endpoints) that read
// the body, answer 200 at once and verify nothing. Each arrival is recorded
// with its time (epoch ms, sub-ms precision) and the latency from the event's
// `created_at` (the envelope's, the first `created_at` of the body: the
// envelope puts it before `data`).
//
// Control server on PORT (spawnNodeServer): GET /healthz, GET /urls,
// POST /reset, GET /stats[?latencies&times].
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const RECEIVERS = Number(process.env.RECEIVERS ?? 3);
const CREATED_AT = '"created_at":"';

const now = () => performance.timeOrigin + performance.now();

type Stats = {
  arrivals: number;
  /** Arrivals whose X-Service-Attempt is above 1 (retries). */
  retries: number;
  /** Distinct deliveries (X-Service-Delivery is `<delivery_id>-<attempt>`; the part before the dash): arrivals minus duplicates and retries. */
  distinct: Set<string>;
  perReceiver: number[];
  first: number;
  last: number;
  /** ms from the envelope's created_at to arrival, one per arrival. */
  latencies: number[];
  /** Arrival times (epoch ms), one per arrival. */
  times: number[];
};

function fresh(): Stats {
  return { arrivals: 0, retries: 0, distinct: new Set(), perReceiver: Array(RECEIVERS).fill(0), first: 0, last: 0, latencies: [], times: [] };
}

let stats = fresh();

function receiver(index: number): http.Server {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = now();
      const body = chunks.length === 1 ? chunks[0].toString('latin1') : Buffer.concat(chunks).toString('latin1');
      const i = body.indexOf(CREATED_AT);
      const createdAt = i < 0 ? Number.NaN : Date.parse(body.slice(i + CREATED_AT.length, i + CREATED_AT.length + 24));
      stats.arrivals++;
      stats.perReceiver[index]++;
      if (stats.first === 0) stats.first = at;
      stats.last = at;
      stats.times.push(at);
      if (Number.isFinite(createdAt)) stats.latencies.push(at - createdAt);
      if (req.headers['x-service-attempt'] !== '1') stats.retries++;
      const delivery = req.headers['x-service-delivery'];
      if (typeof delivery === 'string') {
        const dash = delivery.lastIndexOf('-');
        stats.distinct.add(dash < 0 ? delivery : delivery.slice(0, dash));
      }
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
      res.end('ok');
    });
  });
  server.keepAliveTimeout = 65_000;
  return server;
}

const servers = await Promise.all(
  Array.from({ length: RECEIVERS }, (_, i) => {
    const s = receiver(i);
    return new Promise<http.Server>((resolve) => s.listen(0, '127.0.0.1', () => resolve(s)));
  }),
);
const urls = servers.map((s, i) => `http://127.0.0.1:${(s.address() as AddressInfo).port}/hooks/${i + 1}`);

const control = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://x');
  const json = (value: unknown) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
  };
  if (url.pathname === '/healthz') return json({ ok: true });
  if (url.pathname === '/urls') return json(urls);
  if (url.pathname === '/reset' && req.method === 'POST') {
    stats = fresh();
    return json({ ok: true });
  }
  if (url.pathname === '/stats') {
    return json({
      arrivals: stats.arrivals,
      retries: stats.retries,
      distinct: stats.distinct.size,
      perReceiver: stats.perReceiver,
      first: stats.first,
      last: stats.last,
      latencies: url.searchParams.has('latencies') ? stats.latencies : undefined,
      times: url.searchParams.has('times') ? stats.times : undefined,
    });
  }
  res.writeHead(404).end();
});
control.listen(Number(process.env.PORT), '127.0.0.1');

process.once('SIGTERM', () => {
  for (const s of [...servers, control]) {
    s.close();
    s.closeAllConnections();
  }
  process.exit(0);
});
