// An email address is checked the same wherever one is taken (api/validation.ts emailAddress): zod's
// syntax and RFC 5321's sizes, which a mail server enforces when it is too late to tell the sender. A
// form refused a 65-octet local part while a customer, a lead, a member or an attendee took it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { adminMutation } from './helpers/admin.ts';
import { sampleFormFile } from './helpers/forms.ts';

describe('email addresses', () => {
  let app: TestApp;
  let tenant: Tenant;
  let api: ReturnType<typeof client>;
  let slots: string[];
  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool);
    api = client(app.baseUrl, tenant.key);
    // A link open every hour of every day, for the bookers' addresses.
    const link = await api.post('/booking-links', {
      data: { user_id: tenant.ownerId, slug: 'correo', title: 'Correo', duration_minutes: 30, timezone: 'UTC', minimum_notice_minutes: 0, weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' }] },
    });
    assert.equal(link.status, 201, link.text);
    const free = await api.get(`/booking-links/${link.body.data.id}/slots`);
    slots = free.body.data.days.flatMap((d: any) => d.slots.map((slot: any) => slot.starts_at));
    linkId = link.body.data.id;
  });
  let linkId: string;
  after(() => app.close());

  const tooLong = [`${'a'.repeat(65)}@example.com`, `ana@${'b'.repeat(64)}.example`];
  const fits = [`${'a'.repeat(64)}@example.com`, 'ana+ventas@example.com'];

  const writes = (email: string): Array<[string, Promise<any>, string]> => [
    ['customer', api.post('/customers', { data: { name: 'Ana', email } }), 'email'],
    ['lead', api.post('/leads', { data: { name: 'Ana', email } }), 'email'],
    ['member', api.post('/users', { data: { first_name: 'Ana', email } }), 'email'],
    ['attendee', api.post('/calendar/events', { data: { user_id: tenant.ownerId, title: 'Junta', starts_at: '2058-01-01T10:00:00Z', ends_at: '2058-01-01T11:00:00Z', attendees: [{ email }] } }), 'attendees.0.email'],
    ['booker', api.post('/bookings', { data: { booking_link_id: linkId, starts_at: slots.shift(), booker: { name: 'Ana', email } } }), 'booker.email'],
  ];

  test('an address past RFC 5321\'s sizes (a local part over 64 octets, a DNS label over 63) is 422 naming the field everywhere', async () => {
    for (const email of tooLong) {
      for (const [what, pending, field] of writes(email)) {
        const res = await pending;
        assert.deepEqual([res.status, Object.keys(res.body.errors ?? {})], [422, [field]], `${what} ${email}: ${res.text}`);
      }
    }
  });

  test('the operator\'s procedures check addresses the same: a form\'s recipients, a company\'s owner', async () => {
    for (const email of tooLong) {
      const form = await adminMutation(app.url, 'form.create', { companyId: tenant.companyId, form: sampleFormFile({ slug: undefined, post_actions: { email: { to: [email] } } }) });
      assert.equal(form.status, 400, `form recipient ${email}`);
      const company = await adminMutation(app.url, 'company.create', { name: 'Correo largo', ownerEmail: email });
      assert.equal(company.status, 400, `owner ${email}`);
    }
  });

  test('an address within them is taken everywhere', async () => {
    for (const email of fits) {
      for (const [what, pending] of writes(email)) {
        const res = await pending;
        assert.equal(res.status, 201, `${what} ${email}: ${res.text}`);
      }
    }
  });
});
