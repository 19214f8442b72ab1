// Tenant isolation, derived from the router table: every route with a path
// parameter is called with a second company's credential and the first
// company's ids, and must answer 404 not_found with nothing of the first
// company changed; writes naming its records in body fields are refused; lists
// never show them. The walk itself is test/helpers/cross-tenant-walk.ts (the
// `cross-tenant` drill runs it against a running web process too): a route
// added to api/routes/index.ts joins it automatically.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { CrossTenantWalk, snapshot, walkTenant, type Breach, type WalkTenant } from './helpers/cross-tenant-walk.ts';

const describeBreaches = (breaches: Breach[]) => breaches.map((b) => `${b.request}: ${b.status} ${b.text.slice(0, 200)}`).join('\n');

describe('cross-tenant isolation over every route of the router table', () => {
  let app: TestApp;
  let victim: WalkTenant;
  let walk: CrossTenantWalk;

  before(async () => {
    app = await startTestApp();
    victim = await walkTenant(app.pool);
    walk = new CrossTenantWalk(app.baseUrl, app.pool, victim, await walkTenant(app.pool));
    await walk.prepare();
  });
  after(() => app.close());

  test('the walk covers every resource addressed by id: a resource dropped from the table fails here', () => {
    const walked = new Set(walk.paramRoutes.map((r) => r.path.split('/:')[0]));
    const resources = [
      '/accounts', '/automations', '/booking-links', '/bookings', '/brands', '/calendar/events', '/customers', '/expenses', '/forms',
      '/incomes', '/invoices', '/leads', '/product-categories', '/products', '/recurring-transactions', '/sales', '/users',
      '/webhook-endpoints', '/user/developers/webhook-endpoints',
    ];
    assert.deepEqual(resources.filter((r) => !walked.has(r)), []);
  });

  test('another company gets 404 not_found on every route, and nothing of the victim changes', async () => {
    const before = await snapshot(app.pool, victim.companyId);
    const { checked, breaches } = await walk.paths();
    assert.equal(describeBreaches(breaches), '');
    assert.deepEqual(await snapshot(app.pool, victim.companyId), before, 'the victim company is unchanged');
    // And the owner still sees every record.
    assert.equal(describeBreaches(await walk.ownerReads()), '');
    assert.ok(checked.length >= walk.paramRoutes.length);
  });

  test('ids inside request bodies: a write naming another company’s record is refused and links nothing', async () => {
    const before = await snapshot(app.pool, victim.companyId);
    const { checked, breaches, unmapped } = await walk.bodies();
    assert.deepEqual(unmapped, [], 'body fields with no victim record: map them in victimIdFor (test/helpers/cross-tenant-walk.ts)');
    assert.equal(describeBreaches(breaches), '');
    assert.ok(checked.length >= 6, `checked: ${checked.join(', ')}`);
    assert.deepEqual(await snapshot(app.pool, victim.companyId), before, 'the victim company is unchanged');
  });

  test('list filters and cursors naming another company’s records answer as for ids no company has', async () => {
    const { checked, breaches } = await walk.queries();
    assert.equal(describeBreaches(breaches), '');
    for (const expected of ['/incomes?account_id', '/bookings?booking_link_id', '/products?brand', '/customers?starting_after', '/invoices?sale_id']) {
      assert.ok(checked.includes(`GET ${expected}`), `${expected} walked: ${checked.join(', ')}`);
    }
  });

  test('lists never include another company’s records', async () => {
    const { checked, breaches } = await walk.lists();
    assert.equal(describeBreaches(breaches), '');
    assert.ok(checked.length > 10, `checked: ${checked.join(', ')}`);
  });
});
