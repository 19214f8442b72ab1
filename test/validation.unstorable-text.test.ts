// Text no PostgreSQL column can hold: U+0000 (which no text or JSON value may
// contain) and a lone UTF-16 surrogate (not Unicode text; a JSON column refuses
// it). Anywhere a client can put one, the answer is the contract's error for
// that place, never a 500: 422 validation_failed naming the field in a body,
// 400 invalid_parameter in a query, 404 in a path (no such record can exist).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';

describe('unstorable text: U+0000 and lone surrogates', () => {
  let app: TestApp;
  let tenant: Tenant;
  let api: ReturnType<typeof client>;

  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool);
    api = client(app.baseUrl, tenant.key);
  });
  after(() => app.close());

  test('in a JSON body: 422 validation_failed naming the field, with or without an Idempotency-Key, nothing stored', async () => {
    const product = (data: Record<string, unknown>) => ({ data: { name: 'Taza', prices_cents: { mxn: 100 }, ...data } });
    const cases: Array<[string, unknown, string]> = [
      ['NUL in a text column', product({ name: 'nul\u0000byte' }), 'name'],
      ['NUL in a description', product({ description: 'a\u0000b' }), 'description'],
      ['lone surrogate stored as JSON', product({ custom_properties: [{ key: 'k', value: 'a\ud800b' }] }), 'custom_properties.0'],
      ['NUL in an object key', product({ custom_properties: [{ key: 'k', value: { 'a\u0000': 1 } }] }), 'custom_properties.0'],
      ['lone surrogate in a text column', product({ name: '\udc00' }), 'name'],
    ];
    for (const [label, body, field] of cases) {
      for (const headers of [{}, { 'Idempotency-Key': `texto-${label.replace(/\W+/g, '-')}` }] as Array<Record<string, string>>) {
        const res = await api.post('/products', body, headers);
        assert.equal(res.status, 422, `${label}: ${res.text}`);
        assert.equal(res.body.error, 'validation_failed', label);
        assert.deepEqual(Object.keys(res.body.errors), [field], label);
      }
    }
    for (const [path, body] of [['/brands', { data: { name: 'a\u0000' } }], ['/product-categories', { data: { name: 'a\u0000' } }], ['/customers', { data: { name: 'a\ud800' } }]] as const) {
      const res = await api.post(path, body);
      assert.equal(res.status, 422, `${path}: ${res.text}`);
      assert.deepEqual(Object.keys(res.body.errors), ['name'], path);
    }
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM products WHERE company_id = $1', [tenant.companyId]);
    assert.equal(rows[0].n, 0);
    const keys = await app.pool.query('SELECT count(*)::int AS n FROM idempotency_keys WHERE company_id = $1', [tenant.companyId]);
    assert.equal(keys.rows[0].n, 0, 'refused before the key is claimed');
  });

  test('in a query: 400 invalid_parameter naming it; in a path: 404 not_found', async () => {
    for (const query of ['q=a%00b', 'brand=a%00b', 'category=%00', 'search=%00']) {
      const res = await api.get(`/products?${query}`);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.equal(res.body.error, 'invalid_parameter', query);
      assert.match(res.body.message, new RegExp(query.split('=')[0]), query);
    }
    // An ObjectId-only path: malformed, 400 invalid_id (contract); a slug path: nothing can have it, 404.
    for (const path of ['/customers/a%00b', '/customers/%00', '/leads/%00']) {
      const res = await api.get(path);
      assert.equal(res.status, 400, `${path}: ${res.text}`);
      assert.equal(res.body.error, 'invalid_id', path);
    }
    for (const path of ['/products/a%00b', '/product-categories/a%00b', '/brands/a%00b', '/forms/a%00b', '/forms/a%00b/submissions']) {
      const res = await api.get(path);
      assert.equal(res.status, 404, `${path}: ${res.text}`);
      assert.equal(res.body.error, 'not_found', path);
    }
    const ok = await api.get('/products?q=taza');
    assert.equal(ok.status, 200, 'ordinary text passes');
  });
});
