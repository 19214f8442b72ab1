// Idempotency-Key (contract, Endpoints "Shared rules" and Errors; DESIGN.md):
// replay with Idempotent-Replayed: true, 422 idempotency_key_reused, 413
// idempotency_body_too_large above 100 KB, 409 idempotency_in_progress, keys
// scoped by company, at most 255 characters, validation failures not stored.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { issueKey } from '../api/admin/keys.ts';
import { LOCK_GRACE_SECONDS, TAKEOVER_AFTER_SECONDS } from '../api/middleware/idempotency.ts';
import { client, requestRepeatingHeaders, seedTenant, startTestApp, type Response, type TestApp } from './helpers/app.ts';
import { waitFor } from './helpers/wait.ts';

const LIMIT = 100_000; // 100 KB, as the contract writes it

/** `{"data":{"name":...}}` padded with JSON whitespace to exactly `bytes` bytes. */
function paddedBody(name: string, bytes: number): string {
  const json = JSON.stringify({ data: { name } });
  assert.ok(bytes >= json.length);
  return json.slice(0, -1) + ' '.repeat(bytes - json.length) + '}';
}

/** A POST whose body is sent chunked, without Content-Length. */
function chunkedPost(baseUrl: string, path: string, key: string, headers: Record<string, string>, body: string): Promise<Response> {
  return new Promise((resolve, reject) => {
    const url = new URL(baseUrl + path);
    const req = http.request(
      url,
      { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          let parsed: unknown;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), body: parsed, text });
        });
      },
    );
    req.on('error', reject);
    assert.equal(req.getHeader('content-length'), undefined);
    for (let i = 0; i < body.length; i += 16 * 1024) req.write(body.slice(i, i + 16 * 1024));
    req.end();
  });
}

describe('Idempotency-Key', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  const customers = async (companyId: string, name?: string): Promise<number> =>
    (
      await app.pool.query('SELECT count(*)::int AS n FROM customers WHERE company_id = $1 AND ($2::text IS NULL OR name = $2)', [
        companyId,
        name ?? null,
      ])
    ).rows[0].n;
  const storedKeys = async (companyId: string): Promise<Array<{ key: string; state: string; response_status: number | null }>> =>
    (await app.pool.query('SELECT key, state, response_status FROM idempotency_keys WHERE company_id = $1 ORDER BY key', [companyId])).rows;

  test('a repeat replays the same status and body with Idempotent-Replayed: true and creates nothing', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const headers = { 'Idempotency-Key': 'crear-cliente-1' };
    const first = await api.post('/customers', { data: { name: 'Ana', email: 'ana@example.com' } }, headers);
    assert.equal(first.status, 201, first.text);
    assert.equal(first.headers.get('idempotent-replayed'), null, 'the original response is not a replay');

    // Key order in the JSON does not make it a different body.
    const again = await api.post('/customers', { data: { email: 'ana@example.com', name: 'Ana' } }, headers);
    assert.equal(again.status, 201);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body);
    assert.equal(again.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.ok(again.headers.get('ratelimit-limit'), 'a replay still carries the rate-limit headers');
    assert.notEqual(again.headers.get('x-request-id'), first.headers.get('x-request-id'));

    const third = await api.post('/customers', { data: { name: 'Ana', email: 'ana@example.com' } }, headers);
    assert.deepEqual(third.body, first.body);
    assert.equal(await customers(t.companyId, 'Ana'), 1);
    assert.deepEqual(await storedKeys(t.companyId), [{ key: 'crear-cliente-1', state: 'done', response_status: 201 }]);
  });

  test('a client\'s own value that reads like a withheld credential is replayed as it was answered, not rebuilt', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const headers = { 'Idempotency-Key': 'parece-credencial' };
    // The placeholder the stored answers used before, as a customer's custom properties (a booking's
    // manage_url and a webhook endpoint's secret are rebuilt on replay; a customer's are the customer's).
    const body = { data: { name: 'Eco', custom_properties: [{ key: 'manage_url', value: '(withheld: rebuilt on replay)' }, { key: 'secret', value: '(withheld: rebuilt on replay)' }] } };
    const first = await api.post('/customers', body, headers);
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.data.manage_url, '(withheld: rebuilt on replay)');
    const again = await api.post('/customers', body, headers);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(again.body, first.body);
  });

  test('same key with a different body, path, method or query: 422 idempotency_key_reused, nothing executed', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const headers = { 'Idempotency-Key': 'k-reuse' };
    const first = await api.post('/customers', { data: { name: 'Beto' } }, headers);
    assert.equal(first.status, 201);
    const id = first.body.data.id;

    const attempts = [
      await api.post('/customers', { data: { name: 'Otro nombre' } }, headers),
      await api.post('/leads', { data: { name: 'Beto' } }, headers),
      await api.patch(`/customers/${id}`, { data: { name: 'Beto' } }, headers),
      await api.post('/customers?x=1', { data: { name: 'Beto' } }, headers),
    ];
    for (const res of attempts) {
      assert.equal(res.status, 422, res.text);
      assert.equal(res.body.error, 'idempotency_key_reused');
      assert.equal(typeof res.body.message, 'string');
      assert.equal(res.headers.get('idempotent-replayed'), null);
    }
    assert.equal(await customers(t.companyId), 1);
    assert.equal((await app.pool.query('SELECT count(*)::int AS n FROM leads WHERE company_id = $1', [t.companyId])).rows[0].n, 0);
    assert.equal((await api.get(`/customers/${id}`)).body.data.name, 'Beto');
    // The original is still replayable after the refused attempts.
    const replay = await api.post('/customers', { data: { name: 'Beto' } }, headers);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.body, first.body);
  });

  test('bodies above 100 KB cannot use a key (413 idempotency_body_too_large, nothing stored); without the header they are accepted', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const req = (raw: string, key?: string) =>
      fetch(`${app.baseUrl}/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
        body: raw,
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as any, headers: res.headers }));

    const over = await req(paddedBody('Grande', LIMIT + 1), 'k-big');
    assert.equal(over.status, 413);
    assert.equal(over.body.error, 'idempotency_body_too_large');
    const huge = await req(paddedBody('Enorme', 900 * 1024), 'k-huge');
    assert.equal(huge.status, 413);
    assert.equal(huge.body.error, 'idempotency_body_too_large');
    // Above the 1 MB JSON limit too: the key's own limit is what the client must fix.
    const oversized = await req(paddedBody('Descomunal', 2 * 1024 * 1024), 'k-oversized');
    assert.equal(oversized.status, 413);
    assert.equal(oversized.body.error, 'idempotency_body_too_large');

    const atLimit = await req(paddedBody('Justo', LIMIT), 'k-limit');
    assert.equal(atLimit.status, 201, 'exactly 100 KB is allowed');

    const noKey = await req(paddedBody('Sin clave', 150 * 1024));
    assert.equal(noKey.status, 201, 'without the header the normal JSON limit applies');
    const tooBig = await req(paddedBody('Demasiado', 1024 * 1024 + 1));
    assert.equal(tooBig.status, 413);
    assert.equal(tooBig.body.error, 'request_too_large');

    // Sent chunked (no Content-Length), the body is measured as read.
    const chunked = await chunkedPost(app.baseUrl, '/customers', t.key, { 'Idempotency-Key': 'k-chunked' }, paddedBody('Troceado', 200 * 1024));
    assert.equal(chunked.status, 413, chunked.text);
    assert.equal(chunked.body.error, 'idempotency_body_too_large');

    assert.equal(await customers(t.companyId, 'Grande'), 0);
    assert.equal(await customers(t.companyId, 'Enorme'), 0);
    assert.equal(await customers(t.companyId, 'Troceado'), 0);
    assert.deepEqual(
      (await storedKeys(t.companyId)).map((k) => k.key),
      ['k-limit'],
      'refused oversized requests leave no key behind',
    );
    // The same key then works with a small body.
    assert.equal((await api.post('/customers', { data: { name: 'Pequeño' } }, { 'Idempotency-Key': 'k-big' })).status, 201);
  });

  test('key length: 255 characters accepted, 256 is 400 invalid_idempotency_key; empty and non-ASCII are refused too', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const ok = await api.post('/customers', { data: { name: 'Largo' } }, { 'Idempotency-Key': 'a'.repeat(255) });
    assert.equal(ok.status, 201);
    for (const key of ['b'.repeat(256), 'x'.repeat(5000), '', 'clave-ñ']) {
      const res = await api.post('/customers', { data: { name: 'Invalida' } }, { 'Idempotency-Key': key });
      assert.equal(res.status, 400, `key of ${key.length} chars: ${res.text}`);
      assert.equal(res.body.error, 'invalid_idempotency_key');
    }
    assert.equal(await customers(t.companyId, 'Invalida'), 0);
    const replay = await api.post('/customers', { data: { name: 'Largo' } }, { 'Idempotency-Key': 'a'.repeat(255) });
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    // The header is checked before any body is read, on every kind of write: a JSON body that does not
    // parse or lacks what it needs, a form submission, a multipart upload.
    const form = new FormData();
    form.append('image', new Blob([Buffer.from('not an image')], { type: 'image/png' }), 'x.png');
    const writes: Array<[string, RequestInit]> = [
      ['/customers', { body: '{bad', headers: { 'content-type': 'application/json' } }],
      ['/customers', { body: '{"data":{}}', headers: { 'content-type': 'application/json' } }],
      [`/forms/${'0'.repeat(24)}/submissions`, { body: '{"data":{}}', headers: { 'content-type': 'application/json' } }],
      [`/products/${'0'.repeat(24)}/image`, { body: form }],
    ];
    for (const [path, init] of writes) {
      const res = await fetch(app.baseUrl + path, { ...init, method: 'POST', headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${t.key}`, 'idempotency-key': 'b'.repeat(256) } });
      assert.equal(res.status, 400, path);
      assert.equal(((await res.json()) as { error: string }).error, 'invalid_idempotency_key', path);
    }
  });

  test('the key sent twice (two Idempotency-Key lines) is 400 invalid_idempotency_key, not the two joined into a third key', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const headers = { authorization: `Bearer ${t.key}`, 'content-type': 'application/json', 'idempotency-key': ['dos-a', 'dos-b'] };
    const twice = await requestRepeatingHeaders(`${app.baseUrl}/customers`, 'POST', headers, JSON.stringify({ data: { name: 'Dos claves' } }));
    assert.equal(twice.status, 400, twice.text);
    assert.equal(JSON.parse(twice.text).error, 'invalid_idempotency_key');
    assert.match(JSON.parse(twice.text).message, /más de una vez/, 'the message says what is wrong: not its characters');
    assert.equal(await customers(t.companyId, 'Dos claves'), 0);
    // What Node would have joined them into is a key of its own, unused: the write runs afresh.
    const joined = await api.post('/customers', { data: { name: 'Dos claves' } }, { 'Idempotency-Key': 'dos-a, dos-b' });
    assert.equal(joined.status, 201, joined.text);
    assert.equal(joined.headers.get('idempotent-replayed'), null);
  });

  test('50 concurrent identical POSTs with one key create exactly one record', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const headers = { 'Idempotency-Key': 'rafaga-50' };
    const body = { data: { name: 'Concurrente', email: 'c@example.com' } };
    const responses = await Promise.all(Array.from({ length: 50 }, () => api.post('/customers', body, headers)));

    assert.equal(await customers(t.companyId, 'Concurrente'), 1);
    const originals = responses.filter((r) => r.status === 201 && r.headers.get('idempotent-replayed') === null);
    assert.equal(originals.length, 1, 'exactly one request executed');
    const id = originals[0].body.data.id;
    for (const res of responses) {
      if (res.status === 409) {
        assert.equal(res.body.error, 'idempotency_in_progress');
      } else {
        assert.equal(res.status, 201, res.text);
        assert.equal(res.body.data.id, id);
        assert.deepEqual(res.body, originals[0].body);
      }
    }
    // Afterwards every repeat is a replay of that one record.
    const later = await api.post('/customers', body, headers);
    assert.equal(later.status, 201);
    assert.equal(later.headers.get('idempotent-replayed'), 'true');
    assert.equal(later.body.data.id, id);
  });

  test('a request still running answers repeats with 409 idempotency_in_progress; a claim its request no longer holds is taken over 15 s after it was made, and past the 6 s a live request may take to lock it the 409 says when', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const headers = { 'Idempotency-Key': 'colgada' };
    const body = { data: { name: 'Colgada' } };
    // What a process that claimed the key and died before its COMMIT leaves:
    // the claim, and nothing written (the write and its answer commit together).
    // The fingerprint the service computes for `body`, taken from a request made and then erased.
    const fingerprintOf = async (b: unknown) => {
      await api.post('/customers', b, { 'Idempotency-Key': 'huella' });
      const r = await app.pool.query(`DELETE FROM idempotency_keys WHERE company_id = $1 AND key = 'huella' RETURNING fingerprint`, [t.companyId]);
      await app.pool.query(`DELETE FROM customers WHERE company_id = $1`, [t.companyId]);
      return r.rows[0].fingerprint as string;
    };
    await app.pool.query(
      `INSERT INTO idempotency_keys (company_id, key, method, path, fingerprint, state) VALUES ($1, 'colgada', 'POST', '/api/v1/customers', $2, 'running')`,
      [t.companyId, await fingerprintOf(body)],
    );
    assert.equal(await customers(t.companyId, 'Colgada'), 0);

    // Just made and not yet locked, as a live request's claim is while it waits for its connection: 1 s.
    const fresh = await api.post('/customers', body, headers);
    assert.equal(fresh.status, 409);
    assert.equal(fresh.body.error, 'idempotency_in_progress');
    assert.equal(fresh.headers.get('retry-after'), '1');
    // Past that grace, nobody holding the claim's liveness lock means its process died: the 409 says when it will be taken over.
    await app.pool.query(`UPDATE idempotency_keys SET locked_at = now() - make_interval(secs => $2) WHERE company_id = $1 AND key = 'colgada'`, [t.companyId, LOCK_GRACE_SECONDS + 1]);
    const busy = await api.post('/customers', body, headers);
    assert.equal(busy.status, 409);
    assert.equal(busy.body.error, 'idempotency_in_progress');
    const wait = Number(busy.headers.get('retry-after'));
    assert.ok(wait > 1 && wait <= TAKEOVER_AFTER_SECONDS - LOCK_GRACE_SECONDS, `Retry-After ${wait}: the seconds left before the takeover`);
    assert.equal((await api.post('/customers', { data: { name: 'Otra' } }, headers)).body.error, 'idempotency_key_reused');
    assert.equal(await customers(t.companyId, 'Colgada'), 0, 'a repeat of a running request writes nothing');

    await app.pool.query(`UPDATE idempotency_keys SET locked_at = now() - make_interval(secs => $2) WHERE company_id = $1 AND key = 'colgada'`, [t.companyId, TAKEOVER_AFTER_SECONDS + 1]);
    const takeover = await api.post('/customers', body, headers);
    assert.equal(takeover.status, 201);
    assert.equal(takeover.headers.get('idempotent-replayed'), null);
    assert.equal((await api.post('/customers', body, headers)).headers.get('idempotent-replayed'), 'true');
    assert.equal(await customers(t.companyId, 'Colgada'), 1, 'the abandoned claim is written exactly once');
  });

  test('a request still running past the takeover time (waiting on a lock) is not taken over: the repeat is 409 with Retry-After: 1 and one record is written', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const headers = { 'Idempotency-Key': 'lenta' };
    const body = { data: { name: 'Lenta' } };
    // Another session holds the customers table: the first request waits inside its transaction.
    const blocker = await app.pool.connect();
    let first: Promise<Awaited<ReturnType<typeof api.post>>> | undefined;
    try {
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE customers IN EXCLUSIVE MODE');
      first = api.post('/customers', body, headers);
      await waitFor(async () => (await app.pool.query(`SELECT 1 FROM pg_locks l JOIN pg_class c ON c.oid = l.relation WHERE c.relname = 'customers' AND NOT l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`)).rowCount, 10_000, 'the first request waiting on the lock');
      // Its claim is as old as a takeover asks (rather than waiting for it).
      await app.pool.query(`UPDATE idempotency_keys SET locked_at = now() - make_interval(secs => $2) WHERE company_id = $1 AND key = 'lenta'`, [t.companyId, TAKEOVER_AFTER_SECONDS + 1]);
      const repeat = await api.post('/customers', body, headers);
      assert.deepEqual([repeat.status, repeat.body.error, repeat.headers.get('retry-after')], [409, 'idempotency_in_progress', '1'], 'a live request keeps its claim');
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
    assert.equal((await first!).status, 201);
    assert.equal(await customers(t.companyId, 'Lenta'), 1);
    assert.equal((await api.post('/customers', body, headers)).headers.get('idempotent-replayed'), 'true');
  });

  test('validation failures are not stored: the same key then succeeds with a corrected body', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const headers = { 'Idempotency-Key': 'corregir' };

    const missing = await api.post('/customers', { data: {} }, headers);
    assert.equal(missing.status, 422);
    assert.equal(missing.body.error, 'parameter_missing');
    const noData = await api.post('/customers', { nombre: 'x' }, headers);
    assert.equal(noData.body.error, 'parameter_missing');
    const invalid = await api.post('/customers', { data: { name: 'Cora', email: 'no-es-correo' } }, headers);
    assert.equal(invalid.status, 422);
    assert.equal(invalid.body.error, 'validation_failed');
    assert.ok(invalid.body.errors.email);
    assert.equal(invalid.headers.get('idempotent-replayed'), null);
    assert.deepEqual(await storedKeys(t.companyId), []);

    const fixed = await api.post('/customers', { data: { name: 'Cora', email: 'cora@example.com' } }, headers);
    assert.equal(fixed.status, 201, fixed.text);
    assert.equal(fixed.headers.get('idempotent-replayed'), null);
    const replay = await api.post('/customers', { data: { name: 'Cora', email: 'cora@example.com' } }, headers);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    // Once a result is stored, the earlier invalid bodies are a different request.
    assert.equal((await api.post('/customers', { data: {} }, headers)).body.error, 'idempotency_key_reused');
    assert.equal(await customers(t.companyId, 'Cora'), 1);

    // Malformed JSON never reaches the key either.
    const broken = await fetch(`${app.baseUrl}/customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json', 'idempotency-key': 'roto' },
      body: '{"data": {"name": ',
    });
    assert.equal(broken.status, 400);
    assert.deepEqual((await storedKeys(t.companyId)).map((k) => k.key), ['corregir']);
  });

  test('a body nested too deep is 422 validation_failed with or without a key, never a 500, and is not stored', async () => {
    const t = await seedTenant(app.pool);
    // 3,000 nested lists: about 6 KB, far under every size limit (it once exhausted the stack: 500).
    const deep = (depth: number) => `{"data":{"name":"Hondo","notes":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    const post = (path: string, body: string, key?: string) =>
      fetch(`${app.baseUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
        body,
      });
    for (const key of ['hondo', undefined]) {
      const res = await post('/customers', deep(3000), key);
      assert.equal(res.status, 422, key);
      const body = (await res.json()) as { error: string; errors: Record<string, string[]> };
      assert.equal(body.error, 'validation_failed');
      assert.match(body.errors.notes[0], /32 niveles/, 'named relative to data, as every field error');
    }
    // A custom property whose value nests too deep (zod recursed into it).
    const product = `{"data":{"name":"P","prices_cents":{"mxn":1},"custom_properties":[{"key":"spec","value":${'['.repeat(3000)}${']'.repeat(3000)}}]}}`;
    const refused = await post('/products', product);
    assert.equal(refused.status, 422);
    assert.equal(((await refused.json()) as { error: string }).error, 'validation_failed');
    assert.deepEqual(await storedKeys(t.companyId), []);
    assert.equal(await customers(t.companyId), 0);
    // Within the bound, nesting is the schema's business as before (notes is text).
    const shallow = await post('/customers', deep(20), 'somero');
    assert.equal(shallow.status, 422);
    assert.deepEqual(Object.keys(((await shallow.json()) as { errors: object }).errors), ['notes']);
  });

  test('an error after the endpoint began executing is stored and replayed (PATCH of a missing record: 404)', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const headers = { 'Idempotency-Key': 'parche-404' };
    const missing = await api.patch('/customers/0123456789abcdef01234567', { data: { name: 'Nadie' } }, headers);
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error, 'not_found');
    const replay = await api.patch('/customers/0123456789abcdef01234567', { data: { name: 'Nadie' } }, headers);
    assert.equal(replay.status, 404);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.body, missing.body);
    assert.deepEqual(await storedKeys(t.companyId), [{ key: 'parche-404', state: 'done', response_status: 404 }]);
  });

  test('a key is bound to the credential that first used it: another key of the company gets 422, never the stored answer (a webhook secret is shown once)', async () => {
    const t = await seedTenant(app.pool);
    const other = await issueKey(app.pool, { companyId: t.companyId, scopes: ['create-webhook_endpoints'] });
    const headers = { 'Idempotency-Key': 'k-credencial' };
    const body = { data: { url: 'https://hooks.example.com/in', enabled_events: ['customer.created'] } };
    const created = await client(app.baseUrl, t.key).post('/webhook-endpoints', body, headers);
    assert.equal(created.status, 201, created.text);
    assert.match(created.body.data.secret, /^whsec_/);
    const fromOther = await client(app.baseUrl, other.secret).post('/webhook-endpoints', body, headers);
    assert.equal(fromOther.status, 422, fromOther.text);
    assert.equal(fromOther.body.error, 'idempotency_key_reused');
    assert.equal(fromOther.text.includes(created.body.data.secret), false);
    assert.equal(fromOther.headers.get('idempotent-replayed'), null);
    const endpoints = await app.pool.query('SELECT count(*)::int AS n FROM webhook_endpoints WHERE company_id = $1', [t.companyId]);
    assert.equal(endpoints.rows[0].n, 1);
    // The key that made it still gets its answer back.
    const replay = await client(app.baseUrl, t.key).post('/webhook-endpoints', body, headers);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.body.data.secret, created.body.data.secret);
  });

  test('two companies using the same key string each get their own result', async () => {
    const a = await seedTenant(app.pool);
    const b = await seedTenant(app.pool);
    const headers = { 'Idempotency-Key': 'misma-clave' };
    const body = { data: { name: 'Compartido' } };
    const fromA = await client(app.baseUrl, a.key).post('/customers', body, headers);
    const fromB = await client(app.baseUrl, b.key).post('/customers', body, headers);
    assert.equal(fromA.status, 201);
    assert.equal(fromB.status, 201);
    assert.equal(fromB.headers.get('idempotent-replayed'), null, 'B never sees A’s response');
    assert.notEqual(fromB.body.data.id, fromA.body.data.id);
    // A different body under the same key string is not "reused" across companies either.
    const c = await seedTenant(app.pool);
    const fromC = await client(app.baseUrl, c.key).post('/customers', { data: { name: 'Distinto' } }, headers);
    assert.equal(fromC.status, 201);
    assert.equal(await customers(a.companyId), 1);
    assert.equal(await customers(b.companyId), 1);
    assert.equal(await customers(c.companyId), 1);
    const replayA = await client(app.baseUrl, a.key).post('/customers', body, headers);
    assert.equal(replayA.body.data.id, fromA.body.data.id);
    assert.equal(replayA.headers.get('idempotent-replayed'), 'true');
  });

  test('a PATCH with a key replays its stored response and is not applied twice', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const created = await api.post('/customers', { data: { name: 'Dora' } });
    const id = created.body.data.id;
    const headers = { 'Idempotency-Key': 'renombrar' };
    const first = await api.patch(`/customers/${id}`, { data: { name: 'Dora Nueva' } }, headers);
    assert.equal(first.status, 200);
    assert.equal(first.body.data.name, 'Dora Nueva');
    // Someone else changes the record in between.
    assert.equal((await api.patch(`/customers/${id}`, { data: { name: 'Dora Otra' } })).status, 200);
    const replay = await api.patch(`/customers/${id}`, { data: { name: 'Dora Nueva' } }, headers);
    assert.equal(replay.status, 200);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(replay.body, first.body);
    assert.equal((await api.get(`/customers/${id}`)).body.data.name, 'Dora Otra', 'the replay did not run the update again');
  });

  test('without the header there is no idempotency: repeats execute and nothing is stored', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const one = await api.post('/customers', { data: { name: 'Eco' } });
    const two = await api.post('/customers', { data: { name: 'Eco' } });
    assert.equal(one.status, 201);
    assert.equal(two.status, 201);
    assert.notEqual(one.body.data.id, two.body.data.id);
    assert.equal(two.headers.get('idempotent-replayed'), null);
    assert.equal(await customers(t.companyId, 'Eco'), 2);
    assert.deepEqual(await storedKeys(t.companyId), []);
    // And a GET ignores the header.
    const list = await api.get('/customers', { 'Idempotency-Key': 'x'.repeat(300) });
    assert.equal(list.status, 200);
  });

  test('keys expire after 24 hours: the key string can then be used for a new request', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const headers = { 'Idempotency-Key': 'ayer' };
    const old = await api.post('/customers', { data: { name: 'Ayer' } }, headers);
    await app.pool.query(`UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 minute' WHERE company_id = $1`, [t.companyId]);
    const today = await api.post('/customers', { data: { name: 'Hoy' } }, headers);
    assert.equal(today.status, 201);
    assert.equal(today.headers.get('idempotent-replayed'), null);
    assert.notEqual(today.body.data.id, old.body.data.id);
    const replay = await api.post('/customers', { data: { name: 'Hoy' } }, headers);
    assert.equal(replay.body.data.id, today.body.data.id);
  });
});
