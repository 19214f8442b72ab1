// Tenant isolation, derived from the router table: every route with a path
// parameter is called with a second company's key and the first company's
// ids, and must answer 404 not_found with nothing of the first company changed.
// A route added to api/routes/index.ts joins this test automatically; if the
// test cannot make a record for it, it fails and says what to add.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createAutomation } from '../api/admin/automations.ts';
import { setPassword } from '../api/admin/users.ts';
import { signIn } from '../api/auth/sessions.ts';
import { createForm } from '../api/admin/forms.ts';
import { OPT_IN_MODULES } from '../api/auth/scopes.ts';
import type { RouteDef } from '../api/route.ts';
import { apiRoutes } from '../api/routes/index.ts';
import type { Pool } from '../db/pool.ts';
import { objectId } from '../lib/objectid.ts';
import { request, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';

/** Records of resources the API cannot create, made the way operators make them. */
const FIXTURES: Record<string, (pool: Pool, companyId: string) => Promise<Record<string, any>>> = {
  '/automations': (pool, companyId) => createAutomation(pool, companyId, { name: 'Fixture', trigger_type: 'lead.created' }),
  // An invoice is made by POST /sales/:id/invoice and the worker; a stamped one, as the worker leaves it.
  '/invoices': async (pool, companyId) => {
    const saleId = objectId();
    const id = objectId();
    await pool.query(
      `INSERT INTO sales (id, company_id, currency, occurred_at, payment_terms, line_items, subtotal_cents, tax_cents, total_cents, status)
       VALUES ($1, $2, 'mxn', now(), 'immediate', '[]', 100, 16, 116, 'unpaid')`,
      [saleId, companyId],
    );
    await pool.query(
      `INSERT INTO invoices (id, company_id, sale_id, status, provider, uuid, payment_method, payment_form, cfdi_use, receiver, currency, total_cents, document, xml)
       VALUES ($1, $2, $3, 'valid', 'development', '5FB2822E-396D-4725-8521-CDC4BDD20CCF', 'PUE', '03', 'G03', '{}', 'mxn', 116, '{}', '<x/>')`,
      [id, companyId, saleId],
    );
    return { id };
  },
  '/forms': (pool, companyId) =>
    createForm(pool, companyId, { name: 'Fixture', title: 'Fixture', fields: [{ key: 'email', field_type: 'email', label: 'Correo', required: true }] }),
};

/** `*_id` fields that name no record of ours (an RFC is a tax id). */
const NOT_REFERENCES = new Set(['tax_id', 'supplier_tax_id']);

/** Paths of every `*_id` field a write schema accepts, through optional/nullable wrappers and arrays of objects. */
function idPaths(schema: unknown, at: Array<string | number> = []): Array<Array<string | number>> {
  const def = (schema as { _zod?: { def: any } })?._zod?.def;
  if (!def) return [];
  if (def.type === 'optional' || def.type === 'nullable' || def.type === 'default' || def.type === 'readonly') return idPaths(def.innerType, at);
  if (def.type === 'pipe') return idPaths(def.in, at);
  if (def.type === 'array') return idPaths(def.element, [...at, 0]);
  if (def.type !== 'object') return [];
  return Object.entries(def.shape as Record<string, unknown>).flatMap(([key, field]) =>
    key.endsWith('_id') && !NOT_REFERENCES.has(key) ? [[...at, key]] : idPaths(field, [...at, key]),
  );
}

/** `data` with the value at `path` set, array items taken from the example when it has one. */
function withValue(data: Record<string, any>, path: Array<string | number>, value: string): Record<string, any> {
  const copy = structuredClone(data);
  let node: any = copy;
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i];
    const nextIsIndex = typeof path[i + 1] === 'number';
    if (node[key] === undefined || node[key] === null) node[key] = nextIsIndex ? [{}] : {};
    if (nextIsIndex && Array.isArray(node[key])) node[key] = [node[key][0] ?? {}];
    node = node[key];
  }
  node[path.at(-1)!] = value;
  return copy;
}

/** A route's example made valid for `tenant`: a host (`user_id`) is that tenant's owner. */
function exampleFor(example: Record<string, unknown> | undefined, tenant: Tenant): Record<string, unknown> {
  const data = { ...(example ?? {}) };
  if ('user_id' in data) data.user_id = tenant.ownerId;
  return data;
}

function collectionOf(path: string): string {
  return path.slice(0, path.indexOf('/:'));
}

async function snapshot(pool: Pool, companyId: string): Promise<Record<string, unknown[]>> {
  const { rows: tables } = await pool.query(
    `SELECT table_name FROM information_schema.columns
      WHERE column_name = 'company_id' AND table_schema = 'public' AND table_name NOT IN ('rate_limit_windows', 'idempotency_keys')
      ORDER BY table_name`,
  );
  const out: Record<string, unknown[]> = {};
  for (const { table_name } of tables) {
    out[table_name] = (await pool.query(`SELECT * FROM ${table_name} WHERE company_id = $1 ORDER BY 1`, [companyId])).rows;
  }
  return out;
}

describe('cross-tenant isolation over every route of the router table', () => {
  let app: TestApp;
  let victim: Tenant;
  let attacker: Tenant;
  const records = new Map<string, Record<string, any>>();
  const paramRoutes = apiRoutes.filter((r) => r.path.includes('/:'));
  const sessions = new Map<Tenant, string>();
  /** The credential a route takes: the tenant's API key, or a session of its owner for `/user/...` routes. */
  const credential = (route: RouteDef, tenant: Tenant) => (route.session ? sessions.get(tenant)! : tenant.key);

  /** An account of the tenant, for examples that move money (made once per tenant). */
  const accounts = new Map<Tenant, string>();
  const accountOf = async (tenant: Tenant) => {
    if (!accounts.has(tenant)) {
      const res = await request(app.baseUrl, 'POST', '/accounts', { key: tenant.key, body: { data: { name: 'Caja', kind: 'cash', currency: 'mxn' } } });
      assert.equal(res.status, 201, res.text);
      accounts.set(tenant, res.body.data.id);
    }
    return accounts.get(tenant)!;
  };
  /** Examples that name other records or times, made valid for a tenant before its record is created. */
  const EXAMPLE_FIXUPS: Record<string, (data: Record<string, unknown>, tenant: Tenant) => Promise<void>> = {
    // A booking takes a link of the company and one of its free slots.
    '/bookings': async (data, tenant) => {
      const link = records.get('/booking-links')!;
      const slots = await request(app.baseUrl, 'GET', `/booking-links/${link.id}/slots`, { key: tenant.key });
      data.booking_link_id = link.id;
      data.starts_at = slots.body.data.days[0].slots[0].starts_at;
    },
    '/incomes': async (data, tenant) => void (data.account_id = await accountOf(tenant)),
    '/expenses': async (data, tenant) => void (data.account_id = await accountOf(tenant)),
    '/recurring-transactions': async (data, tenant) => void (data.account_id = await accountOf(tenant)),
  };

  before(async () => {
    app = await startTestApp();
    const options = { modules: [...OPT_IN_MODULES], rateLimitPerMinute: 100_000 };
    victim = await seedTenant(app.pool, options);
    attacker = await seedTenant(app.pool, options);
    for (const tenant of [victim, attacker]) {
      await setPassword(app.pool, tenant.ownerId, 'contraseña-de-prueba');
      const { rows } = await app.pool.query('SELECT email FROM users WHERE id = $1', [tenant.ownerId]);
      const opened = await signIn(app.pool, { email: rows[0].email, password: 'contraseña-de-prueba' });
      sessions.set(tenant, opened!.token);
    }
    for (const route of paramRoutes) {
      const collection = collectionOf(route.path);
      if (records.has(collection)) continue;
      const create = apiRoutes.find((r) => r.method === 'POST' && r.path === collection && r.example && r.status === 201);
      if (create) {
        const data = exampleFor(create.example, victim);
        await EXAMPLE_FIXUPS[collection]?.(data, victim);
        const res = await request(app.baseUrl, 'POST', collection, { key: credential(create, victim), body: { data } });
        assert.equal(res.status, 201, `creating a ${collection} record for the test: ${res.text}`);
        records.set(collection, res.body.data);
      } else if (FIXTURES[collection]) {
        records.set(collection, await FIXTURES[collection](app.pool, victim.companyId));
      } else {
        assert.fail(`No way to create a ${collection} record: give its POST route an \`example\` or add a FIXTURES entry here.`);
      }
    }
  });
  after(() => app.close());

  test('the walk covers every resource addressed by id: a resource dropped from the table fails here', () => {
    const walked = new Set(paramRoutes.map((r) => r.path.split('/:')[0]));
    const resources = [
      '/accounts', '/automations', '/booking-links', '/bookings', '/brands', '/calendar/events', '/customers', '/expenses', '/forms',
      '/incomes', '/invoices', '/leads', '/product-categories', '/products', '/recurring-transactions', '/sales', '/users',
      '/webhook-endpoints', '/user/developers/webhook-endpoints',
    ];
    assert.deepEqual(resources.filter((r) => !walked.has(r)), []);
  });

  function pathFor(route: RouteDef, record: Record<string, any>, useSlug: boolean): string {
    let first = true;
    return route.path.replace(/:(\w+)/g, (_, name: string) => {
      if (first) {
        first = false;
        return useSlug && record.slug ? record.slug : record.id;
      }
      // A nested id (variant_id → variants[0].id) when the record has one.
      const nested = record[`${name.replace(/_id$/, '')}s`];
      return Array.isArray(nested) && nested[0]?.id ? nested[0].id : objectId();
    });
  }

  test('another company gets 404 not_found on every route, and nothing of the victim changes', async () => {
    const before = await snapshot(app.pool, victim.companyId);
    const checked: string[] = [];
    for (const route of paramRoutes) {
      const record = records.get(collectionOf(route.path))!;
      const variants = Object.values(route.params ?? {}).includes('id_or_slug') && record.slug ? [false, true] : [false];
      for (const useSlug of variants) {
        const path = pathFor(route, record, useSlug);
        const body = route.method === 'GET' || route.method === 'DELETE' ? undefined : { data: route.example ?? {} };
        const res = await request(app.baseUrl, route.method, path, { key: credential(route, attacker), body });
        assert.equal(res.status, 404, `${route.method} ${path}: ${res.text}`);
        assert.equal(res.body.error, 'not_found', `${route.method} ${path}`);
        checked.push(`${route.method} ${route.path}`);
      }
    }
    assert.deepEqual(await snapshot(app.pool, victim.companyId), before, 'the victim company is unchanged');
    // And the owner still sees every record.
    for (const [collection, record] of records) {
      const read = apiRoutes.find((r) => r.method === 'GET' && r.path === `${collection}/:id`)!;
      const own = await request(app.baseUrl, 'GET', `${collection}/${record.id}`, { key: credential(read, victim) });
      assert.equal(own.status, 200, collection);
    }
    assert.ok(checked.length >= paramRoutes.length);
  });

  test('ids inside request bodies: a write naming another company’s record is refused and links nothing', async () => {
    /** The victim's id for a body field: every `*_id` a write accepts must be listed here or found by its name. */
    const victimIdFor = (field: string): string | undefined => {
      const named: Record<string, () => string | undefined> = {
        brand_id: () => records.get('/brands')?.id,
        product_category_id: () => records.get('/product-categories')?.id,
        parent_id: () => records.get('/product-categories')?.id,
        component_product_id: () => records.get('/products')?.id,
        product_id: () => records.get('/products')?.id,
        variant_id: () => records.get('/products')?.variants?.[0]?.id,
        user_id: () => victim.ownerId,
      };
      if (named[field]) return named[field]();
      return records.get(`/${field.replace(/_id$/, '').replace(/_/g, '-')}s`)?.id;
    };
    const before = await snapshot(app.pool, victim.companyId);
    const own = new Map<string, Record<string, any>>();
    const checked: string[] = [];
    const writes = apiRoutes.filter((r) => r.body && !r.upload && (r.method === 'POST' || r.method === 'PATCH' || r.method === 'PUT'));
    for (const route of writes) {
      const collection = route.path.includes('/:') ? collectionOf(route.path) : route.path;
      // Only a collection's create and its record's update (`/x` and `/x/:id`).
      if (route.path !== collection && route.path !== `${collection}/:id`) continue;
      const paths = idPaths(route.body);
      if (paths.length === 0) continue;
      let target = route.path;
      if (route.path !== collection) {
        if (!own.has(collection)) {
          const create = apiRoutes.find((r) => r.method === 'POST' && r.path === collection && r.example);
          if (!create) continue;
          const mine = exampleFor(create.example, attacker);
          await EXAMPLE_FIXUPS[collection]?.(mine, attacker);
          const made = await request(app.baseUrl, 'POST', collection, { key: credential(create, attacker), body: { data: mine } });
          assert.equal(made.status, 201, `${collection}: ${made.text}`);
          own.set(collection, made.body.data);
        }
        target = `${collection}/${own.get(collection)!.id}`;
      }
      for (const path of paths) {
        const field = String(path.at(-1));
        const foreign = victimIdFor(field);
        assert.ok(foreign, `${route.method} ${route.path}: no victim record for body field ${path.join('.')}; map it in victimIdFor`);
        const data = withValue(exampleFor(route.example, attacker) as Record<string, any>, path, foreign);
        const res = await request(app.baseUrl, route.method, target, { key: credential(route, attacker), body: { data } });
        assert.ok(res.status === 404 || res.status === 422, `${route.method} ${target} with ${path.join('.')} of another company: ${res.status} ${res.text}`);
        checked.push(`${route.method} ${route.path} ${path.join('.')}`);
      }
    }
    assert.ok(checked.length >= 6, `checked: ${checked.join(', ')}`);
    assert.deepEqual(await snapshot(app.pool, victim.companyId), before, 'the victim company is unchanged');
  });

  test('lists never include another company’s records', async () => {
    // Nested lists (/forms/:form_id/submissions) are walked by the 404 test above.
    for (const route of apiRoutes.filter((r) => r.list && !r.path.includes('/:'))) {
      const res = await request(app.baseUrl, 'GET', route.path, { key: credential(route, attacker) });
      assert.equal(res.status, 200, route.path);
      const victimIds = new Set([...records.values()].map((r) => r.id));
      assert.ok(res.body.data.every((item: any) => !victimIds.has(item.id)), route.path);
    }
  });
});
