// Keys named like what every JavaScript object already has (`constructor`,
// `toString`) are names like any other (docs/api.md): an unanswered optional
// question or form field of that name reads as unanswered, a custom property
// of that name is read back, and a query parameter of that name in array
// syntax is ignored as any unknown parameter is. Reading them with `obj[key]`
// or `key in obj` found Object's own members instead (a hostile-input review).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { createFormViaAdmin } from './helpers/forms.ts';

describe('keys named like Object members', () => {
  let app: TestApp;
  let tenant: Tenant;
  let api: ReturnType<typeof client>;
  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    api = client(app.baseUrl, tenant.key);
  });
  after(() => app.close());

  test('an optional booking question named constructor, left unanswered, does not stop the booking', async () => {
    const link = await api.post('/booking-links', {
      data: {
        user_id: tenant.ownerId,
        slug: 'constructor',
        title: 'Obra',
        duration_minutes: 30,
        timezone: 'UTC',
        minimum_notice_minutes: 0,
        weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' }],
        questions: [{ key: 'constructor', label: 'Constructora (opcional)', type: 'text', required: false }],
      },
    });
    assert.equal(link.status, 201, link.text);
    const slots = (await api.get(`/booking-links/${link.body.data.id}/slots`)).body.data.days.flatMap((d: any) => d.slots);
    const booker = { name: 'Ana', email: 'ana@example.com' };
    const booked = await api.post('/bookings', { data: { booking_link_id: link.body.data.id, starts_at: slots[0].starts_at, booker } });
    assert.equal(booked.status, 201, booked.text);
    const answered = await api.post('/bookings', { data: { booking_link_id: link.body.data.id, starts_at: slots[1].starts_at, booker, answers: { constructor: 'Obras SA' } } });
    assert.equal(answered.status, 201, answered.text);
    assert.deepEqual(answered.body.data.answers, { constructor: 'Obras SA' });
  });

  test('optional form fields named toString and constructor, left out of a JSON submission, are unanswered', async () => {
    const form = await createFormViaAdmin(app.url, tenant.companyId, {
      name: 'Prototipo',
      slug: 'prototipo',
      title: 'Prototipo',
      fields: [
        { key: 'email', field_type: 'email', label: 'Correo', required: true },
        { key: 'toString', field_type: 'text', label: 'Texto' },
        { key: 'constructor', field_type: 'checkbox', label: 'Casilla' },
      ],
    });
    const res = await api.post(`/forms/${form.id}/submissions`, { data: { answers: { email: 'a@example.com' } } });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.body.data.answers, { email: 'a@example.com' });
  });

  test('a custom property named constructor is read back', async () => {
    const made = await api.post('/products', { data: { name: 'P1', prices_cents: { mxn: 100 }, custom_properties: [{ key: 'constructor', value: 'c' }, { key: 'color', value: 'rojo' }] } });
    assert.equal(made.status, 201, made.text);
    const read = (await api.get(`/products/${made.body.data.id}`)).body.data;
    assert.equal(read.constructor, 'c');
    assert.equal(read.color, 'rojo');
  });

  test('constructor[]=x in a list query is an unknown parameter (ignored), while a known one in array syntax is refused', async () => {
    assert.equal((await api.get('/products?constructor[]=x&toString[]=y')).status, 200);
    const known = await api.get('/products?limit[]=1');
    assert.equal(known.status, 400);
    assert.equal(known.body.error, 'invalid_parameter');
    assert.match(known.body.message, /limit=<valor>/);
  });
});
