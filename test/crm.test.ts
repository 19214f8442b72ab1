// Customers, leads and automations: CRUD, validation, custom properties and
// the events recorded in the write's transaction.
import http from 'node:http';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { createAutomation } from '../api/admin/automations.ts';
import { textMatch } from '../api/pagination.ts';
import { CONTACT_SEARCH } from '../api/routes/crm-fields.ts';
import { client, request, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';

describe('customers', () => {
  let app: TestApp;
  let tenant: Tenant;
  let api: ReturnType<typeof client>;
  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool);
    api = client(app.baseUrl, tenant.key);
  });
  after(() => app.close());

  test('create → read → update → delete', async () => {
    const created = await api.post('/customers', {
      data: {
        name: 'Ana López',
        email: 'ana@example.com',
        phone: '+52 55 1234 5678',
        tax_id: 'lopa800101ab1',
        address: { line1: 'Reforma 1', city: 'CDMX', country: 'MX' },
        tags: ['vip'],
      },
    });
    assert.equal(created.status, 201);
    const customer = created.body.data;
    assert.match(customer.id, /^[0-9a-f]{24}$/);
    assert.equal(customer.tax_id, 'LOPA800101AB1', 'RFC is normalised to upper case');
    assert.equal(customer.address.city, 'CDMX');
    // Every key of the contract's shape, in its order, null when not sent (as Stripe answers).
    assert.deepEqual(customer.address, { line1: 'Reforma 1', line2: null, city: 'CDMX', state: null, postal_code: null, country: 'MX' });
    assert.deepEqual(Object.keys(customer.address), ['line1', 'line2', 'city', 'state', 'postal_code', 'country']);
    assert.match(customer.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const read = await api.get(`/customers/${customer.id}`);
    assert.deepEqual(read.body, { data: customer });

    // The country is upper-cased as the RFC is; three letters are still refused.
    const lower = await api.post('/customers', { data: { name: 'Beto', address: { country: 'mx' } } });
    assert.equal(lower.body.data?.address?.country, 'MX', lower.text);
    const published = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as any;
    assert.match(JSON.stringify(published), /"\^\[A-Za-z\]\{2\}\$"/, 'the published pattern takes what the server takes');
    const alpha3 = await api.post('/customers', { data: { name: 'Beto', address: { country: 'MEX' } } });
    assert.deepEqual([alpha3.status, Object.keys(alpha3.body.errors ?? {})], [422, ['address.country']]);

    const updated = await api.patch(`/customers/${customer.id}`, { data: { phone: null, notes: 'Prefiere correo' } });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.data.phone, null);
    assert.equal(updated.body.data.notes, 'Prefiere correo');
    assert.equal(updated.body.data.email, 'ana@example.com', 'PATCH leaves other fields alone');
    // An address with nothing in it is no address: it reads null, as `address: null` writes it.
    for (const address of [{}, { line1: null, country: null }]) {
      const emptied = await api.patch(`/customers/${customer.id}`, { data: { address } });
      assert.equal(emptied.status, 200, emptied.text);
      assert.equal(emptied.body.data.address, null, JSON.stringify(address));
    }

    const deleted = await api.delete(`/customers/${customer.id}`);
    assert.equal(deleted.status, 204);
    assert.equal(deleted.text, '');
    assert.equal((await api.get(`/customers/${customer.id}`)).status, 404);
    assert.equal((await api.delete(`/customers/${customer.id}`)).status, 404);
  });

  test('updated_at moves only when a PATCH changes something: {data: {}} and the values as stored leave it', async () => {
    const created = (await api.post('/customers', { data: { name: 'Eva', phone: '555', tags: ['a'], custom_properties: [{ key: 'nivel', value: 'oro' }] } })).body.data;
    const stamp = async () => (await api.get(`/customers/${created.id}`)).body.data.updated_at;
    for (const data of [{}, { name: 'Eva', phone: '555', tags: ['a'] }, { phone: ' 555 ' }, { custom_properties: [{ key: 'nivel', value: 'oro' }] }]) {
      const res = await api.patch(`/customers/${created.id}`, { data });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.data.updated_at, created.updated_at, `no change: ${JSON.stringify(data)}`);
    }
    assert.equal(await stamp(), created.updated_at);
    const changed = await api.patch(`/customers/${created.id}`, { data: { phone: '556' } });
    assert.equal(changed.body.data.phone, '556');
    assert.ok(changed.body.data.updated_at > created.updated_at, 'a change moves it');
    assert.equal(await stamp(), changed.body.data.updated_at);
    assert.equal((await api.patch(`/customers/${created.id}`, { data: { tags: ['a', 'b'] } })).body.data.updated_at > changed.body.data.updated_at, true, 'an array column compares by value');
  });

  test('an address that reads back the same is the same: a PATCH of it writes nothing', async () => {
    const created = (await api.post('/customers', { data: { name: 'Dirección', address: { line1: 'Calle 1', city: null } } })).body.data;
    assert.deepEqual(created.address, { line1: 'Calle 1', line2: null, city: null, state: null, postal_code: null, country: null });
    for (const address of [{ line1: 'Calle 1' }, { line1: ' Calle 1 ', country: null }, created.address]) {
      const res = await api.patch(`/customers/${created.id}`, { data: { address } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.data.updated_at, created.updated_at, `no change: ${JSON.stringify(address)}`);
    }
    const cleared = (await api.patch(`/customers/${created.id}`, { data: { address: {} } })).body.data;
    assert.equal(cleared.address, null);
    assert.ok(cleared.updated_at > created.updated_at, 'clearing it is a change');
    for (const address of [null, {}, { line1: '' }, { line1: null, country: null }]) {
      const res = await api.patch(`/customers/${created.id}`, { data: { address } });
      assert.equal(res.body.data.updated_at, cleared.updated_at, `still none: ${JSON.stringify(address)}`);
    }
  });

  test('an email with spaces around it is that email; a blank RFC gets one message', async () => {
    const res = await api.post('/customers', { data: { name: 'Espacios', email: '  ana.espacios@example.com ' } });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.data.email, 'ana.espacios@example.com');
    const blank = await api.patch(`/customers/${res.body.data.id}`, { data: { tax_id: '' } });
    assert.equal(blank.status, 422);
    assert.deepEqual(blank.body.errors, { tax_id: ['RFC inválido'] });
  });

  test('an email is ASCII (docs/crm.md): an accented address is 422 naming email, its domain in xn-- form is taken', async () => {
    for (const resource of ['/customers', '/leads']) {
      for (const email of ['josé@ejemplo.mx', 'ana@ejemplo.méx']) {
        const refused = await api.post(resource, { data: { name: 'Acentos', email } });
        assert.equal(refused.status, 422, `${resource} ${email}: ${refused.text}`);
        assert.deepEqual([refused.body.error, Object.keys(refused.body.errors)], ['validation_failed', ['email']]);
      }
      const punycode = await api.post(resource, { data: { name: 'Dominio', email: 'ana@xn--ejemplo-mxa.mx' } });
      assert.equal(punycode.status, 201, punycode.text);
      assert.equal(punycode.body.data.email, 'ana@xn--ejemplo-mxa.mx');
    }
  });

  test('customer.created is recorded in the outbox with object, id and empty metadata', async () => {
    const created = await api.post('/customers', { data: { name: 'Evento' } });
    const { rows } = await app.pool.query(`SELECT * FROM events WHERE company_id = $1 AND data->>'id' = $2`, [tenant.companyId, created.body.data.id]);
    assert.equal(rows.length, 1);
    assert.equal(rows[0].name, 'customer.created');
    assert.match(rows[0].id, /^evt_[0-9a-f]{24}$/);
    assert.equal(rows[0].data.object, 'customer');
    assert.deepEqual(rows[0].data.metadata, {});
  });

  test('the record and its event commit together: if the event cannot be written, neither is kept', async () => {
    // Fault injection at the database: the outbox insert fails for this one name.
    await app.pool.query(`CREATE FUNCTION fail_event() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.data->>'name' = 'FailMe' THEN RAISE EXCEPTION 'injected outbox failure'; END IF; RETURN NEW; END $$`);
    await app.pool.query('CREATE TRIGGER fail_event BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION fail_event()');
    try {
      const res = await api.post('/customers', { data: { name: 'FailMe' } });
      assert.equal(res.status, 500);
      assert.equal(res.body.error, 'internal_error');
      assert.deepEqual(Object.keys(res.body).sort(), ['error', 'message'], 'the body is exactly {error, message}');
      assert.ok(res.body.message.includes(res.headers.get('x-request-id')!), 'the message quotes the request id');
      assert.doesNotMatch(res.text, /injected|events|INSERT|at /, 'no SQL or stack reaches the client');
      const { rows } = await app.pool.query(`SELECT 1 FROM customers WHERE name = 'FailMe'`);
      assert.equal(rows.length, 0);
    } finally {
      await app.pool.query('DROP TRIGGER fail_event ON events; DROP FUNCTION fail_event()');
    }
  });

  test('validation: missing data or name is 422 parameter_missing; bad values and unknown fields are 422 validation_failed', async () => {
    const noData = await api.post('/customers', { name: 'x' });
    assert.equal(noData.status, 422);
    assert.equal(noData.body.error, 'parameter_missing');
    assert.equal(noData.body.errors, undefined, 'errors only on validation_failed');
    const noName = await api.post('/customers', { data: { email: 'a@b.co' } });
    assert.equal(noName.body.error, 'parameter_missing');
    assert.match(noName.body.message, /data\.name/);
    assert.deepEqual(Object.keys(noName.body).sort(), ['error', 'message'], 'exactly {error, message}: no extra fields');
    const bad = await api.post('/customers', { data: { name: 'X', email: 'not-an-email', tax_id: '123', hacker: true } });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.error, 'validation_failed');
    assert.deepEqual(Object.keys(bad.body.errors).sort(), ['email', 'hacker', 'tax_id']);
    // An RFC's shape with a date that does not exist (month 13, day 31) is no RFC.
    const impossible = await api.post('/customers', { data: { name: 'X', tax_id: 'AAA991331AAA' } });
    assert.deepEqual([impossible.status, Object.keys(impossible.body.errors ?? {})], [422, ['tax_id']]);
    const notObject = await api.post('/customers', { data: [1, 2] });
    assert.equal(notObject.body.error, 'validation_failed');
  });

  test('malformed JSON is 400 invalid_json; a malformed id is 400 invalid_id', async () => {
    const res = await fetch(`${app.baseUrl}/customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' },
      body: '{"data": {',
    });
    assert.equal(res.status, 400);
    assert.equal(((await res.json()) as { error: string }).error, 'invalid_json');
    // Valid JSON that is not an object: the same code, with a message saying what is expected.
    for (const body of ['"x"', '42', 'null', '[]', '[{"data": {"name": "En un arreglo"}}]']) {
      const r = await fetch(`${app.baseUrl}/customers`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' }, body });
      const answer = (await r.json()) as { error: string; message: string };
      assert.equal(r.status, 400, body);
      assert.equal(answer.error, 'invalid_json', body);
      assert.match(answer.message, /objeto JSON/, body);
    }
    assert.equal((await api.get('/customers?search=arreglo')).body.data.length, 0, 'nothing was created from the array');
    for (const id of ['123', 'zzzzzzzzzzzzzzzzzzzzzzzz', '0123456789ABCDEF01234567', '%27%20OR%201=1']) {
      const r = await api.get(`/customers/${id}`);
      assert.equal(r.status, 400, id);
      assert.equal(r.body.error, 'invalid_id');
    }
  });

  test('a chunked body with no Content-Type is 415 when it holds anything (never skipped as if absent); empty, it passes', async () => {
    const send = (path: string, chunks: string[]) =>
      new Promise<{ status: number; body: any }>((resolve, reject) => {
        const req = http.request(new URL(`${app.baseUrl}${path}`), { method: 'POST', headers: { authorization: `Bearer ${tenant.key}` } }, (res) => {
          let text = '';
          res.on('data', (d) => (text += d)).on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
        });
        req.on('error', reject);
        req.flushHeaders(); // no Content-Length: Node sends the body chunked
        for (const chunk of chunks) req.write(chunk);
        req.end();
      });
    const refused = await send('/customers', ['{"data":', '{"name":"Sin tipo"}}']);
    assert.deepEqual([refused.status, refused.body.error], [415, 'unsupported_media_type']);
    const { rows } = await app.pool.query(`SELECT count(*)::int AS n FROM customers WHERE company_id = $1 AND name = 'Sin tipo'`, [tenant.companyId]);
    assert.equal(rows[0].n, 0);
    // Empty and chunked, as some clients send a bodiless POST: read as no body (here: `data` is required).
    const empty = await send('/customers', []);
    assert.deepEqual([empty.status, empty.body.error], [422, 'parameter_missing']);
  });

  test('JSON is UTF-8: a body declared in another charset is 415 (never stored altered); a Content-Encoding not decoded is 415 saying so', async () => {
    const post = (headers: Record<string, string>, body: Uint8Array) =>
      fetch(`${app.baseUrl}/customers`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, ...headers }, body });
    const latin1 = Buffer.from('{"data":{"name":"Jos\u00e9 Latin"}}', 'latin1');
    for (const charset of ['iso-8859-1', 'utf-16', 'windows-1252']) {
      const res = await post({ 'content-type': `application/json; charset=${charset}` }, latin1);
      assert.equal(res.status, 415, charset);
      const body = (await res.json()) as { error: string; message: string };
      assert.equal(body.error, 'unsupported_media_type');
      assert.match(body.message, /UTF-8/);
    }
    const { rows } = await app.pool.query(`SELECT count(*)::int AS n FROM customers WHERE company_id = $1 AND name LIKE 'Jos% Latin'`, [tenant.companyId]);
    assert.equal(rows[0].n, 0);
    for (const charset of ['UTF-8', 'utf8', 'us-ascii']) {
      const res = await post({ 'content-type': `application/json; charset=${charset}` }, Buffer.from(JSON.stringify({ data: { name: `Con ${charset}` } })));
      assert.equal(res.status, 201, charset);
    }
    const zstd = await post({ 'content-type': 'application/json', 'content-encoding': 'zstd' }, Buffer.from('not really zstd'));
    assert.equal(zstd.status, 415);
    assert.match(((await zstd.json()) as { message: string }).message, /Content-Encoding zstd no se admite/);
  });

  test('a JSON body sent as another type is 415 unsupported_media_type, and nothing is created', async () => {
    const body = JSON.stringify({ data: { name: 'Tipo equivocado' } });
    // fetch labels a string body text/plain; curl -d sends a form encoding; some clients send none.
    for (const type of ['text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', undefined]) {
      const res = await fetch(`${app.baseUrl}/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.key}`, ...(type ? { 'content-type': type } : {}) },
        body: type ? body : new Blob([body]),
      });
      assert.equal(res.status, 415, String(type));
      assert.equal(((await res.json()) as { error: string }).error, 'unsupported_media_type');
    }
    // A JSON media type with a suffix is JSON.
    const vnd = await fetch(`${app.baseUrl}/customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/vnd.api+json' },
      body,
    });
    assert.equal(vnd.status, 201);
    await api.delete(`/customers/${((await vnd.json()) as { data: { id: string } }).data.id}`);
    const { rows } = await app.pool.query(`SELECT count(*)::int AS n FROM customers WHERE company_id = $1 AND name = 'Tipo equivocado'`, [tenant.companyId]);
    assert.equal(rows[0].n, 0, 'none of the refused bodies was stored');
  });

  test('Content-Encoding: a gzip body is read; one that does not decode is 400 invalid_json, never a 500', async () => {
    const post = (encoding: string, body: Uint8Array) =>
      fetch(`${app.baseUrl}/customers`, { method: 'POST', headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json', 'content-encoding': encoding }, body });
    const ok = await post('gzip', gzipSync(JSON.stringify({ data: { name: 'Comprimido' } })));
    assert.equal(ok.status, 201);
    for (const encoding of ['gzip', 'deflate', 'br']) {
      const res = await post(encoding, new TextEncoder().encode('{"data":{"name":"no comprimido"}}'));
      assert.equal(res.status, 400, encoding);
      assert.equal(((await res.json()) as { error: string }).error, 'invalid_json', encoding);
    }
  });

  test('custom properties: array on write, top-level keys on read, reserved keys dropped, merged on PATCH', async () => {
    const created = await api.post('/customers', {
      data: {
        name: 'Con propiedades',
        custom_properties: [
          { key: 'nivel', value: 'oro' },
          { key: 'puntos', value: 1200 },
          { key: 'activo', value: true },
          { key: 'intereses', value: ['café', 'té'] },
          { key: 'preferencias', value: { canal: 'correo' } },
          { key: 'contactos', value: [{ nombre: 'Luis' }, { nombre: 'Eva' }] },
          { key: 'contrato', value: { type: 'file', url: 'https://files.example.com/c.pdf', filename: 'c.pdf' } },
          { key: 'email', value: 'shadow@evil.example' },
          { key: 'id', value: 'shadow' },
        ],
      },
    });
    assert.equal(created.status, 201, created.text);
    const c = created.body.data;
    assert.equal(c.nivel, 'oro');
    assert.equal(c.puntos, 1200);
    assert.equal(c.activo, true);
    assert.deepEqual(c.intereses, ['café', 'té']);
    assert.deepEqual(c.preferencias, { canal: 'correo' });
    assert.deepEqual(c.contactos, [{ nombre: 'Luis' }, { nombre: 'Eva' }]);
    assert.equal(c.contrato.filename, 'c.pdf');
    assert.equal(c.email, null, 'a property cannot shadow a field');
    assert.match(c.id, /^[0-9a-f]{24}$/);
    assert.equal(c.custom_properties, undefined);

    const patched = await api.patch(`/customers/${c.id}`, { data: { custom_properties: [{ key: 'nivel', value: 'plata' }, { key: 'puntos', value: null }] } });
    assert.equal(patched.body.data.nivel, 'plata');
    assert.equal('puntos' in patched.body.data, false, 'null removes the property');
    assert.equal(patched.body.data.activo, true, 'other properties are kept');

    const bad = await api.post('/customers', { data: { name: 'X', custom_properties: [{ key: 'Bad Key', value: 1 }, { key: 'k', value: 'x'.repeat(20_000) }] } });
    assert.equal(bad.body.error, 'validation_failed');
    const dup = await api.post('/customers', { data: { name: 'X', custom_properties: [{ key: 'a', value: 1 }, { key: 'a', value: 2 }] } });
    assert.equal(dup.body.error, 'validation_failed');
  });

  test('values that would not read back as sent are refused: integers past 2^53, unassigned countries; a repeated tag is one', async () => {
    // 9007199254740993 reads as 9007199254740992 in any JSON reader: stored, it would not be what was sent.
    const big = await request(app.baseUrl, 'POST', '/customers', {
      key: tenant.key,
      raw: '{"data":{"name":"Grande","custom_properties":[{"key":"folio","value":{"n":[9007199254740993]}}]}}',
    });
    assert.deepEqual([big.status, big.body.error, Object.keys(big.body.errors ?? {})], [422, 'validation_failed', ['custom_properties.0.value.n.0']], big.text);
    const safe = await api.post('/customers', { data: { name: 'Exacto', custom_properties: [{ key: 'folio', value: -9007199254740991 }, { key: 'peso', value: 0.1 }] } });
    assert.deepEqual([safe.status, safe.body.data?.folio, safe.body.data?.peso], [201, -9007199254740991, 0.1], safe.text);

    for (const country of ['ZZ', 'eu', 'XK']) {
      const refused = await api.post('/customers', { data: { name: 'Sin país', address: { country } } });
      assert.deepEqual([refused.status, Object.keys(refused.body.errors ?? {})], [422, ['address.country']], `${country}: ${refused.text}`);
    }

    const tagged = await api.post('/customers', { data: { name: 'Etiquetas', tags: ['vip', ' vip ', 'VIP', 'b', 'vip'] } });
    assert.deepEqual(tagged.body.data?.tags, ['vip', 'VIP', 'b'], tagged.text);
    const lead = await api.post('/leads', { data: { name: 'Etiquetas', tags: ['a', 'a'] } });
    assert.deepEqual(lead.body.data?.tags, ['a'], lead.text);

    // The limit of 50 counts the tags stored, not the entries sent.
    const fifty = Array.from({ length: 50 }, (_, i) => `t${i}`);
    const repeated = await api.post('/customers', { data: { name: 'Cincuenta', tags: [...fifty, 't0'] } });
    assert.deepEqual([repeated.status, repeated.body.data?.tags], [201, fifty], repeated.text);
    const tooMany = await api.post('/customers', { data: { name: 'Cincuenta y una', tags: [...fifty, 't50'] } });
    assert.deepEqual([tooMany.status, Object.keys(tooMany.body.errors ?? {})], [422, ['tags']], tooMany.text);
  });

  test('a 422 names at most 50 fields, and its message says how many there were', async () => {
    const data: Record<string, unknown> = { name: 'Muchos' };
    for (let i = 0; i < 300; i++) data[`extra_${i}`] = i;
    const refused = await api.post('/customers', { data });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(Object.keys(refused.body.errors).length, 50);
    assert.deepEqual(refused.body.errors.extra_0, ['no es un campo permitido']);
    assert.match(refused.body.message, /50 de los 300 campos/);
  });

  test('a query value that is not UTF-8 is 400 invalid_parameter naming it, not a search for U+FFFD', async () => {
    await api.post('/customers', { data: { name: 'Con \uFFFD reemplazo' } });
    for (const query of ['q=%FF', 'q=caf%E9', 'limit=5&q=%C3%28', '%FF=1']) {
      const refused = await api.get(`/customers?${query}`);
      assert.deepEqual([refused.status, refused.body.error], [400, 'invalid_parameter'], `${query}: ${refused.text}`);
      assert.match(refused.body.message, /UTF-8/);
    }
    // UTF-8 escapes are text; a malformed escape is read as written (as URLSearchParams reads it).
    for (const query of ['q=caf%C3%A9', 'q=50%off', 'q=%EF%BF%BD']) {
      const ok = await api.get(`/customers?${query}`);
      assert.equal(ok.status, 200, `${query}: ${ok.text}`);
    }
    assert.equal((await api.get('/customers?q=%EF%BF%BD')).body.data.length, 1, 'a U+FFFD sent as UTF-8 is searched for');
  });

  test('search with q or search over name, email and phone', async () => {
    await api.post('/customers', { data: { name: 'Zacarías Buscable', email: 'zb@find.example', phone: '+52 33 9999 0000' } });
    for (const q of ['zacar', 'FIND.example', '9999 0000']) {
      const res = await api.get(`/customers?q=${encodeURIComponent(q)}`);
      assert.deepEqual(res.body.data.map((x: any) => x.name), ['Zacarías Buscable'], q);
    }
    const alias = await api.get('/customers?search=Buscable');
    assert.equal(alias.body.data.length, 1);
  });

  test('search ignores accents and case, in the term and in the text', async () => {
    const own = client(app.baseUrl, (await seedTenant(app.pool)).key);
    for (const name of ['José Peña Álvarez', 'Jose Pena', 'Josefina Ruiz', 'Ana Müller']) assert.equal((await own.post('/customers', { data: { name } })).status, 201);
    const found = async (q: string) => ((await own.get(`/customers?q=${encodeURIComponent(q)}`)).body.data as any[]).map((c) => c.name).sort();
    assert.deepEqual(await found('jose pena'), ['Jose Pena', 'José Peña Álvarez']);
    assert.deepEqual(await found('JOSÉ PEÑA'), ['Jose Pena', 'José Peña Álvarez']);
    assert.deepEqual(await found('alvarez'), ['José Peña Álvarez']);
    assert.deepEqual(await found('muller'), ['Ana Müller']);
    assert.deepEqual(await found('peña á'), ['José Peña Álvarez']);
    assert.deepEqual(await found('josé'), ['Jose Pena', 'Josefina Ruiz', 'José Peña Álvarez']);
    // The wildcards stay literal after folding.
    assert.deepEqual(await found('jos_'), []);
    // Served by the trigram index over the folded text (migration 102), not by reading every customer.
    // (With a table this small the planner would rather read it all: sequential scans are forbidden to ask whether the index can serve it.)
    const db = await app.pool.connect();
    try {
      await db.query('BEGIN');
      await db.query('SET LOCAL enable_seqscan = off');
      const plan = await db.query(`EXPLAIN (FORMAT JSON) SELECT id FROM customers WHERE ${textMatch(CONTACT_SEARCH, '$1')}`, ['%zzzqqq%']);
      assert.match(JSON.stringify(plan.rows[0]), /customers_search/);
    } finally {
      await db.query('ROLLBACK');
      db.release();
    }
  });
});

describe('leads', () => {
  let app: TestApp;
  let api: ReturnType<typeof client>;
  let tenant: Tenant;
  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool);
    api = client(app.baseUrl, tenant.key);
  });
  after(() => app.close());

  test('lead search with q or search over name, email and phone', async () => {
    const own = await seedTenant(app.pool);
    const api = client(app.baseUrl, own.key);
    await api.post('/leads', { data: { name: 'Prospecto Hallable', email: 'ph@lead-find.example', phone: '+52 55 4444 1111' } });
    await api.post('/leads', { data: { name: 'Otro' } });
    for (const q of ['hallable', 'LEAD-FIND', '4444 1111']) {
      const res = await api.get(`/leads?q=${encodeURIComponent(q)}`);
      assert.deepEqual(res.body.data.map((x: any) => x.name), ['Prospecto Hallable'], q);
    }
    assert.deepEqual((await api.get('/leads?search=Hallable')).body.data.map((x: any) => x.name), ['Prospecto Hallable']);
    assert.equal((await api.get('/leads?q=nadie-se-llama-asi')).body.data.length, 0);
    await api.post('/leads', { data: { name: 'Begoña Iñíguez' } });
    assert.deepEqual((await api.get('/leads?q=begona%20iniguez')).body.data.map((x: any) => x.name), ['Begoña Iñíguez']);
  });

  test('the lead list filters by pipeline status; an unknown status is 400 invalid_parameter', async () => {
    const own = await seedTenant(app.pool);
    const api = client(app.baseUrl, own.key);
    await api.post('/leads', { data: { name: 'Nuevo' } });
    await api.post('/leads', { data: { name: 'Calificado', status: 'qualified' } });
    await api.post('/leads', { data: { name: 'Calificado con correo', email: 'cq@lead-status.example', status: 'qualified' } });
    const qualified = await api.get('/leads?status=qualified&include_filtered_total=true');
    assert.equal(qualified.status, 200);
    assert.deepEqual(qualified.body.data.map((x: any) => x.name), ['Calificado con correo', 'Calificado']);
    assert.equal(qualified.body.meta.filtered_total, 2);
    assert.deepEqual((await api.get('/leads?status=qualified&q=lead-status')).body.data.map((x: any) => x.name), ['Calificado con correo']);
    assert.deepEqual((await api.get('/leads?status=new')).body.data.map((x: any) => x.name), ['Nuevo']);
    const bad = await api.get('/leads?status=ganado-ya');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, 'invalid_parameter');
  });

  test('lead CRUD with company_name, job_title and status; lead.created recorded', async () => {
    const created = await api.post('/leads', { data: { name: 'Luis', email: 'luis@p.example', company_name: 'Prospecto SA', job_title: 'CTO', source: 'web' } });
    assert.equal(created.status, 201);
    const lead = created.body.data;
    assert.equal(lead.status, 'new');
    assert.equal(lead.company_name, 'Prospecto SA');
    const moved = await api.patch(`/leads/${lead.id}`, { data: { status: 'qualified' } });
    assert.equal(moved.body.data.status, 'qualified');
    const invalid = await api.patch(`/leads/${lead.id}`, { data: { status: 'won-big' } });
    assert.equal(invalid.body.error, 'validation_failed');
    const { rows } = await app.pool.query(`SELECT name, data FROM events WHERE data->>'id' = $1`, [lead.id]);
    assert.deepEqual(rows.map((r) => r.name), ['lead.created']);
    assert.equal(rows[0].data.object, 'lead');
    // Other tests of this file share the tenant: the list is checked for this lead, not counted.
    assert.deepEqual((await api.get('/leads')).body.data.filter((x: any) => x.id === lead.id).map((x: any) => x.name), ['Luis']);
    assert.equal((await api.delete(`/leads/${lead.id}`)).status, 204);
  });
});

describe('automations', () => {
  let app: TestApp;
  let api: ReturnType<typeof client>;
  let tenant: Tenant;
  let id: string;
  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { modules: [] }); // automations are core: no module needed
    api = client(app.baseUrl, tenant.key);
    const row = await createAutomation(app.pool, tenant.companyId, {
      name: 'Bienvenida',
      trigger_type: 'lead.created',
      trigger_config: { source: 'web' },
      steps: [{ type: 'send_email' }],
    });
    id = row.id;
  });
  after(() => app.close());

  test('list and get show trigger_type, trigger_config and steps', async () => {
    const list = await api.get('/automations');
    assert.ok(list.body.data.some((a: any) => a.id === id), 'the automation is listed');
    // Search (q or search) over name and description.
    assert.equal((await api.get('/automations?q=bienven')).body.data.length, 1);
    assert.equal((await api.get('/automations?search=zzzz')).body.data.length, 0);
    const one = await api.get(`/automations/${id}`);
    assert.equal(one.body.data.trigger_type, 'lead.created');
    assert.deepEqual(one.body.data.trigger_config, { source: 'web' });
    assert.deepEqual(one.body.data.steps, [{ type: 'send_email' }]);
    assert.equal(one.body.data.active, false);
  });

  test('PATCH changes only active, name and description', async () => {
    const res = await api.patch(`/automations/${id}`, { data: { active: true, name: 'Hola', description: 'Nueva' } });
    assert.equal(res.status, 200);
    assert.equal(res.body.data.active, true);
    assert.equal(res.body.data.name, 'Hola');
    for (const field of ['trigger_type', 'trigger_config', 'steps']) {
      const refused = await api.patch(`/automations/${id}`, { data: { [field]: field === 'steps' ? [] : field === 'trigger_config' ? {} : 'x' } });
      assert.equal(refused.status, 422, field);
      assert.equal(refused.body.error, 'validation_failed');
      assert.ok(refused.body.errors[field], field);
    }
    const after = await api.get(`/automations/${id}`);
    assert.equal(after.body.data.trigger_type, 'lead.created', 'nothing refused was written');
    // Nothing changed, nothing written: updated_at stays.
    for (const data of [{}, { active: true, name: 'Hola' }]) assert.equal((await api.patch(`/automations/${id}`, { data })).body.data.updated_at, after.body.data.updated_at, JSON.stringify(data));
  });

  test('POST /automations is 422 not_supported_yet, whatever the body', async () => {
    const res = await api.post('/automations', { data: { name: 'x', trigger_type: 'y' } });
    assert.equal(res.status, 422);
    assert.equal(res.body.error, 'not_supported_yet');
    // "Always error body": a body of another type, one that is no JSON, or none, answer alike.
    for (const [type, body] of [['text/plain', 'hola'], ['application/json', 'garbage'], ['application/json', ''], [null, null]] as const) {
      const raw = await fetch(`${app.baseUrl}/automations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tenant.key}`, ...(type ? { 'content-type': type } : {}), 'idempotency-key': `auto-${type}-${body}` },
        ...(body !== null ? { body } : {}),
      });
      assert.equal(raw.status, 422, `${type} ${body}`);
      assert.equal(((await raw.json()) as any).error, 'not_supported_yet', `${type} ${body}`);
    }
  });

  test('DELETE removes it', async () => {
    assert.equal((await api.delete(`/automations/${id}`)).status, 204);
    assert.equal((await api.get(`/automations/${id}`)).status, 404);
  });
});
