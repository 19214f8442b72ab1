// The cross-tenant walk, derived from the router table: every route with a
// path parameter called with a second company's credential and the first
// company's ids; every write naming another company's record in a `*_id`
// body field; every list read for the first company's ids. A route added to
// api/routes/index.ts joins the walk by itself; if the walk cannot make a
// record for it, prepare() fails and says what to add.
//
// Shared by test/security.cross-tenant.test.ts (in-process app) and the
// `cross-tenant` drill (drills/scenarios.ts: a running web process), so both
// walk the same routes. It reports what it saw; each caller decides.
import { createAutomation } from '../../api/admin/automations.ts';
import { setPassword } from '../../api/admin/users.ts';
import { signIn } from '../../api/auth/sessions.ts';
import { insertClient } from '../../api/oauth/store.ts';
import { createForm } from '../../api/admin/forms.ts';
import { OPT_IN_MODULES } from '../../api/auth/scopes.ts';
import type { RouteDef } from '../../api/route.ts';
import { apiRoutes } from '../../api/routes/index.ts';
import type { Pool } from '../../db/pool.ts';
import { objectId } from '../../lib/objectid.ts';
import { request, seedTenant, type Tenant } from './app.ts';

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
  // A connection is made on the /authorize pages, by the company's owner here.
  '/user/oauth-grants': async (pool, companyId) => {
    const client = await insertClient(pool, 'Fixture', ['http://127.0.0.1:43210/callback']);
    const { rows } = await pool.query('SELECT user_id FROM memberships WHERE company_id = $1 AND is_owner', [companyId]);
    const id = objectId();
    await pool.query('INSERT INTO oauth_grants (id, client_id, user_id, company_id, scopes) VALUES ($1, $2, $3, $4, $5)', [id, client.id, rows[0].user_id, companyId, ['read-customers']]);
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

/** Every row of the company in every table that has a company_id: what "nothing changed" compares. */
export async function snapshot(pool: Pool, companyId: string): Promise<Record<string, unknown[]>> {
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

/** A company for the walk: every opt-in module, a key with every scope, and a signed-in session of its owner. */
export type WalkTenant = Tenant & { session: string };
export async function walkTenant(pool: Pool): Promise<WalkTenant> {
  const tenant = await seedTenant(pool, { modules: [...OPT_IN_MODULES], rateLimitPerMinute: 100_000 });
  await setPassword(pool, tenant.ownerId, 'contraseña-de-prueba');
  const { rows } = await pool.query('SELECT email FROM users WHERE id = $1', [tenant.ownerId]);
  const opened = await signIn(pool, { email: rows[0].email, password: 'contraseña-de-prueba' });
  return { ...tenant, session: opened!.token };
}

/** One request of the walk that did not get the answer isolation requires. */
export type Breach = { request: string; status: number; text: string };

export class CrossTenantWalk {
  /** The victim's record of each collection walked, by collection path (`/customers`). */
  readonly records = new Map<string, Record<string, any>>();
  readonly paramRoutes = apiRoutes.filter((r) => r.path.includes('/:'));
  readonly #base: string;
  readonly #pool: Pool;
  readonly #victim: WalkTenant;
  readonly #attacker: WalkTenant;
  readonly #accounts = new Map<WalkTenant, string>();

  /** `base`: the API's root URL, `…/api/v1`. */
  constructor(base: string, pool: Pool, victim: WalkTenant, attacker: WalkTenant) {
    this.#base = base;
    this.#pool = pool;
    this.#victim = victim;
    this.#attacker = attacker;
  }

  /** The credential a route takes: the tenant's API key, or a session of its owner for `/user/...` routes. */
  #credential(route: RouteDef, tenant: WalkTenant): string {
    return route.session ? tenant.session : tenant.key;
  }

  #request(route: RouteDef, tenant: WalkTenant, method: string, path: string, body?: unknown) {
    return request(this.#base, method, path, { key: this.#credential(route, tenant), body });
  }

  /** An account of the tenant, for examples that move money (made once per tenant). */
  async #accountOf(tenant: WalkTenant): Promise<string> {
    if (!this.#accounts.has(tenant)) {
      const res = await request(this.#base, 'POST', '/accounts', { key: tenant.key, body: { data: { name: 'Caja', kind: 'cash', currency: 'mxn' } } });
      if (res.status !== 201) throw new Error(`an account for the walk: ${res.status} ${res.text}`);
      this.#accounts.set(tenant, res.body.data.id);
    }
    return this.#accounts.get(tenant)!;
  }

  /** Examples that name other records or times, made valid for a tenant before its record is created. */
  async #fixExample(collection: string, data: Record<string, unknown>, tenant: WalkTenant): Promise<void> {
    if (collection === '/bookings') {
      // A booking takes a link of the company and one of its free slots.
      const link = this.records.get('/booking-links')!;
      const slots = await request(this.#base, 'GET', `/booking-links/${link.id}/slots`, { key: tenant.key });
      data.booking_link_id = link.id;
      data.starts_at = slots.body.data.days[0].slots[0].starts_at;
    } else if (collection === '/incomes' || collection === '/expenses' || collection === '/recurring-transactions') {
      data.account_id = await this.#accountOf(tenant);
    }
  }

  /** Makes one victim record per collection a route addresses by id: by its POST route's example, else a fixture. */
  async prepare(): Promise<void> {
    for (const route of this.paramRoutes) {
      const collection = collectionOf(route.path);
      if (this.records.has(collection)) continue;
      const create = apiRoutes.find((r) => r.method === 'POST' && r.path === collection && r.example && r.status === 201);
      if (create) {
        const data = exampleFor(create.example, this.#victim);
        await this.#fixExample(collection, data, this.#victim);
        const res = await this.#request(create, this.#victim, 'POST', collection, { data });
        if (res.status !== 201) throw new Error(`creating a ${collection} record for the walk: ${res.status} ${res.text}`);
        this.records.set(collection, res.body.data);
      } else if (FIXTURES[collection]) {
        this.records.set(collection, await FIXTURES[collection](this.#pool, this.#victim.companyId));
      } else {
        throw new Error(`No way to create a ${collection} record: give its POST route an \`example\` or add a FIXTURES entry in test/helpers/cross-tenant-walk.ts.`);
      }
    }
  }

  #pathFor(route: RouteDef, record: Record<string, any>, useSlug: boolean): string {
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

  /** Every route with a path parameter, with the attacker's credential and the victim's ids (and slugs): anything but 404 not_found is a breach. */
  async paths(): Promise<{ checked: string[]; breaches: Breach[] }> {
    const checked: string[] = [];
    const breaches: Breach[] = [];
    for (const route of this.paramRoutes) {
      const record = this.records.get(collectionOf(route.path))!;
      const variants = Object.values(route.params ?? {}).includes('id_or_slug') && record.slug ? [false, true] : [false];
      for (const useSlug of variants) {
        const path = this.#pathFor(route, record, useSlug);
        const body = route.method === 'GET' || route.method === 'DELETE' ? undefined : { data: route.example ?? {} };
        const res = await this.#request(route, this.#attacker, route.method, path, body);
        checked.push(`${route.method} ${route.path}`);
        if (res.status !== 404 || res.body?.error !== 'not_found') breaches.push({ request: `${route.method} ${path}`, status: res.status, text: res.text });
      }
    }
    return { checked, breaches };
  }

  /** The victim's id for a body field, or undefined when the walk has no record for it. */
  #victimIdFor(field: string): string | undefined {
    const named: Record<string, () => string | undefined> = {
      brand_id: () => this.records.get('/brands')?.id,
      product_category_id: () => this.records.get('/product-categories')?.id,
      parent_id: () => this.records.get('/product-categories')?.id,
      component_product_id: () => this.records.get('/products')?.id,
      product_id: () => this.records.get('/products')?.id,
      variant_id: () => this.records.get('/products')?.variants?.[0]?.id,
      user_id: () => this.#victim.ownerId,
    };
    if (named[field]) return named[field]();
    return this.records.get(`/${field.replace(/_id$/, '').replace(/_/g, '-')}s`)?.id;
  }

  /**
   * Every `*_id` field of every create and update body, set to the victim's record in an otherwise
   * valid write of the attacker's: anything but 404 or 422 is a breach, and so is an answer that
   * differs from the one for an id no company has (the contract: indistinguishable from absence). `unmapped`: fields the walk
   * has no victim record for (map them in #victimIdFor).
   */
  async bodies(): Promise<{ checked: string[]; breaches: Breach[]; unmapped: string[] }> {
    const own = new Map<string, Record<string, any>>();
    const checked: string[] = [];
    const breaches: Breach[] = [];
    const unmapped: string[] = [];
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
          const mine = exampleFor(create.example, this.#attacker);
          await this.#fixExample(collection, mine, this.#attacker);
          const made = await this.#request(create, this.#attacker, 'POST', collection, { data: mine });
          if (made.status !== 201) throw new Error(`the attacker's own ${collection} record: ${made.status} ${made.text}`);
          own.set(collection, made.body.data);
        }
        target = `${collection}/${own.get(collection)!.id}`;
      }
      for (const path of paths) {
        const field = String(path.at(-1));
        const foreign = this.#victimIdFor(field);
        if (!foreign) {
          unmapped.push(`${route.method} ${route.path} ${path.join('.')}`);
          continue;
        }
        const data = withValue(exampleFor(route.example, this.#attacker) as Record<string, any>, path, foreign);
        const res = await this.#request(route, this.#attacker, route.method, target, { data });
        checked.push(`${route.method} ${route.path} ${path.join('.')}`);
        if (res.status !== 404 && res.status !== 422) breaches.push({ request: `${route.method} ${target} with ${path.join('.')} of another company`, status: res.status, text: res.text });
        // Indistinguishable from absence (contract): the same answer as for an id no company has.
        const unknown = 'f'.repeat(24);
        const absent = await this.#request(route, this.#attacker, route.method, target, { data: withValue(exampleFor(route.example, this.#attacker) as Record<string, any>, path, unknown) });
        if (absent.status !== res.status || absent.text.replaceAll(unknown, '<id>') !== res.text.replaceAll(foreign, '<id>')) {
          breaches.push({ request: `${route.method} ${target} with ${path.join('.')} of another company, against an unknown id`, status: res.status, text: `${res.text} ≠ ${absent.status} ${absent.text}` });
        }
      }
    }
    return { checked, breaches, unmapped };
  }

  /** Every top-level list, read by the attacker: any of the victim's ids in it is a breach. */
  async lists(): Promise<{ checked: string[]; breaches: Breach[] }> {
    const victimIds = new Set([...this.records.values()].map((r) => r.id));
    const checked: string[] = [];
    const breaches: Breach[] = [];
    // Nested lists (/forms/:form_id/submissions) are walked by paths().
    for (const route of apiRoutes.filter((r) => r.list && !r.path.includes('/:'))) {
      const res = await this.#request(route, this.#attacker, 'GET', route.path);
      checked.push(`GET ${route.path}`);
      if (res.status !== 200 || !res.body.data.every((item: any) => !victimIds.has(item.id))) breaches.push({ request: `GET ${route.path}`, status: res.status, text: res.text });
    }
    return { checked, breaches };
  }

  /**
   * Every list's id filters (`user_id`, `account_id`, `brand`…) and cursors (`starting_after`,
   * `ending_before`) given the victim's ids by the attacker: the answer must be the one for an id no
   * company has (the contract: indistinguishable from absence), an empty list or the same refusal.
   */
  async queries(): Promise<{ checked: string[]; breaches: Breach[] }> {
    const checked: string[] = [];
    const breaches: Breach[] = [];
    const unknown = 'f'.repeat(24);
    const aliases: Record<string, string> = { brand: 'brand_id', category: 'product_category_id' };
    for (const route of apiRoutes.filter((r) => r.list && !r.path.includes('/:'))) {
      const shape = (route.query as { shape?: Record<string, unknown> } | undefined)?.shape ?? {};
      const asks: Array<[string, string]> = [];
      for (const name of Object.keys(shape)) {
        const foreign = name.endsWith('_id') || aliases[name] ? this.#victimIdFor(aliases[name] ?? name) : undefined;
        if (foreign) asks.push([name, foreign]);
      }
      const own = this.records.get(route.path)?.id;
      if (own) for (const cursor of ['starting_after', 'ending_before']) if (cursor in shape) asks.push([cursor, own]);
      for (const [name, foreign] of asks) {
        const res = await this.#request(route, this.#attacker, 'GET', `${route.path}?${name}=${foreign}`);
        const absent = await this.#request(route, this.#attacker, 'GET', `${route.path}?${name}=${unknown}`);
        checked.push(`GET ${route.path}?${name}`);
        const listsNone = res.status === 200 && Array.isArray(res.body?.data) && res.body.data.length === 0;
        if (!(listsNone || res.status === 400 || res.status === 422) || absent.status !== res.status || absent.text.replaceAll(unknown, '<id>') !== res.text.replaceAll(foreign, '<id>')) {
          breaches.push({ request: `GET ${route.path}?${name}=<another company's>`, status: res.status, text: `${res.text} ≠ ${absent.status} ${absent.text}` });
        }
      }
    }
    return { checked, breaches };
  }

  /** The victim can still read each of its records (the walk's 404s were not the records missing). */
  async ownerReads(): Promise<Breach[]> {
    const failed: Breach[] = [];
    for (const [collection, record] of this.records) {
      const read = apiRoutes.find((r) => r.method === 'GET' && r.path === `${collection}/:id`)!;
      const own = await this.#request(read, this.#victim, 'GET', `${collection}/${record.id}`);
      if (own.status !== 200) failed.push({ request: `GET ${collection}/${record.id} (the owner)`, status: own.status, text: own.text });
    }
    return failed;
  }
}
