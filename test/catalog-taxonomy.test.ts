import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { issueKey } from '../api/admin/keys.ts';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';

describe('categories, brands and the product list filters', () => {
  let app: TestApp;
  let tenant: Tenant;
  let api: ReturnType<typeof client>;
  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    api = client(app.baseUrl, tenant.key);
  });
  after(() => app.close());

  const product = (extra: Record<string, unknown>) => api.post('/products', { data: { name: 'P', prices_cents: { mxn: 100 }, ...extra } });

  test('category hierarchy: parent by id, no cycles, counts of active products, has_products over the subtree, id or slug', async () => {
    const ropa = (await api.post('/product-categories', { data: { name: 'Ropa', icon: 'shirt' } })).body.data;
    const camisas = (await api.post('/product-categories', { data: { name: 'Camisas', parent_id: ropa.id } })).body.data;
    const mangas = (await api.post('/product-categories', { data: { name: 'Manga larga', parent_id: camisas.id } })).body.data;
    const vacia = (await api.post('/product-categories', { data: { name: 'Vacía' } })).body.data;
    assert.equal(camisas.parent_id, ropa.id);
    assert.equal(ropa.icon, 'shirt');

    for (const parent of [ropa.id, camisas.id, mangas.id]) {
      const cycle = await api.patch(`/product-categories/${ropa.id}`, { data: { parent_id: parent } });
      assert.equal(cycle.status, 422, `parent ${parent}`);
      assert.ok(cycle.body.errors.parent_id);
    }
    const other = await seedTenant(app.pool);
    const foreignCat = (await client(app.baseUrl, other.key).post('/product-categories', { data: { name: 'Ajena' } })).body.data;
    const foreignParent = await api.post('/product-categories', { data: { name: 'X', parent_id: foreignCat.id } });
    assert.equal(foreignParent.status, 422, 'another company’s category is not a valid parent');

    await product({ product_category_id: mangas.id });
    await product({ product_category_id: mangas.id });
    await product({ product_category_id: mangas.id, status: 'archived' });
    const ropaProduct = (await product({ product_category_id: ropa.id })).body.data;

    const bySlug = (await api.get('/product-categories/ropa')).body.data;
    assert.equal(bySlug.id, ropa.id);
    assert.equal(bySlug.product_count, 1);
    assert.equal(bySlug.product_count_including_descendants, 3);
    assert.equal(bySlug.children_count, 1);
    const m = (await api.get(`/product-categories/${mangas.id}`)).body.data;
    assert.equal(m.product_count, 2, 'archived products do not count');

    const withProducts = (await api.get('/product-categories?has_products=true')).body.data.map((c: any) => c.slug).sort();
    assert.deepEqual(withProducts, ['camisas', 'manga-larga', 'ropa'], 'a parent whose products live in a child is included');
    const without = (await api.get('/product-categories?has_products=false')).body.data.map((c: any) => c.slug);
    assert.deepEqual(without, ['vacia']);
    const camisasRow = (await api.get('/product-categories?has_products=true')).body.data.find((c: any) => c.id === camisas.id);
    assert.equal(camisasRow.product_count, 0);
    assert.equal(camisasRow.product_count_including_descendants, 2);

    // Deleting a middle node re-parents its children to its parent.
    assert.equal((await api.delete(`/product-categories/${camisas.slug}`)).status, 204);
    assert.equal((await api.get(`/product-categories/${mangas.id}`)).body.data.parent_id, ropa.id);
    assert.equal((await api.delete(`/product-categories/${vacia.id}`)).status, 204);
    // Deleting a category its products point at clears it on them, and moves their updated_at (a client syncing on it sees the change).
    const before = (await api.get(`/products/${ropaProduct.id}`)).body.data;
    assert.equal((await api.delete(`/product-categories/${ropa.id}`)).status, 204);
    const afterDelete = (await api.get(`/products/${ropaProduct.id}`)).body.data;
    assert.equal(afterDelete.product_category, null);
    assert.ok(afterDelete.updated_at > before.updated_at, `${afterDelete.updated_at} after ${before.updated_at}`);
  });

  test('category depth: at most 20 levels, counting the subtree a move brings along (422 validation_failed on parent_id)', async () => {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const c = client(app.baseUrl, t.key);
    const chain = async (prefix: string, levels: number) => {
      const ids: string[] = [];
      for (let i = 1; i <= levels; i++) {
        const res = await c.post('/product-categories', { data: { name: `${prefix} ${i}`, parent_id: ids.at(-1) ?? null } });
        assert.equal(res.status, 201, res.text);
        ids.push(res.body.data.id);
      }
      return ids;
    };
    const a = await chain('A', 10); // levels 1..10
    const b = await chain('B', 11); // a root with 10 levels below it

    // b[0] under a[9] would put b's deepest node at level 10 + 11 = 21.
    const tooDeep = await c.patch(`/product-categories/${b[0]}`, { data: { parent_id: a[9] } });
    assert.equal(tooDeep.status, 422, tooDeep.text);
    assert.equal(tooDeep.body.error, 'validation_failed');
    assert.match(tooDeep.body.errors.parent_id[0], /20 niveles/);
    assert.equal((await c.get(`/product-categories/${b[0]}`)).body.data.parent_id, null, 'nothing moved');

    // Under a[8] the deepest node lands exactly on level 20: allowed.
    const fits = await c.patch(`/product-categories/${b[0]}`, { data: { parent_id: a[8] } });
    assert.equal(fits.status, 200, fits.text);
    // A 21st level is refused on create and on move as well.
    const create = await c.post('/product-categories', { data: { name: 'Nivel 21', parent_id: b[10] } });
    assert.equal(create.status, 422, create.text);
    const leaf = (await c.post('/product-categories', { data: { name: 'Hoja' } })).body.data;
    assert.equal((await c.patch(`/product-categories/${leaf.id}`, { data: { parent_id: b[10] } })).status, 422);
    assert.equal((await c.patch(`/product-categories/${leaf.id}`, { data: { parent_id: b[9] } })).status, 200);
  });

  test('has_products reads one index entry per populated category, not every active product, and keeps the subtree semantics', async () => {
    const t = await seedTenant(app.pool);
    const c = client(app.baseUrl, t.key);
    const mk = (data: object) => c.post('/product-categories', { data }).then((r) => r.body.data);
    const full = await mk({ name: 'Llena' });
    const parent = await mk({ name: 'Padre' });
    const child = await mk({ name: 'Hija', parent_id: parent.id });
    const archivedOnly = await mk({ name: 'Archivada' });
    const empty = await mk({ name: 'Vacía' });
    // 2,000 active and 500 archived products in one category; one active product in the child; only archived ones elsewhere.
    await app.pool.query(
      `INSERT INTO products (id, company_id, name, slug, prices_cents, product_category_id, status)
       SELECT 'ea' || lpad(to_hex(g), 22, '0'), $1, 'P ' || g, 'p-' || g, '{"mxn": 1}',
              CASE WHEN g = 1 THEN $3 WHEN g > 2000 THEN $4 ELSE $2 END, CASE WHEN g > 2000 THEN 'archived' ELSE 'active' END
         FROM generate_series(1, 2500) g`,
      [t.companyId, full.id, child.id, archivedOnly.id],
    );
    await app.pool.query('ANALYZE products');

    const slugs = async (qs: string) => ((await c.get(`/product-categories?${qs}`)).body.data as any[]).map((x) => x.slug).sort();
    assert.deepEqual(await slugs('has_products=true'), ['hija', 'llena', 'padre'], 'a parent whose products live in a child is included');
    assert.deepEqual(await slugs('has_products=false'), ['archivada', 'vacia'], 'archived products do not count');

    // Replay the queries of one request (the page is the empty category, so its counts read nothing)
    // in a transaction, and count the product rows and index entries PostgreSQL read for them.
    const original = app.pool.query;
    const seen: unknown[][] = [];
    (app.pool as any).query = function (this: unknown, ...args: unknown[]) {
      // query(text, values) or query({ text, values, ... }) (listPage passes a config).
      const config = typeof args[0] === 'string' ? { text: args[0], values: args[1] as unknown[] } : (args[0] as { text?: string; values?: unknown[] });
      if (config?.text && /\bproducts\b/.test(config.text)) seen.push([config.text, config.values]);
      return (original as any).apply(this, args);
    };
    try {
      const res = await c.get('/product-categories?has_products=false&limit=1');
      assert.deepEqual(res.body.data.map((x: any) => x.id), [empty.id]);
    } finally {
      (app.pool as any).query = original;
    }
    assert.ok(seen.length > 0);
    // pg_stat_xact_* also hold this backend's counts not yet flushed from earlier statements: take the difference.
    const db = await app.pool.connect();
    const productReads = async () =>
      Number(
        (
          await db.query(
            `SELECT coalesce(t.seq_tup_read, 0) + coalesce(t.idx_tup_fetch, 0)
                    + (SELECT coalesce(sum(pg_stat_get_xact_tuples_returned(i.indexrelid)), 0) FROM pg_index i WHERE i.indrelid = 'products'::regclass) AS n
               FROM pg_stat_xact_user_tables t WHERE t.relid = 'products'::regclass`,
          )
        ).rows[0].n,
      );
    try {
      await db.query('BEGIN');
      const before = await productReads();
      for (const [sql, params] of seen) await db.query(sql as string, params as unknown[]);
      const read = (await productReads()) - before;
      assert.ok(read < 50, `read ${read} product rows or index entries for 2,500 products`);
    } finally {
      await db.query('ROLLBACK');
      db.release();
    }
  });

  test('brands: CRUD by id or slug with products scopes, logo or logo_url, product_count, snapshot kept in sync', async () => {
    const acme = await api.post('/brands', { data: { name: 'Acme', logo: 'https://cdn.example.com/acme.png', custom_properties: [{ key: 'pais', value: 'MX' }, { key: 'product_count', value: 99 }] } });
    assert.equal(acme.status, 201, acme.text);
    const b = acme.body.data;
    assert.equal(b.logo_url, 'https://cdn.example.com/acme.png');
    assert.equal(b.logo.url, b.logo_url);
    assert.equal(b.pais, 'MX');
    assert.equal(b.product_count, 0, 'a custom property cannot shadow product_count');
    const conflict = await api.post('/brands', { data: { name: 'X', logo: 'https://a.example/1.png', logo_url: 'https://a.example/2.png' } });
    assert.equal(conflict.status, 422);
    const bad = await api.post('/brands', { data: { name: 'X', logo_url: 'javascript:alert(1)' } });
    assert.equal(bad.status, 422);

    const p1 = (await product({ name: 'Yunque', brand_id: b.id })).body.data;
    await product({ name: 'Cohete', brand_id: b.id, status: 'archived' });
    assert.deepEqual(p1.brand, { id: b.id, name: 'Acme', slug: 'acme' });

    const list = (await api.get('/brands')).body.data;
    assert.equal(list.find((x: any) => x.id === b.id).product_count, 2, 'non-deleted products, archived included');

    const renamed = await api.patch('/brands/acme', { data: { name: 'Acme Corp', slug: 'acme-corp' } });
    assert.equal(renamed.status, 200, renamed.text);
    assert.deepEqual((await api.get(`/products/${p1.id}`)).body.data.brand, { id: b.id, name: 'Acme Corp', slug: 'acme-corp' });
    assert.equal((await api.get('/products?brand=acme-corp')).body.data.length, 2);
    assert.equal((await api.get('/products?q=corp')).body.data.length, 2, 'search covers the brand name');

    const reader = await issueKey(app.pool, { companyId: tenant.companyId, scopes: ['read-products'] });
    assert.equal((await client(app.baseUrl, reader.secret).get('/brands/acme-corp')).status, 200);
    const denied = await client(app.baseUrl, reader.secret).patch('/brands/acme-corp', { data: { name: 'No' } });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.required, 'update-products');

    assert.equal((await api.delete(`/brands/${b.id}`)).status, 204);
    const orphan = (await api.get(`/products/${p1.id}`)).body.data;
    assert.equal(orphan.brand, null);
    assert.equal(orphan.brand_id, null);
  });

  test('product list: brand and category filters mix ids and slugs, aliases ignored when the main name is present, unknown values give no rows', async () => {
    const t = await seedTenant(app.pool);
    const c = client(app.baseUrl, t.key);
    const mk = (path: string, data: object) => c.post(path, { data }).then((r) => r.body.data);
    const nike = await mk('/brands', { name: 'Nike' });
    const puma = await mk('/brands', { name: 'Puma' });
    const tenis = await mk('/product-categories', { name: 'Tenis' });
    const gorras = await mk('/product-categories', { name: 'Gorras' });
    const P = (name: string, extra: object) => mk('/products', { name, prices_cents: { mxn: 1 }, ...extra });
    const a = await P('Air Max', { brand_id: nike.id, product_category_id: tenis.id });
    const b = await P('Suede', { brand_id: puma.id, product_category_id: tenis.id });
    const g = await P('Gorra Nike', { brand_id: nike.id, product_category_id: gorras.id });
    await P('Sin marca', {});
    const names = async (qs: string) => ((await c.get(`/products?${qs}`)).body.data as any[]).map((p) => p.name).sort();

    assert.deepEqual(await names(`brand=nike`), ['Air Max', 'Gorra Nike']);
    assert.deepEqual(await names(`brand=${puma.id},nike`), ['Air Max', 'Gorra Nike', 'Suede']);
    assert.deepEqual(await names(`brand_id=puma`), ['Suede']);
    assert.deepEqual(await names(`brand=puma&brand_id=nike`), ['Suede'], 'brand_id is ignored when brand is present');
    assert.deepEqual(await names(`category=tenis`), ['Air Max', 'Suede']);
    assert.deepEqual(await names(`category=${gorras.id},tenis`), ['Air Max', 'Gorra Nike', 'Suede']);
    assert.deepEqual(await names(`category=gorras&product_category_id=tenis`), ['Gorra Nike']);
    assert.deepEqual(await names(`brand=nike&category=tenis`), ['Air Max']);
    assert.deepEqual(await names(`brand=unknown`), [], 'an unknown slug contributes no rows');
    assert.deepEqual(await names(`brand=unknown,puma`), ['Suede']);
    // A slug in any case; an id as written (every id is compared so): its digits in capitals match nothing.
    assert.deepEqual(await names(`brand=NIKE&category=Tenis`), ['Air Max']);
    assert.deepEqual(await names(`brand=${puma.id.toUpperCase()}`), []);
    assert.deepEqual(await names(`category=${gorras.id.toUpperCase()}`), []);
    // A value naming nothing (empty, blank, only separators) is no filter: every product, as without it.
    const all = await names('');
    for (const empty of ['brand=', 'brand=%20', 'brand=,', 'category=%20,%20', 'brand_id=,,']) assert.deepEqual(await names(empty), all, empty);
    assert.deepEqual(await names(`category=000000000000000000000000`), []);
    // Another company's category, with products of its own, is unknown here by id and by slug,
    // alone or in a list, even when its slug is free in this company.
    const other = client(app.baseUrl, (await seedTenant(app.pool)).key);
    const foreign = (await other.post('/product-categories', { data: { name: 'Ajena filtro' } })).body.data;
    assert.equal((await other.post('/products', { data: { name: 'Producto ajeno', prices_cents: { mxn: 1 }, product_category_id: foreign.id } })).status, 201);
    assert.deepEqual(((await other.get(`/products?category=${foreign.id}`)).body.data as any[]).map((p) => p.name), ['Producto ajeno']);
    assert.deepEqual(await names(`category=${foreign.id}`), []);
    assert.deepEqual(await names(`category=${foreign.slug}`), []);
    assert.deepEqual(await names(`product_category_id=${foreign.id},${foreign.slug}`), []);
    assert.deepEqual(await names(`category=${foreign.id},gorras`), ['Gorra Nike'], 'it contributes nothing to a list');
    assert.deepEqual(await names(`q=air&brand=nike`), ['Air Max']);
    assert.deepEqual(await names(`search=GORRA`), ['Gorra Nike']);
    assert.deepEqual(await names(`q=max&search=gorra`), ['Air Max'], 'search is ignored when q is present');
    // Accents and case are ignored, in the term and in the name, SKU and brand.
    const accents = client(app.baseUrl, (await seedTenant(app.pool)).key);
    const brand = (await accents.post('/brands', { data: { name: 'Tostadores Peñón' } })).body.data;
    assert.equal((await accents.post('/products', { data: { name: 'Café de Olla', sku: 'CAFÉ-01', prices_cents: { mxn: 100 }, brand_id: brand.id } })).status, 201);
    assert.equal((await accents.post('/products', { data: { name: 'Cafetera', prices_cents: { mxn: 100 } } })).status, 201);
    const found = async (q: string) => ((await accents.get(`/products?q=${encodeURIComponent(q)}`)).body.data as any[]).map((p) => p.name).sort();
    assert.deepEqual(await found('cafe de olla'), ['Café de Olla']);
    assert.deepEqual(await found('CAFÉ'), ['Cafetera', 'Café de Olla']);
    assert.deepEqual(await found('cafe-01'), ['Café de Olla'], 'the SKU');
    assert.deepEqual(await found('penon'), ['Café de Olla'], 'the brand name');
    assert.deepEqual(((await accents.get('/brands?q=PENON')).body.data as any[]).map((b) => b.name), ['Tostadores Peñón'], 'the brand list too');
    void a;
    void b;
    void g;

    const meta = (await c.get('/products?brand=nike,puma&include_filtered_total=true&include_total=true&limit=1')).body.meta;
    assert.equal(meta.filtered_total, 3);
    assert.equal(meta.filtered_total_pages, 3);
    assert.equal(meta.total, 4);
    assert.equal(meta.filtered_total_capped, false);
  });

  test('category filter: ids and slugs are resolved first, so a rare category is an index range scan on products_category, never a subquery per product row', async () => {
    const t = await seedTenant(app.pool);
    // 3,000 products over 30 dense categories and 30 brand slugs, plus 3 in a rare category and brand.
    await app.pool.query(
      `INSERT INTO product_categories (id, company_id, name, slug)
       SELECT 'ca' || lpad(to_hex(g), 22, '0'), $1, 'Cat ' || g, 'cat-' || g FROM generate_series(1, 30) g
       UNION ALL SELECT 'cb0000000000000000000001', $1, 'Rara', 'rara'`,
      [t.companyId],
    );
    await app.pool.query(
      `INSERT INTO products (id, company_id, name, slug, prices_cents, product_category_id, brand_name, brand_slug, created_at)
       SELECT 'da' || lpad(to_hex(g), 22, '0'), $1, 'P ' || g, 'p-' || g, '{"mxn": 1}',
              CASE WHEN g % 1000 = 7 THEN 'cb0000000000000000000001' ELSE 'ca' || lpad(to_hex(g % 30 + 1), 22, '0') END,
              'Marca', CASE WHEN g % 1000 = 7 THEN 'rara' ELSE 'marca-' || (g % 30) END, now() - g * interval '1 second'
         FROM generate_series(1, 3000) g`,
      [t.companyId],
    );
    await app.pool.query('ANALYZE products');
    await app.pool.query('ANALYZE product_categories');
    const c = client(app.baseUrl, t.key);

    /** The plan of the page query the API ran for `qs` (captured from the pool, explained with its parameters). */
    const planOf = async (qs: string) => {
      const original = app.pool.query;
      const seen: unknown[][] = [];
      (app.pool as any).query = function (this: unknown, ...args: unknown[]) {
        // query(text, values) or query({ text, values, ... }) (listPage passes a config).
        const config = typeof args[0] === 'string' ? { text: args[0], values: args[1] as unknown[] } : (args[0] as { text?: string; values?: unknown[] });
        if (config?.text && /FROM products WHERE[\s\S]*ORDER BY created_at/.test(config.text)) seen.push([config.text, config.values]);
        return (original as any).apply(this, args);
      };
      let names: string[];
      try {
        const res = await c.get(`/products?limit=5&${qs}`);
        assert.equal(res.status, 200, res.text);
        names = res.body.data.map((p: any) => p.name);
      } finally {
        (app.pool as any).query = original;
      }
      assert.equal(seen.length, 1, qs);
      const { rows } = await app.pool.query(`EXPLAIN ${seen[0][0]}`, seen[0][1] as unknown[]);
      return { plan: rows.map((r: any) => r['QUERY PLAN']).join('\n'), names };
    };

    for (const qs of ['category=rara', 'category=cb0000000000000000000001', 'product_category_id=rara,unknown-slug']) {
      const { plan, names } = await planOf(qs);
      assert.deepEqual(names, ['P 7', 'P 1007', 'P 2007'], qs);
      assert.match(plan, /Index Cond: .*product_category_id = ANY/, `${qs}:\n${plan}`);
      assert.doesNotMatch(plan, /Filter: .*SubPlan/, `${qs}: no subquery per product row\n${plan}`);
    }
    const { plan: brandPlan, names: brandNames } = await planOf('brand=rara');
    assert.deepEqual(brandNames, ['P 7', 'P 1007', 'P 2007']);
    assert.match(brandPlan, /Index Cond: .*brand_slug = ANY/, brandPlan);
    // Dense filters still answer from one index walk; a filter resolving to no category gives no rows.
    assert.equal((await planOf('category=cat-3,cat-4&brand=marca-2')).names.length, 5);
    assert.deepEqual((await planOf('category=unknown')).names, []);
  });

  test('a list filter in array or object syntax (category[]=x, category[a]=x) is 400 invalid_parameter saying lists are comma-separated, never ignored', async () => {
    for (const query of ['category[]=ropa', 'brand[0]=marca', 'category[a]=ropa', 'brand[0][x]=marca', 'product_category_id[]=ropa']) {
      const res = await api.get(`/products?${query}`);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.equal(res.body.error, 'invalid_parameter');
      assert.match(res.body.message, /varios valores van separados por comas: (category|brand|product_category_id)=a,b/);
    }
    // A one-value parameter in array syntax is refused too, told to send one value (status=a,b would be refused as well).
    for (const [query, base] of [['status[]=active', 'status'], ['limit[a]=1', 'limit']]) {
      const res = await api.get(`/products?${query}`);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.equal(res.body.error, 'invalid_parameter');
      assert.equal(res.body.message, `El parámetro ${query.split('=')[0]} no existe: escribe ${base}=<valor>.`);
    }
    const brandTwice = await api.get('/products?brand=a&brand=b');
    assert.deepEqual([brandTwice.status, brandTwice.body.error], [400, 'invalid_parameter']);
    assert.equal(brandTwice.body.message, 'El parámetro brand aparece más de una vez: envíalo una sola vez, con sus valores separados por comas: brand=a,b.');
    assert.equal((await api.get('/products?unknown[]=x')).status, 200, 'a parameter no list knows is still ignored');
  });

  test('a brand or category filter list over 100 values is 400 invalid_parameter naming the parameter, never cut short', async () => {
    const t = await seedTenant(app.pool);
    const c = client(app.baseUrl, t.key);
    const brand = (await c.post('/brands', { data: { name: 'Al final' } })).body.data;
    const cat = (await c.post('/product-categories', { data: { name: 'Al final' } })).body.data;
    await c.post('/products', { data: { name: 'Producto', prices_cents: { mxn: 1 }, brand_id: brand.id, product_category_id: cat.id } });
    const filler = (n: number) => Array.from({ length: n }, (_, i) => `otra-${i}`);
    for (const [param, last] of [['brand', 'al-final'], ['brand_id', brand.id], ['category', 'al-final'], ['product_category_id', cat.id]]) {
      const over = await c.get(`/products?${param}=${[...filler(100), last].join(',')}`);
      assert.equal(over.status, 400, `${param}: ${over.text}`);
      assert.deepEqual(Object.keys(over.body).sort(), ['error', 'message']);
      assert.equal(over.body.error, 'invalid_parameter');
      assert.match(over.body.message, new RegExp(`\\b${param}\\b`));
      const atLimit = await c.get(`/products?${param}=${[...filler(99), last].join(',')}`);
      assert.equal(atLimit.status, 200, `${param}: ${atLimit.text}`);
      assert.deepEqual(atLimit.body.data.map((p: any) => p.name), ['Producto'], `${param}: the 100th value counts`);
    }
    // A malformed id in a list filter is a malformed query parameter too (invalid_id is a path's or a cursor's).
    for (const path of ['/product-categories?parent_id=zz']) {
      const malformed = await c.get(path);
      assert.deepEqual([malformed.status, malformed.body.error], [400, 'invalid_parameter'], path);
    }
    // Empty items between commas are not values.
    assert.equal((await c.get(`/products?brand=${[...filler(99), 'al-final'].join(',,')}`)).status, 200);
  });

  test('include_filtered_total with text search is capped at 100', async () => {
    const t = await seedTenant(app.pool);
    const c = client(app.baseUrl, t.key);
    await app.pool.query(
      `INSERT INTO products (id, company_id, name, slug, prices_cents)
       SELECT lpad(to_hex(g), 24, '0'), $1, 'Lápiz ' || g, 'lapiz-' || g, '{"mxn": 100}' FROM generate_series(1, 150) g`,
      [t.companyId],
    );
    const searched = (await c.get('/products?q=lápiz&include_filtered_total=true')).body.meta;
    assert.equal(searched.filtered_total, 100);
    assert.equal(searched.filtered_total_capped, true);
    const plain = (await c.get('/products?include_filtered_total=true')).body.meta;
    assert.equal(plain.filtered_total, 150);
    assert.equal(plain.filtered_total_capped, false);
  });
});
