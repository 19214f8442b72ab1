import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { objectId } from '../lib/objectid.ts';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';

describe('products: prices, nested writes, detail, custom properties', () => {
  let app: TestApp;
  let tenant: Tenant;
  let api: ReturnType<typeof client>;
  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool);
    api = client(app.baseUrl, tenant.key);
  });
  after(() => app.close());

  const base = { name: 'Taza', prices_cents: { mxn: 15000 } };

  test('prices_cents: at least one currency, lowercase ISO 4217 keys, integer cents', async () => {
    for (const [prices, field] of [
      [{}, 'prices_cents'],
      [{ MXN: 100 }, 'prices_cents.MXN'],
      [{ xyz: 100 }, 'prices_cents.xyz'],
      [{ mxn: 10.5 }, 'prices_cents.mxn'],
      [{ mxn: -1 }, 'prices_cents.mxn'],
    ] as const) {
      const res = await api.post('/products', { data: { ...base, prices_cents: prices } });
      assert.equal(res.status, 422, JSON.stringify(prices));
      assert.equal(res.body.error, 'validation_failed');
      assert.ok(res.body.errors[field], `${field} in ${JSON.stringify(res.body.errors)}`);
    }
    const missing = await api.post('/products', { data: { name: 'Sin precio' } });
    assert.equal(missing.status, 422);
    assert.equal(missing.body.error, 'parameter_missing');
    const ok = await api.post('/products', { data: { ...base, prices_cents: { mxn: 15000, usd: 900 } } });
    assert.equal(ok.status, 201);
    assert.deepEqual(ok.body.data.prices_cents, { mxn: 15000, usd: 900 });
  });

  test('a PATCH of prices_cents replaces the map whole, on the product and on a variant (docs/catalog.md)', async () => {
    const made = (await api.post('/products', { data: { ...base, name: 'Precios', prices_cents: { mxn: 1000, usd: 60 }, variants: [{ name: 'V', prices_cents: { usd: 1 } }] } })).body.data;
    const res = await api.patch(`/products/${made.id}`, { data: { prices_cents: { eur: 50 }, variants: [{ id: made.variants[0].id, prices_cents: { eur: 2 } }] } });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual([res.body.data.prices_cents, res.body.data.variants[0].prices_cents], [{ eur: 50 }, { eur: 2 }]);
  });

  test('a PATCH that changes nothing writes nothing (updated_at stays); one naming a nested list moves it', async () => {
    const made = (await api.post('/products', { data: { name: 'Quieto', prices_cents: { mxn: 100 }, variants: [{ name: 'V' }] } })).body.data;
    for (const data of [{}, { name: 'Quieto' }, { prices_cents: { mxn: 100 } }]) {
      const res = await api.patch(`/products/${made.id}`, { data });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.data.updated_at, made.updated_at, JSON.stringify(data));
    }
    const renamed = await api.patch(`/products/${made.id}`, { data: { name: 'Movido' } });
    assert.ok(renamed.body.data.updated_at > made.updated_at, 'a change of its own columns moves it');
    const variants = await api.patch(`/products/${made.id}`, { data: { variants: [{ id: made.variants[0].id, name: 'V2' }] } });
    assert.equal(variants.body.data.variants[0].name, 'V2');
    assert.ok(variants.body.data.updated_at > renamed.body.data.updated_at, 'a change of a variant moves the product\'s');
  });

  test('scalar currency and price_cents (product, variant) and component extra_price_cents are refused with 422', async () => {
    const tazas = async () => (await app.pool.query('SELECT count(*)::int AS n FROM products WHERE company_id = $1 AND name = $2', [tenant.companyId, 'Taza'])).rows[0].n;
    const before = await tazas();
    const cases = [
      { ...base, currency: 'mxn' },
      { ...base, price_cents: 100 },
      { ...base, variants: [{ name: 'V', price_cents: 100 }] },
      { ...base, variants: [{ name: 'V', currency: 'mxn' }] },
      { ...base, components: [{ name: 'C', extra_price_cents: 100 }] },
    ];
    for (const data of cases) {
      const res = await api.post('/products', { data });
      assert.equal(res.status, 422, JSON.stringify(data));
      assert.equal(res.body.error, 'validation_failed');
    }
    // The old payload alone (no prices_cents): the removed fields are named with their replacement, not parameter_missing.
    const legacy = await api.post('/products', { data: { name: 'Taza', price_cents: 100, currency: 'mxn' } });
    assert.equal(legacy.status, 422, legacy.text);
    assert.equal(legacy.body.error, 'validation_failed');
    assert.match(legacy.body.errors.price_cents[0], /prices_cents/);
    assert.equal(await tazas(), before, 'nothing refused was written');
  });

  test('create with nested variants, option types with values, components and stock; detail by id, slug and sku', async () => {
    const res = await api.post('/products', {
      data: {
        name: 'Playera Básica',
        sku: 'PLY-1',
        description: 'Algodón',
        unit: 'pieza',
        prices_cents: { mxn: 19900 },
        vat_rate: 16,
        sat_product_key: '53101600',
        sat_unit_key: 'h87',
        images: [{ url: 'https://cdn.example.com/a.jpg', alt: 'Frente' }, { url: 'https://cdn.example.com/b.jpg', position: 5 }],
        variants: [
          { name: 'M', sku: 'PLY-1-M', prices_cents: {} },
          { name: 'XL', prices_cents: { mxn: 21900 } },
        ],
        option_types: [{ name: 'Talla', values: [{ name: 'M', extra_price_cents: 0 }, { name: 'XL', extra_price_cents: 2000 }] }],
        components: [{ name: 'Empaque', extra_prices_cents: { mxn: 500, usd: -30 } }],
        inventory: [
          { warehouse: 'Central', rack: 'A1', quantity: 5 },
          { warehouse: 'Central', rack: 'A2', quantity: 3 },
          { warehouse: 'Norte', quantity: 2 },
        ],
      },
    });
    assert.equal(res.status, 201, res.text);
    const p = res.body.data;
    assert.equal(p.slug, 'playera-basica');
    assert.equal(p.status, 'active');
    assert.equal(p.sat_unit_key, 'H87');
    // An image sent without a position goes after those sent with one (as a nested item does), in the order sent.
    assert.deepEqual(p.images, [
      { url: 'https://cdn.example.com/b.jpg', alt: null, position: 5 },
      { url: 'https://cdn.example.com/a.jpg', alt: 'Frente', position: 6 },
    ]);
    const gallery = await api.patch(`/products/${p.id}`, { data: { images: [{ url: 'https://e.example/1.jpg', position: 5 }, { url: 'https://e.example/2.jpg', position: 2 }, { url: 'https://e.example/3.jpg' }, { url: 'https://e.example/4.jpg' }] } });
    assert.deepEqual(gallery.body.data.images.map((i: any) => [i.url.slice(-5), i.position]), [['2.jpg', 2], ['1.jpg', 5], ['3.jpg', 6], ['4.jpg', 7]], 'no place a client gave is taken twice');
    assert.equal(p.variants.length, 2);
    assert.deepEqual(p.variants[0].prices_cents, {}, 'an inheriting variant has an empty map');
    assert.equal(p.variants[0].image_url, null);
    assert.equal(p.option_types[0].values[1].extra_price_cents, 2000);
    assert.deepEqual(p.components[0].extra_prices_cents, { mxn: 500, usd: -30 });
    assert.equal(p.inventory.total_quantity, 10);
    assert.deepEqual(p.inventory.warehouses.map((w: any) => [w.warehouse, w.quantity]), [['Central', 8], ['Norte', 2]]);
    assert.ok(!JSON.stringify(p.inventory).includes('cost'), 'inventory carries quantities only');
    // Rows read (`rack: null`, `variant_id: null` where there is none) can be written back as they are.
    const asRead = p.inventory.warehouses.flatMap((w: any) => w.racks.map((r: any) => ({ warehouse: w.warehouse, ...r })));
    assert.ok(asRead.some((r: any) => r.rack === null), JSON.stringify(asRead));
    const back = await api.patch(`/products/${p.id}`, { data: { inventory: asRead } });
    assert.equal(back.status, 200, back.text);
    assert.deepEqual(back.body.data.inventory, p.inventory);

    for (const ref of [p.id, 'playera-basica', 'PLY-1']) {
      const got = await api.get(`/products/${ref}`);
      assert.equal(got.status, 200, ref);
      assert.equal(got.body.data.id, p.id);
    }
    assert.equal((await api.get('/products/nope-nope')).status, 404);

    const list = await api.get('/products?limit=100');
    const item = list.body.data.find((x: any) => x.id === p.id);
    for (const detailOnly of ['variants', 'option_types', 'components', 'inventory']) assert.ok(!(detailOnly in item), `${detailOnly} is detail only`);
  });

  test('an option value created without a position goes after the stored ones, however their positions are spaced', async () => {
    const made = await api.post('/products', { data: { name: 'Tallas', prices_cents: { mxn: 100 }, option_types: [{ name: 'Talla', values: [{ name: 'S', position: 0 }, { name: 'M', position: 5 }] }] } });
    assert.equal(made.status, 201, made.text);
    const type = made.body.data.option_types[0];
    const patched = await api.patch(`/products/${made.body.data.id}`, { data: { option_types: [{ id: type.id, values: [{ name: 'L' }, { name: 'XL' }] }] } });
    assert.equal(patched.status, 200, patched.text);
    const values = patched.body.data.option_types[0].values.map((v: any) => [v.name, v.position]);
    assert.deepEqual(values, [['S', 0], ['M', 5], ['L', 6], ['XL', 7]]);
  });

  test('a slug written in capitals is stored lowercased, and reading it back in capitals finds it; a sku is matched as written', async () => {
    const made = await api.post('/products', { data: { name: 'Mayúsculas', slug: 'Taza-GRANDE', sku: 'SKU-Mx', prices_cents: { mxn: 100 } } });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.body.data.slug, 'taza-grande');
    for (const path of ['Taza-GRANDE', 'taza-grande', 'SKU-Mx']) assert.equal((await api.get(`/products/${path}`)).body.data?.id, made.body.data.id, path);
    assert.equal((await api.get('/products/sku-mx')).status, 404, 'a sku is case-sensitive');
    // An exact sku outranks a slug that only case-folding matches: TAZA-1 is the product whose sku it is.
    const bySku = (await api.post('/products', { data: { name: 'Vaso grande', sku: 'TAZA-1', prices_cents: { mxn: 100 } } })).body.data;
    const bySlug = (await api.post('/products', { data: { name: 'Taza roja', slug: 'taza-1', prices_cents: { mxn: 100 } } })).body.data;
    assert.equal((await api.get('/products/TAZA-1')).body.data.id, bySku.id);
    assert.equal((await api.get('/products/taza-1')).body.data.id, bySlug.id);
    const brand = await api.post('/brands', { data: { name: 'Marca Caps', slug: 'Marca-CAPS' } });
    assert.equal((await api.get('/brands/MARCA-caps')).body.data?.id, brand.body.data.id);
  });

  test('a product with a category returns product_category {id, name, slug} and the deprecated category_name, in detail and list, following a rename', async () => {
    const cat = (await api.post('/product-categories', { data: { name: 'Tazas', slug: 'tazas' } })).body.data;
    const res = await api.post('/products', { data: { ...base, name: 'Taza con categoría', product_category_id: cat.id } });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.data.product_category_id, cat.id);
    assert.deepEqual(res.body.data.product_category, { id: cat.id, name: 'Tazas', slug: 'tazas' });
    assert.equal(res.body.data.category_name, 'Tazas');
    await api.patch(`/product-categories/${cat.id}`, { data: { name: 'Tazas y vasos' } });
    const detail = (await api.get(`/products/${res.body.data.id}`)).body.data;
    assert.deepEqual(detail.product_category, { id: cat.id, name: 'Tazas y vasos', slug: 'tazas' });
    assert.equal(detail.category_name, 'Tazas y vasos');
    const item = (await api.get(`/products?category=${cat.id}`)).body.data[0];
    assert.deepEqual(item.product_category, { id: cat.id, name: 'Tazas y vasos', slug: 'tazas' });
    assert.equal(item.category_name, 'Tazas y vasos');
    // Without a category both are null.
    const bare = (await api.post('/products', { data: { ...base, name: 'Sin categoría' } })).body.data;
    assert.equal(bare.product_category, null);
    assert.equal(bare.category_name, null);
  });

  test('deleting a product another uses as a component: the component row stays with component_product_id null, and that product\'s updated_at moves', async () => {
    const part = (await api.post('/products', { data: { ...base, name: 'Pieza' } })).body.data;
    const kit = (await api.post('/products', { data: { ...base, name: 'Kit', components: [{ name: 'Pieza', component_product_id: part.id }] } })).body.data;
    const unrelated = (await api.post('/products', { data: { ...base, name: 'Aparte' } })).body.data;
    assert.equal(kit.components[0].component_product_id, part.id);
    // A second back, so the move shows whatever the clock's resolution.
    const { rows } = await app.pool.query(`UPDATE products SET updated_at = updated_at - interval '1 second' WHERE id = $1 RETURNING updated_at`, [kit.id]);
    assert.equal((await api.delete(`/products/${part.id}`)).status, 204);
    const after = (await api.get(`/products/${kit.id}`)).body.data;
    assert.deepEqual([after.components.length, after.components[0].component_product_id], [1, null]);
    assert.ok(new Date(after.updated_at) > rows[0].updated_at, `${after.updated_at} after ${rows[0].updated_at.toISOString()}`);
    assert.equal((await api.get(`/products/${unrelated.id}`)).body.data.updated_at, unrelated.updated_at, 'a product that did not use it is left alone');
  });

  test('nested update: matched by id, created without id, removed by _destroy, all in one transaction', async () => {
    const created = (
      await api.post('/products', {
        data: {
          ...base,
          name: 'Nested',
          variants: [{ name: 'A' }, { name: 'B' }],
          option_types: [{ name: 'Color', values: [{ name: 'Rojo' }, { name: 'Azul' }] }],
          components: [{ name: 'Tapa' }],
        },
      })
    ).body.data;
    const [a, b] = created.variants;
    const color = created.option_types[0];
    const res = await api.patch(`/products/${created.id}`, {
      data: {
        variants: [{ id: a.id, name: 'A2', prices_cents: { mxn: 100 } }, { id: b.id, _destroy: true }, { name: 'C' }],
        option_types: [{ id: color.id, values: [{ id: color.values[0].id, extra_price_cents: 250 }, { id: color.values[1].id, _destroy: true }, { name: 'Verde' }] }],
        components: [{ id: created.components[0].id, _destroy: true }],
      },
    });
    assert.equal(res.status, 200, res.text);
    const p = res.body.data;
    assert.deepEqual(p.variants.map((v: any) => v.name).sort(), ['A2', 'C']);
    assert.deepEqual(p.variants.find((v: any) => v.id === a.id).prices_cents, { mxn: 100 });
    assert.deepEqual(p.option_types[0].values.map((v: any) => [v.name, v.extra_price_cents]), [['Rojo', 250], ['Verde', 0]]);
    assert.equal(p.components.length, 0);

    // A failing nested item rolls back the whole write, product fields included.
    const bad = await api.patch(`/products/${created.id}`, { data: { name: 'Cambiado', variants: [{ name: 'D' }, { id: objectId(), name: 'X' }] } });
    assert.equal(bad.status, 422);
    assert.ok(bad.body.errors['variants.1.id']);
    const after = (await api.get(`/products/${created.id}`)).body.data;
    assert.equal(after.name, 'Nested');
    assert.equal(after.variants.length, 2);
    // `_destroy` without an id names nothing: 422 on that item's id (it was ignored, a 200 that removed nothing).
    for (const [data, path] of [
      [{ variants: [{ name: 'C', _destroy: true }] }, 'variants.0.id'],
      [{ option_types: [{ id: color.id, values: [{ _destroy: true }] }] }, 'option_types.0.values.0.id'],
    ] as const) {
      const nameless = await api.patch(`/products/${created.id}`, { data });
      assert.equal(nameless.status, 422, nameless.text);
      assert.deepEqual(Object.keys(nameless.body.errors), [path]);
    }
    assert.deepEqual((await api.get(`/products/${created.id}`)).body.data.variants.map((v: any) => v.name).sort(), ['A2', 'C']);
  });

  test('an item named twice in one nested list (updated and destroyed, two updates) is 422 on the second, and nothing is written', async () => {
    const created = (await api.post('/products', { data: { ...base, name: 'Dos veces', variants: [{ name: 'A', sku: 'DOS-A' }], option_types: [{ name: 'Color', values: [{ name: 'Rojo' }] }] } })).body.data;
    const [a] = created.variants;
    const color = created.option_types[0];
    for (const [data, path] of [
      [{ variants: [{ id: a.id, name: 'A2' }, { id: a.id, _destroy: true }] }, 'variants.1.id'],
      [{ variants: [{ id: a.id, name: 'C', sku: 'DOS-C' }, { name: 'Nueva' }, { id: a.id, name: 'D' }] }, 'variants.2.id'],
      [{ option_types: [{ id: color.id, values: [{ id: color.values[0].id, name: 'Rojo vivo' }, { id: color.values[0].id, _destroy: true }] }] }, 'option_types.0.values.1.id'],
      [{ option_types: [{ id: color.id, name: 'Tono' }, { id: color.id, _destroy: true }] }, 'option_types.1.id'],
    ] as const) {
      const res = await api.patch(`/products/${created.id}`, { data: { name: 'Cambiado', ...data } });
      assert.equal(res.status, 422, res.text);
      assert.deepEqual([res.body.error, Object.keys(res.body.errors)], ['validation_failed', [path]]);
      assert.match(res.body.errors[path][0], /repetido/);
    }
    const after = (await api.get(`/products/${created.id}`)).body.data;
    assert.deepEqual([after.name, after.variants.map((v: any) => [v.name, v.sku]), after.option_types.map((o: any) => [o.name, o.values.map((v: any) => v.name)])], ['Dos veces', [['A', 'DOS-A']], [['Color', ['Rojo']]]]);
  });

  test('the nested lists\' limits hold for the product, not per request; an item added without a position goes after the stored ones', async () => {
    const variants = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ name: `V${from + i}` }));
    const created = (await api.post('/products', { data: { ...base, name: 'Muchas', variants: variants(0, 150), option_types: [{ name: 'Talla', values: [{ name: 'S' }] }] } })).body.data;
    const tooMany = await api.patch(`/products/${created.id}`, { data: { name: 'Cambiada', variants: variants(150, 51) } });
    assert.equal(tooMany.status, 422, 'a PATCH adding 51 to 150 stored would hold 201');
    assert.match(tooMany.body.errors.variants[0], /200.*201/);
    const unchanged = (await api.get(`/products/${created.id}`)).body.data;
    assert.deepEqual([unchanged.name, unchanged.variants.length], ['Muchas', 150], 'nothing of the refused write stays');
    const full = await api.patch(`/products/${created.id}`, { data: { variants: variants(150, 50) } });
    assert.equal(full.status, 200, full.text);
    assert.equal(full.body.data.variants.length, 200);
    // Positions continue from the stored items: the 50 added are 150–199, in the payload's order.
    assert.deepEqual(full.body.data.variants.slice(150).map((v: any) => [v.name, v.position]), variants(150, 50).map((v, i) => [v.name, 150 + i]));
    const talla = created.option_types[0];
    const values = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `T${i}` }));
    assert.equal((await api.patch(`/products/${created.id}`, { data: { option_types: [{ id: talla.id, values: values(99) }] } })).status, 200);
    const oneMore = await api.patch(`/products/${created.id}`, { data: { option_types: [{ id: talla.id, values: values(1) }] } });
    assert.equal(oneMore.status, 422, 'an option type holds 100 values at most');
    assert.ok(oneMore.body.errors['option_types.0.values'], JSON.stringify(oneMore.body.errors));
    // A product over a limit from before it held (rows written when only payloads were capped) can still
    // be edited, and brought under it: a write that does not grow the list is taken.
    await app.pool.query(
      `INSERT INTO product_variants (id, company_id, product_id, name, prices_cents, position)
       SELECT substr(md5(random()::text), 1, 24), company_id, id, 'Vieja ' || g, '{}', 200 + g FROM products, generate_series(1, 50) g WHERE id = $1`,
      [created.id],
    );
    const stored = (await api.get(`/products/${created.id}`)).body.data.variants;
    assert.equal(stored.length, 250);
    const renamed = await api.patch(`/products/${created.id}`, { data: { variants: [{ id: stored[0].id, name: 'Renombrada' }] } });
    assert.equal(renamed.status, 200, renamed.text);
    const trimmed = await api.patch(`/products/${created.id}`, { data: { variants: stored.slice(0, 50).map((v: any) => ({ id: v.id, _destroy: true })) } });
    assert.equal(trimmed.status, 200, trimmed.text);
    assert.equal(trimmed.body.data.variants.length, 200);
  });

  test('_destroy of a variant that belongs to another product is refused and deletes nothing', async () => {
    const one = (await api.post('/products', { data: { ...base, name: 'Uno', variants: [{ name: 'U1' }] } })).body.data;
    const two = (await api.post('/products', { data: { ...base, name: 'Dos', variants: [{ name: 'D1' }] } })).body.data;
    const res = await api.patch(`/products/${two.id}`, { data: { variants: [{ id: one.variants[0].id, _destroy: true }] } });
    assert.equal(res.status, 422);
    assert.equal(res.body.error, 'validation_failed');
    assert.ok(res.body.errors['variants.0.id']);
    assert.equal((await api.get(`/products/${one.id}`)).body.data.variants.length, 1);
    // Another company's variant id is just as unknown.
    const other = await seedTenant(app.pool);
    const foreign = (await client(app.baseUrl, other.key).post('/products', { data: { ...base, variants: [{ name: 'F' }] } })).body.data;
    const cross = await api.patch(`/products/${two.id}`, { data: { variants: [{ id: foreign.variants[0].id, _destroy: true }] } });
    assert.equal(cross.status, 422);
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM product_variants WHERE id = $1', [foreign.variants[0].id]);
    assert.equal(rows[0].n, 1);
  });

  test('inventory writes set absolute quantities per warehouse and rack; 0 removes the location', async () => {
    const p = (await api.post('/products', { data: { ...base, name: 'Stock', variants: [{ name: 'S' }], inventory: [{ warehouse: 'W', rack: 'R1', quantity: 4 }] } })).body.data;
    const res = await api.patch(`/products/${p.id}`, {
      data: { inventory: [{ warehouse: 'W', rack: 'R1', quantity: 0 }, { warehouse: 'W', rack: 'R2', quantity: 7, variant_id: p.variants[0].id }] },
    });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data.inventory, {
      total_quantity: 7,
      warehouses: [{ warehouse: 'W', quantity: 7, racks: [{ rack: 'R2', variant_id: p.variants[0].id, quantity: 7 }] }],
    });
    const bad = await api.patch(`/products/${p.id}`, { data: { inventory: [{ warehouse: 'W', quantity: -1 }] } });
    assert.equal(bad.status, 422);
    // One location set twice in one write (no rack written absent, null or blank alike) is refused on the second, nothing written.
    for (const [twice, rackless] of [[{ rack: 'R2' }, { rack: 'R2' }], [{}, { rack: null }], [{ rack: '' }, {}]] as const) {
      const res = await api.patch(`/products/${p.id}`, {
        data: { inventory: [{ warehouse: 'W', quantity: 3, ...twice, variant_id: p.variants[0].id }, { warehouse: 'X', quantity: 1 }, { warehouse: 'W', quantity: 9, ...rackless, variant_id: p.variants[0].id }] },
      });
      assert.equal(res.status, 422, res.text);
      assert.deepEqual(Object.keys(res.body.errors), ['inventory.2.warehouse']);
    }
    const sameRackOtherVariant = await api.patch(`/products/${p.id}`, { data: { inventory: [{ warehouse: 'W', rack: 'R2', quantity: 2 }, { warehouse: 'W', rack: 'R2', quantity: 5, variant_id: p.variants[0].id }] } });
    assert.equal(sameRackOtherVariant.status, 200, 'the product and its variant are two stock rows of one rack');
    assert.equal(sameRackOtherVariant.body.data.inventory.total_quantity, 7);
  });

  test('_destroy of a variant removes its stock rows: the inventory no longer counts them nor names the variant', async () => {
    const p = (await api.post('/products', { data: { ...base, name: 'Con existencias', variants: [{ name: 'Roja' }, { name: 'Azul' }] } })).body.data;
    const [roja, azul] = p.variants;
    const stocked = await api.patch(`/products/${p.id}`, {
      data: {
        inventory: [
          { warehouse: 'W', quantity: 1 },
          { warehouse: 'W', rack: 'R1', variant_id: roja.id, quantity: 4 },
          { warehouse: 'N', variant_id: roja.id, quantity: 2 },
          { warehouse: 'W', rack: 'R2', variant_id: azul.id, quantity: 3 },
        ],
      },
    });
    assert.equal(stocked.body.data.inventory.total_quantity, 10, stocked.text);
    const res = await api.patch(`/products/${p.id}`, { data: { variants: [{ id: roja.id, _destroy: true }] } });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.body.data.inventory, {
      total_quantity: 4,
      warehouses: [{ warehouse: 'W', quantity: 4, racks: [{ rack: null, variant_id: null, quantity: 1 }, { rack: 'R2', variant_id: azul.id, quantity: 3 }] }],
    });
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM product_stock WHERE variant_id = $1', [roja.id]);
    assert.equal(rows[0].n, 0, 'no stock row outlives its variant');
  });

  test('custom properties of every kind: array on write, top-level keys on read, reserved keys dropped', async () => {
    const props = [
      { key: 'material', value: 'algodón' },
      { key: 'peso_g', value: 180 },
      { key: 'organico', value: true },
      { key: 'tallas', value: ['S', 'M'] },
      { key: 'medidas', value: { largo: 70, ancho: 50 } },
      { key: 'lavado', value: [{ temp: 30 }, { temp: 40 }] },
      { key: 'ficha', value: { type: 'file', url: 'https://cdn.example.com/ficha.pdf', filename: 'ficha.pdf' } },
      { key: 'prices_cents', value: 'hack' },
      { key: 'category_name', value: 'hack' },
      { key: 'inventory', value: 'hack' },
    ];
    const res = await api.post('/products', { data: { ...base, name: 'Props', custom_properties: props } });
    assert.equal(res.status, 201, res.text);
    const p = res.body.data;
    assert.equal(p.material, 'algodón');
    assert.equal(p.peso_g, 180);
    assert.equal(p.organico, true);
    assert.deepEqual(p.tallas, ['S', 'M']);
    assert.deepEqual(p.medidas, { largo: 70, ancho: 50 });
    assert.deepEqual(p.lavado, [{ temp: 30 }, { temp: 40 }]);
    assert.equal(p.ficha.type, 'file');
    assert.deepEqual(p.prices_cents, { mxn: 15000 });
    assert.equal(p.category_name, null);
    assert.equal(typeof p.inventory, 'object');
    assert.ok(!('custom_properties' in p));
    const patched = await api.patch(`/products/${p.id}`, { data: { custom_properties: [{ key: 'material', value: null }, { key: 'color', value: 'rojo' }] } });
    assert.equal(patched.body.data.material, undefined);
    assert.equal(patched.body.data.color, 'rojo');
    assert.equal(patched.body.data.peso_g, 180);
  });

  test('a custom property with type "file" must be the strict file shape with an http(s) URL (422 validation_failed otherwise)', async () => {
    const cases: Array<[unknown, string]> = [
      [{ type: 'file', url: 'javascript:alert(document.cookie)' }, 'custom_properties.0.value.url'],
      [{ type: 'file', url: 'data:text/html,<script>alert(1)</script>' }, 'custom_properties.0.value.url'],
      [{ type: 'file', url: 'file:///etc/passwd' }, 'custom_properties.0.value.url'],
      [{ type: 'file', filename: 'sin-url.pdf' }, 'custom_properties.0.value.url'],
      [{ type: 'file', url: 'https://cdn.example.com/a.pdf', onclick: 'alert(1)' }, 'custom_properties.0.value.onclick'],
      [{ type: 'file', url: 'https://cdn.example.com/a.pdf', size_bytes: -1 }, 'custom_properties.0.value.size_bytes'],
      [[{ type: 'file', url: 'https://cdn.example.com/a.pdf' }, { type: 'file', url: 'javascript:alert(1)' }], 'custom_properties.0.value.1.url'],
      [{ manual: { type: 'file', url: 'javascript:alert(1)' } }, 'custom_properties.0.value.manual.url'],
    ];
    for (const [value, field] of cases) {
      const res = await api.post('/products', { data: { ...base, name: 'Archivo malo', custom_properties: [{ key: 'ficha', value }] } });
      assert.equal(res.status, 422, `${JSON.stringify(value)}: ${res.text}`);
      assert.equal(res.body.error, 'validation_failed');
      assert.ok(res.body.errors[field], `${field} in ${JSON.stringify(res.body.errors)}`);
    }
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM products WHERE company_id = $1 AND name = $2', [tenant.companyId, 'Archivo malo']);
    assert.equal(rows[0].n, 0);
    // Brands share the rule; a valid list of files and other objects with a different `type` are fine.
    const brand = await api.post('/brands', { data: { name: 'Marca archivo', custom_properties: [{ key: 'manual', value: { type: 'file', url: 'javascript:alert(1)' } }] } });
    assert.equal(brand.status, 422, brand.text);
    assert.ok(brand.body.errors['custom_properties.0.value.url']);
    const ok = await api.post('/products', {
      data: {
        ...base,
        name: 'Archivos buenos',
        custom_properties: [
          { key: 'fichas', value: [{ type: 'file', url: 'https://cdn.example.com/a.pdf', filename: 'a.pdf', content_type: 'application/pdf', size_bytes: 10 }] },
          { key: 'garantia', value: { type: 'extendida', url: 'javascript:no-es-archivo' } },
        ],
      },
    });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.data.fichas[0].filename, 'a.pdf');
  });

  test('slug and sku are unique in the company; a slug may not look like an ObjectId', async () => {
    await api.post('/products', { data: { ...base, name: 'Único', slug: 'unico', sku: 'U-1' } });
    const dupSlug = await api.post('/products', { data: { ...base, name: 'Otro', slug: 'unico' } });
    assert.equal(dupSlug.status, 422);
    assert.ok(dupSlug.body.errors.slug);
    const dupSku = await api.post('/products', { data: { ...base, name: 'Otro', sku: 'U-1' } });
    assert.equal(dupSku.status, 422);
    assert.ok(dupSku.body.errors.sku);
    const auto = await api.post('/products', { data: { ...base, name: 'Único' } });
    assert.equal(auto.body.data.slug, 'unico-2');
    const oid = await api.post('/products', { data: { ...base, slug: objectId() } });
    assert.equal(oid.status, 422);
    // Another company may reuse both.
    const other = await seedTenant(app.pool);
    const res = await client(app.baseUrl, other.key).post('/products', { data: { ...base, name: 'Único', slug: 'unico', sku: 'U-1' } });
    assert.equal(res.status, 201);
  });

  test('a path value shaped like an ObjectId is an id only: a retried DELETE never reaches a record whose derived slug or sku spells it', async () => {
    const first = (await api.post('/products', { data: { ...base, name: 'Alfa' } })).body.data;
    // A name of 24 hex digits: its derived slug is not id-shaped (it starts at -2).
    const named = await api.post('/products', { data: { ...base, name: first.id } });
    assert.equal(named.status, 201, named.text);
    assert.equal(named.body.data.slug, `${first.id}-2`);
    const upper = await api.post('/products', { data: { ...base, name: first.id.toUpperCase() } });
    assert.equal(upper.body.data.slug, `${first.id}-3`);
    // An id-shaped sku is stored, but the path reads that value as an id.
    const bySku = await api.post('/products', { data: { ...base, name: 'Con sku', sku: first.id } });
    assert.equal(bySku.status, 201, bySku.text);
    assert.equal((await api.delete(`/products/${first.id}`)).status, 204);
    assert.equal((await api.get(`/products/${first.id}`)).status, 404);
    assert.equal((await api.delete(`/products/${first.id}`)).status, 404, 'the retry reaches nothing');
    assert.equal((await api.patch(`/products/${first.id}`, { data: { name: 'Editado' } })).status, 404);
    for (const survivor of [named.body.data, upper.body.data, bySku.body.data]) {
      assert.equal((await api.get(`/products/${survivor.id}`)).body.data.name, survivor.name);
    }
    assert.equal((await api.get(`/products/${first.id}-2`)).body.data.id, named.body.data.id, 'the derived slug still reads its product');
  });

  test('concurrent creates of one name without a slug all succeed with distinct derived slugs (products and brands)', async () => {
    for (const [path, data] of [['/products', { ...base, name: 'Taza concurrente' }], ['/brands', { name: 'Marca concurrente' }]] as const) {
      // Six of one name, and two whose own base is the second one's derived slug (`…-2`).
      const names = [...Array(6).fill(data.name), `${data.name} 2`, `${data.name} 2`];
      const answers = await Promise.all(names.map((name) => api.post(path, { data: { ...data, name } })));
      for (const res of answers) assert.equal(res.status, 201, `${path}: ${res.text}`);
      const slugs = answers.map((res) => res.body.data.slug as string);
      assert.equal(new Set(slugs).size, 8, `${path}: ${slugs}`);
    }
  });

  test('a duplicate variant sku is 422 validation_failed under variants.<index>.sku, on create and update, and nothing is written', async () => {
    const first = (await api.post('/products', { data: { ...base, name: 'Con SKU', variants: [{ name: 'Chica', sku: 'VAR-DUP' }] } })).body.data;
    const countNamed = async (name: string) =>
      (await app.pool.query('SELECT count(*)::int AS n FROM products WHERE company_id = $1 AND name = $2', [tenant.companyId, name])).rows[0].n;

    // Taken by another product's variant.
    const taken = await api.post('/products', { data: { ...base, name: 'Choque', variants: [{ name: 'A' }, { name: 'B', sku: 'VAR-DUP' }] } });
    assert.equal(taken.status, 422, taken.text);
    assert.equal(taken.body.error, 'validation_failed');
    assert.ok(taken.body.errors['variants.1.sku'], JSON.stringify(taken.body.errors));
    assert.equal(await countNamed('Choque'), 0, 'the product is not written either');

    // Twice in the same payload.
    const twice = await api.post('/products', { data: { ...base, name: 'Gemelas', variants: [{ name: 'A', sku: 'TWIN' }, { name: 'B', sku: 'TWIN' }] } });
    assert.equal(twice.status, 422, twice.text);
    assert.ok(twice.body.errors['variants.1.sku'], JSON.stringify(twice.body.errors));
    assert.equal(await countNamed('Gemelas'), 0);

    // On PATCH, a new variant and an updated one, both colliding; the product fields roll back too.
    const second = (await api.post('/products', { data: { ...base, name: 'Segundo', variants: [{ name: 'S', sku: 'VAR-OK' }] } })).body.data;
    const patched = await api.patch(`/products/${second.id}`, {
      data: { name: 'Renombrado', variants: [{ id: second.variants[0].id, sku: 'VAR-DUP' }, { name: 'Nueva', sku: 'VAR-DUP' }] },
    });
    assert.equal(patched.status, 422, patched.text);
    assert.equal(patched.body.error, 'validation_failed');
    assert.ok(patched.body.errors['variants.0.sku'] && patched.body.errors['variants.1.sku'], JSON.stringify(patched.body.errors));
    const after = (await api.get(`/products/${second.id}`)).body.data;
    assert.equal(after.name, 'Segundo');
    assert.deepEqual(after.variants.map((v: any) => v.sku), ['VAR-OK']);
    assert.deepEqual((await api.get(`/products/${first.id}`)).body.data.variants.map((v: any) => v.sku), ['VAR-DUP']);

    // The product's own sku and slug on PATCH are 422 as well.
    await api.post('/products', { data: { ...base, name: 'Dueño del SKU', sku: 'SKU-TOMADO' } });
    const sku = await api.patch(`/products/${second.id}`, { data: { sku: 'SKU-TOMADO' } });
    assert.equal(sku.status, 422, sku.text);
    assert.ok(sku.body.errors.sku);
    const slug = await api.patch(`/products/${second.id}`, { data: { slug: first.slug } });
    assert.equal(slug.status, 422, slug.text);
    assert.ok(slug.body.errors.slug);

    // Another company may use the same variant sku.
    const other = await seedTenant(app.pool);
    const res = await client(app.baseUrl, other.key).post('/products', { data: { ...base, variants: [{ name: 'V', sku: 'VAR-DUP' }] } });
    assert.equal(res.status, 201, res.text);
  });

  test('delete removes the product with its variants and stock; another company gets 404', async () => {
    const p = (await api.post('/products', { data: { ...base, name: 'Borrar', variants: [{ name: 'V' }], inventory: [{ warehouse: 'W', quantity: 1 }] } })).body.data;
    const other = await seedTenant(app.pool);
    assert.equal((await client(app.baseUrl, other.key).delete(`/products/${p.id}`)).status, 404);
    assert.equal((await api.delete(`/products/${p.slug}`)).status, 204);
    assert.equal((await api.get(`/products/${p.id}`)).status, 404);
    const { rows } = await app.pool.query('SELECT (SELECT count(*) FROM product_variants WHERE product_id = $1)::int AS v, (SELECT count(*) FROM product_stock WHERE product_id = $1)::int AS s', [p.id]);
    assert.deepEqual(rows[0], { v: 0, s: 0 });
  });

  test('scopes: read-products cannot write; missing scope names the required one', async () => {
    const reader = await seedTenant(app.pool, { scopes: ['read-products'] });
    const res = await client(app.baseUrl, reader.key).post('/products', { data: base });
    assert.equal(res.status, 403);
    assert.equal(res.body.required, 'create-products');
    assert.equal((await client(app.baseUrl, reader.key).get('/products')).status, 200);
  });
});
