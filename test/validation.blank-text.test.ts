// docs/api.md, Records: a field with no value is null, never "". An optional text sent blank ("" or
// only spaces) is stored as null, across resources (one schema helper, `optionalText` in
// api/validation.ts), and a required one stays refused; text that shows nothing (zero-width
// characters, the BOM, a soft hyphen) counts as blank (`text`).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';

describe('blank optional text is null; text that shows nothing is blank', () => {
  let app: TestApp;
  let api: ReturnType<typeof client>;
  before(async () => {
    app = await startTestApp();
    api = client(app.baseUrl, (await seedTenant(app.pool)).key);
  });
  after(() => app.close());

  test('customers and leads: "" and spaces are null on create and on PATCH; a blank name is still 422', async () => {
    const created = await api.post('/customers', { data: { name: 'Ana', phone: '', notes: '   ', address: { line1: 'Reforma 1', city: '' } } });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual([created.body.data.phone, created.body.data.notes, created.body.data.address.city], [null, null, null]);
    const id = created.body.data.id;
    await api.patch(`/customers/${id}`, { data: { phone: '55 1234 5678' } });
    const cleared = await api.patch(`/customers/${id}`, { data: { phone: ' ' } });
    assert.equal(cleared.body.data.phone, null);
    assert.equal((await api.get(`/customers/${id}`)).body.data.phone, null, 'stored as null');
    const lead = await api.post('/leads', { data: { name: 'Luis', company_name: '', job_title: '' } });
    assert.equal(lead.status, 201, lead.text);
    assert.deepEqual([lead.body.data.company_name, lead.body.data.job_title], [null, null]);
    const nameless = await api.post('/customers', { data: { name: '  ' } });
    assert.deepEqual([nameless.status, Object.keys(nameless.body.errors ?? {})], [422, ['name']]);
  });

  test('catalog, company and money: the same', async () => {
    const product = await api.post('/products', { data: { name: 'Taza', prices_cents: { mxn: 100 }, description: '', unit: ' ' } });
    assert.equal(product.status, 201, product.text);
    assert.deepEqual([product.body.data.description, product.body.data.unit], [null, null]);
    const brand = await api.post('/brands', { data: { name: 'Marca', description: '' } });
    assert.equal(brand.status, 201, brand.text);
    assert.equal(brand.body.data.description, null);
    const company = await api.put('/company', { data: { legal_name: '', business_type: '  ' } });
    assert.equal(company.status, 200, company.text);
    assert.deepEqual([company.body.data.legal_name, company.body.data.business_type], [null, null]);
    const account = await api.post('/accounts', { data: { name: 'Banco', kind: 'bank', currency: 'mxn' } });
    const expense = await api.post('/expenses', { data: { account_id: account.body.data.id, amount_cents: 100, occurred_at: '2026-05-01T17:00:00Z', description: '', supplier_name: ' ' } });
    assert.equal(expense.status, 201, expense.text);
    assert.deepEqual([expense.body.data.description, expense.body.data.supplier_name], [null, null]);
  });

  // Text that shows nothing is blank too. Zero-width spaces and joiners, the BOM, a soft hyphen: a name made of them reads as no name (on an
  // invoice a legal name of U+200B was the receiver's name).
  const invisible = ['\u200b', '\u200b\u200d\ufeff', ' \u00ad '];

  test('a required name of invisible characters only is 422 naming it, as a blank one is', async () => {
    const companyName = (await api.get('/company')).body.data.name;
    for (const name of invisible) {
      const cases: Array<[string, Promise<any>]> = [
        ['customer', api.post('/customers', { data: { name } })],
        ['lead', api.post('/leads', { data: { name } })],
        ['product', api.post('/products', { data: { name, prices_cents: { mxn: 100 } } })],
        ['brand', api.post('/brands', { data: { name } })],
        ['account', api.post('/accounts', { data: { name, kind: 'bank', currency: 'mxn' } })],
        ['company', api.put('/company', { data: { name } })],
      ];
      for (const [what, pending] of cases) {
        const res = await pending;
        assert.deepEqual([res.status, Object.keys(res.body.errors ?? {})], [422, ['name']], `${what} ${JSON.stringify(name)}: ${res.text}`);
      }
    }
    assert.equal((await api.get('/company')).body.data.name, companyName, 'the company kept its name');
  });

  test('an optional text of invisible characters only is stored as null; visible text around them is kept as written', async () => {
    const customer = await api.post('/customers', { data: { name: 'Ana', legal_name: '\u200b', notes: '\ufeff' } });
    assert.equal(customer.status, 201, customer.text);
    assert.deepEqual([customer.body.data.legal_name, customer.body.data.notes], [null, null]);
    const joined = await api.post('/customers', { data: { name: 'Zoë\u200dX' } });
    assert.equal(joined.body.data.name, 'Zoë\u200dX');
  });
});
