import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { adminMutation } from './helpers/admin.ts';
import { createFormViaAdmin, sampleFormFile } from './helpers/forms.ts';

describe('form definitions: admin procedures and localized reads', () => {
  let app: TestApp;
  let tenant: Tenant;
  let form: any;
  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool);
    form = await createFormViaAdmin(app.url, tenant.companyId);
  });
  after(() => app.close());

  test('form.create stores the file and answers with the Form read plus post-actions', async () => {
    assert.match(form.id, /^[0-9a-f]{24}$/);
    assert.equal(form.slug, 'contacto');
    assert.equal(form.company_id, tenant.companyId);
    assert.deepEqual(form.post_actions, {});
  });

  test('a form named with 24 hex digits gets a slug not shaped like an id, and is read by it', async () => {
    const name = '507f1f77bcf86cd799439011';
    const made = await createFormViaAdmin(app.url, tenant.companyId, sampleFormFile({ name, slug: undefined }));
    assert.equal(made.slug, `${name}-2`, 'a path reads 24 hex digits as an id, so that slug would reach no form');
    const api = client(app.baseUrl, tenant.key);
    const bySlug = await api.get(`/forms/${made.slug}`);
    assert.equal(bySlug.status, 200, bySlug.text);
    assert.equal(bySlug.body.data.id, made.id);
  });

  test('the admin endpoint refuses a wrong token', async () => {
    const res = await adminMutation(app.url, 'form.create', { companyId: tenant.companyId, form: sampleFormFile() }, 'wrong-token-0123456789');
    assert.equal(res.status, 401);
  });

  test('a form file is validated: types, unique keys, maps_to, file ranges, locales', async () => {
    const bad = (patch: Record<string, unknown>, fieldsPatch?: (fields: any[]) => any[]) => {
      const file: any = sampleFormFile({ slug: undefined, ...patch });
      if (fieldsPatch) file.fields = fieldsPatch(file.fields);
      return adminMutation(app.url, 'form.create', { companyId: tenant.companyId, form: file });
    };
    const cases: Array<[string, Promise<any>, RegExp]> = [
      ['unknown field type', bad({}, (f) => [...f, { key: 'x', field_type: 'color', label: 'X' }]), /field_type/],
      ['duplicate key', bad({}, (f) => [...f, { key: 'email', field_type: 'text', label: 'Otra' }]), /repetida/],
      ['maps_to outside the contract', bad({}, (f) => [...f, { key: 'x', field_type: 'text', label: 'X', maps_to: 'lead.notes' }]), /maps_to/],
      ['maps_to on a file field', bad({}, (f) => [...f, { key: 'x', field_type: 'file', label: 'X', maps_to: 'lead.name', file: { max_file_size_mb: 1 } }]), /null/],
      ['11 files per field', bad({}, (f) => [...f, { key: 'x', field_type: 'file', label: 'X', file: { max_files: 11, max_file_size_mb: 1 } }]), /max_files/],
      ['0 files per field', bad({}, (f) => [...f, { key: 'x', field_type: 'file', label: 'X', file: { max_files: 0, max_file_size_mb: 1 } }]), /max_files/],
      ['over 1 GB per file', bad({}, (f) => [...f, { key: 'x', field_type: 'file', label: 'X', file: { max_file_size_mb: 1025 } }]), /max_file_size_mb/],
      ['a blocked extension allowed', bad({}, (f) => [...f, { key: 'x', field_type: 'file', label: 'X', file: { max_file_size_mb: 1, allowed_extensions: ['exe'] } }]), /bloqueada/],
      ['a locale outside es/en', bad({ locales: ['es', 'fr'] }), /locales/],
      ['default locale not among locales', bad({ locales: ['en'], default_locale: 'es', title_translations: { en: 'x' } }), /default_locale|locales/],
      ['select without options', bad({}, (f) => [...f, { key: 'x', field_type: 'select', label: 'X' }]), /opciones/],
      // A shorter translation would hide options from that locale's visitors.
      ['fewer translated options than options', bad({ locales: ['es', 'en'] }, (f) => [...f, { key: 'x', field_type: 'select', label: 'X', options: ['a', 'b'], options_translations: { en: ['A'] } }]), /options_translations\.en: debe tener 2 opciones/],
      ['a repeated option', bad({}, (f) => [...f, { key: 'x', field_type: 'radio', label: 'X', options: ['a', 'a'] }]), /options: tiene opciones repetidas/],
    ];
    for (const [name, pending, pattern] of cases) {
      const res = await pending;
      assert.equal(res.status, 400, name);
      assert.match(res.error.message, pattern, `${name}: ${res.error.message}`);
    }
  });

  test('GET /forms/:id by id or slug resolves texts for locale, falls back to default_locale, always gives every translation', async () => {
    const api = client(app.baseUrl, tenant.key);
    const en = await api.get(`/forms/${form.id}?locale=en`);
    assert.equal(en.status, 200);
    const f = en.body.data;
    assert.equal(f.locale, 'en');
    assert.equal(f.title, 'Contact us');
    assert.deepEqual(f.title_translations, { es: 'Contáctanos', en: 'Contact us' });
    assert.deepEqual(f.locales, ['es', 'en']);
    assert.equal(f.default_locale, 'es');
    // Fields come ordered by position; name (position 0) before email (1).
    assert.deepEqual(f.fields.map((x: any) => x.key).slice(0, 3), ['name', 'email', 'phone']);
    const plan = f.fields.find((x: any) => x.key === 'plan');
    assert.deepEqual(plan.options, ['Basic', 'Pro']);
    assert.deepEqual(plan.options_translations, { es: ['Básico', 'Pro'], en: ['Basic', 'Pro'] });
    // A missing translation falls back to the default-locale text.
    const phone = f.fields.find((x: any) => x.key === 'phone');
    assert.equal(phone.label, 'Teléfono');
    assert.deepEqual(phone.label_translations, { es: 'Teléfono', en: 'Teléfono' });
    assert.equal(phone.maps_to, 'lead.phone');
    // A text the file does not give is a string in every locale (the contract types these as strings), not null.
    assert.equal(phone.placeholder, '');
    assert.deepEqual(phone.placeholder_translations, { es: '', en: '' });
    assert.equal(phone.help_text, null);
    const cv = f.fields.find((x: any) => x.key === 'cv');
    assert.equal(cv.maps_to, null);
    assert.equal(cv.file.max_file_size_mb, 2);
    assert.equal(cv.file.max_file_size_bytes, 2 * 1024 * 1024);
    assert.match(cv.file.accept, /\.pdf/);
    assert.match(cv.file.accept, /\.docx/);
    assert.match(cv.file.accept, /application\/pdf/);
    assert.doesNotMatch(cv.file.accept, /\.jpg/);
    assert.equal(f.submissions_count, 0);

    for (const locale of ['fr', '', undefined]) {
      const res = await api.get(`/forms/contacto${locale === undefined ? '' : `?locale=${locale}`}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.data.locale, 'es');
      assert.equal(res.body.data.title, 'Contáctanos');
    }
    assert.equal((await api.get('/forms/contacto?locale=en-US')).body.data.locale, 'en');
  });

  test('GET /forms lists the company forms with pagination meta', async () => {
    const res = await client(app.baseUrl, tenant.key).get('/forms?locale=en&limit=1');
    assert.equal(res.status, 200);
    assert.equal(res.body.data.length, 1);
    assert.equal(res.body.data[0].title, 'Contact us');
    assert.equal(res.body.meta.limit, 1);
  });

  test('form.update replaces the definition; slug clashes are refused', async () => {
    const updated = await adminMutation(app.url, 'form.update', { id: form.id, form: sampleFormFile({ title: 'Escríbenos', active: false }) });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(updated.data.title, 'Escríbenos');
    assert.equal(updated.data.active, false);
    assert.equal(updated.data.id, form.id);
    const clash = await adminMutation(app.url, 'form.create', { companyId: tenant.companyId, form: sampleFormFile() });
    assert.equal(clash.status, 409);
    const missing = await adminMutation(app.url, 'form.update', { id: '0123456789abcdef01234567', form: sampleFormFile() });
    assert.equal(missing.status, 404);
    // A path takes an id or a slug: a slug spelled as an id could never be reached by it.
    const idLike = await adminMutation(app.url, 'form.create', { companyId: tenant.companyId, form: sampleFormFile({ slug: '0123456789abcdef01234567' }) });
    assert.equal(idLike.status, 400, JSON.stringify(idLike.body));
    assert.match(JSON.stringify(idLike.body), /forma de un id/);
    await adminMutation(app.url, 'form.update', { id: form.id, form: sampleFormFile() });
  });

  test('max_file_size_mb reads the whole MiB within the byte limit, rounded down, and a saved read goes back unchanged', async () => {
    const fields = [
      ...sampleFormFile().fields,
      { key: 'doc', field_type: 'file', label: 'Doc', position: 20, file: { max_file_size_bytes: 1_500_000, allowed_kinds: ['pdf'] } },
      { key: 'tiny', field_type: 'file', label: 'Tiny', position: 21, file: { max_file_size_bytes: 500_000, allowed_kinds: ['pdf'] } },
    ];
    const created = await adminMutation(app.url, 'form.create', { companyId: tenant.companyId, form: sampleFormFile({ slug: 'limites', fields }) });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const api = client(app.baseUrl, tenant.key);
    const read = (await api.get(`/forms/${created.data.id}`)).body.data;
    const limits = (key: string) => read.fields.find((f: any) => f.key === key).file;
    assert.deepEqual([limits('doc').max_file_size_mb, limits('doc').max_file_size_bytes], [1, 1_500_000], 'a client keeping within 1 MiB is never refused');
    assert.deepEqual([limits('tiny').max_file_size_mb, limits('tiny').max_file_size_bytes], [0, 500_000]);
    const back = await adminMutation(app.url, 'form.update', { id: created.data.id, form: { ...read, post_actions: {} } });
    assert.equal(back.status, 200, JSON.stringify(back.body));
    // The pair as reads gave it before (rounded up) still agrees; 0 MiB alone is no limit.
    const older = fields.map((f: any) => (f.key === 'doc' ? { ...f, file: { ...f.file, max_file_size_mb: 2 } } : f));
    assert.equal((await adminMutation(app.url, 'form.update', { id: created.data.id, form: sampleFormFile({ slug: 'limites', fields: older }) })).status, 200);
    const zero = fields.map((f: any) => (f.key === 'tiny' ? { ...f, file: { max_file_size_mb: 0, allowed_kinds: ['pdf'] } } : f));
    assert.notEqual((await adminMutation(app.url, 'form.update', { id: created.data.id, form: sampleFormFile({ slug: 'limites', fields: zero }) })).status, 200);
  });

  test('a read in another locale written back keeps each locale\'s texts; an update without post_actions keeps them', async () => {
    const postActions = { notify_team: { enabled: true, to: ['equipo@example.com'] } };
    const created = await adminMutation(app.url, 'form.create', { companyId: tenant.companyId, form: sampleFormFile({ slug: 'ida-y-vuelta', post_actions: postActions }) });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    const api = client(app.baseUrl, tenant.key);
    const original = (await api.get(`/forms/${created.data.id}`)).body.data;
    const inEnglish = (await api.get(`/forms/${created.data.id}?locale=en`)).body.data;
    assert.equal(inEnglish.title, 'Contact us');
    // The English read sent back as it is (no post_actions: a REST read has none).
    const back = await adminMutation(app.url, 'form.update', { id: created.data.id, form: inEnglish });
    assert.equal(back.status, 200, JSON.stringify(back.body));
    assert.deepEqual(back.data.post_actions, created.data.post_actions, 'post-actions kept');
    const after = (await api.get(`/forms/${created.data.id}`)).body.data;
    assert.deepEqual(after.title_translations, original.title_translations);
    assert.deepEqual(after.fields.map((f: any) => [f.label_translations, f.options_translations]), original.fields.map((f: any) => [f.label_translations, f.options_translations]));
    assert.equal(after.title, 'Contáctanos');
    // A new form made from the English read: Spanish stays Spanish.
    const copy = await adminMutation(app.url, 'form.create', { companyId: tenant.companyId, form: { ...inEnglish, slug: 'copia-en' } });
    assert.equal(copy.status, 200, JSON.stringify(copy.body));
    assert.equal(copy.data.title_translations.es, 'Contáctanos');
    // An explicit empty post_actions switches them off.
    const off = await adminMutation(app.url, 'form.update', { id: created.data.id, form: { ...original, post_actions: {} } });
    assert.deepEqual(off.data.post_actions, {});
  });

  test('forms are read-only in the REST API and need read-forms', async () => {
    const api = client(app.baseUrl, tenant.key);
    assert.equal((await api.post('/forms', { data: sampleFormFile() })).status, 405);
    const limited = await seedTenant(app.pool, { scopes: ['read-leads'] });
    const res = await client(app.baseUrl, limited.key).get('/forms');
    assert.equal(res.status, 403);
    assert.equal(res.body.required, 'read-forms');
  });

  test('examples/form.json is a valid form file', async () => {
    const file = JSON.parse(await readFile(new URL('../examples/form.json', import.meta.url), 'utf8'));
    const res = await adminMutation(app.url, 'form.create', { companyId: tenant.companyId, form: file });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.data.slug, 'cotizacion');
    assert.equal(res.data.post_actions.email.to[0], 'ventas@example.com');
  });

  test('the OpenAPI document describes the submission route with JSON and multipart bodies', async () => {
    const doc = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as any;
    const post = doc.paths['/forms/{form_id}/submissions'].post;
    assert.deepEqual(Object.keys(post.requestBody.content).sort(), ['application/json', 'multipart/form-data']);
    assert.ok(post.responses['413']);
    assert.ok(doc.paths['/forms/{id}'].get);
  });

  test('another company cannot read the form by id or slug', async () => {
    const other = await seedTenant(app.pool);
    const api = client(app.baseUrl, other.key);
    for (const path of [`/forms/${form.id}`, '/forms/contacto', `/forms/${form.id}/submissions`]) {
      const res = await api.get(path);
      assert.equal(res.status, 404, path);
      assert.equal(res.body.error, 'not_found');
    }
    assert.deepEqual((await api.get('/forms')).body.data, []);
  });
});
