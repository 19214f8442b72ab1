// The drills (docs/operations.md, "Drills"): each runs the real web and
// worker processes over a real PostgreSQL, breaks something the way it breaks
// in production, and reports what it did and what it found.
import { randomUUID } from 'node:crypto';
import { createForm } from '../api/admin/forms.ts';
import { CrossTenantWalk, snapshot, walkTenant } from '../test/helpers/cross-tenant-walk.ts';
import * as sampleFiles from '../test/helpers/forms.ts';
import { memoryOf } from '../bench/lib/process.ts';
import { formCorpus, imageCorpus, svgCorpus, type HostileFile } from './hostile-corpus.ts';
import { api, finding, kill9, receiver, startWeb, startWorkerProcess, tenant, until, type Drill } from './lib.ts';

/** kill -9 of the worker while 1,000 events go to 3 receivers: every event reaches every receiver, duplicates keep their event id. */
const EVENTS = 1000;
export const workerKill: Drill = {
  name: 'worker-kill',
  summary: 'kill -9 of the worker while 1,000 events are delivered to 3 receivers',
  async run(ctx) {
    const t = await tenant(ctx.pool, { rateLimitPerMinute: 1_000_000 });
    const receivers = await Promise.all([receiver(), receiver(), receiver()]);
    const web = await startWeb(ctx);
    let worker: ReturnType<typeof startWorkerProcess> | null = null;
    try {
      for (const r of receivers) {
        const res = await api(web.url, t.key, 'POST', '/webhook-endpoints', { data: { url: r.url, enabled_events: ['customer.created'] } });
        if (res.status !== 201) throw new Error(`endpoint: ${res.status} ${JSON.stringify(res.body)}`);
      }
      const ids: string[] = [];
      for (let batch = 0; batch < EVENTS / 20; batch++) {
        await Promise.all(Array.from({ length: 20 }, async (_, i) => {
          const res = await api(web.url, t.key, 'POST', '/customers', { data: { name: `Cliente ${batch}-${i}` } });
          if (res.status === 201) ids.push(res.body.data.id);
        }));
      }
      const { rows } = await ctx.pool.query<{ id: string }>(`SELECT id FROM events WHERE company_id = $1 AND name = 'customer.created'`, [t.companyId]);
      const events = new Set(rows.map((r) => r.id));
      const expected = EVENTS * receivers.length;
      // The backlog is written first; the worker starts on it and is killed mid-way.
      worker = startWorkerProcess(ctx);
      const seen = () => receivers.reduce((n, r) => n + r.received.length, 0);
      await until(async () => seen() >= 600, 60_000);
      const atKill = seen();
      kill9(worker!);
      ctx.log(`worker killed with SIGKILL after ${atKill} deliveries; a new one starts in 1 s`);
      await new Promise((r) => setTimeout(r, 1000));
      worker = startWorkerProcess(ctx);
      const started = Date.now();
      const complete = await until(async () => receivers.every((r) => events.size && [...events].every((id) => r.received.some((x) => x.eventId === id))) || null, 240_000);
      const receivedAfter = (Date.now() - started) / 1000;
      // Every delivery recorded: the ones the dead worker had claimed wait for their lease to run out
      // (40 s), are claimed again and sent again (the duplicates below, same event id).
      const succeeded = async () =>
        (await ctx.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE company_id = $1 AND status = 'succeeded'`, [t.companyId])).rows[0].n;
      const recorded = await until(async () => (await succeeded()) === expected || null, 240_000);
      const missing = receivers.reduce((n, r) => n + [...events].filter((id) => !r.received.some((x) => x.eventId === id)).length, 0);
      const total = seen();
      const duplicates = total - events.size * receivers.length;
      const foreign = receivers.reduce((n, r) => n + r.received.filter((x) => !events.has(x.eventId)).length, 0);
      return {
        name: this.name,
        did: `${ids.length} customers → ${events.size} events × 3 receivers; worker kill -9 after ${atKill} deliveries; all received ${complete ? `${receivedAfter.toFixed(1)} s after the restart` : 'NOT within 240 s'}, all recorded succeeded ${recorded ? `${((Date.now() - started) / 1000).toFixed(1)} s after it` : 'NOT within 240 s'}`,
        findings: [
          // Without these two, a run that wrote no events or killed nothing mid-way would pass the rest.
          finding('events written and recorded', `${EVENTS}`, `${ids.length} written, ${events.size} recorded`, ids.length === EVENTS && events.size === EVENTS),
          finding('deliveries made before the kill', `between 1 and ${expected - 1}`, atKill, atKill > 0 && atKill < expected),
          finding('events lost (event × receiver never delivered)', '0', missing, missing === 0),
          finding('deliveries recorded succeeded', `${expected}`, await succeeded(), recorded !== null),
          finding('deliveries with an event id not of this run', '0', foreign, foreign === 0),
          finding('duplicates (redelivered after the kill, same event id)', 'reported', duplicates, true),
        ],
      };
    } finally {
      if (worker) kill9(worker);
      await web.stop();
      await Promise.all(receivers.map((r) => r.close()));
    }
  },
};

/** kill -9 of the web process between a write's commit and its answer, the client retrying with the same Idempotency-Key: exactly one record. */
export const idempotencyCrash: Drill = {
  name: 'web-kill-after-commit',
  summary: 'kill -9 of the web process between a commit and its answer; the client retries with the same Idempotency-Key',
  async run(ctx) {
    const t = await tenant(ctx.pool);
    const rounds = 10;
    let replayed = 0;
    let extra = 0;
    let cut = 0;
    for (let i = 0; i < rounds; i++) {
      const crashing = await startWeb(ctx, { CRASH_AFTER_COMMIT_OF: '^INSERT INTO customers' }, ['--import', './test/helpers/crash-after-commit.ts']);
      const key = randomUUID();
      const name = `Idempotente ${i} ${key}`;
      const first = await api(crashing.url, t.key, 'POST', '/customers', { data: { name } }, { 'Idempotency-Key': key }).catch(() => null);
      if (first === null) cut++;
      await crashing.stop();
      const web = await startWeb(ctx);
      const retry = await api(web.url, t.key, 'POST', '/customers', { data: { name } }, { 'Idempotency-Key': key });
      if (retry.headers.get('idempotent-replayed') === 'true') replayed++;
      await web.stop();
      const { rows } = await ctx.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM customers WHERE company_id = $1 AND name = $2', [t.companyId, name]);
      if (rows[0].n !== 1) extra++;
    }
    return {
      name: this.name,
      did: `${rounds} rounds: POST /customers with an Idempotency-Key to a web process that kills itself right after PostgreSQL acknowledges the COMMIT; a new process; the same request again`,
      findings: [
        finding('answers cut by the kill', `${rounds}`, cut, cut === rounds),
        finding('rounds not ending with exactly one customer', '0', extra, extra === 0),
        finding('retries answered from the stored answer (Idempotent-Replayed)', `${rounds}`, replayed, replayed === rounds),
      ],
    };
  },
};

/** Two web processes, one key, twice the limit: admitted ≤ 600 (+1 %) in every sliding minute. */
export const rateLimitTwoWebs: Drill = {
  name: 'rate-limit-two-webs',
  summary: 'two web processes against one key at twice the limit',
  async run(ctx) {
    const seconds = Number(process.env.DRILL_RATE_SECONDS || 120);
    const t = await tenant(ctx.pool);
    const webs = await Promise.all([startWeb(ctx), startWeb(ctx)]);
    const admitted: number[] = [];
    let refused = 0;
    let other = 0;
    const burst = { admitted: 0, other: 0 };
    try {
      // 1,200 requests a minute in all: 10 per second at each process.
      const end = Date.now() + seconds * 1000;
      await Promise.all(webs.map(async (web) => {
        for (let tick = Date.now(); tick < end; tick += 100) {
          const wait = tick - Date.now();
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          const res = await api(web.url, t.key, 'GET', '/customers?limit=1').catch(() => null);
          if (res?.status === 200) admitted.push(Date.now());
          else if (res?.status === 429) refused++;
          else other++;
        }
      }));
      // Then a burst: 1,400 requests at once from another key, half at each process. Each process's
      // event loop and the database are busy at once, so leases answer slowly: the processes must not
      // fall back to a window of their own each (2 × the limit) while the database is there.
      const burstKey = await tenant(ctx.pool);
      const answers = await Promise.all(
        Array.from({ length: 1400 }, (_, i) => api(webs[i % 2].url, burstKey.key, 'GET', '/customers?limit=1').catch(() => null)),
      );
      burst.admitted = answers.filter((r) => r?.status === 200).length;
      burst.other = answers.filter((r) => r?.status !== 200 && r?.status !== 429).length;
    } finally {
      await Promise.all(webs.map((w) => w.stop()));
    }
    admitted.sort((a, b) => a - b);
    let worst = 0;
    for (let i = 0, j = 0; i < admitted.length; i++) {
      while (admitted[i] - admitted[j] >= 60_000) j++;
      worst = Math.max(worst, i - j + 1);
    }
    return {
      name: this.name,
      did: `${seconds} s at 1,200 requests a minute over two web processes, one key (limit 600 a minute); then 1,400 requests at once with another key`,
      findings: [
        finding('most requests admitted in any sliding minute', '≤ 606 (600 + 1 %)', worst, worst <= 606),
        finding('requests refused with 429', '> 0', refused, refused > 0),
        finding('answers other than 200 or 429', '0', other, other === 0),
        finding('admitted from the burst of 1,400 at once', '≤ 606 (600 + 1 %)', burst.admitted, burst.admitted <= 606),
        finding('burst answers other than 200 or 429', '0', burst.other, burst.other === 0),
      ],
    };
  },
};

/** PostgreSQL stopped under write load: fast 503s, recovery without restarting the processes, no acknowledged write lost, worker and LISTEN back. */
export const databaseRestart: Drill = {
  name: 'database-restart',
  summary: 'PostgreSQL restarted under write load',
  async run(ctx) {
    const t = await tenant(ctx.pool, { rateLimitPerMinute: 1_000_000 });
    const hook = await receiver();
    // A name of its own in application_name, to find its LISTEN connection (workspace:<DYNO>:listen).
    const web = await startWeb(ctx, { DYNO: 'web.drill' });
    const worker = startWorkerProcess(ctx);
    const acknowledged: string[] = [];
    const answers: Array<{ status: number; ms: number; at: number }> = [];
    let stop = false;
    let upAt = 0;
    let firstAfterUp = 0;
    try {
      // Both processes up before the outage: one that starts while PostgreSQL is away exits 1 (the
      // platform restarts it), which is not what this drill is about.
      await worker.started;
      const endpoint = await api(web.url, t.key, 'POST', '/webhook-endpoints', { data: { url: hook.url, enabled_events: ['customer.created'] } });
      if (endpoint.status !== 201) throw new Error(`endpoint: ${endpoint.status} ${JSON.stringify(endpoint.body)}`);
      const writer = (async () => {
        for (let n = 0; !stop; n++) {
          const started = Date.now();
          const res = await api(web.url, t.key, 'POST', '/customers', { data: { name: `Carga ${n}` } }).catch(() => ({ status: 0, body: null, headers: new Headers() }));
          answers.push({ status: res.status, ms: Date.now() - started, at: started });
          if (res.status === 201) {
            acknowledged.push(res.body.data.id);
            if (upAt && !firstAfterUp) firstAfterUp = Date.now();
          }
          await new Promise((r) => setTimeout(r, 50));
        }
      })();
      await new Promise((r) => setTimeout(r, 3000));
      await ctx.pool.end().catch(() => {});
      const downAt = Date.now();
      await ctx.stopDatabase();
      ctx.log('PostgreSQL stopped; starting it again in 5 s');
      await new Promise((r) => setTimeout(r, 5000));
      await ctx.startDatabase();
      upAt = Date.now();
      const pool = (await import('../db/pool.ts')).createPool(ctx.databaseUrl, 2, 'drills-check');
      try {
        // The web's LISTEN connection (the key cache's invalidations) back in PostgreSQL.
        const listening = await until(async () => (await pool.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'workspace:web.drill:listen'`).catch(() => ({ rowCount: 0 }))).rowCount && Date.now(), 30_000);
        await until(async () => firstAfterUp || null, 30_000);
        // The worker back: the first delivery to arrive after PostgreSQL is (no event was written while it was down).
        const workerBack = await until(async () => hook.received.find((r) => r.at >= upAt)?.at ?? null, 30_000);
        await new Promise((r) => setTimeout(r, 2000));
        stop = true;
        await writer;
        const { rows } = await pool.query<{ id: string }>('SELECT id FROM customers WHERE company_id = $1 AND id = ANY($2)', [t.companyId, acknowledged]);
        const lost = acknowledged.length - rows.length;
        // And still delivering after the dust settles: one more write, answered and delivered.
        const after = await api(web.url, t.key, 'POST', '/customers', { data: { name: 'Tras el reinicio' } });
        const delivered = after.status === 201 && await until(async () => (await pool.query(`SELECT 1 FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE e.data->>'id' = $1 AND d.status = 'succeeded'`, [after.body.data.id])).rowCount, 60_000);
        const refused = answers.filter((a) => a.status !== 201);
        const slowest = answers.filter((a) => a.at >= downAt - 1000).reduce((m, a) => Math.max(m, a.ms), 0);
        const since = (at: number | null | false | undefined) => (at ? `${((at - upAt) / 1000).toFixed(1)} s` : 'not within 30 s');
        const within5 = (at: number | null | false | undefined) => !!at && at - upAt <= 5000;
        // A worker that died says why in its last lines.
        if (worker.exited() !== null) ctx.log(`the worker exited (${worker.exited()}); its last output:\n${worker.tail().slice(-2000)}`);
        return {
          name: this.name,
          did: `writes every 50 ms; PostgreSQL down for 5 s; ${acknowledged.length} writes acknowledged, ${refused.length} refused while it was down`,
          findings: [
            finding('acknowledged writes lost', '0', lost, lost === 0),
            finding('statuses of the refused writes', '503', [...new Set(refused.map((f) => f.status))].join(', ') || 'none', refused.length > 0 && refused.every((f) => f.status === 503)),
            finding('slowest answer from the outage on (refused or not)', '< 5 s', `${(slowest / 1000).toFixed(1)} s`, slowest < 5000),
            finding('web: first acknowledged write after PostgreSQL is back', '≤ 5 s', since(firstAfterUp), within5(firstAfterUp)),
            finding("web: the key cache's LISTEN connection back", '≤ 5 s', since(listening), within5(listening)),
            finding('worker: first delivery after PostgreSQL is back', '≤ 5 s', since(workerBack), within5(workerBack)),
            finding('worker process still running (no restart)', 'yes', worker.exited() === null ? 'yes' : `exited ${worker.exited()}`, worker.exited() === null),
            finding('a write after the restart answered and delivered', '201, delivered', `${after.status}, ${delivered ? 'delivered' : 'not delivered in 60 s'}`, !!delivered),
          ],
        };
      } finally {
        await pool.end();
      }
    } finally {
      stop = true;
      kill9(worker);
      await web.stop();
      await hook.close();
    }
  },
};

/**
 * The cross-tenant walk against a running server: the walk of test/security.cross-tenant.test.ts
 * (test/helpers/cross-tenant-walk.ts, derived from the router table), every route with another
 * company's key or session and the first company's ids in paths and bodies, and every list.
 */
export const crossTenant: Drill = {
  name: 'cross-tenant',
  summary: "the cross-tenant walk over every route of the router table with a second company's ids in paths and bodies",
  async run(ctx) {
    const victim = await walkTenant(ctx.pool);
    const attacker = await walkTenant(ctx.pool);
    const web = await startWeb(ctx);
    try {
      const walk = new CrossTenantWalk(`${web.url}/api/v1`, ctx.pool, victim, attacker);
      await walk.prepare();
      const before = await snapshot(ctx.pool, victim.companyId);
      const paths = await walk.paths();
      const bodies = await walk.bodies();
      const lists = await walk.lists();
      const queries = await walk.queries();
      const ownerReads = await walk.ownerReads();
      const changed = JSON.stringify(await snapshot(ctx.pool, victim.companyId)) !== JSON.stringify(before);
      const breaches = [...paths.breaches, ...bodies.breaches, ...lists.breaches, ...queries.breaches];
      for (const b of [...breaches, ...ownerReads]) ctx.log(`${b.request}: ${b.status} ${b.text.slice(0, 200)}`);
      const requests = paths.checked.length + bodies.checked.length + lists.checked.length + queries.checked.length * 2;
      return {
        name: this.name,
        did: `${requests} requests on a running server with the attacker's credential: ${paths.checked.length} on the ${walk.paramRoutes.length} routes with a path parameter (${walk.records.size} resources), ${bodies.checked.length} writes naming the victim's records in body fields, ${lists.checked.length} lists, ${queries.checked.length} list filters and cursors given the victim's ids (each against an unknown id)`,
        findings: [
          finding('answers other than 404 not_found (paths), 404 or 422 (ids in bodies), victim ids in lists, or filters and cursors answering otherwise than for an unknown id', '0', breaches.length, breaches.length === 0),
          finding('body id fields the walk has no victim record for', '0', bodies.unmapped.length, bodies.unmapped.length === 0),
          finding('victim records changed', 'none', changed ? 'changed' : 'none', !changed),
          finding('victim records the owner can no longer read', '0', ownerReads.length, ownerReads.length === 0),
        ],
      };
    } finally {
      await web.stop();
    }
  },
};

/** The hostile-upload corpus against a running web process: 100 % refused, the process alive, memory bounded. */
export const hostileUploads: Drill = {
  name: 'hostile-uploads',
  summary: 'the hostile-upload corpus (refused kinds, decompression bombs, lying names, polyglots) against a running server',
  async run(ctx) {
    const t = await tenant(ctx.pool, { rateLimitPerMinute: 100_000 });
    const form = await createForm(ctx.pool, t.companyId, sampleFiles.sampleFormFile());
    const images = await imageCorpus();
    const forms = await formCorpus();
    const svgs = svgCorpus();
    const web = await startWeb(ctx);
    const MEMORY_BOUND_MB = 150;
    try {
      const product = await api(web.url, t.key, 'POST', '/products', { data: { name: 'Blanco', prices_cents: { mxn: 100 } } });
      const brand = await api(web.url, t.key, 'POST', '/brands', { data: { name: 'Marca blanco' } });
      if (product.status !== 201 || brand.status !== 201) throw new Error(`targets: product ${product.status}, brand ${brand.status}`);
      const imageTargets = [`/products/${product.body.data.id}/image`, `/brands/${brand.body.data.id}/logo`];
      const formAnswers: Array<[string, string]> = [['answers[email]', 'drill@example.com'], ['answers[name]', 'Drill']];
      const memory = (pid: number | undefined) =>
        memoryOf(pid!).then((m) => ({ rssMb: Math.round(m.rss / 1024 ** 2), peakMb: Math.round(m.hwm / 1024 ** 2) }), () => null);
      const before = await memory(web.child.pid);
      const blobsBefore = (await ctx.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM blobs WHERE company_id = $1', [t.companyId])).rows[0].n;
      const send = async (path: string, fields: Array<[string, string]>, fileField: string, file: HostileFile) => {
        const body = new FormData();
        for (const [name, value] of fields) body.append(name, value);
        body.append(fileField, new Blob([new Uint8Array(file.bytes)], { type: file.type ?? 'application/octet-stream' }), file.filename);
        try {
          const res = await fetch(`${web.url}/api/v1${path}`, { method: 'POST', headers: { authorization: `Bearer ${t.key}` }, body, signal: AbortSignal.timeout(30_000) });
          const json = (await res.json().catch(() => null)) as { error?: string } | null;
          return { status: res.status, error: json?.error ?? '(no JSON error)' };
        } catch (error) {
          return { status: 0, error: (error as Error).message };
        }
      };
      const outcomes: Array<{ label: string; status: number; error: string }> = [];
      // Each file twice, the second time four at once: refusals must hold under concurrency too.
      for (const round of [1, 4]) {
        await Promise.all(
          Array.from({ length: round }, async () => {
            for (const target of imageTargets) {
              for (const file of images) outcomes.push({ label: `${target.split('/').at(-1)}: ${file.label}`, ...(await send(target, [], 'file', file)) });
            }
            for (const file of forms) {
              const result = await send(`/forms/${form.id}/submissions`, formAnswers, `files[${file.field}]`, file);
              outcomes.push({ label: `form ${file.field}: ${file.label}`, ...result });
            }
            for (const file of svgs) outcomes.push({ label: `company logo: ${file.label}`, ...(await send('/company/logo', [], 'logo', file)) });
          }),
        );
      }
      const refused = (o: { status: number; error: string }) => o.status >= 400 && o.status < 500 && ['validation_failed', 'request_too_large', 'unsupported_media_type'].includes(o.error);
      const notRefused = outcomes.filter((o) => !refused(o));
      for (const o of notRefused) ctx.log(`NOT refused: ${o.label} → ${o.status} ${o.error}`);
      const blobsAfter = (await ctx.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM blobs WHERE company_id = $1', [t.companyId])).rows[0].n;
      // Controls: sound files on the same routes are accepted, so the refusals above are the files', not the routes'.
      const png: HostileFile = { label: 'a sound PNG', filename: 'logo.png', bytes: await sampleFiles.png(), type: 'image/png' };
      const pdf: HostileFile = { label: 'a sound PDF', filename: 'cv.pdf', bytes: sampleFiles.pdf(), type: 'application/pdf' };
      const soundSvg: HostileFile = { label: 'a sound SVG', filename: 'logo.svg', bytes: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><defs><rect id="r" width="10" height="10"/></defs><use href="#r"/></svg>') };
      const controls = [
        ...(await Promise.all(imageTargets.map((target) => send(target, [], 'file', png)))),
        await send('/company/logo', [], 'logo', soundSvg),
        await send(`/forms/${form.id}/submissions`, formAnswers, 'files[cv]', pdf),
      ];
      const accepted = controls.filter((c) => c.status === 200 || c.status === 201).length;
      const alive = await fetch(`${web.url}/healthz`).then((r) => r.status).catch(() => 0);
      const after = await memory(web.child.pid);
      const growth = before && after ? after.peakMb - before.rssMb : null;
      const kinds = new Set(outcomes.map((o) => o.label)).size;
      return {
        name: this.name,
        did: `${kinds} hostile uploads (${images.length} image files to a product's image and a brand's logo, ${svgs.length} SVGs to the company logo, ${forms.length} to form fields; the largest a 1 GB zip bomb) each sent alone, then 4 at once: ${outcomes.length} requests to a running web process; then a sound file to each route`,
        findings: [
          finding('refused with 4xx and a contract error code', '100 %', `${(((outcomes.length - notRefused.length) / outcomes.length) * 100).toFixed(1)} % (${outcomes.length - notRefused.length} of ${outcomes.length})`, notRefused.length === 0),
          finding('blobs left behind by refused uploads', '0', blobsAfter - blobsBefore, blobsAfter === blobsBefore),
          finding('sound files on the same routes (PNG image and logo, SVG company logo, PDF form file) accepted', `${controls.length} of ${controls.length}`, `${accepted} of ${controls.length}`, accepted === controls.length),
          finding('web process alive (GET /healthz)', '200', alive, alive === 200),
          finding(`web peak memory above its resting RSS (${before?.rssMb ?? '?'} MB)`, `< ${MEMORY_BOUND_MB} MB`, growth === null ? 'not measured' : `${growth} MB`, growth === null || growth < MEMORY_BOUND_MB),
        ],
      };
    } finally {
      await web.stop();
    }
  },
};

export const drills: Drill[] = [workerKill, idempotencyCrash, rateLimitTwoWebs, databaseRestart, hostileUploads, crossTenant];
