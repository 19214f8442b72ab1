import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { promisify } from 'node:util';
import sharp from 'sharp';
import { after, before, describe, test } from 'node:test';
import { updateCompany } from '../api/admin/companies.ts';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import * as files from './helpers/forms.ts';
import { animatedPng } from './helpers/png.ts';
import { waitFor } from './helpers/wait.ts';

const execFileP = promisify(execFile);

const MIB = 1024 * 1024;

describe('form submissions: JSON and multipart, answers and every file rule', () => {
  let app: TestApp;
  let tenant: Tenant;
  let form: any;
  let api: ReturnType<typeof client>;
  const path = () => `/forms/${form.id}/submissions`;
  const base = { email: 'Ana@Example.com', name: 'Ana Pérez' };

  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool);
    form = await files.createFormViaAdmin(app.url, tenant.companyId);
    api = client(app.baseUrl, tenant.key);
  });
  after(() => app.close());

  const blobCount = async () => (await app.pool.query('SELECT count(*)::int AS n FROM blobs')).rows[0].n;

  async function multipart(parts: Array<[string, string | { name: string; bytes: Buffer; type?: string }]>, headers: Record<string, string> = {}, to = path(), key = tenant.key) {
    const body = new FormData();
    for (const [name, value] of parts) {
      if (typeof value === 'string') body.append(name, value);
      else body.append(name, new Blob([value.bytes], { type: value.type ?? 'application/octet-stream' }), value.name);
    }
    const res = await fetch(app.baseUrl + to, { method: 'POST', headers: { authorization: `Bearer ${key}`, ...headers }, body });
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  }

  /**
   * A POST written by hand, to control framing: with `length` the body is
   * declared with Content-Length, else it goes chunked. Resolves on the
   * response even when the server answered before reading everything.
   */
  function rawPost(to: string, headers: Record<string, string>, pieces: Iterable<Buffer>, options: { length?: number; end?: boolean } = {}) {
    return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }>((resolve, reject) => {
      let answered = false;
      const declared = options.length === undefined ? {} : { 'content-length': String(options.length) };
      const req = http.request(new URL(app.baseUrl + to), { method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, ...headers, ...declared } }, (res) => {
        answered = true;
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : null }));
        res.on('error', reject);
      });
      req.on('error', (error) => !answered && reject(error));
      void (async () => {
        for (const piece of pieces) {
          if (answered || req.destroyed) return;
          if (!req.write(piece)) await new Promise((r) => (req.once('drain', r), req.once('close', r)));
        }
        if (options.end !== false && !answered) req.end();
      })();
    });
  }

  /** A multipart body as pieces: text fields, then one file whose bytes come from `file.bytes`. */
  function* multipartPieces(boundary: string, fields: Record<string, string>, file: { part: string; name: string; bytes: Iterable<Buffer> }) {
    for (const [name, value] of Object.entries(fields)) yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
    yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${file.part}"; filename="${file.name}"\r\nContent-Type: application/pdf\r\n\r\n`);
    yield* file.bytes;
    yield Buffer.from(`\r\n--${boundary}--\r\n`);
  }

  function* slices(buffer: Buffer, size = 16 * 1024) {
    for (let i = 0; i < buffer.length; i += size) yield buffer.subarray(i, i + size);
  }

  test('JSON: answers validated and extracted, files of every allowed kind stored privately, status received', async () => {
    const cv = [files.fileJson('cv.pdf', files.pdf()), files.fileJson('carta.docx', files.docx()), files.fileJson('datos.xlsx', files.xlsx()), files.fileJson('deck.pptx', files.pptx()), files.fileJson('notas.txt', Buffer.from('hola, ñandú\n'))];
    const media = [
      files.fileJson('foto.jpg', await files.jpeg()),
      files.fileJson('logo.png', await files.png()),
      files.fileJson('clip.mp4', files.mp4()),
      files.fileJson('voz.mp3', files.mp3()),
      files.fileJson('nota.wav', files.wav()),
    ];
    const res = await api.post(
      `${path()}?locale=en`,
      { data: { answers: { ...base, phone: '+52 55 1234 5678', employees: '12', start: '2026-07-01', plan: 'Pro', cv }, files: { media } } },
      { referer: 'https://shop.example/contact' },
    );
    assert.equal(res.status, 201, res.text);
    const s = res.body.data;
    assert.equal(s.status, 'received');
    assert.equal(s.contact_id, null);
    assert.equal(s.contact_type, 'none', 'the enum has no null: none until processed, with contact_id null');
    assert.equal(s.source, 'developers_api');
    assert.equal(s.locale, 'en');
    assert.equal(s.referrer, 'https://shop.example/contact');
    assert.equal(s.email, 'ana@example.com');
    assert.equal(s.name, 'Ana Pérez');
    assert.equal(s.phone, '+52 55 1234 5678');
    assert.equal(s.answers.employees, 12);
    assert.equal(s.files_error, null);
    assert.equal(s.files.length, 10);
    const date = s.created_at.slice(0, 10); // the submission's day (UTC), not the test's: a run across midnight holds
    for (const f of s.files) {
      assert.deepEqual(Object.keys(f).sort(), ['asset_id', 'content_type', 'field_key', 'filename', 'folder_path', 'size_bytes']);
      assert.equal(f.folder_path, `/Formularios/Contacto web/${date} - ana@example.com`);
    }
    const byName = Object.fromEntries(s.files.map((f: any) => [f.filename, f]));
    assert.equal(byName['cv.pdf'].content_type, 'application/pdf');
    assert.equal(byName['carta.docx'].content_type, 'application/vnd.openxmlformats-officedocument.wordprocessingml.document');
    assert.equal(byName['foto.jpg'].content_type, 'image/jpeg');
    assert.equal(byName['foto.jpg'].field_key, 'media');
    assert.equal(byName['voz.mp3'].content_type, 'audio/mpeg');
    const stored = await app.pool.query('SELECT public, size_bytes FROM files WHERE company_id = $1', [tenant.companyId]);
    assert.equal(stored.rowCount, 10);
    assert.ok(stored.rows.every((r) => r.public === false));
    const read = await api.get(`${path()}/${s.id}`);
    assert.equal(read.status, 200);
    assert.deepEqual(read.body.data.files, s.files);
    assert.equal((await api.get(`/forms/${form.id}`)).body.data.submissions_count, 1);
    const list = await api.get(`/forms/contacto/submissions`);
    assert.equal(list.body.data[0].id, s.id);
  });

  test('multipart: data[answers][k], answers[k] and files[k] parts, several files per field, data[locale]', async () => {
    const res = await multipart([
      ['data[answers][email]', 'luis@example.com'],
      ['answers[name]', 'Luis'],
      ['data[locale]', 'en'],
      ['data[answers][cv]', { name: 'uno.pdf', bytes: files.pdf(), type: 'image/png' }],
      ['files[cv]', { name: 'dos.docx', bytes: files.docx() }],
      ['answers[media][]', { name: 'foto.jpeg', bytes: await files.jpeg() }],
    ]);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const s = res.body.data;
    assert.equal(s.locale, 'en');
    assert.equal(s.email, 'luis@example.com');
    assert.deepEqual(s.files.map((f: any) => [f.field_key, f.filename, f.content_type]), [
      ['cv', 'uno.pdf', 'application/pdf'], // the declared image/png is ignored
      ['cv', 'dos.docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document'],
      ['media', 'foto.jpeg', 'image/jpeg'],
    ]);
    assert.deepEqual(s.answers.cv, ['uno.pdf', 'dos.docx']);

    // Two files of one name (any case) in one submission: each has a name of its own in the folder.
    const same = await multipart([
      ['data[answers][email]', 'luis@example.com'],
      ['answers[name]', 'Luis'],
      ['files[cv]', { name: 'igual.pdf', bytes: files.pdf() }],
      ['files[cv]', { name: 'IGUAL.pdf', bytes: files.pdf() }],
      ['files[media]', { name: 'igual.jpeg', bytes: await files.jpeg() }],
    ]);
    assert.equal(same.status, 201, JSON.stringify(same.body));
    assert.deepEqual(same.body.data.files.map((f: any) => f.filename), ['igual.pdf', 'IGUAL (2).pdf', 'igual.jpeg']);
    const stored = await app.pool.query('SELECT name FROM files WHERE id = ANY($1) ORDER BY name', [same.body.data.files.map((f: any) => f.asset_id)]);
    assert.equal(new Set(stored.rows.map((r) => r.name.toLowerCase())).size, 3);
  });

  test('multipart mistakes named for what they are: an answer sent twice, an empty file of any kind, locale sent twice with two values', async () => {
    const res = await multipart([
      ['answers[email]', 'luis@example.com'],
      ['answers[email]', 'otro@example.com'],
      ['answers[name]', 'Luis'],
      ['answers[name]', 'Luis'],
      ['locale', 'es'],
      ['data[locale]', 'en'],
    ]);
    assert.equal(res.status, 422, JSON.stringify(res.body));
    for (const key of ['answers.email', 'answers.name']) assert.match(res.body.errors[key]?.[0] ?? '', /admite un solo valor/, key);
    assert.match(res.body.errors.locale?.[0] ?? '', /dos veces/);
    for (const [key, name] of [['cv', 'vacio.pdf'], ['media', 'vacia.jpeg'], ['cv', 'vacio.txt']]) {
      const empty = await multipart([['answers[email]', 'luis@example.com'], ['answers[name]', 'Luis'], [`files[${key}]`, { name, bytes: Buffer.alloc(0) }]]);
      assert.equal(empty.status, 422, JSON.stringify(empty.body));
      assert.deepEqual(empty.body.errors[`answers.${key}`], [`${name}: el archivo está vacío`]);
    }
    // The same locale in both spellings is one value.
    const agreed = await multipart([['answers[email]', 'luis@example.com'], ['answers[name]', 'Luis'], ['locale', 'en'], ['data[locale]', 'en']]);
    assert.deepEqual([agreed.status, agreed.body.data?.locale], [201, 'en']);
  });

  test('a one-line field (text, phone, or any field filling a lead) refuses a line break; a textarea keeps its lines', async () => {
    const res = await api.post(path(), { data: { answers: { ...base, name: 'Eve\r\nBcc: x@evil.example', phone: '555\n1234', message: 'Hola\nBcc: no es un campo' } } });
    assert.equal(res.status, 422, res.text);
    assert.deepEqual(Object.keys(res.body.errors).sort(), ['answers.name', 'answers.phone']);
    assert.match(res.body.errors['answers.name'][0], /una sola línea/);
    // Every line break is one: the Unicode separators, NEL, VT and FF too (a mail client may show them as breaks).
    for (const brk of ['\u2028', '\u2029', '\u0085', '\u000b', '\u000c']) {
      const sneaked = await api.post(path(), { data: { answers: { ...base, name: `Juan${brk}Correo: ceo@victim.example` } } });
      assert.deepEqual([sneaked.status, Object.keys(sneaked.body.errors ?? {})], [422, ['answers.name']], JSON.stringify(brk));
    }
    // A textarea keeps its lines, not control characters.
    const controls = await api.post(path(), { data: { answers: { ...base, message: 'Hola\u0007', name: 'Eve' } } });
    assert.deepEqual([controls.status, Object.keys(controls.body.errors ?? {})], [422, ['answers.message']], controls.text);
    // What pasting brings along is cleaned, not refused: iOS's direction marks around a copied phone number,
    // a spreadsheet cell's tab in one line; a direction override anywhere is dropped.
    const pasted = await api.post(path(), { data: { answers: { ...base, name: 'Eve\tAdams', phone: '\u202d+52 55 1234 5678\u202c', message: 'fdp.\u202eexe\tfin' } } });
    assert.equal(pasted.status, 201, pasted.text);
    assert.deepEqual([pasted.body.data.answers.name, pasted.body.data.answers.phone, pasted.body.data.answers.message], ['Eve Adams', '+52 55 1234 5678', 'fdp.exe\tfin']);
    // An email pasted with them is the address; a required answer of nothing but them is no answer.
    const email = await api.post(path(), { data: { answers: { ...base, email: '\u202dEve@Example.com\u202c' } } });
    assert.deepEqual([email.status, email.body.data?.answers.email, email.body.data?.email], [201, 'Eve@Example.com', 'eve@example.com'], email.text);
    const blank = await api.post(path(), { data: { answers: { ...base, name: '\u202d\u202c' } } });
    assert.deepEqual([blank.status, blank.body.errors?.['answers.name']], [422, ['es obligatorio']], blank.text);
    const ok = await api.post(path(), { data: { answers: { ...base, name: '  Eve  \n', message: 'Hola\nBcc: no es un campo' } } });
    assert.equal(ok.status, 201, ok.text);
    assert.deepEqual([ok.body.data.answers.name, ok.body.data.answers.message], ['Eve', 'Hola\nBcc: no es un campo']);

    // A textarea that fills a lead's name is one line too: the name goes on into the lead and the emails.
    const mapped = await files.createFormViaAdmin(app.url, tenant.companyId, files.sampleFormFile({
      slug: `textarea-${Date.now()}`,
      fields: [
        { key: 'email', field_type: 'email', label: 'Correo', required: true, maps_to: 'lead.email', position: 0 },
        { key: 'details', field_type: 'textarea', label: 'Quién eres', maps_to: 'lead.name', position: 1 },
      ],
      post_actions: {},
    }));
    const refused = await api.post(`/forms/${mapped.id}/submissions`, { data: { answers: { email: 'ml@example.com', details: 'hola\r\nBcc: victim@evil.example' } } });
    assert.deepEqual([refused.status, Object.keys(refused.body.errors ?? {})], [422, ['answers.details']], refused.text);
    const oneLine = await api.post(`/forms/${mapped.id}/submissions`, { data: { answers: { email: 'ml@example.com', details: 'Marta López' } } });
    assert.equal(oneLine.status, 201, oneLine.text);
  });

  test('the JSON form follows the JSON routes\' media types: a body with no Content-Type, or in another charset, is 415 and nothing is stored', async () => {
    const body = JSON.stringify({ data: { answers: { ...base, email: 'sin-tipo@example.com' } } });
    const submissions = async () => (await app.pool.query(`SELECT count(*)::int AS n FROM form_submissions WHERE form_id = $1 AND answers->>'email' = 'sin-tipo@example.com'`, [form.id])).rows[0].n;
    const sent = [
      // No type at all: a Blob body has none (some clients send none; the parser would skip the bytes).
      await fetch(`${app.baseUrl}${path()}`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}` }, body: new Blob([body]) }),
      // No type, chunked.
      await fetch(`${app.baseUrl}${path()}`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}` }, body: new Blob([body]).stream(), duplex: 'half' } as RequestInit),
      await fetch(`${app.baseUrl}${path()}`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json; charset=iso-8859-1' }, body }),
      await fetch(`${app.baseUrl}${path()}`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'text/plain' }, body }),
    ];
    for (const res of sent) {
      assert.equal(res.status, 415);
      const answer = (await res.json()) as { error: string; message: string };
      assert.equal(answer.error, 'unsupported_media_type');
    }
    assert.equal(await submissions(), 0);
    const typed = await fetch(`${app.baseUrl}${path()}`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' }, body });
    assert.equal(typed.status, 201);
    assert.equal(await submissions(), 1);
  });

  test('required fields, email, number, date and options are validated: 422 validation_failed per field', async () => {
    const before = await blobCount();
    const res = await api.post(path(), {
      data: { answers: { email: 'no-es-correo', employees: 'doce', start: '2026-02-30', plan: 'Gold', cv: [files.fileJson('cv.pdf', files.pdf())], extra: 'x' } },
    });
    assert.equal(res.status, 422);
    assert.equal(res.body.error, 'validation_failed');
    assert.deepEqual(Object.keys(res.body.errors).sort(), ['answers.email', 'answers.employees', 'answers.extra', 'answers.name', 'answers.plan', 'answers.start']);
    assert.match(res.body.errors['answers.name'][0], /obligatorio/);
    assert.equal(await blobCount(), before, 'a refused submission leaves no stored bytes');
    const missing = await api.post(path(), { data: {} });
    assert.equal(missing.status, 422);
    assert.equal(missing.body.error, 'parameter_missing');
  });

  test('the JSON body is validated against its documented schema: wrong types and unknown keys are 422 naming the field', async () => {
    const before = await blobCount();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ answers: base, locale: 5 }, 'locale'],
      [{ answers: base, files: ['cv.pdf'] }, 'files'],
      [{ answers: 'Ana', locale: 'es' }, 'answers'],
      [{ answers: base, referrer: 'x' }, 'referrer'],
    ];
    for (const [data, field] of cases) {
      const res = await api.post(path(), { data });
      assert.equal(res.status, 422, JSON.stringify(data));
      assert.equal(res.body.error, 'validation_failed');
      assert.ok(res.body.errors[field], `errors names ${field}: ${JSON.stringify(res.body.errors)}`);
    }
    assert.equal(await blobCount(), before);
    // The optional keys sent as null are absent, as a client typed from the contract sends them.
    const nulls = await api.post(path(), { data: { answers: base, locale: null, files: null } });
    assert.equal(nulls.status, 201, nulls.text);
    assert.equal(nulls.body.data.status, 'received');
  });

  test('a form’s submissions list: include_total counts that form’s submissions, not the company’s', async () => {
    const other = await files.createFormViaAdmin(app.url, tenant.companyId, files.sampleFormFile({ slug: `otro-${Date.now()}` }));
    assert.equal((await api.post(`/forms/${other.id}/submissions`, { data: { answers: base } })).status, 201);
    assert.equal((await api.post(path(), { data: { answers: base } })).status, 201, 'one in another form of the company');
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM form_submissions WHERE form_id = $1', [other.id]);
    const listed = await api.get(`/forms/${other.id}/submissions?include_total=true`);
    assert.equal(listed.body.data.length, 1);
    assert.equal(rows[0].n, 1);
    assert.equal(listed.body.meta.total, 1);
  });

  test('an inactive form refuses submissions with 422 form_inactive', async () => {
    const off = await files.createFormViaAdmin(app.url, tenant.companyId, files.sampleFormFile({ slug: 'cerrado', active: false }));
    const res = await api.post(`/forms/${off.id}/submissions`, { data: { answers: base } });
    assert.equal(res.status, 422);
    assert.equal(res.body.error, 'form_inactive');
  });

  test('answers hold the submitted value: an email answer keeps its case, numbers are decimal only, a boolean is not text', async () => {
    const ok = await api.post(path(), { data: { answers: { ...base, employees: '1e3', company: 42 } } });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.data.answers.email, 'Ana@Example.com', 'the answer as submitted');
    assert.equal(ok.body.data.email, 'ana@example.com', 'the extracted email is lower-cased');
    assert.equal(ok.body.data.answers.employees, 1000);
    assert.equal(ok.body.data.answers.company, '42', 'a number where text is expected is its decimal text');
    for (const employees of ['0x10', '0b101', '0o17', 'Infinity', '1_000']) {
      const res = await api.post(path(), { data: { answers: { ...base, employees } } });
      assert.equal(res.status, 422, employees);
      assert.deepEqual(Object.keys(res.body.errors), ['answers.employees'], employees);
    }
    const bool = await api.post(path(), { data: { answers: { ...base, company: true } } });
    assert.equal(bool.status, 422, bool.text);
    assert.deepEqual(Object.keys(bool.body.errors), ['answers.company']);
    // A number is stored as a double: past 15 significant digits some would be lost, so it is refused
    // (as text or as a JSON number), never stored rounded.
    const exact = await api.post(path(), { data: { answers: { ...base, employees: '123456789012345' } } });
    assert.equal(exact.body.data.answers.employees, 123456789012345);
    for (const employees of ['123456789012345678901234567890', '0.1234567890123456', 12345678901234567890]) {
      const res = await api.post(path(), { data: { answers: { ...base, employees } } });
      assert.equal(res.status, 422, `${employees}: ${res.text}`);
      assert.match(res.body.errors['answers.employees'][0], /15 cifras significativas/);
    }
    // A required answer that shows nothing (zero-width characters) is no answer.
    const invisibleName = await api.post(path(), { data: { answers: { ...base, name: '\u200b\u200d' } } });
    assert.deepEqual([invisibleName.status, Object.keys(invisibleName.body.errors ?? {})], [422, ['answers.name']], invisibleName.text);
    // Too small for a double, written as text: refused, not stored as 0 (or a subnormal with digits lost); 0 is 0.
    for (const employees of ['1e-400', '-2.5e-320']) {
      const res = await api.post(path(), { data: { answers: { ...base, employees } } });
      assert.equal(res.status, 422, `${employees}: ${res.text}`);
      assert.match(res.body.errors['answers.employees'][0], /demasiado pequeño/);
    }
    for (const zero of ['0', '0.000', '0e-400']) {
      const res = await api.post(path(), { data: { answers: { ...base, employees: zero } } });
      assert.deepEqual([res.status, res.body.data?.answers.employees], [201, 0], zero);
    }
    // A date answer has the bound of every day in a body (docs/api.md): 1900-01-01 or later.
    const early = await api.post(path(), { data: { answers: { ...base, start: '1899-12-31' } } });
    assert.equal(early.status, 422, early.text);
    assert.deepEqual(Object.keys(early.body.errors), ['answers.start']);
    assert.equal((await api.post(path(), { data: { answers: { ...base, start: '1900-01-01' } } })).status, 201);
  });

  test('a field that gives the contact\'s email holds one address whatever its type: a list or a header is 422 (no relay through the visitor\'s copy)', async () => {
    const fields = files.sampleFormFile().fields.map((f: any) => (f.key === 'email' ? { ...f, field_type: 'text' } : f.key === 'phone' ? { ...f, field_type: 'number' } : f));
    const loose = await files.createFormViaAdmin(app.url, tenant.companyId, files.sampleFormFile({ slug: `texto-correo-${randomBytes(3).toString('hex')}`, fields }));
    const to = `/forms/${loose.id}/submissions`;
    for (const email of ['v1@victim.test, v2@victim.test', 'x@victim.test\r\nBcc: y@victim.test', '"Jefe" <boss@victim.test>', 'not an email <script>', `${'a'.repeat(65)}@example.com`]) {
      const res = await api.post(to, { data: { answers: { name: 'Ana', email } } });
      assert.equal(res.status, 422, `${JSON.stringify(email)}: ${res.text}`);
      assert.deepEqual(Object.keys(res.body.errors), ['answers.email'], JSON.stringify(email));
    }
    const ok = await api.post(to, { data: { answers: { name: 'Ana', email: ' Ana@Example.com ', phone: 5551234 } } });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.data.email, 'ana@example.com');
    assert.equal(ok.body.data.phone, '5551234', 'a number field mapped to the phone gives its decimal text');
    // An email field holds the same rule: RFC 5321 sizes (local part up to 64, labels up to 63).
    const long = await api.post(path(), { data: { answers: { name: 'Ana', email: `ana@${'b'.repeat(64)}.com` } } });
    assert.deepEqual([long.status, Object.keys(long.body.errors ?? {})], [422, ['answers.email']]);
  });

  test('data.files carries files only: a text value there, or a key answered in answers too, is 422 (nothing replaces an answer)', async () => {
    // Nothing selected, [] or null, is no file (201), as always.
    for (const media of [[], null]) assert.equal((await api.post(path(), { data: { answers: base, files: { media } } })).status, 201, JSON.stringify(media));
    const text = await api.post(path(), { data: { answers: base, files: { company: 'ACME' } } });
    assert.equal(text.status, 422, text.text);
    assert.match(text.body.errors['answers.company'][0], /files solo lleva archivos/);
    const twice = await api.post(path(), { data: { answers: { ...base, cv: [files.fileJson('a.pdf', files.pdf())] }, files: { cv: [files.fileJson('b.pdf', files.pdf())] } } });
    assert.equal(twice.status, 422, twice.text);
    assert.match(twice.body.errors['answers.cv'][0], /answers y en files/);
    const overriding = await api.post(path(), { data: { answers: base, files: { email: 'otro@example.com' } } });
    assert.equal(overriding.status, 422, overriding.text);
    // In multipart, a files[...] part without a filename is text, not a file.
    const part = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'X'], ['files[company]', 'ACME']]);
    assert.equal(part.status, 422, JSON.stringify(part.body));
    assert.match(part.body.errors['answers.company'][0], /lleva un archivo/);
  });

  test('text no column can hold (U+0000, a lone UTF-16 surrogate) is 422 naming the answer, JSON or multipart, never a 500', async () => {
    for (const name of ['a\u0000b', 'a\ud800b']) {
      const res = await api.post(path(), { data: { answers: { ...base, name } } });
      assert.equal(res.status, 422, `${JSON.stringify(name)}: ${res.text}`);
      assert.equal(res.body.error, 'validation_failed');
      assert.deepEqual(Object.keys(res.body.errors), ['answers.name']);
    }
    const keyed = await api.post(path(), { data: { answers: { ...base, ['x\u0000']: 'y' } } });
    assert.equal(keyed.status, 422, keyed.text);
    const res = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'a\u0000b']]);
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.deepEqual(Object.keys(res.body.errors), ['answers.name']);
    // The required answer was sent and refused: that refusal is its one error, never also "es obligatorio".
    assert.equal(res.body.errors['answers.name'].length, 1, JSON.stringify(res.body.errors));
    assert.match(res.body.errors['answers.name'][0], /nulo/);
    const asFile = await api.post(path(), { data: { answers: { ...base, name: { filename: 'a.pdf', content_type: 'application/pdf', data: files.pdf().toString('base64') } } } });
    assert.equal(asFile.status, 422, asFile.text);
    assert.equal(asFile.body.errors['answers.name'].length, 1, JSON.stringify(asFile.body.errors));
    assert.doesNotMatch(asFile.body.errors['answers.name'][0], /obligatorio/);
  });

  test('multipart: a part of no accepted shape is named as sent, a refused file is not also reported missing, answers[__proto__] is an unknown key', async () => {
    const fields = files.sampleFormFile().fields.map((f: any) => (f.key === 'cv' ? { ...f, required: true } : f));
    const strict = await files.createFormViaAdmin(app.url, tenant.companyId, files.sampleFormFile({ slug: `cv-obligatorio-${randomBytes(3).toString('hex')}`, fields }));
    const to = `/forms/${strict.id}/submissions`;
    const unknown = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'X'], ['foo', '1'], ['files[cv]', { name: 'cv.pdf', bytes: files.pdf() }]], {}, to);
    assert.equal(unknown.status, 422, JSON.stringify(unknown.body));
    assert.deepEqual(Object.keys(unknown.body.errors), ['foo'], 'the part as sent; the file was sent, so cv is not "required"');
    const bare = await multipart([['answers[email]', 'x@example.com'], ['name', 'X'], ['files[cv]', { name: 'cv.pdf', bytes: files.pdf() }]], {}, to);
    assert.equal(bare.status, 422, JSON.stringify(bare.body));
    assert.match(bare.body.errors.name[0], /answers\[<clave>\]/, 'says which shapes are accepted');
    const refused = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'X'], ['files[cv]', { name: 'cv.exe', bytes: files.pdf() }]], {}, to);
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.equal(refused.body.errors['answers.cv'].length, 1, JSON.stringify(refused.body.errors));
    assert.doesNotMatch(refused.body.errors['answers.cv'][0], /obligatorio/);
    const missing = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'X']], {}, to);
    assert.deepEqual(missing.body.errors, { 'answers.cv': ['es obligatorio'] }, 'no file at all is still missing');
    const proto = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'X'], ['answers[__proto__]', 'x']]);
    assert.equal(proto.status, 422, JSON.stringify(proto.body));
    assert.deepEqual(Object.keys(proto.body.errors), ['answers.__proto__']);
  });

  test('an Idempotency-Key reused with another, invalid body is 422 idempotency_key_reused, as on every write', async () => {
    const headers = { 'Idempotency-Key': `envio-${randomBytes(4).toString('hex')}` };
    const first = await api.post(path(), { data: { answers: base } }, headers);
    assert.equal(first.status, 201, first.text);
    const reused = await api.post(path(), { data: { answers: { ...base, email: 'no-es-correo' } } }, headers);
    assert.equal(reused.status, 422, reused.text);
    assert.equal(reused.body.error, 'idempotency_key_reused');
    // A fresh key with the invalid body is validation_failed, and not stored: the same key then works.
    const freshHeaders = { 'Idempotency-Key': `envio-${randomBytes(4).toString('hex')}` };
    const invalid = await api.post(path(), { data: { answers: { ...base, email: 'no-es-correo' } } }, freshHeaders);
    assert.equal(invalid.body.error, 'validation_failed');
    const fixed = await api.post(path(), { data: { answers: base } }, freshHeaders);
    assert.equal(fixed.status, 201, fixed.text);
  });

  test('a long name is cut to a 150-character stem at a segment boundary: no segment the client never sent (.exe, .js) is stored', async () => {
    for (const [name, stored] of [
      [`${'x'.repeat(146)}.exe${'Z'.repeat(10)}.pdf`, `${'x'.repeat(146)}.pdf`],
      [`${'x'.repeat(147)}.json.pdf`, `${'x'.repeat(147)}.pdf`],
      [`${'y'.repeat(160)}.pdf`, `${'y'.repeat(150)}.pdf`],
    ]) {
      const res = await api.post(path(), { data: { answers: { ...base, cv: [files.fileJson(name, files.pdf())] } } });
      assert.equal(res.status, 201, `${name}: ${res.text}`);
      assert.equal(res.body.data.files[0].filename, stored);
    }
  });

  test('a required yes/no checkbox is not ticked by "false", "off" or "0" in JSON or multipart; HTML\'s hidden-input pair counts by its last value', async () => {
    const consent = await files.createFormViaAdmin(app.url, tenant.companyId, {
      name: 'Consentimiento',
      slug: 'consentimiento',
      title: 'Consentimiento',
      fields: [
        { key: 'email', field_type: 'email', label: 'Correo', required: true },
        { key: 'acepto', field_type: 'checkbox', label: 'Acepto el aviso de privacidad', required: true },
      ],
    });
    const to = `/forms/${consent.id}/submissions`;
    for (const acepto of [false, 'false', 'off', '0']) {
      const res = await api.post(to, { data: { answers: { email: 'a@example.com', acepto } } });
      assert.deepEqual([res.status, res.body.errors?.['answers.acepto']], [422, ['es obligatorio']], `${JSON.stringify(acepto)}: ${res.text}`);
    }
    for (const acepto of ['off', '0']) {
      const res = await multipart([['answers[email]', 'a@example.com'], ['answers[acepto]', acepto]], {}, to);
      assert.deepEqual([res.status, res.body.errors?.['answers.acepto']], [422, ['es obligatorio']], acepto);
    }
    // <input type=hidden name=acepto value=0> before the box: unticked sends 0, ticked sends 0 then 1.
    const unticked = await multipart([['answers[email]', 'a@example.com'], ['answers[acepto]', '0']], {}, to);
    assert.equal(unticked.status, 422);
    const ticked = await multipart([['answers[email]', 'a@example.com'], ['answers[acepto]', '0'], ['answers[acepto]', '1']], {}, to);
    assert.deepEqual([ticked.status, ticked.body.data?.answers.acepto], [201, true], JSON.stringify(ticked.body));
    const json = await api.post(to, { data: { answers: { email: 'a@example.com', acepto: 'on' } } });
    assert.deepEqual([json.status, json.body.data?.answers.acepto], [201, true], json.text);
  });

  test('hostile file names are refused; stored names never come from the client path', async () => {
    const jpg = await files.jpeg();
    const cases: Array<[string, string, Buffer]> = [
      ['cv', 'invoice.exe.pdf', files.pdf()],
      ['cv', 'a.PhP', files.pdf()],
      ['cv', 'a.exe.', files.pdf()],
      ['media', 'a.php%00.jpg', jpg],
      ['media', 'a.php\u0000.jpg', jpg],
      ['cv', 'factura\u202Efdp.exe', files.pdf()],
      ['cv', 'evil%E2%80%AEfdp.pdf', files.pdf()],
      ['cv', 'resume\u202Excod.pdf', files.pdf()],
      ['cv', 'sin-extension', files.pdf()],
      ['cv', 'page.html.pdf', files.pdf()],
      ['media', 'logo.svg', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"/>')],
    ];
    for (const [field, name, bytes] of cases) {
      const res = await api.post(path(), { data: { answers: { ...base, [field]: [files.fileJson(name, bytes)] } } });
      assert.equal(res.status, 422, `${JSON.stringify(name)}: ${res.text}`);
      assert.equal(res.body.error, 'validation_failed');
      assert.ok(res.body.errors[`answers.${field}`], name);
    }
    // Refused by the always-blocked list itself, whatever the field allows and wherever the segment
    // sits: not merely as an extension the field does not take, nor by content.
    const blocked: Array<[string, string]> = [
      ['a.PhP', 'php'],
      ['a.exe.', 'exe'],
      ['a.PhP.pdf', 'php'],
      ['invoice.exe.pdf', 'exe'],
      ['page.html.pdf', 'html'],
      // Invisible and look-alike characters do not hide a blocked segment (normalized first, then checked).
      ['invoice.e\u200Bxe.pdf', 'exe'],
      ['invoice.e\u200Dx\u200Ce.pdf', 'exe'],
      ['invoice.e\u00ADxe.pdf', 'exe'],
      ['invoice.\uFEFFexe.pdf', 'exe'],
      ['invoice.\uFF45\uFF58\uFF45.pdf', 'exe'],
      ['invoice.EXE\u2060.pdf', 'exe'],
      // Percent-encoded look-alikes are decoded, then normalized, then checked (and the other way round).
      ['x.%EF%BD%85%EF%BD%98%EF%BD%85.pdf', 'exe'],
      ['x.\uFF0565xe.pdf', 'exe'],
      // What a segment holds before `;` (IIS ran `a.php;.jpg` as PHP) or `:` (an NTFS stream of `a.asp`).
      ['a.php;.pdf', 'php'],
      ['a.asp:.pdf', 'asp'],
      ['a.php;x.pdf', 'php'],
      // One of each kind beyond the contract's examples: library, script, installer, archive, credentials.
      ...['so', 'lua', 'tcl', 'msix', 'appx', 'flatpak', 'cpio', 'sitx', 'asc', 'chm', 'jnlp'].map(
        (ext): [string, string] => [`x.${ext}.pdf`, ext],
      ),
    ];
    for (const [name, segment] of blocked) {
      const res = await api.post(path(), { data: { answers: { ...base, cv: [files.fileJson(name, files.pdf())] } } });
      assert.equal(res.status, 422, name);
      assert.equal(res.body.errors['answers.cv'].length, 1, name);
      assert.ok(res.body.errors['answers.cv'][0].endsWith(`: el tipo de archivo .${segment} no está permitido`), `${name}: ${res.body.errors['answers.cv']}`);
    }
    // The same names in multipart, where they travel as raw UTF-8 in Content-Disposition.
    for (const [name, segment] of [['invoice.e\u200Bxe.pdf', 'exe'], ['invoice.\uFF45\uFF58\uFF45.pdf', 'exe']]) {
      const res = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'X'], ['files[cv]', { name, bytes: files.pdf() }]]);
      assert.equal(res.status, 422, name);
      assert.ok(res.body.errors['answers.cv'][0].endsWith(`: el tipo de archivo .${segment} no está permitido`), `${name}: ${res.body.errors['answers.cv']}`);
    }
    // Ordinary words that are also rare extensions are not blocked: only the last segment must be allowed.
    for (const name of ['John.Doe.Application.pdf', 'Art.of.War.pdf', 'CV.pl.pdf', 'Meeting.3.pm.pdf', 'prod.env.pdf']) {
      const res = await api.post(path(), { data: { answers: { ...base, cv: [files.fileJson(name, files.pdf())] } } });
      assert.equal(res.status, 201, `${name}: ${res.text}`);
    }
    const traversal = await api.post(path(), { data: { answers: { ...base, cv: [files.fileJson('../../etc/passwd.pdf', files.pdf())] } } });
    assert.equal(traversal.status, 201, traversal.text);
    assert.equal(traversal.body.data.files[0].filename, 'passwd.pdf');
    assert.match(traversal.body.data.files[0].folder_path, /^\/Formularios\/Contacto web\//);
    const windows = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'X'], ['files[cv]', { name: '..\\..\\boot.ini\\informe.pdf', bytes: files.pdf() }]]);
    assert.equal(windows.status, 201);
    assert.equal(windows.body.data.files[0].filename, 'informe.pdf');
  });

  test('an animated PNG is a .png (file-type names it apng): taken and stored as image/png', async () => {
    const res = await api.post(path(), { data: { answers: base, files: { media: [files.fileJson('animado.png', animatedPng(await files.png(), 2))] } } });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.data.files.map((f: any) => [f.filename, f.content_type]), [['animado.png', 'image/png']]);
  });

  test('the real content decides, by magic bytes: disguised files and macro documents are refused', async () => {
    const cases: Array<[string, string, Buffer]> = [
      ['media', 'photo.jpg', files.pdf()],
      ['cv', 'report.docx', files.plainZip()],
      ['cv', 'macros.docx', files.docm()],
      ['cv', 'tabla.xlsx', files.docx()],
      ['cv', 'programa.pdf', files.exe()],
      ['cv', 'notas.txt', Buffer.concat([Buffer.from('texto'), Buffer.from([0, 1, 2, 3])])],
      // Text for 5 KB, then an executable: checked to the end, not only the first bytes.
      ['cv', 'datos.csv', Buffer.concat([Buffer.from('a,b,c\n'.repeat(900)), files.exe()])],
      ['cv', 'notas.txt', Buffer.concat([Buffer.from('línea de texto\n'.repeat(400)), Buffer.from([0xff, 0xfe, 0x00, 0x01])])],
      ['media', 'cancion.mp3', files.wav()],
      // Polyglots: an image or a PDF that opens, with a zip after it that unzip opens too.
      ['media', 'foto.png', Buffer.concat([await files.png(), files.plainZip()])],
      ['cv', 'informe.pdf', Buffer.concat([files.pdf(), files.plainZip()])],
      // A zip with bytes after it (readers find it all the same: "extra bytes … attempting to process anyway").
      ['cv', 'oculto.pdf', Buffer.concat([files.pdf(), files.plainZip(), Buffer.from('\n%%EOF\n')])],
      // Past a record's longest comment (65,557 bytes): unzip 6 searches 66,000 bytes in 8 KB reads, so up to 74,194.
      ['media', 'relleno.png', Buffer.concat([await files.png(), files.plainZip(), Buffer.alloc(70_000)])],
      ['media', 'relleno.png', Buffer.concat([await files.png(), files.plainZip(), Buffer.alloc(73_900, 'A')])],
      // A zip64 (its end record says "see zip64"), one whose directory is longer than the 80 KB searched,
      // and one after a sound .doc: each opens in unzip and Python's zipfile.
      ['cv', 'grande.pdf', Buffer.concat([files.pdf(), files.zip64(files.plainZip())])],
      ['media', 'muchos.png', Buffer.concat([await files.png(), files.manyEntriesZip(3000), Buffer.from('cola')])],
      ['cv', 'informe.doc', Buffer.concat([files.doc(), files.plainZip()])],
      // Markup is refused whatever its name: a page or a drawing is not text to a browser that sniffs it.
      ['cv', 'pagina.txt', Buffer.from('<!DOCTYPE html><html><script>alert(document.cookie)</script></html>')],
      ['cv', 'dibujo.txt', Buffer.from('\uFEFF  <?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>')],
      ['cv', 'tabla.csv', Buffer.from('<!-- hoja -->\n<script>alert(1)</script>')],
      // Any start a browser sniffs as HTML (WHATWG MIME Sniffing §7.1), not only a document's.
      ['cv', 'marco.txt', Buffer.from('<iframe src=x></iframe>')],
      ['cv', 'parrafo.csv', Buffer.from('<p><img src=x onerror=alert(1)>')],
      ['cv', 'liga.txt', Buffer.from('  <A href="javascript:alert(1)">x</a>')],
      ['cv', 'comentario.txt', Buffer.from('<!-- sin cerrar <script>alert(1)</script>')],
      // Not UTF-8, so read as Windows-1252: a byte it leaves undefined (0x81) is binary; a control byte too.
      ['cv', 'datos.csv', Buffer.from([0x4a, 0x6f, 0x73, 0xe9, 0x2c, 0x81, 0x0a])],
      ['cv', 'datos.csv', Buffer.from([0x4a, 0x6f, 0x73, 0xe9, 0x2c, 0x01, 0x0a])],
      // UTF-16 by its byte-order mark: a control character, or bytes that are no UTF-16, are refused; markup too.
      ['cv', 'notas.txt', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('hola\u0001', 'utf16le')])],
      ['cv', 'notas.txt', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('hola', 'utf16le'), Buffer.from([0x00, 0xd8])])],
      ['cv', 'pagina.txt', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('<html><script>alert(1)</script>', 'utf16le')])],
    ];
    for (const [field, name, bytes] of cases) {
      const res = await api.post(path(), { data: { answers: { ...base, [field]: files.fileJson(name, bytes) } } });
      assert.equal(res.status, 422, `${name}: ${res.text}`);
      assert.ok(res.body.errors[`answers.${field}`], name);
    }
    // Text that merely holds angle brackets is text.
    const text = await api.post(path(), { data: { answers: { ...base, cv: files.fileJson('notas.txt', Buffer.from('nota: <b>a</b> < b, y <html> se escribe así')) } } });
    assert.equal(text.status, 201, text.text);
    // Text in the encodings text files come in: Excel's CSV on a Spanish Windows (Windows-1252: é is E9),
    // Notepad's "Unicode" (UTF-16 with its byte-order mark), little- and big-endian.
    const utf16be = Buffer.from('Notas del día\r\n', 'utf16le').swap16();
    for (const [name, bytes] of [
      // 0x93 and 0x94 are Windows-1252's curly quotes (C1 controls in Latin-1).
      ['excel.csv', Buffer.from('nombre,ciudad\r\nJosé,México\r\nMuñoz,\u0093Señor\u0094\r\n', 'latin1')],
      ['notas.txt', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Notas del día\r\n', 'utf16le')])],
      ['notas.txt', Buffer.concat([Buffer.from([0xfe, 0xff]), utf16be])],
    ] as const) {
      const res = await api.post(path(), { data: { answers: { ...base, cv: files.fileJson(name, bytes) } } });
      assert.equal(res.status, 201, `${name} ${bytes.subarray(0, 8).toString('hex')}: ${res.text}`);
    }
    // The same polyglot sent as multipart, past the 80 KB the window keeps: its end is what counts.
    const big = Buffer.concat([files.pdf(200_000), files.plainZip()]);
    const multi = await multipart([['answers[email]', 'poly@example.com'], ['answers[name]', 'P'], ['files[cv]', { name: 'grande.pdf', bytes: big }]]);
    assert.equal(multi.status, 422, JSON.stringify(multi.body));
    assert.match(multi.body.errors['answers.cv'][0], /comprimido \(zip\) al final/);
  });

  test('zip bombs: a .docx whose directory inflates past 256 MiB, or an entry past 10 MiB at more than 200:1, is refused; a real one passes', async () => {
    const contentTypes = '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>';
    const before = await blobCount();
    for (const [name, bytes] of [
      ['bomba.docx', await files.zipBomb('word/document.xml', 1024 ** 3, { '[Content_Types].xml': contentTypes })],
      ['ratio.docx', await files.zipBomb('word/document.xml', 64 * 1024 * 1024, { '[Content_Types].xml': contentTypes })],
    ] as const) {
      const res = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'X'], ['files[cv]', { name, bytes }]]);
      assert.equal(res.status, 422, name);
      assert.equal(res.body.error, 'validation_failed');
      assert.match(res.body.errors['answers.cv'][0], /bomba de descompresión/, name);
    }
    assert.equal(await blobCount(), before, 'nothing refused is kept');
    const ok = await api.post(path(), { data: { answers: { ...base, cv: [files.fileJson('carta.docx', files.docx()), files.fileJson('hoja.xlsx', files.xlsx())] } } });
    assert.equal(ok.status, 201, JSON.stringify(ok.body));
  });

  test('legacy Office (.doc/.xls/.ppt): the compound file must hold the format’s stream, no VBA storage and no installer class id', async () => {
    const refused: Array<[string, Buffer, RegExp]> = [
      ['setup.doc', files.msiAsDoc(), /\.doc: el contenido es de un tipo no permitido \(instalador msi\)$/],
      ['macros.doc', files.docWithMacros(), /\.doc: el documento contiene macros/],
      ['macros.xls', files.xlsWithMacros(), /\.xls: el documento contiene macros/],
      ['macros.ppt', files.ppt(true), /\.ppt: el documento contiene macros/],
      ['hoja.doc', files.xls(), /no es un documento \.doc \(falta el flujo WordDocument\)/],
      ['vacio.xls', files.ole({ Otro: 'x' }), /no es un documento \.xls \(falta el flujo Workbook o Book\)/],
    ];
    for (const [name, bytes, reason] of refused) {
      const res = await api.post(path(), { data: { answers: { ...base, cv: files.fileJson(name, bytes) } } });
      assert.equal(res.status, 422, `${name}: ${res.text}`);
      assert.equal(res.body.error, 'validation_failed');
      assert.match(res.body.errors['answers.cv'].join(' '), reason, name);
    }
    const ok = await api.post(path(), {
      data: { answers: { ...base, cv: [files.fileJson('carta.doc', files.doc()), files.fileJson('datos.xls', files.xls()), files.fileJson('deck.ppt', files.ppt())] } },
    });
    assert.equal(ok.status, 201, ok.text);
    assert.deepEqual(ok.body.data.files.map((f: any) => [f.filename, f.content_type]), [
      ['carta.doc', 'application/msword'],
      ['datos.xls', 'application/vnd.ms-excel'],
      ['deck.ppt', 'application/vnd.ms-powerpoint'],
    ]);
  });

  test('counts and sizes: 11 files, one byte over the limit, exactly at the limit (streamed)', async () => {
    const eleven = Array.from({ length: 11 }, (_, i) => files.fileJson(`f${i}.pdf`, files.pdf()));
    const tooMany = await api.post(path(), { data: { answers: { ...base, cv: eleven } } });
    assert.equal(tooMany.status, 422);
    assert.match(tooMany.body.errors['answers.cv'].join(' '), /máximo 10/);

    const before = await blobCount();
    const over = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'X'], ['files[cv]', { name: 'grande.pdf', bytes: files.pdf(2 * MIB + 1) }]]);
    assert.equal(over.status, 422);
    assert.match(over.body.errors['answers.cv'][0], /tamaño máximo/);
    assert.equal(await blobCount(), before);
    const overJson = await api.post(path(), { data: { answers: { ...base, cv: files.fileJson('grande.pdf', files.pdf(2 * MIB + 1)) } } });
    assert.equal(overJson.status, 422);

    const exact = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'X'], ['files[cv]', { name: 'justo.pdf', bytes: files.pdf(2 * MIB) }]]);
    assert.equal(exact.status, 201, JSON.stringify(exact.body));
    assert.equal(exact.body.data.files[0].size_bytes, 2 * MIB);
  });

  test('a multipart body past the part limits is refused whole, not stored without the parts that did not fit', async () => {
    const submissions = async () => (await app.pool.query('SELECT count(*)::int AS n FROM form_submissions WHERE company_id = $1', [tenant.companyId])).rows[0].n;
    const before = await submissions();
    const filler = Array.from({ length: 520 }, (): [string, string] => ['answers[message][]', 'x']);
    const tooManyTexts = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'X'], ...filler, ['answers[plan]', 'Pro']]);
    assert.equal(tooManyTexts.status, 422);
    assert.equal(tooManyTexts.body.error, 'validation_failed');
    // The limit alone: every part was well formed, none is said to be unreadable.
    assert.deepEqual(tooManyTexts.body.errors.data, ['demasiadas respuestas: como máximo 500 partes de texto']);
    const files101 = Array.from({ length: 101 }, (_, i): [string, { name: string; bytes: Buffer }] => ['files[nope]', { name: `f${i}.pdf`, bytes: Buffer.from('%PDF-1.4') }]);
    const tooManyFiles = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'X'], ...files101]);
    assert.equal(tooManyFiles.status, 422);
    assert.deepEqual(tooManyFiles.body.errors.data, ['demasiados archivos: como máximo 100 partes de archivo']);
    assert.equal(await submissions(), before, 'nothing stored');
  });

  test('a malformed multipart body is 422 naming what is wrong, in Spanish as every message', async () => {
    const head = '--zz\r\nContent-Disposition: form-data; name="answers[email]"\r\n\r\nx@example.com\r\n';
    const cases: Array<[string, RegExp]> = [
      [head, /antes del límite final/], // no closing boundary
      [`${head}--zz\r\nContent-Disposition: form-data; name="answers[name]"\r\nX-\u0000: y\r\n\r\nX\r\n--zz--\r\n`, /encabezado de una parte/],
    ];
    for (const [body, reason] of cases) {
      const res = await fetch(app.baseUrl + path(), {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'multipart/form-data; boundary=zz' },
        body,
      });
      const json = (await res.json()) as any;
      assert.equal(res.status, 422, JSON.stringify(json));
      assert.equal(json.error, 'validation_failed');
      assert.match(json.errors.data[0], reason);
    }
  });

  test('multipart: a part the parser cannot name is refused, never dropped; an empty file input is no file; no part at all is no answers', async () => {
    const submissions = async () => (await app.pool.query('SELECT count(*)::int AS n FROM form_submissions WHERE company_id = $1', [tenant.companyId])).rows[0].n;
    const before = await submissions();
    const send = (body: string) =>
      fetch(app.baseUrl + path(), { method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'multipart/form-data; boundary=zz' }, body }).then(async (r) => ({
        status: r.status,
        body: (await r.json()) as any,
      }));
    const answers = '--zz\r\nContent-Disposition: form-data; name="answers[email]"\r\n\r\nx@example.com\r\n--zz\r\nContent-Disposition: form-data; name="answers[name]"\r\n\r\nX\r\n';
    const unreadable = [
      'Content-Disposition: form-data; name=data[answers][cv]; filename=x.exe\r\nContent-Type: application/octet-stream\r\n\r\nMZ',
      'Content-Disposition: attachment; name="data[answers][cv]"; filename="x.exe"\r\n\r\nMZ',
      'Content-Type: text/plain\r\n\r\nsin Content-Disposition',
      'Content-Disposition: form-data; name=data[answers][message]\r\n\r\nhola',
    ];
    for (const part of unreadable) {
      const res = await send(`${answers}--zz\r\n${part}\r\n--zz--\r\n`);
      assert.equal(res.status, 422, `${part}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.error, 'validation_failed');
      assert.match(res.body.errors.data[0], /Content-Disposition/);
    }
    assert.equal(await submissions(), before, 'nothing stored');
    // A browser's file input left empty: filename="" and no bytes. The submission goes through without a file.
    const empty = await send(`${answers}--zz\r\nContent-Disposition: form-data; name="answers[cv]"; filename=""\r\nContent-Type: application/octet-stream\r\n\r\n\r\n--zz--\r\n`);
    assert.equal(empty.status, 201, JSON.stringify(empty.body));
    assert.equal(empty.body.data.answers.cv, undefined);
    // The same sent by hand without a Content-Type (busboy reads it as a text part): no file either.
    const bare = await send(`${answers}--zz\r\nContent-Disposition: form-data; name="files[cv]"; filename=""\r\n\r\n\r\n--zz--\r\n`);
    assert.equal(bare.status, 201, JSON.stringify(bare.body));
    assert.deepEqual(bare.body.data.files, []);
    const unnamed = await send(`${answers}--zz\r\nContent-Disposition: form-data; name="answers[cv]"; filename=""\r\n\r\nbytes\r\n--zz--\r\n`);
    assert.deepEqual([unnamed.status, Object.keys(unnamed.body.errors ?? {})], [422, ['answers.cv']]);
    // What comes after the closing delimiter (the epilogue) is ignored, as the parser ignores it.
    const epilogue = await send(`${answers}--zz--\r\n\r\n--zz\r\nnada\r\n`);
    assert.equal(epilogue.status, 201, JSON.stringify(epilogue.body));
    // No part at all is what a browser sends for a form left empty: no answers (here the required ones are missing).
    const none = await send('--zz--\r\n');
    assert.equal(none.status, 422);
    assert.deepEqual(Object.keys(none.body.errors).sort(), ['answers.email', 'answers.name']);
  });

  test('base64: malformed data is refused, and the size is checked before decoding', async () => {
    const bad = await api.post(path(), { data: { answers: { ...base, cv: { filename: 'a.pdf', content_type: 'application/pdf', data: 'JVBERi0x#$%^' } } } });
    assert.equal(bad.status, 422);
    assert.match(bad.body.errors['answers.cv'][0], /base64/);
    // 3 MiB of characters that are not even base64: refused for size, never decoded.
    const huge = await api.post(path(), { data: { answers: { ...base, cv: { filename: 'a.pdf', data: '!'.repeat(3 * MIB) } } } });
    assert.equal(huge.status, 422);
    assert.match(huge.body.errors['answers.cv'][0], /tamaño máximo/);
  });

  test('base64: the field and the file count are checked before any decoding', async () => {
    // Not base64 at all: only a check made before decoding can answer about the field.
    const junk = (filename: string) => ({ filename, data: '!'.repeat(4000) });
    const wrongField = await api.post(path(), { data: { answers: { ...base, message: junk('a.pdf'), nope: junk('b.pdf') } } });
    assert.equal(wrongField.status, 422);
    assert.deepEqual(wrongField.body.errors['answers.message'], ['este campo no admite archivos']);
    assert.deepEqual(wrongField.body.errors['answers.nope'], ['no es un campo del formulario']);
    const eleventh = [...Array.from({ length: 10 }, (_, i) => files.fileJson(`f${i}.pdf`, files.pdf())), junk('f10.pdf')];
    const tooMany = await api.post(path(), { data: { answers: { ...base, cv: eleventh } } });
    assert.equal(tooMany.status, 422);
    assert.deepEqual(tooMany.body.errors['answers.cv'], ['admite como máximo 10 archivo(s)']);
  });

  test('base64 broken into lines (MIME, `base64 file` in a shell) is accepted; base64url is not base64', async () => {
    const pdf = files.pdf(5000);
    const lines = pdf.toString('base64').replace(/.{76}/g, '$&\n');
    const crlf = pdf.toString('base64').replace(/.{76}/g, '$&\r\n');
    for (const data of [lines, crlf]) {
      const res = await api.post(path(), { data: { answers: { ...base, cv: { filename: 'lineas.pdf', data } } } });
      assert.equal(res.status, 201, res.text);
      assert.equal(res.body.data.files[0].size_bytes, pdf.length);
    }
    const url = await api.post(path(), { data: { answers: { ...base, cv: { filename: 'url.pdf', data: randomBytes(3000).toString('base64url').replace(/^./, '_') } } } });
    assert.equal(url.status, 422);
    assert.match(url.body.errors['answers.cv'][0], /base64/);
  });

  test('data URLs: a full data URL is accepted; its declared type is ignored and a lying one does not help', async () => {
    const url = `data:image/png;base64,${files.pdf().toString('base64')}`;
    const ok = await api.post(path(), { data: { answers: { ...base, cv: { filename: 'doc.pdf', data: url } } } });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.data.files[0].content_type, 'application/pdf');
    const lying = await api.post(path(), { data: { answers: { ...base, media: { filename: 'imagen.png', content_type: 'image/png', data: url } } } });
    assert.equal(lying.status, 422);
  });

  test('a 40 MB body is refused early with 413 request_too_large', async () => {
    const target = new URL(app.baseUrl + path());
    const result = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        target,
        { method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'multipart/form-data; boundary=x', 'content-length': String(40 * 1000 * 1000) } },
        (res) => {
          let body = '';
          res.on('data', (c) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.on('error', reject);
      req.write(Buffer.alloc(64 * 1024)); // the server answers without waiting for the rest
    });
    assert.equal(result.status, 413);
    assert.equal(JSON.parse(result.body).error, 'request_too_large');
    // JSON bodies have a lower cap (held in memory and decoded): 9 MB of JSON is refused, naming multipart.
    const json = await api.post(path(), { data: { answers: { ...base, cv: files.fileJson('a.pdf', Buffer.alloc(7 * MIB)) } } });
    assert.equal(json.status, 413);
    assert.equal(json.body.error, 'request_too_large');
    assert.match(json.body.message, /JSON.*8 MB.*multipart/);
  });

  test('Expect: 100-continue: a refused upload is answered before its body is sent (no 100, Connection: close); an accepted one gets its 100 once the checks pass', async () => {
    const target = new URL(app.baseUrl + path());
    /**
     * Writes `payload` on a raw socket and resolves with everything the server sent, once `done` says so
     * (given what was received so far and the socket, to write more) or the server closes.
     */
    const rawSocket = (payload: string, done: (received: string, socket: net.Socket) => boolean) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(target.port), target.hostname);
        let received = '';
        socket.on('error', reject);
        socket.on('data', (chunk) => {
          received += chunk.toString('latin1');
          if (done(received, socket)) socket.destroy();
        });
        socket.on('close', () => resolve(received));
        socket.write(payload);
      });
    /** A POST's headers with Expect: 100-continue; `body` is sent only on the 100. Ends with the final answer. */
    const exchange = (headers: Record<string, string>, body?: Buffer) => {
      const lines = Object.entries({ host: target.host, expect: '100-continue', ...headers }).map(([k, v]) => `${k}: ${v}`);
      return rawSocket(`POST ${target.pathname} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`, (received, socket) => {
        if (body && /^HTTP\/1\.1 100 Continue\r\n\r\n$/.test(received)) {
          socket.write(body);
          body = undefined;
        }
        return /\r\n\r\n[\s\S]*\}$/.test(received.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, ''));
      });
    };
    const multipartType = { 'content-type': 'multipart/form-data; boundary=b' };
    const tooBig = await exchange({ authorization: `Bearer ${tenant.key}`, ...multipartType, 'content-length': String(40 * 1000 * 1000) });
    assert.match(tooBig, /^HTTP\/1\.1 413 /, 'the final answer first, no 100 Continue before it');
    assert.match(tooBig, /\r\nconnection: close\r\n/i);
    assert.match(tooBig, /"error":"request_too_large"/);
    const badKey = await exchange({ authorization: 'Bearer service_sk_nope', ...multipartType, 'content-length': '1000' });
    assert.match(badKey, /^HTTP\/1\.1 401 /);
    const body = Buffer.from(`--b\r\nContent-Disposition: form-data; name="answers[email]"\r\n\r\ncontinue@example.com\r\n--b\r\nContent-Disposition: form-data; name="answers[name]"\r\n\r\nSigue\r\n--b--\r\n`);
    const accepted = await exchange({ authorization: `Bearer ${tenant.key}`, ...multipartType, 'content-length': String(body.length) }, body);
    assert.match(accepted, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 /, accepted.slice(0, 200));

    // A client that sends its body without waiting (RFC 9110 allows it), and a request with nothing to send,
    // each with a request pipelined behind it: both answered, the connection kept.
    const pipelined = (first: string, second: string) =>
      rawSocket(first + second, (received) => (received.match(/\r\nx-request-id: /gi) ?? []).length === 2 && /\}$/.test(received));
    const json = JSON.stringify({ data: { name: 'Sin esperar' } });
    const withBody = `POST /api/v1/customers HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${tenant.key}\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${json.length}\r\n\r\n${json}`;
    const list = `GET /api/v1/customers?limit=1 HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${tenant.key}\r\n\r\n`;
    const bodyless = `GET /api/v1/customers?limit=1 HTTP/1.1\r\nHost: ${target.host}\r\nAuthorization: Bearer ${tenant.key}\r\nExpect: 100-continue\r\n\r\n`;
    for (const [first, status] of [[withBody, 201], [bodyless, 200]] as const) {
      const answers = (await pipelined(first, list)).split(/(?=HTTP\/1\.1 )/).filter((a) => !a.startsWith('HTTP/1.1 100 '));
      assert.deepEqual(answers.map((a) => Number(a.slice(9, 12))), [status, 200], answers.join('\n---\n').slice(0, 600));
      assert.doesNotMatch(answers[0], /\r\nconnection: close\r\n/i);
    }
  });

  test('a body over the cap from fetch (undici) in another process, still sending when refused: it reads the 413', async () => {
    // Closing the connection on the answer (unread bytes: the kernel resets it) made fetch fail with
    // EPIPE instead of showing the 413. The client runs in a process of its own, as a real one does: in
    // this process the answer was read before the reset arrived.
    const script = `
      const sizes = [33 * 1024 * 1024, 40 * 1024 * 1024];
      const out = [];
      for (const size of sizes) {
        const body = new FormData();
        body.append('answers[email]', 'f@example.com');
        body.append('files[cv]', new File([new Uint8Array(size)], 'big.pdf', { type: 'application/pdf' }));
        try {
          const res = await fetch(process.env.TARGET, { method: 'POST', headers: { authorization: 'Bearer ' + process.env.KEY }, body });
          out.push([res.status, (await res.json()).error]);
        } catch (error) {
          out.push(['failed', error.cause?.code ?? error.message]);
        }
      }
      console.log(JSON.stringify(out));`;
    const { stdout } = await execFileP(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, TARGET: app.baseUrl + path(), KEY: tenant.key },
    });
    assert.deepEqual(JSON.parse(stdout), [[413, 'request_too_large'], [413, 'request_too_large']]);
  });

  test('a 40 MB body sent chunked is cut off at the cap mid-file: 413, and no blob, complete or not, is left', async () => {
    // A field that takes 64 MB files, so the request cap (32 MiB), not the file's, stops the write.
    const big = await seedTenant(app.pool);
    const file: any = files.sampleFormFile({ slug: 'grande' });
    file.fields.find((f: any) => f.key === 'cv').file.max_file_size_mb = 64;
    const own = await files.createFormViaAdmin(app.url, big.companyId, file);
    const forty = function* () {
      yield files.pdf(1000);
      for (let i = 0; i < 40 * 16; i++) yield Buffer.alloc(64 * 1024, 0x20);
    };
    const res = await rawPost(
      `/forms/${own.id}/submissions`,
      { authorization: `Bearer ${big.key}`, 'content-type': 'multipart/form-data; boundary=b' },
      multipartPieces('b', { 'answers[email]': 'g@example.com', 'answers[name]': 'G' }, { part: 'files[cv]', name: 'grande.pdf', bytes: forty() }),
    );
    assert.equal(res.status, 413);
    assert.equal(res.body.error, 'request_too_large');
    const left = await app.pool.query('SELECT count(*)::int AS n FROM blobs WHERE company_id = $1', [big.companyId]);
    assert.equal(left.rows[0].n, 0);
    assert.equal((await app.pool.query('SELECT count(*)::int AS n FROM form_submissions WHERE company_id = $1', [big.companyId])).rows[0].n, 0);
  });

  test('another company’s form: 404 not_found, nothing stored', async () => {
    const other = await seedTenant(app.pool);
    const before = await blobCount();
    const res = await client(app.baseUrl, other.key).post(path(), { data: { answers: { ...base, cv: files.fileJson('a.pdf', files.pdf()) } } });
    assert.equal(res.status, 404);
    assert.equal(res.body.error, 'not_found');
    const bySlug = await client(app.baseUrl, other.key).post('/forms/contacto/submissions', { data: { answers: base } });
    assert.equal(bySlug.status, 404);
    assert.equal(await blobCount(), before);
    // A submission of the form's own company, read with the other key: 404 too.
    const own = await api.post(path(), { data: { answers: base } });
    assert.equal(own.status, 201, JSON.stringify(own.body));
    const read = await client(app.baseUrl, other.key).get(`${path()}/${own.body.data.id}`);
    assert.equal(read.status, 404);
  });

  test('a key without create-form_submissions gets 403', async () => {
    const reader = await seedTenant(app.pool, { scopes: ['read-forms'] });
    const own = await files.createFormViaAdmin(app.url, reader.companyId);
    const res = await client(app.baseUrl, reader.key).post(`/forms/${own.id}/submissions`, { data: { answers: base } });
    assert.equal(res.status, 403);
    assert.equal(res.body.required, 'create-form_submissions');
  });

  test('Idempotency-Key: the same JSON or multipart submission is stored once and replayed; another body is 422', async () => {
    const body = { data: { answers: { ...base, cv: files.fileJson('cv.pdf', files.pdf()) } } };
    const first = await api.post(path(), body, { 'idempotency-key': 'json-1' });
    const again = await api.post(path(), body, { 'idempotency-key': 'json-1' });
    assert.equal(first.status, 201);
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.equal(again.body.data.id, first.body.data.id);
    const other = await api.post(path(), { data: { answers: { ...base, name: 'Otra' } } }, { 'idempotency-key': 'json-1' });
    assert.equal(other.status, 422);
    assert.equal(other.body.error, 'idempotency_key_reused');

    const blobsBefore = await blobCount();
    const parts: Parameters<typeof multipart>[0] = [['answers[email]', 'm@example.com'], ['answers[name]', 'M'], ['files[cv]', { name: 'a.pdf', bytes: files.pdf(30_000) }]];
    const m1 = await multipart(parts, { 'idempotency-key': 'multi-1' });
    const m2 = await multipart(parts, { 'idempotency-key': 'multi-1' });
    assert.equal(m1.status, 201);
    assert.equal(m2.headers.get('idempotent-replayed'), 'true');
    assert.equal(m2.body.data.id, m1.body.data.id);
    assert.equal(await blobCount(), blobsBefore + 1, 'the replay left no staged bytes behind');
    const changed = await multipart([...parts.slice(0, 2), ['files[cv]', { name: 'a.pdf', bytes: files.pdf(30_001) }]], { 'idempotency-key': 'multi-1' });
    assert.equal(changed.status, 422);
    assert.equal(changed.body.error, 'idempotency_key_reused');
    // The same body plus a file the form refuses is another body too: it is not the stored answer's replay
    // (a 201 would tell the client its file was taken).
    for (const refused of [{ name: 'evil.exe', bytes: files.pdf() }, { name: 'no-es.pdf', bytes: Buffer.from('no es un PDF, es texto') }]) {
      const withRefused = await multipart([...parts, ['files[cv]', refused]], { 'idempotency-key': 'multi-1' });
      assert.deepEqual([withRefused.status, withRefused.body.error], [422, 'idempotency_key_reused'], `${refused.name}: ${JSON.stringify(withRefused.body)}`);
    }
    const count = await app.pool.query(`SELECT count(*)::int AS n FROM form_submissions WHERE email = 'm@example.com'`);
    assert.equal(count.rows[0].n, 1);
  });

  test('Idempotency-Key: a body over 100 KB, files included, is 413 idempotency_body_too_large; large uploads go without the key', async () => {
    const blobsBefore = await blobCount();
    const fields = { 'answers[email]': 'k@example.com', 'answers[name]': 'K' };
    // Declared over 100 KB: answered before the body is read (only 16 KB of 300 KB is ever sent).
    const declared = await rawPost(path(), { 'content-type': 'multipart/form-data; boundary=b', 'idempotency-key': 'big-1' }, [Buffer.alloc(16 * 1024)], { length: 300_000, end: false });
    assert.equal(declared.status, 413);
    assert.equal(declared.body.error, 'idempotency_body_too_large');
    assert.deepEqual(Object.keys(declared.body).sort(), ['error', 'message']);
    // Sent chunked, without Content-Length: cut off once it passes 100 KB.
    const chunked = await rawPost(
      path(),
      { 'content-type': 'multipart/form-data; boundary=b', 'idempotency-key': 'big-2' },
      multipartPieces('b', fields, { part: 'files[cv]', name: 'a.pdf', bytes: slices(files.pdf(200_000)) }),
    );
    assert.equal(chunked.status, 413);
    assert.equal(chunked.body.error, 'idempotency_body_too_large');
    assert.equal(await blobCount(), blobsBefore, 'the file cut off at 100 KB left no blob');
    // JSON, files in base64: the rule is the same, on the body as sent, to the byte.
    const json = JSON.stringify({ data: { answers: { ...base, cv: files.fileJson('a.pdf', files.pdf(60_000)) } } });
    const post = (text: string, key: string) =>
      fetch(app.baseUrl + path(), { method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json', 'idempotency-key': key }, body: text });
    const over = await post(json + ' '.repeat(100_001 - Buffer.byteLength(json)), 'big-3');
    assert.equal(over.status, 413);
    assert.equal(((await over.json()) as any).error, 'idempotency_body_too_large');
    assert.equal(await blobCount(), blobsBefore, 'nothing was stored for the refused JSON body either');
    // The same JSON sent chunked (no Content-Length) is measured as sent too, whitespace included.
    const small = JSON.stringify({ data: { answers: base } });
    const chunkedJson = await rawPost(path(), { 'content-type': 'application/json', 'idempotency-key': 'big-5' }, [Buffer.from(small), Buffer.alloc(100_001 - Buffer.byteLength(small), ' ')]);
    assert.equal(chunkedJson.status, 413, JSON.stringify(chunkedJson.body));
    assert.equal(chunkedJson.body.error, 'idempotency_body_too_large');
    const chunkedAtLimit = await rawPost(path(), { 'content-type': 'application/json', 'idempotency-key': 'big-5' }, [Buffer.from(small), Buffer.alloc(100_000 - Buffer.byteLength(small), ' ')]);
    assert.equal(chunkedAtLimit.status, 201, JSON.stringify(chunkedAtLimit.body));
    const atLimit = await post(json + ' '.repeat(100_000 - Buffer.byteLength(json)), 'big-3');
    assert.equal(atLimit.status, 201, 'exactly 100 KB is allowed, and the refused request did not claim the key');
    // The same 300 KB upload without the key is an ordinary submission.
    const plain = await multipart([['answers[email]', 'k@example.com'], ['answers[name]', 'K'], ['files[cv]', { name: 'a.pdf', bytes: files.pdf(300_000) }]]);
    assert.equal(plain.status, 201, JSON.stringify(plain.body));
    const keyed = await multipart([['answers[email]', 'k@example.com'], ['answers[name]', 'K'], ['files[cv]', { name: 'a.pdf', bytes: files.pdf(300_000) }]], { 'idempotency-key': 'big-4' });
    assert.equal(keyed.status, 413, 'fetch declares the length of a FormData body');
    assert.equal(keyed.body.error, 'idempotency_body_too_large');
  });

  test('storage quota exhausted mid-submission: the submission is kept, files that fit are stored, files_error says which did not', async () => {
    const small = await seedTenant(app.pool);
    const own = await files.createFormViaAdmin(app.url, small.companyId);
    await updateCompany(app.pool, small.companyId, { storageQuotaMb: 1 });
    const res = await client(app.baseUrl, small.key).post(`/forms/${own.id}/submissions`, {
      data: { answers: { ...base, cv: [files.fileJson('uno.pdf', files.pdf(600_000)), files.fileJson('dos.pdf', files.pdf(600_000))] } },
    });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.data.files.map((f: any) => f.filename), ['uno.pdf']);
    assert.deepEqual(res.body.data.answers.cv, ['uno.pdf'], 'answers name only the files stored');
    assert.match(res.body.data.files_error, /agotado.*dos\.pdf/);
    const stored = await app.pool.query('SELECT count(*)::int AS n FROM blobs WHERE company_id = $1', [small.companyId]);
    assert.equal(stored.rows[0].n, 1, 'the refused file’s bytes are gone');
    await updateCompany(app.pool, small.companyId, { storageQuotaMb: 0 });
    const none = await client(app.baseUrl, small.key).post(`/forms/${own.id}/submissions`, { data: { answers: { ...base, cv: files.fileJson('tres.pdf', files.pdf()) } } });
    assert.equal(none.status, 201);
    assert.deepEqual(none.body.data.files, []);
    assert.equal(none.body.data.answers.cv, undefined);
    assert.ok(none.body.data.files_error);
    // The same when the file field is required: the file was sent, so the submission is kept with
    // files_error (contract), not refused as if the answer were missing.
    const fields = files.sampleFormFile().fields.map((f: any) => (f.key === 'cv' ? { ...f, required: true } : f));
    const strict = await files.createFormViaAdmin(app.url, small.companyId, files.sampleFormFile({ slug: 'cv-obligatorio', fields }));
    const kept = await client(app.baseUrl, small.key).post(`/forms/${strict.id}/submissions`, { data: { answers: { ...base, cv: files.fileJson('cuatro.pdf', files.pdf()) } } });
    assert.equal(kept.status, 201, JSON.stringify(kept.body));
    assert.match(kept.body.data.files_error, /cuatro\.pdf/);
  });

  test('storage quota: checked before bytes are streamed in, counting every stored file of the company (catalog images too)', async () => {
    const small = await seedTenant(app.pool);
    const own = await files.createFormViaAdmin(app.url, small.companyId);
    await updateCompany(app.pool, small.companyId, { storageQuotaMb: 1 });
    // A catalog image of ~700 KB fills most of the 1 MB quota.
    const product = (await client(app.baseUrl, small.key).post('/products', { data: { name: 'Foto', prices_cents: { mxn: 100 } } })).body.data;
    const body = new FormData();
    const photo = await sharp(randomBytes(800 * 800 * 3), { raw: { width: 800, height: 800, channels: 3 } }).jpeg({ quality: 95 }).toBuffer();
    assert.ok(photo.length > 1_048_576 - 600_000 && photo.length < 1_000_000, `a photo that leaves less than 600 KB: ${photo.length}`);
    body.append('image', new Blob([photo], { type: 'image/jpeg' }), 'foto.jpg');
    const up = await fetch(`${app.baseUrl}/products/${product.id}/image`, { method: 'POST', headers: { authorization: `Bearer ${small.key}` }, body });
    assert.equal(up.status, 200, await up.text());
    const blobsBefore = (await app.pool.query('SELECT count(*)::int AS n FROM blobs WHERE company_id = $1', [small.companyId])).rows[0].n;

    // JSON: a 600 KB file no longer fits; it is refused from its length, never decoded or stored.
    const json = await client(app.baseUrl, small.key).post(`/forms/${own.id}/submissions`, {
      data: { answers: { ...base, cv: [files.fileJson('grande.pdf', files.pdf(600_000))] } },
    });
    assert.equal(json.status, 201, json.text);
    assert.deepEqual(json.body.data.files, []);
    assert.match(json.body.data.files_error, /agotado.*grande\.pdf/);
    // Multipart: the stream stops at the room left.
    const parts = await multipart([['answers[email]', 'x@example.com'], ['answers[name]', 'X'], ['files[cv]', { name: 'otro.pdf', bytes: files.pdf(600_000) }]], {}, `/forms/${own.id}/submissions`, small.key);
    assert.equal(parts.status, 201, JSON.stringify(parts.body));
    assert.deepEqual(parts.body.data.files, []);
    assert.match(parts.body.data.files_error, /otro\.pdf/);
    const blobsAfter = (await app.pool.query('SELECT count(*)::int AS n FROM blobs WHERE company_id = $1', [small.companyId])).rows[0].n;
    assert.equal(blobsAfter, blobsBefore, 'no bytes of the refused files are kept');
  });

  /** An upload body held open mid-body (the server is reading it); `status` is set if the server answers it; destroy() lets it go. */
  function holdUpload(target: URL, key: string): { req: http.ClientRequest; status: number | null } {
    const held = { req: http.request(target, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'multipart/form-data; boundary=zz', 'content-length': String(5 * MIB) },
    }), status: null as number | null };
    held.req.on('error', () => {});
    held.req.on('response', (res) => {
      held.status = res.statusCode ?? 0;
      res.resume();
    });
    held.req.write('--zz\r\nContent-Disposition: form-data; name="files[cv]"; filename="a.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4\n');
    return held;
  }
  /** A JSON submission over SMALL_UPLOAD_BODY (a 100 KB PDF inline), so it needs an upload slot. */
  const withFile = () => ({ data: { answers: { ...base, cv: { filename: 'cv.pdf', content_type: 'application/pdf', data: files.pdf(100_000).toString('base64') } } } });

  test('uploads read at once are bounded per process: past UPLOAD_CONCURRENCY the next is 503 with Retry-After, and works once a slot frees', async () => {
    const bounded = await startTestApp({ UPLOAD_CONCURRENCY: '1' });
    try {
      const t = await seedTenant(bounded.pool);
      const form = await files.createFormViaAdmin(bounded.url, t.companyId);
      const held = holdUpload(new URL(`${bounded.baseUrl}/forms/${form.id}/submissions`), t.key).req;
      const api2 = client(bounded.baseUrl, t.key);
      const busy = await waitFor(async () => {
        const res = await api2.post(`/forms/${form.id}/submissions`, withFile());
        return res.status === 503 && res;
      }, 10_000, 'a second upload to be refused while the first is read');
      assert.equal(busy.body.error, 'service_unavailable');
      assert.equal(busy.headers.get('retry-after'), '1');
      // A submission without files takes no slot: it is answered while the upload is still read.
      const small = await api2.post(`/forms/${form.id}/submissions`, { data: { answers: base } });
      assert.equal(small.status, 201, JSON.stringify(small.body));
      held.destroy(); // the client gives up: the server's read fails and frees the slot
      const after = await waitFor(async () => {
        const res = await api2.post(`/forms/${form.id}/submissions`, withFile());
        return res.status === 201 && res;
      }, 10_000, 'the slot to free');
      assert.equal(after.body.data.status, 'received');
      assert.equal(after.body.data.files.length, 1);
    } finally {
      await bounded.close();
    }
  });

  test('an upload whose body breaks mid-way (a bad chunk size) is 400 and frees its slot: the next upload is taken', async () => {
    const bounded = await startTestApp({ UPLOAD_CONCURRENCY: '2' });
    try {
      const t = await seedTenant(bounded.pool);
      const form = await files.createFormViaAdmin(bounded.url, t.companyId);
      const part = `--zz\r\nContent-Disposition: form-data; name="files[cv]"; filename="a.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4\n${'a'.repeat(1000)}`;
      // More broken uploads than the company has slots (one of two), one after the other: each is read,
      // then breaks. One sent before the last one's slot is back is refused 503 and sent again.
      const brokenUpload = () =>
        new Promise<string>((resolve, reject) => {
          const socket = net.connect(Number(new URL(bounded.url).port), '127.0.0.1', () =>
            socket.write(
              `POST /api/v1/forms/${form.id}/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.key}\r\n` +
                `Content-Type: multipart/form-data; boundary=zz\r\nTransfer-Encoding: chunked\r\n\r\n${Buffer.byteLength(part).toString(16)}\r\n${part}\r\n`,
              // The next chunk's size is not hex: Node's parser fails on it once the upload is being read.
              () => setTimeout(() => socket.write('zz\r\nxx\r\n'), 200),
            ),
          );
          let text = '';
          socket.on('data', (d) => (text += d));
          socket.on('close', () => resolve(text));
          socket.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNRESET' ? resolve(text) : reject(error)));
        });
      for (let i = 0; i < 3; i++) {
        const answer = await waitFor(async () => {
          const text = await brokenUpload();
          return !text.startsWith('HTTP/1.1 503 ') && text;
        }, 10_000, `broken upload ${i + 1} to be read (its slot free)`);
        assert.match(answer, /^HTTP\/1\.1 400 [^]*"error":"invalid_request"/, answer);
      }
      const after = await waitFor(async () => {
        const res = await client(bounded.baseUrl, t.key).post(`/forms/${form.id}/submissions`, withFile());
        return res.status === 201 && res;
      }, 10_000, 'an upload to be taken after the broken ones');
      assert.equal(after.body.data.files.length, 1);
    } finally {
      await bounded.close();
    }
  });

  test('one company holds at most half of the upload slots: its slow uploads do not shut another company out', async () => {
    const bounded = await startTestApp({ UPLOAD_CONCURRENCY: '4' });
    const heldOpen: Array<ReturnType<typeof holdUpload>> = [];
    try {
      const [a, b] = [await seedTenant(bounded.pool), await seedTenant(bounded.pool)];
      const [formA, formB] = [await files.createFormViaAdmin(bounded.url, a.companyId), await files.createFormViaAdmin(bounded.url, b.companyId)];
      // Three slow uploads of company A at once, with 4 slots in the process: two are read, the third is refused.
      for (let i = 0; i < 3; i++) heldOpen.push(holdUpload(new URL(`${bounded.baseUrl}/forms/${formA.id}/submissions`), a.key));
      await waitFor(() => heldOpen.some((h) => h.status !== null), 10_000, "one of company A's three uploads to be answered");
      assert.deepEqual(heldOpen.map((h) => h.status).sort(), [503, null, null], 'the third is refused, two are being read');
      // Two slots are free, and company B gets one.
      const other = await client(bounded.baseUrl, b.key).post(`/forms/${formB.id}/submissions`, withFile());
      assert.equal(other.status, 201, JSON.stringify(other.body));
      assert.equal(other.body.data.files.length, 1);
    } finally {
      for (const held of heldOpen) held.req.destroy();
      await bounded.close();
    }
  });
});
