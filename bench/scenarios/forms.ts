// Forms bench, runnable on its own: `node bench/scenarios/forms.ts`.
//
// 1. Submissions per second, each a multipart POST with one 1 MB PDF.
// 2. Peak RSS of the web process during 20 concurrent 25 MB uploads; the
//    target is growth under 150 MB (bounded-memory streaming to PostgreSQL).
//
// The web process is a child (`api/server.ts`), so its RSS is its own; the
// peak is the kernel's VmHWM, reset before the phase through clear_refs, and
// cross-checked by sampling VmRSS every 20 ms. Uses DATABASE_URL's server, or
// an embedded PostgreSQL under DATA_DIR/bench, in a database of its own that
// is dropped afterwards.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { createCompany, updateCompany } from '../../api/admin/companies.ts';
import { issueKey } from '../../api/admin/keys.ts';
import { createForm } from '../../api/admin/forms.ts';
import { startEmbedded } from '../../db/embedded.ts';
import { migrate } from '../../db/migrate.ts';
import { createPool } from '../../db/pool.ts';
import { createBoss } from '../../db/boss.ts';
import { freePort, memoryOf } from '../lib/process.ts';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MB = 1024 * 1024;
const SUBMISSIONS = Number(process.env.BENCH_SUBMISSIONS ?? 200);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 10);
const UPLOADS = 20;
const UPLOAD_BYTES = 25 * MB;

function pdf(size: number): Buffer {
  const head = Buffer.from('%PDF-1.4\n1 0 obj <</Type /Catalog>> endobj\n');
  const tail = Buffer.from('\n%%EOF\n');
  return Buffer.concat([head, randomBytes(size - head.length - tail.length), tail]);
}

export async function runFormsBench() {
  const embedded = process.env.DATABASE_URL ? null : await startEmbedded(path.join(process.env.DATA_DIR || path.join(root, '.data'), 'bench'), { database: 'postgres', fast: true });
  const serverUrl = new URL(process.env.DATABASE_URL ?? embedded!.url);
  const name = `bench_forms_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl.toString() });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const dbUrl = new URL(serverUrl);
  dbUrl.pathname = `/${name}`;
  const pool = createPool(dbUrl.toString(), 4);
  let child: ReturnType<typeof spawn> | null = null;
  try {
    await migrate(pool);
    const boss = createBoss(dbUrl.toString(), { supervise: false, schedule: false });
    await boss.start();
    await boss.stop({ graceful: false });
    const { company } = await createCompany(pool, { name: 'Bench' });
    await updateCompany(pool, company.id, { storageQuotaMb: 1_000_000 });
    const key = await issueKey(pool, { companyId: company.id, scopes: ['create-form_submissions', 'read-forms'], rateLimitPerMinute: 1_000_000 });
    const form = await createForm(pool, company.id, {
      name: 'Bench',
      slug: 'bench',
      title: 'Bench',
      fields: [
        { key: 'email', field_type: 'email', label: 'Correo', required: true, maps_to: 'lead.email' },
        { key: 'doc', field_type: 'file', label: 'Documento', required: true, file: { max_files: 1, max_file_size_mb: 30, allowed_kinds: ['pdf'] } },
      ],
    });

    const port = await freePort();
    child = spawn(process.execPath, [path.join(root, 'api/server.ts')], {
      cwd: root,
      // UPLOAD_CONCURRENCY (default 8 per process, 503 past it; one company
      // gets half of it) raised so that the bench's one company may have all
      // it sends at once in flight: it measures memory with every upload in flight.
      env: { ...process.env, PORT: String(port), DATABASE_URL: dbUrl.toString(), ADMIN_TOKEN: 'bench-admin-token-0123456789', LOG_LEVEL: 'silent', NODE_ENV: 'development', UPLOAD_CONCURRENCY: String(2 * Math.max(UPLOADS, CONCURRENCY)) },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const base = `http://127.0.0.1:${port}/api/v1`;
    for (let i = 0; ; i++) {
      try {
        if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break;
      } catch {}
      if (i > 200) throw new Error('web process did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    const submit = async (file: Blob, n: number) => {
      const body = new FormData();
      body.append('answers[email]', `bench${n}@example.com`);
      body.append('files[doc]', file, `doc-${n}.pdf`);
      const res = await fetch(`${base}/forms/${form.id}/submissions`, { method: 'POST', headers: { authorization: `Bearer ${key.secret}` }, body });
      const text = await res.text();
      if (res.status !== 201) throw new Error(`submission ${n}: ${res.status} ${text.slice(0, 200)}`);
    };

    // 1. Throughput with one 1 MB PDF per submission.
    const small = new Blob([pdf(1 * MB)], { type: 'application/pdf' });
    for (let i = 0; i < 5; i++) await submit(small, -i); // warm-up
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < SUBMISSIONS) await submit(small, next++);
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const perSecond = SUBMISSIONS / seconds;

    // 2. Peak RSS of the web process during 20 concurrent 25 MB uploads.
    const pid = child.pid!;
    (globalThis as { gc?: () => void }).gc?.();
    await new Promise((r) => setTimeout(r, 500));
    const baseline = (await memoryOf(pid)).rss;
    await writeFile(`/proc/${pid}/clear_refs`, '5').catch(() => {}); // resets VmHWM to the current RSS
    let sampledPeak = baseline;
    const sampler = setInterval(() => {
      memoryOf(pid).then((s) => (sampledPeak = Math.max(sampledPeak, s.rss)), () => {});
    }, 20);
    const big = new Blob([pdf(UPLOAD_BYTES)], { type: 'application/pdf' });
    const bigStarted = performance.now();
    await Promise.all(Array.from({ length: UPLOADS }, (_, i) => submit(big, 10_000 + i)));
    const bigSeconds = (performance.now() - bigStarted) / 1000;
    clearInterval(sampler);
    const peak = Math.max((await memoryOf(pid)).hwm, sampledPeak);
    const result = {
      scenario: 'forms',
      submissions_per_second_1mb_pdf: Math.round(perSecond * 10) / 10,
      submissions: SUBMISSIONS,
      concurrency: CONCURRENCY,
      upload_phase: { uploads: UPLOADS, size_mb: UPLOAD_BYTES / MB, seconds: Math.round(bigSeconds * 10) / 10 },
      web_rss_baseline_mb: Math.round(baseline / MB),
      web_rss_peak_mb: Math.round(peak / MB),
      web_rss_growth_mb: Math.round((peak - baseline) / MB),
      target_growth_mb: 150,
      within_target: peak - baseline < 150 * MB,
    };
    return result;
  } finally {
    child?.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await pool.end();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    await admin.end();
    await embedded?.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runFormsBench();
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  process.exit(result.within_target ? 0 : 1);
}
