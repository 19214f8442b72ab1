import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { waitFor, waitForLockWaits } from './helpers/wait.ts';
import { SUBMITTER_CAPS } from '../worker/forms/submitter-caps.ts';
import { after, before, describe, test } from 'node:test';
import { simpleParser } from 'mailparser';
import { startSmtp } from './helpers/smtp.ts';
import { downloadHeaders } from '../storage/files.ts';
import { updateCompany } from '../api/admin/companies.ts';
import { processSubmission } from '../worker/jobs/form-post-actions.ts';
import { startWorker, type Worker } from '../worker/worker.ts';
import { ADMIN_TOKEN, client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { assertOneLineError, json, wsctl } from './helpers/cli.ts';
import * as files from './helpers/forms.ts';

const postActions = {
  email: {
    to: ['ventas@empresa.example'],
    send_to_submitter: true,
    attach_files: true,
    templates: {
      // {{name}} in the subject renders empty in the visitor's copy: a message to a typed address carries no answer text there.
      es: { subject: 'Gracias por escribir a {{form}}{{name}}', body: 'Recibimos tu mensaje en {{form}}, {{name}}.\n{{answers}}\n{{files}}' },
      en: { subject: 'Thanks for writing to {{form}}{{name}}', body: 'We got your message at {{form}}, {{name}}.\n{{answers}}\n{{files}}' },
    },
  },
  notify_team: { enabled: true },
};

describe('form post-actions in the worker: lead, email over SMTP, team notification, retries', () => {
  let app: TestApp;
  let tenant: Tenant;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let worker: Worker;
  let form: any;
  let api: ReturnType<typeof client>;

  before(async () => {
    smtp = await startSmtp();
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 }); // the tests poll submissions until they settle
    api = client(app.baseUrl, tenant.key);
    const file: any = files.sampleFormFile({ post_actions: postActions });
    file.fields.find((f: any) => f.key === 'cv').file.max_file_size_mb = 10;
    form = await files.createFormViaAdmin(app.url, tenant.companyId, file);
    worker = await startWorker({ ...app.config, smtpUrl: smtp.url }, app.pool, app.databaseUrl);
  });
  after(async () => {
    await worker.stop();
    await app.close();
    await smtp.close();
  });

  const reread = (id: string) => api.get(`/forms/${form.id}/submissions/${id}`).then((r) => r.body.data);
  const settled = (id: string) => waitFor(async () => {
    const s = await reread(id);
    return s.status !== 'received' && s;
  });

  test('received → processed: the lead is created, the email goes out in the submission locale with its attachments, the visitor gets a copy of their own, the team is told', async () => {
    const pdf = files.pdf(50_000);
    const jpg = await files.jpeg();
    const res = await api.post(`/forms/${form.id}/submissions`, {
      data: { locale: 'en', answers: { email: 'eva@example.com', name: 'Eva', phone: '555', company: 'ACME', cv: files.fileJson('cv.pdf', pdf), media: files.fileJson('yo.jpg', jpg) } },
    });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.data.status, 'received');
    assert.equal(res.body.data.contact_id, null);
    const actions = ['email', 'lead', 'notify_team', 'submitter_copy'];
    assert.deepEqual(res.body.data.post_actions, actions.map((action) => ({ action, status: 'pending' })));
    const s = await settled(res.body.data.id);
    assert.equal(s.status, 'processed');
    assert.equal(s.contact_type, 'lead');
    assert.deepEqual(s.post_actions, actions.map((action) => ({ action, status: 'done' })));
    const listed = (await api.get(`/forms/${form.id}/submissions`)).body.data.find((x: any) => x.id === s.id);
    assert.deepEqual(listed.post_actions, s.post_actions, 'the list shows them too');
    const lead = (await api.get(`/leads/${s.contact_id}`)).body.data;
    assert.deepEqual([lead.name, lead.email, lead.phone, lead.company_name], ['Eva', 'eva@example.com', '555', 'ACME']);

    const mail = await waitFor(async () => smtp.received.find((m) => m.mail.subject === 'Thanks for writing to Contact usEva'));
    assert.deepEqual(mail.to, ['ventas@empresa.example']);
    assert.equal(mail.mail.replyTo?.text, 'eva@example.com');
    assert.match(mail.mail.text ?? '', /We got your message at Contact us, Eva/);
    assert.match(mail.mail.text ?? '', /Email: eva@example.com/);
    assert.equal(mail.mail.attachments.length, 2);
    const [a, b] = mail.mail.attachments;
    assert.equal(a.filename, 'cv.pdf');
    assert.equal(a.contentType, 'application/pdf');
    assert.equal(a.contentDisposition, 'attachment');
    assert.ok(a.content.equals(pdf));
    assert.equal(b.filename, 'yo.jpg');
    assert.ok(b.content.equals(jpg));
    // The visitor's copy: a message of its own, with their answers and the names of their files, and
    // nothing of the company's (its recipients, the files, the file manager's paths), no answer in the subject.
    const copy = await waitFor(async () => smtp.received.find((m) => m.to.includes('eva@example.com')));
    assert.deepEqual(copy.to, ['eva@example.com']);
    assert.equal(copy.mail.to && !Array.isArray(copy.mail.to) ? copy.mail.to.text : null, 'eva@example.com');
    assert.equal(copy.mail.cc, undefined);
    assert.equal(copy.mail.subject, 'Thanks for writing to Contact us');
    assert.equal(copy.mail.attachments.length, 0);
    assert.match(copy.mail.text ?? '', /We got your message at Contact us, Eva/);
    assert.match(copy.mail.text ?? '', /Files received:\n- cv\.pdf\n- yo\.jpg/);
    assert.doesNotMatch(copy.mail.text ?? '', /ventas@|Formularios/);
    assert.notEqual(copy.mail.messageId, mail.mail.messageId);
    const team = await waitFor(async () => smtp.received.find((m) => /Nuevo envío del formulario/.test(m.mail.subject ?? '') && m.to.some((t) => t.startsWith('owner-'))));
    assert.match(team.mail.text ?? '', /Correo: eva@example.com/);
  });

  test('an email is in one language: a locale without its template is written wholly in the default one, files lines, labels and Content-Language included', async () => {
    const spanishOnly = await files.createFormViaAdmin(app.url, tenant.companyId, files.sampleFormFile({
      slug: `solo-es-${Date.now()}`,
      post_actions: { email: { enabled: true, to: ['idioma@empresa.example'], attach_files: true, templates: { es: { subject: 'Envío de {{name}}', body: 'Hola.\n{{answers}}\n{{files}}' } } } },
    }));
    const res = await api.post(`/forms/${spanishOnly.id}/submissions`, { data: { locale: 'en', answers: { email: 'ian@example.com', name: 'Ian', cv: files.fileJson('cv.pdf', files.pdf()) } } });
    assert.equal(res.status, 201, res.text);
    const mail = await waitFor(async () => smtp.received.find((m) => m.to.includes('idioma@empresa.example')));
    assert.equal(mail.mail.subject, 'Envío de Ian');
    assert.equal(mail.mail.headers.get('content-language'), 'es');
    assert.match(mail.mail.text ?? '', /Archivos adjuntos:\n- cv\.pdf/);
    assert.match(mail.mail.text ?? '', /Correo: ian@example\.com/);
    assert.doesNotMatch(mail.mail.text ?? '', /Attached files|Email:/);
  });

  test('a textarea\'s later lines are indented in {{answers}}: no answer reads as a line of another field', async () => {
    // Whatever breaks the lines: a mail client shows U+2028 and U+2029 as line breaks too.
    const res = await api.post(`/forms/${form.id}/submissions`, { data: { answers: { email: 'lineas@example.com', name: 'Lineas', message: 'Hola\nCorreo: falso@evil.example\r\nEmpresa: Falsa\u2028Teléfono: 000\u2029Nombre: Otro' } } });
    assert.equal(res.status, 201, res.text);
    const mail = await waitFor(async () => smtp.received.find((m) => m.to.includes('ventas@empresa.example') && /Lineas/.test(m.mail.text ?? '')), 20_000, 'the operator email');
    const text = mail.mail.text ?? '';
    assert.match(text, /^Mensaje: Hola\n {2}Correo: falso@evil\.example\n {2}Empresa: Falsa\n {2}Teléfono: 000\n {2}Nombre: Otro$/m);
    assert.doesNotMatch(text, /^Correo: falso/m);
    assert.doesNotMatch(text, /[\u2028\u2029]/);
  });

  test('the Spanish template is used for a Spanish submission, and a second submission updates the same lead', async () => {
    const res = await api.post(`/forms/${form.id}/submissions`, { data: { answers: { email: 'EVA@example.com', name: 'Eva María' } } });
    const s = await settled(res.body.data.id);
    assert.equal(s.status, 'processed');
    const leads = await app.pool.query(`SELECT id, name FROM leads WHERE company_id = $1 AND lower(email) = 'eva@example.com'`, [tenant.companyId]);
    assert.equal(leads.rowCount, 1, 'matched by email, not duplicated');
    assert.equal(leads.rows[0].name, 'Eva María');
    assert.equal(s.contact_id, leads.rows[0].id);
    const mail = await waitFor(async () => smtp.received.find((m) => m.mail.subject === 'Gracias por escribir a Contáctanos' && /Eva María/.test(m.mail.text ?? '')));
    assert.match(mail.mail.text ?? '', /Recibimos tu mensaje en Contáctanos/);
  });

  test('attachments stop at 18 MB per email; what does not fit stays in the file manager and the email says so', async () => {
    const body = new FormData();
    body.append('answers[email]', 'big@example.com');
    body.append('answers[name]', 'Big');
    body.append('files[cv]', new Blob([files.pdf(9_000_000)]), 'uno.pdf');
    body.append('files[cv]', new Blob([files.pdf(9_500_000)]), 'dos.pdf');
    const res = await fetch(`${app.baseUrl}/forms/${form.id}/submissions`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}` }, body });
    assert.equal(res.status, 201);
    const s = await settled(((await res.json()) as any).data.id);
    assert.equal(s.status, 'processed');
    const mail = await waitFor(async () => smtp.received.find((m) => m.mail.subject === 'Gracias por escribir a ContáctanosBig' && m.to.includes('ventas@empresa.example')));
    assert.deepEqual(mail.mail.attachments.map((a) => a.filename), ['uno.pdf']);
    assert.match(mail.mail.text ?? '', /no caben en el correo[\s\S]*\/Formularios\/Contacto web\/.* - big@example.com\/dos\.pdf/);

    // What did not fit is an operator's download away (wsctl form download), byte for byte.
    const stored = s.files.find((f: any) => f.filename === 'dos.pdf');
    const dir = await mkdtemp(path.join(tmpdir(), 'form-download-'));
    try {
      const out = path.join(dir, 'dos.pdf');
      const saved = await json(app, ['form', 'download', stored.asset_id, '--company', tenant.companyId, '--out', out]);
      assert.deepEqual([saved.path, saved.size_bytes, saved.content_type], [out, 9_500_000, 'application/pdf']);
      assert.ok((await readFile(out)).equals(files.pdf(9_500_000)), 'the bytes submitted');
      assertOneLineError(await wsctl(app, ['form', 'download', stored.asset_id, '--company', tenant.companyId, '--out', out]), /exists: choose another --out/);
      // Another company's file is not found under this one (nor this one's under another).
      const stranger = await seedTenant(app.pool);
      assertOneLineError(await wsctl(app, ['form', 'download', stored.asset_id, '--company', stranger.companyId, '--out', path.join(dir, 'x.pdf')]), /has no file/);
      assert.deepEqual(await readdir(dir), ['dos.pdf'], 'a refused download leaves no file');
      assertOneLineError(await wsctl(app, ['form', 'download', stored.asset_id, '--company', tenant.companyId, '--out', path.join(dir, 'no-such-dir', 'x.pdf')]), /cannot write .*x\.pdf: no such file/);
      // An id that is no ObjectId (a NUL, a path) names no file: 404, not a database error.
      for (const odd of [`${stored.asset_id.slice(0, 10)}%00`, '..%2F..%2Fetc']) {
        const res = await fetch(`${app.url}/admin/files/${odd}?company=${tenant.companyId}`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
        assert.equal(res.status, 404, odd);
      }
      assert.equal((await fetch(`${app.url}/admin/files/${stored.asset_id}?company=a%00`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).status, 404);
      // The route: the admin token only, always a download that is never sniffed.
      const url = `${app.url}/admin/files/${stored.asset_id}?company=${tenant.companyId}`;
      assert.equal((await fetch(url)).status, 401);
      assert.equal((await fetch(url, { headers: { authorization: `Bearer ${tenant.key}` } })).status, 401, 'an API key is no admin token');
      const head = await fetch(url, { method: 'HEAD', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
      assert.equal(head.status, 200);
      assert.match(head.headers.get('content-disposition') ?? '', /^attachment; filename="dos\.pdf"/);
      assert.equal(head.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(head.headers.get('content-length'), '9500000');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('files that do not fit are named in the email even when the operator’s template has no {{files}}', async () => {
    const file: any = files.sampleFormFile({
      slug: 'sin-marcador',
      post_actions: { lead: false, email: { to: ['ventas@empresa.example'], attach_files: true, templates: { es: { subject: 'Sin marcador, {{name}}', body: 'Hola {{name}}.\n{{answers}}' } } } },
    });
    file.fields.find((f: any) => f.key === 'cv').file.max_file_size_mb = 10;
    const own = await files.createFormViaAdmin(app.url, tenant.companyId, file);
    const body = new FormData();
    body.append('answers[email]', 'chica@example.com');
    body.append('answers[name]', 'Chica');
    body.append('files[cv]', new Blob([files.pdf(9_000_000)]), 'uno.pdf');
    body.append('files[cv]', new Blob([files.pdf(9_500_000)]), 'dos.pdf');
    const res = await fetch(`${app.baseUrl}/forms/${own.id}/submissions`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}` }, body });
    assert.equal(res.status, 201);
    const id = ((await res.json()) as any).data.id;
    await waitFor(async () => {
      const r = (await api.get(`/forms/${own.id}/submissions/${id}`)).body.data;
      return r.status !== 'received' && r;
    });
    const mail = await waitFor(async () => smtp.received.find((m) => m.mail.subject === 'Sin marcador, Chica'));
    assert.deepEqual(mail.mail.attachments.map((a) => a.filename), ['uno.pdf']);
    const text = mail.mail.text ?? '';
    assert.match(text, /^Hola Chica\./);
    assert.match(text, /no caben en el correo \(máximo 18 MB de adjuntos\)[\s\S]*\/Formularios\/Contacto web\/.* - chica@example.com\/dos\.pdf/);
    assert.doesNotMatch(text, /uno\.pdf/, 'only the notice is added, not the attachment list the template left out');
  });

  test('with attach_files off and a template without {{files}}, the operator’s email still lists every file with its file-manager path', async () => {
    const own = await files.createFormViaAdmin(app.url, tenant.companyId, files.sampleFormFile({
      slug: 'sin-adjuntos',
      post_actions: { lead: false, email: { to: ['ventas@empresa.example'], attach_files: false, templates: { es: { subject: 'Sin adjuntos, {{name}}', body: 'Solo respuestas: {{answers}}' } } } },
    }));
    const body = new FormData();
    body.append('answers[email]', 'guardado@example.com');
    body.append('answers[name]', 'Guardado');
    body.append('files[cv]', new Blob([files.pdf(2_000)]), 'cv.pdf');
    const res = await fetch(`${app.baseUrl}/forms/${own.id}/submissions`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}` }, body });
    assert.equal(res.status, 201);
    const mail = await waitFor(async () => smtp.received.find((m) => m.mail.subject === 'Sin adjuntos, Guardado'), 20_000, 'the operator email');
    assert.deepEqual(mail.mail.attachments, []);
    assert.match(mail.mail.text ?? '', /Archivos guardados en el administrador de archivos:\n- \/Formularios\/Contacto web\/.* - guardado@example\.com\/cv\.pdf/);
  });

  test('files not stored because the company’s storage is full (files_error) are named in the operator’s email and the team notice', async () => {
    const small = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    await updateCompany(app.pool, small.companyId, { storageQuotaMb: 1 });
    const own = await files.createFormViaAdmin(app.url, small.companyId, files.sampleFormFile({
      slug: 'cuota',
      post_actions: { lead: false, email: { to: ['cuota@empresa.example'], attach_files: true, templates: { es: { subject: 'Cuota, {{name}}', body: 'Hola {{name}}.' } } }, notify_team: { enabled: true } },
    }));
    const res = await client(app.baseUrl, small.key).post(`/forms/${own.id}/submissions`, {
      data: { answers: { email: 'lleno@example.com', name: 'Lleno', cv: [files.fileJson('uno.pdf', files.pdf(600_000)), files.fileJson('dos.pdf', files.pdf(600_000))] } },
    });
    assert.equal(res.status, 201, res.text);
    assert.match(res.body.data.files_error, /dos\.pdf/);
    const mail = await waitFor(async () => smtp.received.find((m) => m.mail.subject === 'Cuota, Lleno'));
    assert.deepEqual(mail.mail.attachments.map((a) => a.filename), ['uno.pdf']);
    assert.match(mail.mail.text ?? '', /^Hola Lleno\.\n\nArchivos que no se guardaron:\nAlmacenamiento de la empresa agotado: no se guardaron dos\.pdf\.\n$/);
    const owner = (await app.pool.query('SELECT email FROM users WHERE id = $1', [small.ownerId])).rows[0].email;
    const team = await waitFor(async () => smtp.received.find((m) => /Nuevo envío del formulario/.test(m.mail.subject ?? '') && m.to.includes(owner)));
    assert.match(team.mail.text ?? '', /\/uno\.pdf\n\nArchivos que no se guardaron:\nAlmacenamiento de la empresa agotado: no se guardaron dos\.pdf\./);
  });

  test('a transient SMTP failure is retried without repeating the lead or the email', async () => {
    await worker.stop(); // drive the job by hand to see each attempt
    try {
      const res = await api.post(`/forms/${form.id}/submissions`, { data: { answers: { email: 'reintento@example.com', name: 'Reintento' } } });
      const id = res.body.data.id;
      smtp.state.failNext = 1;
      const before = smtp.received.length;
      await assert.rejects(processSubmission({ pool: app.pool, config: { ...app.config, smtpUrl: smtp.url }, blobs: app.deps.blobs }, { submissionId: id, companyId: tenant.companyId }));
      assert.equal((await reread(id)).status, 'received');
      await processSubmission({ pool: app.pool, config: { ...app.config, smtpUrl: smtp.url }, blobs: app.deps.blobs }, { submissionId: id, companyId: tenant.companyId });
      await processSubmission({ pool: app.pool, config: { ...app.config, smtpUrl: smtp.url }, blobs: app.deps.blobs }, { submissionId: id, companyId: tenant.companyId });
      const s = await reread(id);
      assert.equal(s.status, 'processed');
      const leads = await app.pool.query(`SELECT count(*)::int AS n FROM leads WHERE email = 'reintento@example.com'`);
      assert.equal(leads.rows[0].n, 1);
      const mails = smtp.received.slice(before).filter((m) => m.mail.subject === 'Gracias por escribir a ContáctanosReintento');
      assert.equal(mails.length, 1, 'one email despite the retry');
      assert.equal(smtp.received.slice(before).filter((m) => m.to.includes('reintento@example.com')).length, 1, 'one copy to the visitor');
      const actions = await app.pool.query(`SELECT action, status, attempts FROM form_submission_actions WHERE submission_id = $1 ORDER BY action`, [id]);
      assert.deepEqual(actions.rows.map((r) => [r.action, r.status, r.attempts]), [['email', 'done', 2], ['lead', 'done', 1], ['notify_team', 'done', 1], ['submitter_copy', 'done', 1]]);
    } finally {
      worker = await startWorker({ ...app.config, smtpUrl: smtp.url }, app.pool, app.databaseUrl);
    }
  });

  test('recipients refused at RCPT: the temporary ones get the message at a retry, only they; the permanent ones are recorded', async () => {
    const mixed = await files.createFormViaAdmin(app.url, tenant.companyId, {
      ...files.sampleFormFile({ slug: 'destinatarios-mixtos', post_actions: { lead: false, email: { to: ['ok@empresa.example', 'luego@empresa.example', 'nunca@empresa.example'] } } }),
    });
    await worker.stop(); // drive the job by hand to see each attempt
    let deferOnce = true;
    smtp.state.reject = (to) => (to === 'nunca@empresa.example' ? 550 : to === 'luego@empresa.example' && deferOnce ? 451 : null);
    try {
      const res = await api.post(`/forms/${mixed.id}/submissions`, { data: { answers: { email: 'mixto@example.com', name: 'Mixto' } } });
      const id = res.body.data.id;
      const run = () => processSubmission({ pool: app.pool, config: { ...app.config, smtpUrl: smtp.url }, blobs: app.deps.blobs }, { submissionId: id, companyId: tenant.companyId });
      const mine = () => smtp.received.filter((m) => m.mail.messageId === `<form-${id}-email@127.0.0.1>`);
      const status = async () => (await api.get(`/forms/${mixed.id}/submissions/${id}`)).body.data.status;
      await assert.rejects(run(), /luego@empresa\.example/);
      assert.deepEqual(mine().map((m) => m.to), [['ok@empresa.example']], 'the first attempt reached the one who took it');
      assert.equal(await status(), 'received', 'owed to one recipient: not settled');
      deferOnce = false;
      await run();
      assert.deepEqual(mine().map((m) => m.to), [['ok@empresa.example'], ['luego@empresa.example']], 'the retry went to the owed recipient only');
      assert.deepEqual(mine()[1].mail.to && (mine()[1].mail.to as any).value.map((a: any) => a.address), ['ok@empresa.example', 'luego@empresa.example', 'nunca@empresa.example'], 'the same message: its To names everyone');
      assert.equal(await status(), 'processed');
      const { rows } = await app.pool.query(`SELECT status, attempts, result FROM form_submission_actions WHERE submission_id = $1 AND action = 'email'`, [id]);
      assert.deepEqual([rows[0].status, rows[0].attempts], ['done', 2]);
      assert.deepEqual(rows[0].result.refused.map((r: any) => [r.address, r.code]), [['nunca@empresa.example', 550]]);
      assert.equal(rows[0].result.owed_to, undefined);
    } finally {
      smtp.state.reject = () => null;
      worker = await startWorker({ ...app.config, smtpUrl: smtp.url }, app.pool, app.databaseUrl);
    }
  });

  test('a retry owed to a recipient the operator replaced goes to the new address, not the removed one', async () => {
    const changing = await files.createFormViaAdmin(app.url, tenant.companyId, {
      ...files.sampleFormFile({ slug: 'destinatario-corregido', post_actions: { lead: false, email: { to: ['ok@empresa.example', 'tpyo@empresa.example'] } } }),
    });
    await worker.stop();
    smtp.state.reject = (to) => (to === 'tpyo@empresa.example' ? 451 : null);
    try {
      const id = (await api.post(`/forms/${changing.id}/submissions`, { data: { answers: { email: 'corr@example.com', name: 'Corr' } } })).body.data.id;
      const run = () => processSubmission({ pool: app.pool, config: { ...app.config, smtpUrl: smtp.url }, blobs: app.deps.blobs }, { submissionId: id, companyId: tenant.companyId });
      const mine = () => smtp.received.filter((m) => m.mail.messageId === `<form-${id}-email@127.0.0.1>`).map((m) => m.to);
      await assert.rejects(run());
      assert.deepEqual(mine(), [['ok@empresa.example']]);
      // The operator fixes the mistyped address while the retry waits.
      const file: any = files.sampleFormFile({ slug: 'destinatario-corregido', post_actions: { lead: false, email: { to: ['ok@empresa.example', 'typo@empresa.example'] } } });
      await files.updateFormViaAdmin(app.url, changing.id, file);
      await run();
      assert.deepEqual(mine(), [['ok@empresa.example'], ['typo@empresa.example']], 'the new address, not the removed one, and not the one who has it');
      const { rows } = await app.pool.query(`SELECT status FROM form_submission_actions WHERE submission_id = $1 AND action = 'email'`, [id]);
      assert.equal(rows[0].status, 'done');
    } finally {
      smtp.state.reject = () => null;
      worker = await startWorker({ ...app.config, smtpUrl: smtp.url }, app.pool, app.databaseUrl);
    }
  });

  test('a mail server that hangs on one message holds up only that submission: the others are processed meanwhile', async () => {
    const slowForm = await files.createFormViaAdmin(
      app.url,
      tenant.companyId,
      files.sampleFormFile({ slug: `lento-${Date.now()}`, post_actions: { ...postActions, email: { ...postActions.email, to: ['lento@empresa.example'], send_to_submitter: false }, notify_team: { enabled: false } } }),
    );
    smtp.state.stall = (to) => to.includes('lento@empresa.example');
    try {
      const slow = (await api.post(`/forms/${slowForm.id}/submissions`, { data: { answers: { email: 'lenta@cliente.example', name: 'Lenta' } } })).body.data;
      await waitFor(() => smtp.stalled.length > 0, 20_000, 'the message the server hangs on');
      const quick = (await api.post(`/forms/${form.id}/submissions`, { data: { answers: { email: 'rapida@cliente.example', name: 'Rápida' } } })).body.data;
      assert.equal((await settled(quick.id)).status, 'processed');
      assert.equal((await api.get(`/forms/${slowForm.id}/submissions/${slow.id}`)).body.data.status, 'received', 'the hung one is still being sent');
    } finally {
      smtp.state.stall = () => false;
      smtp.release();
    }
  });

  test('submissions with one new email processed at the same time (four at once) create exactly one lead', async () => {
    const leadOnly = await files.createFormViaAdmin(app.url, tenant.companyId, files.sampleFormFile({ slug: 'solo-lead', post_actions: {} }));
    await worker.stop(); // run the jobs by hand, truly side by side
    try {
      const ids: string[] = [];
      for (const name of ['Gemela A', 'Gemela B', 'Gemela C', 'Gemela D']) {
        const res = await api.post(`/forms/${leadOnly.id}/submissions`, { data: { answers: { email: 'Gemelas@Example.com', name } } });
        assert.equal(res.status, 201, res.text);
        ids.push(res.body.data.id);
      }
      const deps = { pool: app.pool, config: { ...app.config, smtpUrl: smtp.url }, blobs: app.deps.blobs };
      // Make the race certain rather than likely: a transaction holding leads against inserts lets every
      // run get as far as it can (without the per-email lock, past its "no lead with this email yet"
      // check) and wait; all four are released together.
      const blocker = await app.pool.connect();
      let running: Promise<unknown> | undefined;
      try {
        await blocker.query('BEGIN');
        await blocker.query('LOCK TABLE leads IN SHARE ROW EXCLUSIVE MODE');
        running = Promise.all(ids.map((submissionId) => processSubmission(deps, { submissionId, companyId: tenant.companyId })));
        await waitForLockWaits(app.pool, { atLeast: ids.length, what: 'every submission waiting for the leads table', timeoutMs: 30_000 });
      } finally {
        await blocker.query('COMMIT');
        blocker.release();
      }
      await running;
      const leads = await app.pool.query(`SELECT id FROM leads WHERE company_id = $1 AND lower(email) = 'gemelas@example.com'`, [tenant.companyId]);
      assert.equal(leads.rowCount, 1, 'one lead for one email');
      for (const id of ids) {
        const s = (await api.get(`/forms/${leadOnly.id}/submissions/${id}`)).body.data;
        assert.deepEqual([s.status, s.contact_type, s.contact_id], ['processed', 'lead', leads.rows[0].id]);
      }
      // Contract (Events): form submissions send no notification named in the event list, the lead they make included.
      const created = await app.pool.query(
        `SELECT count(*)::int AS n FROM events WHERE company_id = $1 AND name = 'lead.created' AND data->>'email' = 'gemelas@example.com'`,
        [tenant.companyId],
      );
      assert.equal(created.rows[0].n, 0, 'no lead.created event for a lead a form made');
    } finally {
      worker = await startWorker({ ...app.config, smtpUrl: smtp.url }, app.pool, app.databaseUrl);
    }
  });

  test('a form mapping customer.* associates the customer by email (created once, then reused)', async () => {
    const custom = await files.createFormViaAdmin(app.url, tenant.companyId, {
      name: 'Clientes',
      title: 'Clientes',
      fields: [
        { key: 'correo', field_type: 'email', label: 'Correo', required: true, maps_to: 'customer.email' },
        { key: 'nombre', field_type: 'text', label: 'Nombre', maps_to: 'customer.name' },
      ],
    });
    // A receiver subscribed to every event: deliveries are recorded with their event, in its transaction.
    const endpoint = (await api.post('/webhook-endpoints', { data: { url: 'https://hooks.example.com/forms', enabled_events: ['*'] } })).body.data;
    const ids: string[] = [];
    for (const name of ['Carla', 'Carla R.']) {
      const res = await api.post(`/forms/${custom.id}/submissions`, { data: { answers: { correo: 'carla@example.com', nombre: name } } });
      const s = await waitFor(async () => {
        const r = (await api.get(`/forms/${custom.id}/submissions/${res.body.data.id}`)).body.data;
        return r.status !== 'received' && r;
      });
      assert.equal(s.status, 'processed');
      assert.equal(s.contact_type, 'customer');
      ids.push(s.contact_id);
    }
    assert.equal(ids[0], ids[1]);
    const customer = (await api.get(`/customers/${ids[0]}`)).body.data;
    assert.deepEqual([customer.name, customer.email], ['Carla', 'carla@example.com'], 'an existing customer keeps its data');
    // Contract (Events): a form submission sends no notification named in the event list, customer.created included.
    const deliveries = await api.get(`/webhook-endpoints/${endpoint.id}/deliveries`);
    assert.equal(deliveries.status, 200, deliveries.text);
    assert.deepEqual(deliveries.body.data.map((d: any) => d.event), []);
  });

  test('a number field mapped to the phone gives the lead its decimal text', async () => {
    const numeric = await files.createFormViaAdmin(app.url, tenant.companyId, {
      name: 'Teléfono numérico',
      slug: `telefono-numerico-${Date.now()}`,
      title: 'Teléfono',
      fields: [
        { key: 'e', field_type: 'email', label: 'Correo', maps_to: 'lead.email' },
        { key: 'tel', field_type: 'number', label: 'Teléfono', maps_to: 'lead.phone' },
      ],
    });
    const email = `numero-${Date.now()}@cliente.example`;
    const made = await api.post(`/forms/${numeric.id}/submissions`, { data: { answers: { e: email, tel: 5551234 } } });
    assert.equal(made.status, 201, made.text);
    const lead = await waitFor(async () => (await app.pool.query('SELECT phone FROM leads WHERE company_id = $1 AND email = $2', [tenant.companyId, email])).rows[0], 30_000, 'the lead');
    assert.equal(lead.phone, '5551234');
  });

  test('answers longer than the API takes are cut to fit in the lead: a client reads it and writes it back as it is', async () => {
    const long = await files.createFormViaAdmin(app.url, tenant.companyId, {
      name: 'Respuestas largas',
      slug: `largas-${Date.now()}`,
      title: 'Largas',
      fields: [
        { key: 'e', field_type: 'email', label: 'Correo', maps_to: 'lead.email' },
        { key: 'n', field_type: 'textarea', label: 'Nombre', maps_to: 'lead.name' },
        { key: 'c', field_type: 'textarea', label: 'Empresa', maps_to: 'lead.company_name' },
      ],
    });
    const email = `largo-${Date.now()}@cliente.example`;
    const made = await api.post(`/forms/${long.id}/submissions`, { data: { answers: { e: email, n: 'ñ'.repeat(3_000), c: 'E'.repeat(3_000) } } });
    assert.equal(made.status, 201, made.text);
    const found = await waitFor(async () => (await api.get(`/leads?q=${encodeURIComponent(email)}`)).body.data[0], 30_000, 'the lead');
    const lead = (await api.get(`/leads/${found.id}`)).body.data;
    assert.deepEqual([[...lead.name].length, lead.company_name.length], [200, 200]);
    const { name, phone, company_name, job_title, status, source, notes, tags } = lead;
    const back = await api.patch(`/leads/${lead.id}`, { data: { name, email: lead.email, phone, company_name, job_title, status, source, notes, tags } });
    assert.equal(back.status, 200, back.text);
    // The submission keeps the answers whole.
    assert.equal((await api.get(`/forms/${long.id}/submissions/${made.body.data.id}`)).body.data.answers.n.length, 3_000);
  });

  test('the lead and the customer are made from their own fields only: nothing answered for one, no record for it', async () => {
    const both = await files.createFormViaAdmin(app.url, tenant.companyId, {
      name: 'Ambos',
      slug: 'ambos',
      title: 'Ambos',
      fields: [
        { key: 'e', field_type: 'email', label: 'Correo (lead)', maps_to: 'lead.email' },
        { key: 'ln', field_type: 'text', label: 'Nombre (lead)', maps_to: 'lead.name' },
        { key: 'e2', field_type: 'email', label: 'Correo (cliente)', maps_to: 'customer.email' },
        { key: 'n', field_type: 'text', label: 'Nombre (cliente)', maps_to: 'customer.name' },
      ],
    });
    const count = async (table: string) => (await app.pool.query(`SELECT count(*)::int AS n FROM ${table} WHERE company_id = $1`, [tenant.companyId])).rows[0].n;
    const submit = async (answers: Record<string, string>) => {
      const res = await api.post(`/forms/${both.id}/submissions`, { data: { answers } });
      assert.equal(res.status, 201, res.text);
      return waitFor(async () => {
        const r = (await api.get(`/forms/${both.id}/submissions/${res.body.data.id}`)).body.data;
        return r.status !== 'received' && r;
      });
    };
    const [leads, customers] = [await count('leads'), await count('customers')];
    const onlyLead = await submit({ ln: 'Solo lead' });
    assert.deepEqual([onlyLead.status, onlyLead.contact_type], ['processed', 'lead']);
    assert.equal((await api.get(`/leads/${onlyLead.contact_id}`)).body.data.name, 'Solo lead');
    assert.equal(await count('customers'), customers, 'no customer from a lead\'s name');
    const onlyCustomer = await submit({ e2: 'solo-cliente@example.com' });
    assert.deepEqual([onlyCustomer.status, onlyCustomer.contact_type], ['processed', 'customer']);
    assert.equal(await count('leads'), leads + 1, 'no empty lead from a customer\'s email');
    const nothing = await submit({});
    assert.deepEqual([nothing.status, nothing.contact_type, nothing.contact_id], ['processed', 'none', null]);
    assert.deepEqual([await count('leads'), await count('customers')], [leads + 1, customers + 1]);
  });

  test('send_to_submitter is no spam relay: no answer text in the subject, and at most 3 emails a day reach one inbox, however its address is spelled', async () => {
    const stamp = Date.now();
    // One inbox: a sub-address (+tag) reaches it at any provider, and Gmail ignores dots and its other domain.
    const spellings = [`victima${stamp}@gmail.com`, `victima${stamp}+1@gmail.com`, `v.ictima${stamp}@gmail.com`, `Victima${stamp}+x@GoogleMail.com`, `victima${stamp}+2@gmail.com`];
    const spam = 'Compra pastillas baratas en http://spam.example';
    const ids: string[] = [];
    for (const [i, victim] of spellings.entries()) {
      const res = await api.post(`/forms/${form.id}/submissions`, { data: { answers: { email: victim, name: `${spam} ${i}` } } });
      assert.equal(res.status, 201, res.text);
      ids.push(res.body.data.id);
    }
    for (const id of ids) assert.equal((await settled(id)).status, 'processed', 'a capped copy is not a failure');
    const mails = await waitFor(() => {
      const found = smtp.received.filter((m) => m.to.includes('ventas@empresa.example') && /Compra pastillas/.test(m.mail.text ?? ''));
      return found.length === 5 && found;
    }, 30_000, 'the operator to get all five emails');
    const typed = new Set(spellings.map((a) => a.toLowerCase()));
    assert.ok(mails.every((m) => !m.to.some((to) => typed.has(to.toLowerCase()))), 'the operator\'s email is not shared with the typed address');
    const toVictim = smtp.received.filter((m) => m.to.some((to) => typed.has(to.toLowerCase())));
    assert.equal(toVictim.length, SUBMITTER_CAPS.perRecipientPerDay, 'the inbox gets at most the daily cap');
    for (const m of toVictim) {
      assert.equal(m.to.length, 1);
      assert.ok(!/pastillas|spam/.test(m.mail.subject ?? ''), `no answer text in the subject: ${m.mail.subject}`);
    }
    const { rows } = await app.pool.query(
      `SELECT count(*)::int AS n FROM form_submission_actions WHERE submission_id = ANY($1) AND action = 'submitter_copy' AND result->>'skipped' = 'recipient_cap'`,
      [ids],
    );
    assert.equal(rows[0].n, 5 - SUBMITTER_CAPS.perRecipientPerDay, 'each skipped copy says why');
  });

  test('stored files, if ever served, are downloads that are never sniffed', () => {
    const headers = downloadHeaders({ name: 'factura "final".pdf', contentType: 'application/pdf', sizeBytes: 10 });
    assert.match(headers['Content-Disposition'], /^attachment; filename="factura _final_.pdf"/);
    assert.equal(headers['X-Content-Type-Options'], 'nosniff');
    // filename* is RFC 8187: every character outside attr-char is percent-encoded, ' ( ) * included.
    const odd = downloadHeaders({ name: "año (1)*'.pdf", contentType: 'application/pdf', sizeBytes: 10 })['Content-Disposition'];
    assert.ok(odd.endsWith("filename*=UTF-8''a%C3%B1o%20%281%29%2A%27.pdf"), odd);
  });

  test('all post-actions failing → failed; without SMTP_URL the message is an .eml file under DATA_DIR/outbox', async () => {
    const onlyEmail = await files.createFormViaAdmin(app.url, tenant.companyId, {
      ...files.sampleFormFile({ slug: 'solo-correo', post_actions: { lead: false, email: { to: ['rebota@empresa.example'] } } }),
    });
    smtp.state.reject = (to) => (to === 'rebota@empresa.example' ? 550 : null);
    const res = await api.post(`/forms/${onlyEmail.id}/submissions`, { data: { answers: { email: 'x@example.com', name: 'X' } } });
    const s = await waitFor(async () => {
      const r = (await api.get(`/forms/${onlyEmail.id}/submissions/${res.body.data.id}`)).body.data;
      return r.status !== 'received' && r;
    });
    assert.equal(s.status, 'failed');
    assert.equal(s.contact_type, 'none');
    assert.deepEqual(s.post_actions, [{ action: 'email', status: 'failed' }]);
    smtp.state.reject = () => null;

    const dataDir = await mkdtemp(path.join(tmpdir(), 'forms-outbox-'));
    await worker.stop();
    try {
      const res2 = await api.post(`/forms/${onlyEmail.id}/submissions`, { data: { locale: 'en', answers: { email: 'y@example.com', name: 'Y', cv: files.fileJson('a.pdf', files.pdf()) } } });
      await processSubmission({ pool: app.pool, config: { ...app.config, smtpUrl: undefined, dataDir }, blobs: app.deps.blobs }, { submissionId: res2.body.data.id, companyId: tenant.companyId });
      const outbox = await readdir(path.join(dataDir, 'outbox'));
      assert.equal(outbox.length, 1);
      assert.match(outbox[0], /\.eml$/);
      const mail = await simpleParser(await readFile(path.join(dataDir, 'outbox', outbox[0])));
      assert.equal(mail.subject, 'New submission to the form Contact us');
      assert.equal(mail.attachments[0].filename, 'a.pdf');
      assert.equal((await api.get(`/forms/${onlyEmail.id}/submissions/${res2.body.data.id}`)).body.data.status, 'processed');
    } finally {
      await rm(dataDir, { recursive: true, force: true });
      worker = await startWorker({ ...app.config, smtpUrl: smtp.url }, app.pool, app.databaseUrl);
    }
  });
});
