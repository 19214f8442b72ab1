// Catalog benchmark, runnable on its own: `node bench/scenarios/catalog.ts`
// (Node 24: ./node_modules/.bin/node). Uses DATABASE_URL's server, else an
// embedded PostgreSQL under DATA_DIR/bench; makes a fresh database.
//
// 1. Product list over 100,000 products (plus 20,000 of a second company, so
//    the company filter has work to do): brand+category filters, and text
//    search. p50/p99 and requests/s through the whole Koa stack (auth, rate
//    limit, scope, validation, pagination), against the same SQL served by a
//    bare node:http handler: the ratio is the cost of the framework.
// 2. Thumbnails per second: sharp alone on the same originals, then through
//    the worker (pg-boss claim, read original from PostgreSQL, sharp, write
//    thumbnail, update rows; a process of its own, as deployed:
//    bench/lib/worker-process.ts) in the same run, then the same with the blobs in
//    an S3-compatible store (BLOB_STORE=s3, the local stand-in of
//    test/helpers/s3-stand-in.ts in a process of its own).
//
// Run with LOG_LEVEL=silent (the request log is read from the environment at import).
// Options (env): BENCH_SECONDS (default 8 per scenario), BENCH_CONCURRENCY (16),
// BENCH_PRODUCTS (100000), BENCH_IMAGES (120 measured), BENCH_THUMBNAIL_WARMUP (60 first,
// not measured), BENCH_THUMBNAIL_ROUNDS (2), BENCH_WORKER_NODE_ARGS (Node flags of the
// worker process, e.g. --trace-gc), BENCH_PROFILE=1 (a CPU profile of each worker).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import sharp, { type SharpOptions } from 'sharp';
import { createCompany } from '../../api/admin/companies.ts';
import { issueKey } from '../../api/admin/keys.ts';
import { closeDeps, createApp, createDeps } from '../../api/app.ts';
import { ALL_SCOPES } from '../../api/auth/scopes.ts';
import { startEmbedded } from '../../db/embedded.ts';
import { migrate } from '../../db/migrate.ts';
import { createPool } from '../../db/pool.ts';
import { loadConfig } from '../../lib/config.ts';
import { isObjectId } from '../../lib/objectid.ts';
import { makeThumbnail } from '../../storage/images.ts';
import { thumbnail as thumbnailJob } from '../../worker/jobs/thumbnail.ts';
import { procfileNodeArgs } from '../../scripts/procfile.ts';
import { cpuTimeMs, memoryOf, spawnNodeServer } from '../lib/process.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const PRODUCTS = Number(process.env.BENCH_PRODUCTS ?? 100_000);
const IMAGES = Number(process.env.BENCH_IMAGES ?? 120);
const WARMUP = Number(process.env.BENCH_THUMBNAIL_WARMUP ?? 60);

const dataDir = path.resolve(process.env.DATA_DIR || './.data');
const embedded = process.env.DATABASE_URL ? null : await startEmbedded(path.join(dataDir, 'bench'), { database: 'postgres', fast: true });
const serverUrl = new URL(process.env.DATABASE_URL ?? embedded!.url);
const dbName = `ws_bench_${randomBytes(4).toString('hex')}`;
const admin = new pg.Client({ connectionString: serverUrl.toString() });
await admin.connect();
await admin.query(`CREATE DATABASE ${dbName}`);
const dbUrl = new URL(serverUrl);
dbUrl.pathname = `/${dbName}`;
const databaseUrl = dbUrl.toString();

const pool = createPool(databaseUrl, 20);
await migrate(pool);
const configEnv = { NODE_ENV: 'test', LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl, RATE_LIMIT_PER_MINUTE: '100000000', ADMIN_TOKEN: 'bench-admin-token-0123456789' };
const config = loadConfig(configEnv);

// --- data -------------------------------------------------------------------
const { company } = await createCompany(pool, { name: 'Bench' });
const { company: other } = await createCompany(pool, { name: 'Other' });
const key = (await issueKey(pool, { companyId: company.id, scopes: [...ALL_SCOPES], rateLimitPerMinute: 100_000_000 })).secret;

async function seed(companyId: string, count: number, prefix: string) {
  // Row triggers (response-cache versions) off for the bulk load: 100,000
  // upserts of the same three version rows would dominate the seeding time.
  const db = await pool.connect();
  await db.query('SET session_replication_role = replica');
  try {
    await seedRows(db, companyId, count, prefix);
  } finally {
    await db.query('RESET session_replication_role');
    db.release();
  }
}

async function seedRows(pool: pg.PoolClient, companyId: string, count: number, prefix: string) {
  await pool.query(
    `INSERT INTO brands (id, company_id, name, slug)
     SELECT substr(md5($2 || 'b' || g), 1, 24), $1, 'Marca ' || g, 'marca-' || g FROM generate_series(1, 50) g`,
    [companyId, prefix],
  );
  await pool.query(
    `INSERT INTO product_categories (id, company_id, name, slug)
     SELECT substr(md5($2 || 'c' || g), 1, 24), $1, 'Categoría ' || g, 'categoria-' || g FROM generate_series(1, 30) g`,
    [companyId, prefix],
  );
  // Names from word lists: realistic trigram statistics, with a rare word ("titanio", ~0.2%).
  await pool.query(
    `INSERT INTO products (id, company_id, name, slug, sku, prices_cents, brand_id, brand_name, brand_slug, product_category_id, created_at)
     SELECT substr(md5($2 || 'p' || g), 1, 24), $1,
            (ARRAY['Playera','Pantalón','Taza','Cuaderno','Lámpara','Silla','Mochila','Gorra','Reloj','Botella'])[1 + g % 10] || ' ' ||
            (ARRAY['roja','azul','verde','negra','blanca','gris','café','rosa'])[1 + (g / 10) % 8] || ' ' ||
            (CASE WHEN g % 500 = 0 THEN 'titanio' ELSE (ARRAY['algodón','acero','madera','plástico','vidrio','piel'])[1 + (g / 80) % 6] END) || ' ' || g,
            'p-' || g, 'SKU-' || g, jsonb_build_object('mxn', 1000 + g % 5000),
            substr(md5($2 || 'b' || (1 + g % 50)), 1, 24), 'Marca ' || (1 + g % 50), 'marca-' || (1 + g % 50),
            substr(md5($2 || 'c' || (1 + g % 30)), 1, 24),
            now() - make_interval(secs => g)
       FROM generate_series(1, $3) g`,
    [companyId, prefix, count],
  );
}
let t0 = performance.now();
await seed(company.id, PRODUCTS, 'a');
await seed(other.id, Math.round(PRODUCTS / 5), 'o');
await pool.query('ANALYZE');
const seedSeconds = (performance.now() - t0) / 1000;
const brand = (n: number) => `marca-${n}`;
const categoryId = (await pool.query(`SELECT id FROM product_categories WHERE company_id = $1 AND slug = 'categoria-7'`, [company.id])).rows[0].id;

// --- servers ----------------------------------------------------------------
const deps = await createDeps({ config, pool, databaseUrl });
const app = createApp(deps).listen(0, '127.0.0.1');
await new Promise((r) => app.once('listening', r));
const appUrl = `http://127.0.0.1:${(app.address() as AddressInfo).port}/api/v1`;

// The bare server runs the list SQL the API runs for these queries (same
// select list, filters, order, limit and offset; api/routes/product-queries.ts and
// api/pagination.ts) and serialises the rows: no auth, no validation, no framework.
const LIST_SQL = (where: string) => `SELECT products.*,
  (SELECT json_build_object('id', c.id, 'name', c.name, 'slug', c.slug) FROM product_categories c
    WHERE c.company_id = products.company_id AND c.id = products.product_category_id) AS category
  FROM products WHERE company_id = $1 AND ${where} ORDER BY created_at DESC, id DESC LIMIT 26 OFFSET 0`;
// The API's filters (api/routes/products.ts, product-queries.ts): a comma list split into ObjectIds
// and slugs; categories resolved to this company's ids in a first query, then
// the page filters `product_category_id = ANY(ids)`; the brand condition tests
// only the kinds of value present. Same two queries, same SQL, same parameter order.
function splitIdsAndSlugs(value: string) {
  const parts = value.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
  return { ids: parts.filter(isObjectId), slugs: parts.filter((p) => !isObjectId(p)) };
}
async function filtersBare(brandParam: string, categoryParam: string) {
  const category = splitIdsAndSlugs(categoryParam);
  const { rows: resolved } = await pool.query<{ id: string }>(
    'SELECT id FROM product_categories WHERE company_id = $1 AND (id = ANY($2::text[]) OR slug = ANY($3::text[]))',
    [company.id, category.ids, category.slugs],
  );
  const categoryIds = resolved.map((r) => r.id);
  const values: unknown[] = [company.id];
  const add = (v: unknown) => `$${values.push(v)}`;
  const brand = splitIdsAndSlugs(brandParam);
  const brandParts: string[] = [];
  if (brand.ids.length) brandParts.push(`brand_id = ANY(${add(brand.ids)}::text[])`);
  if (brand.slugs.length) brandParts.push(`brand_slug = ANY(${add(brand.slugs)}::text[])`);
  const conditions = [brandParts.length ? `(${brandParts.join(' OR ')})` : 'false', `product_category_id = ANY(${add(categoryIds)}::text[])`];
  return pool.query(LIST_SQL(conditions.join(' AND ')), values);
}
// The bare server makes the same plan choice as the API (api/routes/product-queries.ts).
async function searchBare(q: string) {
  const pattern = `%${q}%`;
  const probe = await pool.query(
    `SELECT count(*)::int AS n FROM (SELECT search_text FROM products WHERE company_id = $1
       ORDER BY created_at DESC, id DESC LIMIT 2000) newest WHERE search_text ILIKE $2`,
    [company.id, pattern],
  );
  if (probe.rows[0].n >= 20) return pool.query(LIST_SQL(`search_text ILIKE $2`), [company.id, pattern]);
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL enable_indexscan = off');
    await client.query('SET LOCAL enable_seqscan = off');
    const result = await client.query(LIST_SQL(`search_text ILIKE $2`), [company.id, pattern]);
    await client.query('COMMIT');
    return result;
  } finally {
    client.release();
  }
}
const bare = http.createServer(async (req, res) => {
  const url = new URL(req.url!, 'http://x');
  const q = url.searchParams.get('q');
  const { rows } = q
    ? await searchBare(q)
    : await filtersBare(url.searchParams.get('brand')!, url.searchParams.get('category')!);
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({ data: rows.slice(0, 25) }));
});
bare.listen(0, '127.0.0.1');
await new Promise((r) => bare.once('listening', r));
const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`;

async function load(url: string, headers: Record<string, string>) {
  const latencies: number[] = [];
  const until = performance.now() + SECONDS * 1000;
  let errors = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < until) {
        const t = performance.now();
        const res = await fetch(url, { headers });
        await res.arrayBuffer();
        if (res.status !== 200) errors++;
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] * 10) / 10;
  return { requests: latencies.length, errors, rps: Math.round(latencies.length / elapsed), p50_ms: pct(0.5), p99_ms: pct(0.99) };
}

const scenarios = [
  { name: 'filters: brand (2 slugs) + category (id)', api: `/products?brand=${brand(3)},${brand(17)}&category=${categoryId}`, bare: `/?brand=${brand(3)},${brand(17)}&category=${categoryId}` },
  { name: 'search: common word (q=algod, 1 in 6)', api: `/products?q=algod`, bare: `/?q=algod` },
  { name: 'search: rare word (q=titanio, 1 in 500)', api: `/products?q=titanio`, bare: `/?q=titanio` },
  { name: 'search: absent word (q=zzzqqq)', api: `/products?q=zzzqqq`, bare: `/?q=zzzqqq` },
];
const results: Record<string, unknown>[] = [];
for (const s of scenarios) {
  await load(appUrl + s.api, { authorization: `Bearer ${key}` }); // warm-up is the first pass; measured below
  const viaApi = await load(appUrl + s.api, { authorization: `Bearer ${key}` });
  const viaBare = await load(bareUrl + s.bare, {});
  results.push({ scenario: s.name, api: viaApi, bare: viaBare, rps_ratio_api_to_bare: Math.round((viaApi.rps / viaBare.rps) * 100) / 100 });
}

async function explain(where: string, values: unknown[], sparse: boolean) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    if (sparse) await client.query('SET LOCAL enable_indexscan = off; SET LOCAL enable_seqscan = off');
    const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF) ${LIST_SQL(where)}`, [company.id, ...values]);
    await client.query('COMMIT');
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  } finally {
    client.release();
  }
}
const plans = {
  filters: await explain('(brand_slug = ANY($2::text[])) AND product_category_id = ANY($3::text[])', [[brand(3), brand(17)], [categoryId]], false),
  search_rare: await explain('search_text ILIKE $2', ['%titanio%'], true),
  search_common: await explain('search_text ILIKE $2', ['%algod%'], false),
  search_absent: await explain('search_text ILIKE $2', ['%zzzqqq%'], true),
};

// --- thumbnails ---------------------------------------------------------------
const originals = await Promise.all(
  Array.from({ length: IMAGES }, (_, i) =>
    sharp({ create: { width: 1600, height: 1200, channels: 3, noise: { type: 'gaussian', mean: 100 + i, sigma: 40 } } } as SharpOptions)
      .jpeg({ quality: 85 })
      .toBuffer(),
  ),
);
// CPU per thumbnail, split between this process (JavaScript and sharp's
// threads) and PostgreSQL (every `postgres` process, Linux /proc; null
// elsewhere or with an external DATABASE_URL on another machine).
function postgresCpuMs(): number | null {
  try {
    let total = 0;
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'postgres') total += cpuTimeMs(Number(pid), { withExitedChildren: true }) ?? 0;
      } catch {
        // the process ended meanwhile
      }
    }
    return total;
  } catch {
    return null;
  }
}
const ownCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const round1 = (ms: number | null | undefined) => (ms == null ? null : Math.round(ms * 10) / 10);

/**
 * A process's CPU time by thread name, in ms (Linux /proc; null elsewhere):
 * `MainThread` (JavaScript, and the garbage collector's pauses), `V8Worker`
 * (the collector's concurrent marking), `libvips worker` (sharp's decoding
 * and encoding), `libuv-worker` (sharp's calls and hashing).
 */
function cpuByThread(pid: number): Record<string, number> | null {
  try {
    const byName: Record<string, number> = {};
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      byName[name] = (byName[name] ?? 0) + ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
    }
    return byName;
  } catch {
    return null;
  }
}

/**
 * sharp alone: `makeThumbnail` on the originals in memory, as many at a time
 * as the worker has in flight (its batch size times its local concurrency,
 * worker/jobs/thumbnail.ts). Until the sixth session of 2026-11-28 this ran 2 at a
 * time (the cores), which left the cores part idle: sharp's libvips runs one
 * thread per image here (sharp.concurrency() is 1 on glibc without jemalloc),
 * and 4 at a time made 16% more images a second (docs/bench.md).
 */
const SHARP_ALONE_IN_FLIGHT = (thumbnailJob.work?.batchSize ?? 1) * (thumbnailJob.work?.localConcurrency ?? 1);
async function sharpAloneRun() {
  const cpu0 = ownCpuMs();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: SHARP_ALONE_IN_FLIGHT }, async () => {
      while (next < originals.length) await makeThumbnail(originals[next++]);
    }),
  );
  return { rate: originals.length / ((performance.now() - started) / 1000), cpuPerImage: (ownCpuMs() - cpu0) / originals.length };
}

/**
 * Uploads WARMUP + IMAGES originals through the API at `uploadUrl` (one
 * product each, from `offset` in id order), runs a worker process with
 * `workerEnv` until every thumbnail is made, and measures the last IMAGES
 * only: images/s (the first measured job started to the last one completed)
 * and CPU per image. The first WARMUP are the worker's warm-up, as the list
 * benches discard theirs: a fresh process spends its first seconds compiling
 * (V8's optimizing compiler on its worker threads) and filling its pools,
 * which a worker that runs for days does once. In alternating runs, 120
 * images measured from a fresh worker cost 6–12 ms more CPU per image in the
 * worker and 2–4 ms more in PostgreSQL than the 120 after 60 of warm-up
 * (docs/bench.md, "Thumbnails").
 */
async function throughWorker(uploadUrl: string, workerEnv: Record<string, string>, offset: number, extraCpu: () => number | null = () => null) {
  const ids = (await pool.query('SELECT id FROM products WHERE company_id = $1 ORDER BY id OFFSET $2 LIMIT $3', [company.id, offset, WARMUP + IMAGES])).rows.map((r) => r.id);
  if (ids.length < WARMUP + IMAGES) throw new Error(`BENCH_PRODUCTS is too small for ${ROUNDS} rounds of ${WARMUP} + ${IMAGES} images`);
  for (const [i, id] of ids.entries()) {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(originals[i % originals.length])]), `p${i}.jpg`);
    const res = await fetch(`${uploadUrl}/products/${id}/image`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
    if (res.status !== 200) throw new Error(`upload failed: ${res.status} ${await res.text()}`);
  }
  const pending = async () => (await pool.query(`SELECT count(*)::int AS n FROM media WHERE status = 'pending'`)).rows[0].n as number;
  const worker = await spawnNodeServer({
    name: 'worker',
    script: 'bench/lib/worker-process.ts',
    env: { ...workerEnv, PG_POOL_MAX: '10' },
    readyTimeoutMs: 60_000,
    nodeArgs: [
      // As the Procfile runs the worker (package.json's `worker` script).
      ...procfileNodeArgs('worker'),
      ...(process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR ?? 'bench/results/profiles'}`] : []),
      ...(process.env.BENCH_WORKER_NODE_ARGS?.split(' ').filter(Boolean) ?? []),
    ],
  });
  // Experiments with the worker's Node flags (BENCH_WORKER_NODE_ARGS='--trace-gc') print what they trace here.
  if (process.env.BENCH_WORKER_NODE_ARGS) worker.child.stdout!.on('data', (d) => process.stderr.write(d));
  try {
    const waitUntil = async (done: (left: number) => boolean) => {
      for (;;) {
        const left = await pending();
        if (done(left)) return left;
        if (worker.child.exitCode !== null) throw new Error(`the worker exited (${worker.child.exitCode}):\n${worker.output()}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const snapshot = async (left: number) => ({
      left,
      at: (await pool.query('SELECT now()')).rows[0].now as Date,
      own: cpuTimeMs(worker.child.pid),
      db: postgresCpuMs(),
      extra: extraCpu(),
      threads: cpuByThread(worker.child.pid!),
    });
    const start = await snapshot(await waitUntil((left) => left <= IMAGES));
    const end = await snapshot(await waitUntil((left) => left === 0));
    const measured = start.left;
    const { rows: [span] } = await pool.query(
      `SELECT count(*)::int AS jobs, extract(epoch FROM max(completed_on) - min(started_on))::float AS seconds
         FROM pgboss.job WHERE name = 'thumbnail' AND started_on >= $1`,
      [start.at],
    );
    const per = (a: number | null, b: number | null) => (a === null || b === null ? null : (b - a) / measured);
    const threads = start.threads && end.threads
      ? Object.fromEntries(Object.keys(end.threads).map((name) => [name, (end.threads![name] - (start.threads![name] ?? 0)) / measured]).filter(([, ms]) => (ms as number) > 0))
      : null;
    const { hwm } = await memoryOf(worker.child.pid!);
    return { rate: span.jobs / span.seconds, measured: span.jobs, peakRssMb: Math.round(hwm / 1024 / 1024), cpu: { own: per(start.own, end.own), db: per(start.db, end.db), extra: per(start.extra, end.extra) }, threads };
  } finally {
    await worker.stop();
  }
}

// The same through an S3-compatible store (BLOB_STORE=s3): the local stand-in
// in a process of its own (objects in its memory, every request's signature
// and body hash checked), a web and a worker configured for it.
const standIn = spawn(process.execPath, [path.join(import.meta.dirname, '../lib/s3-stand-in-server.ts')], { stdio: ['ignore', 'pipe', 'inherit'] });
const s3Env = await new Promise<Record<string, string>>((resolve, reject) => {
  let out = '';
  standIn.stdout.on('data', (d) => {
    out += d;
    const line = out.split('\n').find((l) => l.startsWith('S3_STAND_IN '));
    if (line) resolve(JSON.parse(line.slice('S3_STAND_IN '.length)));
  });
  standIn.once('exit', (code) => reject(new Error(`S3 stand-in exited (${code})`)));
});
const s3ConfigEnv = { ...configEnv, ...s3Env };
const s3Config = loadConfig(s3ConfigEnv);
const s3Deps = await createDeps({ config: s3Config, pool, databaseUrl });
const s3App = createApp(s3Deps).listen(0, '127.0.0.1');
await new Promise((r) => s3App.once('listening', r));

// Rounds alternate sharp alone, the worker with the PostgreSQL store and the
// worker with the S3 store, and keep each one's fastest run, as the list
// benches keep the best of alternating runs: this host's speed drifts by a
// third within a minute, which one run of each turned into ratios from 0.53
// to 0.97 for the same code (docs/bench.md, "Thumbnails").
const ROUNDS = Number(process.env.BENCH_THUMBNAIL_ROUNDS ?? 2);
type Run = { rate: number; peakRssMb?: number; cpu: { own: number | null; db?: number | null; extra?: number | null }; threads?: Record<string, number> | null };
const fastest = (runs: Run[]) => runs.reduce((a, b) => (b.rate > a.rate ? b : a));
const runs = { sharp: [] as Run[], postgres: [] as Run[], s3: [] as Run[] };
// sharp's warm-up in this process, as the worker has its own.
for (const original of originals.slice(0, WARMUP)) await makeThumbnail(original);
for (let round = 0; round < ROUNDS; round++) {
  const alone = await sharpAloneRun();
  runs.sharp.push({ rate: alone.rate, cpu: { own: alone.cpuPerImage } });
  runs.postgres.push(await throughWorker(appUrl, configEnv, 2 * round * (WARMUP + IMAGES)));
  runs.s3.push(await throughWorker(`http://127.0.0.1:${(s3App.address() as AddressInfo).port}/api/v1`, s3ConfigEnv, (2 * round + 1) * (WARMUP + IMAGES), () => cpuTimeMs(standIn.pid!)));
  console.error(`[catalog] thumbnails round ${round + 1}/${ROUNDS}: sharp alone ${alone.rate.toFixed(1)}/s, worker ${runs.postgres.at(-1)!.rate.toFixed(1)}/s (PostgreSQL store), ${runs.s3.at(-1)!.rate.toFixed(1)}/s (S3 store)`);
}
const sharpAlone = fastest(runs.sharp).rate;
const sharpCpu = fastest(runs.sharp).cpu.own!;
const viaPostgres = fastest(runs.postgres);
const viaS3 = fastest(runs.s3);
const s3Objects = (await pool.query(`SELECT count(*)::int AS n FROM blobs WHERE object_key IS NOT NULL AND complete`)).rows[0].n;
if (s3Objects !== 2 * ROUNDS * (WARMUP + IMAGES)) throw new Error(`expected ${2 * ROUNDS * (WARMUP + IMAGES)} blobs in the S3 stand-in (originals and thumbnails), found ${s3Objects}`);
s3App.closeAllConnections();
s3App.close();
await closeDeps(s3Deps);
standIn.kill('SIGTERM');

const report = {
  products: PRODUCTS,
  other_company_products: Math.round(PRODUCTS / 5),
  seed_seconds: Math.round(seedSeconds * 10) / 10,
  concurrency: CONCURRENCY,
  seconds_per_run: SECONDS,
  list: results,
  thumbnails: {
    images: IMAGES,
    warm_up_images: WARMUP,
    rounds: `${ROUNDS}, alternating; the fastest of each kept`,
    original: '1600×1200 JPEG',
    sharp_alone_in_flight: SHARP_ALONE_IN_FLIGHT,
    sharp_alone_per_second: Math.round(sharpAlone * 10) / 10,
    through_worker_per_second: Math.round(viaPostgres.rate * 10) / 10,
    ratio_worker_to_sharp: Math.round((viaPostgres.rate / sharpAlone) * 100) / 100,
    worker_peak_rss_mb: viaPostgres.peakRssMb,
    through_worker_s3_per_second: Math.round(viaS3.rate * 10) / 10,
    ratio_worker_s3_to_sharp: Math.round((viaS3.rate / sharpAlone) * 100) / 100,
    cpu_ms_per_image: {
      sharp_alone: round1(sharpCpu),
      worker_process: round1(viaPostgres.cpu.own),
      postgres: round1(viaPostgres.cpu.db),
      s3_worker_process: round1(viaS3.cpu.own),
      s3_postgres: round1(viaS3.cpu.db),
      s3_stand_in: round1(viaS3.cpu.extra),
      worker_threads: viaPostgres.threads ? Object.fromEntries(Object.entries(viaPostgres.threads).filter(([, ms]) => ms > 0).map(([name, ms]) => [name, round1(ms)])) : null,
    },
  },
};
console.log(JSON.stringify(report, null, 2));
// Issue 20's targets, as checks of `npm run bench` (bench/lib/standalone.ts).
const check = (label: string, target: number, actual: number) =>
  console.log(`BENCH_CHECK ${JSON.stringify({ label, target: `>= ${target}`, actual: actual.toFixed(2), pass: actual >= target })}`);
for (const r of results) check(`product list ${r.scenario}: API ÷ bare req/s`, 0.9, r.rps_ratio_api_to_bare as number);
check('thumbnails through the worker ÷ sharp alone (PostgreSQL store)', 0.8, viaPostgres.rate / sharpAlone);
check('thumbnails through the worker ÷ sharp alone (S3 store)', 0.8, viaS3.rate / sharpAlone);
if (process.env.BENCH_PLANS) console.log(Object.values(plans).join('\n\n'));

// Dropping the database ends any connection still open (pg-boss pools close lazily); that is expected here.
process.on('uncaughtException', (error) => {
  if ((error as { code?: string }).code !== '57P01') throw error;
});
app.closeAllConnections();
app.close();
bare.close();
await closeDeps(deps);
await pool.end();
await admin.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
await admin.end();
await embedded?.stop();
process.exit(0);
