// Opt-in response cache: identical list pages are served with X-Cache: HIT;
// a write to the collection makes the next read fresh; companies without the
// option never see the header.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MAX_ENTRY_CHARS, MAX_TOTAL_CHARS, ResponseCache } from '../api/middleware/response-cache.ts';
import { updateCompany } from '../api/admin/companies.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';

describe('response cache', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  test('second identical page is a HIT; a write makes the next read fresh', async () => {
    const t = await seedTenant(app.pool, { responseCache: true });
    const api = client(app.baseUrl, t.key);
    await api.post('/customers', { data: { name: 'Uno' } });
    const first = await api.get('/customers?limit=10');
    assert.equal(first.headers.get('x-cache'), 'MISS');
    const second = await api.get('/customers?limit=10');
    assert.equal(second.headers.get('x-cache'), 'HIT');
    assert.deepEqual(second.body, first.body);
    assert.equal(second.headers.get('content-type'), 'application/json; charset=utf-8');

    const other = await api.get('/customers?limit=11');
    assert.equal(other.headers.get('x-cache'), 'MISS', 'another page is another entry');

    const created = await api.post('/customers', { data: { name: 'Dos' } });
    const fresh = await api.get('/customers?limit=10');
    assert.equal(fresh.headers.get('x-cache'), 'MISS');
    assert.equal(fresh.body.data[0].id, created.body.data.id);

    await api.patch(`/customers/${created.body.data.id}`, { data: { name: 'Dos bis' } });
    const afterUpdate = await api.get('/customers?limit=10');
    assert.equal(afterUpdate.body.data[0].name, 'Dos bis');
    await api.delete(`/customers/${created.body.data.id}`);
    const afterDelete = await api.get('/customers?limit=10');
    assert.equal(afterDelete.body.data.length, 1);
  });

  test('a change of the company\'s zone refreshes the lists that read days in it (calendar events by day)', async () => {
    const t = await seedTenant(app.pool, { responseCache: true });
    const api = client(app.baseUrl, t.key);
    // 03:00 UTC on 1 March is still 28 February in Mexico City (the default zone).
    const event = await api.post('/calendar/events', { data: { user_id: t.ownerId, title: 'Temprano', starts_at: '2030-03-01T03:00:00Z', ends_at: '2030-03-01T04:00:00Z' } });
    assert.equal(event.status, 201, event.text);
    const day = '/calendar/events?from=2030-03-01&to=2030-03-01';
    assert.equal((await api.get(day)).body.data.length, 0);
    assert.equal((await api.get(day)).headers.get('x-cache'), 'HIT');
    await updateCompany(app.pool, t.companyId, { timezone: 'UTC' });
    const after = await api.get(day);
    assert.equal(after.headers.get('x-cache'), 'MISS');
    assert.deepEqual(after.body.data.map((e: { id: string }) => e.id), [event.body.data.id]);
  });

  test('a host who leaves the service takes the public_url off every link of theirs, switched-off ones included, in cached lists too', async () => {
    const t = await seedTenant(app.pool, { responseCache: true });
    const api = client(app.baseUrl, t.key);
    const member = await api.post('/users', { data: { first_name: 'Ana', last_name: 'Sale', email: `sale-${Date.now()}@test.example`, booking_slug: `sale-${Date.now().toString(36)}` } });
    assert.equal(member.status, 201, member.text);
    const link = await api.post('/booking-links', { data: { user_id: member.body.data.id, slug: 'consulta', title: 'Consulta', duration_minutes: 30 } });
    assert.equal(link.status, 201, link.text);
    assert.equal((await api.patch(`/booking-links/${link.body.data.id}`, { data: { active: false } })).status, 200);
    const urlOf = async () => (await api.get('/booking-links')).body.data.find((l: { id: string }) => l.id === link.body.data.id).public_url;
    assert.ok(await urlOf());
    assert.equal((await api.get('/booking-links')).headers.get('x-cache'), 'HIT');
    assert.equal((await api.delete(`/users/${member.body.data.id}`)).status, 204);
    assert.equal(await urlOf(), null, 'the slug is free for someone else: no URL to it');
  });

  test('the covered lists are the contract\'s: products and brands cached, product categories not', async () => {
    const t = await seedTenant(app.pool, { responseCache: true });
    const api = client(app.baseUrl, t.key);
    for (const path of ['/products', '/brands']) {
      await api.get(path);
      assert.equal((await api.get(path)).headers.get('x-cache'), 'HIT', path);
    }
    await api.get('/product-categories');
    assert.equal((await api.get('/product-categories')).headers.get('x-cache'), null);
  });

  test('a write to another collection or another company does not evict', async () => {
    const t = await seedTenant(app.pool, { responseCache: true });
    const other = await seedTenant(app.pool, { responseCache: true });
    const api = client(app.baseUrl, t.key);
    await api.get('/customers');
    await api.post('/leads', { data: { name: 'Lead' } });
    await client(app.baseUrl, other.key).post('/customers', { data: { name: 'Ajeno' } });
    assert.equal((await api.get('/customers')).headers.get('x-cache'), 'HIT');
  });

  test('cached pages are per company: the same URL never serves another tenant’s page', async () => {
    const a = await seedTenant(app.pool, { responseCache: true });
    const b = await seedTenant(app.pool, { responseCache: true });
    await client(app.baseUrl, a.key).post('/customers', { data: { name: 'Solo de A' } });
    await client(app.baseUrl, a.key).get('/customers');
    const res = await client(app.baseUrl, b.key).get('/customers');
    assert.equal(res.headers.get('x-cache'), 'MISS');
    assert.equal(res.body.data.length, 0);
  });

  test('parameters the list does not read make no new entry (?limit=10&x=1 is the page ?limit=10 cached); what it refuses is still refused', async () => {
    const t = await seedTenant(app.pool, { responseCache: true });
    const api = client(app.baseUrl, t.key);
    await api.post('/customers', { data: { name: 'Uno' } });
    assert.equal((await api.get('/customers?limit=10')).headers.get('x-cache'), 'MISS');
    for (const junk of ['x=1', 'x=2', 'cachebust=3']) {
      assert.equal((await api.get(`/customers?limit=10&${junk}`)).headers.get('x-cache'), 'HIT', junk);
    }
    // What the list refuses is refused with its page cached too, never answered with the unfiltered page.
    for (const refused of ['q[]=Uno', 'zz=%00', 'limit=abc']) {
      const res = await api.get(`/customers?limit=10&${refused}`);
      assert.equal(res.status, 400, refused);
      assert.equal(res.body.error, 'invalid_parameter', refused);
    }
  });

  test('the cache is bounded in size: a page over the entry bound is not kept, and the total stays under its bound', () => {
    const cache = new ResponseCache();
    cache.set('huge', 'x'.repeat(MAX_ENTRY_CHARS + 1));
    assert.equal(cache.get('huge'), undefined);
    const page = 'y'.repeat(MAX_ENTRY_CHARS);
    for (let i = 0; i < 3 * (MAX_TOTAL_CHARS / MAX_ENTRY_CHARS); i++) cache.set(`page-${i}`, page);
    assert.ok(cache.size.chars <= MAX_TOTAL_CHARS, `${cache.size.chars} chars held`);
    assert.equal(cache.get('page-0'), undefined, 'the oldest left first');
    assert.equal(cache.get(`page-${3 * (MAX_TOTAL_CHARS / MAX_ENTRY_CHARS) - 1}`), page, 'the newest is kept');
    cache.set('page-again', page);
    cache.set('page-again', page);
    assert.ok(cache.size.chars <= MAX_TOTAL_CHARS, 'setting a key twice counts it once');
  });

  test('without the option there is no caching and no X-Cache header', async () => {
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    await api.get('/customers');
    const res = await api.get('/customers');
    assert.equal(res.headers.get('x-cache'), null);
  });
});
