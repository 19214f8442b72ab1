// Floors of the webhooks bench, each a child process of its own (like the web
// and the worker) so its CPU is measured alone. Config in BENCH_FLOOR (JSON);
// prints one JSON line: { count, seconds, rate, cpuUsPerItem, latency } (latency
// of one send() or one POST, ms).
//
// - `enqueue`: bare pg-boss `send()` of one small job per event (a group per
//   endpoint, as the fan-out inserted one per delivery before migration 101), from
//   `concurrency` loops over a pg-boss pool of `poolMax`. No HTTP, no
//   transaction, no event row: the most a process can enqueue.
// - `deliver`: undici POSTs of real envelopes (read from the events table)
//   signed with signatureHeader, the dispatcher's headers and agent options,
//   `perEndpoint` in flight to each receiver, no queue and no database.
// - `attempt`: the same through the product's attemptDelivery (deadline
//   signal, bounded body read): splits the gap between the floor and the
//   dispatcher into "HTTP code" and "queue + database".
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { Agent, request } from 'undici';
import { signatureHeader } from '../../lib/webhook-signature.ts';
import { API_VERSION } from '../../lib/version.ts';
import { attemptDelivery, READ_TIMEOUT_MS } from '../../worker/webhooks/attempt.ts';

type FloorConfig =
  | { mode: 'enqueue'; databaseUrl: string; count: number; concurrency: number; poolMax: number; groups: string[] }
  | {
      mode: 'deliver' | 'attempt';
      databaseUrl: string;
      companyId: string;
      count: number;
      perEndpoint: number;
      maxInFlight: number;
      endpoints: Array<{ id: string; url: string; secret: string }>;
    };

const config = JSON.parse(process.env.BENCH_FLOOR ?? '{}') as FloorConfig;

/** The options the retired `webhook-delivery` queue had: the floor stays comparable across sessions. */
const QUEUE_OPTIONS = { retryLimit: 10, retryDelay: 5, expireInSeconds: 40, deleteAfterSeconds: 24 * 3600 };

/** Runs `total` items over `loops` concurrent loops; returns seconds and CPU µs per item. */
async function timed(total: number, loops: number, item: (n: number) => Promise<void>) {
  let next = 0;
  const times = new Float64Array(total);
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (next < total) {
        const n = next++;
        const t = performance.now();
        await item(n);
        times[n] = performance.now() - t;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  times.sort();
  const at = (p: number) => Math.round(times[Math.min(total - 1, Math.floor(total * p))] * 100) / 100;
  const latency = { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: at(1) };
  return { count: total, seconds, rate: total / seconds, cpuUsPerItem: Math.round((used.user + used.system) / total), latency };
}

async function enqueue(c: Extract<FloorConfig, { mode: 'enqueue' }>) {
  const boss = new PgBoss({ connectionString: c.databaseUrl, max: c.poolMax, supervise: false, schedule: false });
  boss.on('error', (error) => process.stderr.write(`pg-boss (floor): ${error}\n`));
  await boss.start();
  const queue = `bench-enqueue-floor-${randomBytes(3).toString('hex')}`;
  await boss.createQueue(queue, QUEUE_OPTIONS);
  const send = (n: number) =>
    boss
      .send(queue, { delivery_id: `floor_${n}`, attempt: 1 }, { ...QUEUE_OPTIONS, group: { id: c.groups[n % c.groups.length] } })
      .then(() => {});
  try {
    await timed(Math.min(500, c.count), c.concurrency, send); // warm-up: JIT, pool connections, plans
    return await timed(c.count, c.concurrency, send);
  } finally {
    await boss.deleteQueue(queue);
    await boss.stop({ graceful: false });
  }
}

async function deliver(c: Extract<FloorConfig, { mode: 'deliver' | 'attempt' }>) {
  const db = new pg.Client({ connectionString: c.databaseUrl });
  await db.connect();
  const { rows } = await db.query<{ id: string; name: string; payload: string }>(
    'SELECT id, name, payload FROM events WHERE company_id = $1 ORDER BY created_at LIMIT 2000',
    [c.companyId],
  );
  await db.end();
  if (rows.length === 0) throw new Error('deliver floor: no events to send');
  // The dispatcher's agent (worker/webhooks/dispatcher.ts), SSRF guard off as in development.
  const agent = new Agent({ connections: c.maxInFlight, connect: { timeout: READ_TIMEOUT_MS }, keepAliveTimeout: 10_000 });
  const post = async (n: number, endpoint: (typeof c.endpoints)[number]) => {
    const ev = rows[n % rows.length];
    const deliveryId = `floor_${n}`;
    if (c.mode === 'attempt') {
      const out = await attemptDelivery(agent, { url: endpoint.url, secret: endpoint.secret, payload: ev.payload, event: ev.name, eventId: ev.id, deliveryId, attempt: 1 });
      if (!out.ok) throw new Error(`deliver floor: ${out.error}`);
      return;
    }
    const res = await request(endpoint.url, {
      method: 'POST',
      dispatcher: agent,
      body: ev.payload,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'user-agent': `WorkspaceService-Webhooks/${API_VERSION}`,
        'x-service-signature': signatureHeader(endpoint.secret, ev.payload),
        'x-service-event': ev.name,
        'x-service-event-id': ev.id,
        'x-service-delivery': `${deliveryId}-1`, // the id of this attempt, as the worker sends it
        'x-service-attempt': '1',
      },
    });
    await res.body.text();
    if (res.statusCode !== 200) throw new Error(`deliver floor: receiver answered ${res.statusCode}`);
  };
  // perEndpoint loops per endpoint, as groupConcurrency allows the dispatcher.
  const run = (total: number) => {
    const loops = c.endpoints.length * c.perEndpoint;
    return timed(total, loops, (n) => post(n, c.endpoints[n % c.endpoints.length]));
  };
  try {
    await run(Math.min(1500, c.count)); // warm-up: JIT, keep-alive connections
    return await run(c.count);
  } finally {
    await agent.close();
  }
}

const result = config.mode === 'enqueue' ? await enqueue(config) : await deliver(config);
process.stdout.write(`BENCH_FLOOR_JSON ${JSON.stringify(result)}\n`);
process.exit(0);
