// The contract's pagination rules, checked on /customers (every list uses the
// same implementation in api/pagination.ts).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { objectId } from '../lib/objectid.ts';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';

describe('pagination', () => {
  let app: TestApp;
  let tenant: Tenant;
  let api: ReturnType<typeof client>;
  /** Ids in the contract's order: created_at DESC, id DESC. */
  let ordered: string[];

  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    api = client(app.baseUrl, tenant.key);
    // 130 customers; pairs share a created_at so the id tie-break matters.
    await app.pool.query(
      `INSERT INTO customers (id, company_id, name, email, created_at)
       SELECT lpad(to_hex(n), 24, '0'), $1, 'Cliente ' || n, 'c' || n || '@x.example',
              timestamp '2026-01-01' + ((n / 2) || ' minutes')::interval
         FROM generate_series(1, 130) n`,
      [tenant.companyId],
    );
    const { rows } = await app.pool.query('SELECT id FROM customers WHERE company_id = $1 ORDER BY created_at DESC, id DESC', [tenant.companyId]);
    ordered = rows.map((r) => r.id);
    // Another company's rows never show up.
    const other = await seedTenant(app.pool);
    await app.pool.query(`INSERT INTO customers (id, company_id, name) VALUES ($1, $2, 'Ajeno')`, [objectId(), other.companyId]);
  });
  after(() => app.close());

  test('default page: 25 newest first, with meta limit, has_more and cursors', async () => {
    const res = await api.get('/customers');
    assert.equal(res.status, 200);
    assert.deepEqual(res.body.data.map((c: any) => c.id), ordered.slice(0, 25));
    assert.deepEqual(res.body.meta, { limit: 25, has_more: true, next_cursor: ordered[24], previous_cursor: ordered[0] });
  });

  test('two records of one shown millisecond are listed by id, even when the later id was written by the transaction begun first', async () => {
    const own = await seedTenant(app.pool);
    const first = await app.pool.connect();
    const second = await app.pool.connect();
    try {
      // Two transactions whose now() falls in one millisecond at different microseconds (retried until so).
      const millisecond = `to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS')`;
      let begun = false;
      for (let attempt = 0; attempt < 200 && !begun; attempt++) {
        const a = (await first.query(`BEGIN; SELECT ${millisecond} AS ms, now()::text AS at`) as unknown as Array<{ rows: Array<{ ms: string; at: string }> }>)[1].rows[0];
        const b = (await second.query(`BEGIN; SELECT ${millisecond} AS ms, now()::text AS at`) as unknown as Array<{ rows: Array<{ ms: string; at: string }> }>)[1].rows[0];
        begun = a.ms === b.ms && a.at !== b.at;
        if (!begun) await Promise.all([first.query('ROLLBACK'), second.query('ROLLBACK')]);
      }
      assert.ok(begun, 'two transactions begun in one millisecond');
      // The one begun second writes the smaller id; the one begun first, the larger.
      const [smaller, larger] = [objectId(), objectId()];
      await second.query(`INSERT INTO customers (id, company_id, name) VALUES ($1, $2, 'Segunda transacción')`, [smaller, own.companyId]);
      await first.query(`INSERT INTO customers (id, company_id, name) VALUES ($1, $2, 'Primera transacción')`, [larger, own.companyId]);
      await Promise.all([first.query('COMMIT'), second.query('COMMIT')]);
      const listed = (await client(app.baseUrl, own.key).get('/customers')).body.data as Array<{ id: string; created_at: string }>;
      assert.equal(listed[0].created_at, listed[1].created_at, 'one shown millisecond');
      assert.deepEqual(listed.map((c) => c.id), [larger, smaller], 'ties broken by id descending');
    } finally {
      first.release();
      second.release();
    }
  });

  test('limit above 100 is silently cut to 100; limit 0 or garbage is a 400', async () => {
    const res = await api.get('/customers?limit=500');
    assert.equal(res.body.meta.limit, 100);
    assert.equal(res.body.data.length, 100);
    // Past Number.MAX_SAFE_INTEGER too: still "larger", still cut.
    for (const huge of ['9007199254740992', '99999999999999999999', '9'.repeat(400)]) {
      const r = await api.get(`/customers?limit=${huge}`);
      assert.equal(r.status, 200, huge);
      assert.equal(r.body.meta.limit, 100);
    }
    for (const bad of ['0', '-1', 'abc', '1.5', '0x10', '1e2', '0b11', '%205', '+5']) {
      const r = await api.get(`/customers?limit=${bad}`);
      assert.equal(r.status, 400, bad);
      assert.equal(r.body.error, 'invalid_parameter');
      assert.deepEqual(Object.keys(r.body).sort(), ['error', 'message'], 'exactly {error, message}');
      assert.equal(r.body.message, "El parámetro limit no es válido: debe ser un entero de 1 en adelante, solo dígitos", bad);
    }
    // Sent twice: 400 saying so, not blaming the values.
    for (const twice of ['limit=1&limit=3', 'include_total=true&include_total=false']) {
      const r = await api.get(`/customers?${twice}`);
      assert.deepEqual([r.status, r.body.error], [400, 'invalid_parameter'], twice);
      assert.equal(r.body.message, `El parámetro ${twice.split('=')[0]} aparece más de una vez: envíalo una sola vez.`, `${twice}: a one-value parameter is not told to send a comma list`);
    }
  });

  test('starting_after walks the whole collection without gaps or repeats', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    for (;;) {
      const res: any = await api.get(`/customers?limit=40${cursor ? `&starting_after=${cursor}` : ''}`);
      seen.push(...res.body.data.map((c: any) => c.id));
      if (!res.body.meta.has_more) break;
      cursor = res.body.meta.next_cursor;
    }
    assert.deepEqual(seen, ordered);
  });

  test('ending_before returns the newer records just before the cursor, in list order', async () => {
    const res = await api.get(`/customers?limit=10&ending_before=${ordered[50]}`);
    assert.deepEqual(res.body.data.map((c: any) => c.id), ordered.slice(40, 50));
    assert.equal(res.body.meta.has_more, true);
    const top = await api.get(`/customers?limit=10&ending_before=${ordered[5]}`);
    assert.deepEqual(top.body.data.map((c: any) => c.id), ordered.slice(0, 5));
    assert.equal(top.body.meta.has_more, false);
  });

  test('precedence: ending_before, then starting_after, then page', async () => {
    const both = await api.get(`/customers?limit=5&ending_before=${ordered[20]}&starting_after=${ordered[2]}&page=3`);
    assert.deepEqual(both.body.data.map((c: any) => c.id), ordered.slice(15, 20));
    assert.equal(both.body.meta.page, undefined);
    const after = await api.get(`/customers?limit=5&starting_after=${ordered[2]}&page=3`);
    assert.deepEqual(after.body.data.map((c: any) => c.id), ordered.slice(3, 8));
  });

  test('page is a legacy offset, echoed in meta; above 200 is 400 offset_too_deep', async () => {
    const res = await api.get('/customers?limit=10&page=3');
    assert.deepEqual(res.body.data.map((c: any) => c.id), ordered.slice(20, 30));
    assert.equal(res.body.meta.page, 3);
    assert.equal((await api.get('/customers?page=200')).status, 200);
    const deep = await api.get('/customers?page=201');
    assert.equal(deep.status, 400);
    assert.equal(deep.body.error, 'offset_too_deep');
    for (const huge of ['9007199254740992', '99999999999999999999', '9'.repeat(400)]) {
      const r = await api.get(`/customers?page=${huge}`);
      assert.equal(r.status, 400, huge);
      assert.equal(r.body.error, 'offset_too_deep');
    }
    // A cursor takes precedence over page, so an ignored page cannot be too deep.
    const withCursor = await api.get(`/customers?limit=10&starting_after=${ordered[9]}&page=500`);
    assert.equal(withCursor.status, 200);
    assert.deepEqual(withCursor.body.data.map((c: any) => c.id), ordered.slice(10, 20));
    assert.equal(withCursor.body.meta.page, undefined);
  });

  test('an empty page has null cursors', async () => {
    const res = await api.get(`/customers?starting_after=${ordered.at(-1)}`);
    assert.deepEqual(res.body, { data: [], meta: { limit: 25, has_more: false, next_cursor: null, previous_cursor: null } });
  });

  test('a malformed cursor is 400 invalid_id; an unknown or foreign cursor is 400 invalid_cursor', async () => {
    const bad = await api.get('/customers?starting_after=nope');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error, 'invalid_id');
    const unknown = await api.get(`/customers?ending_before=${objectId()}`);
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error, 'invalid_cursor');
    const { rows } = await app.pool.query(`SELECT id FROM customers WHERE name = 'Ajeno'`);
    const foreign = await api.get(`/customers?starting_after=${rows[0].id}`);
    assert.equal(foreign.body.error, 'invalid_cursor');
  });

  test('include_total counts the whole company collection ignoring filters, memoized 60 s', async () => {
    const res = await api.get('/customers?include_total=true&q=Cliente%2012&limit=10');
    assert.equal(res.body.meta.total, 130);
    assert.equal(res.body.meta.total_pages, 13);
    await api.post('/customers', { data: { name: 'Nuevo' } });
    const again = await api.get('/customers?include_total=true');
    assert.equal(again.body.meta.total, 130, 'memoized for 60 s');
    // Never below what the answer itself shows: the 131st row on page 2 of 100.
    const beyond = await api.get('/customers?include_total=true&limit=100&page=2');
    assert.equal(beyond.body.data.length, 31);
    assert.deepEqual([beyond.body.meta.total, beyond.body.meta.total_pages], [131, 2]);
    // A page past the end shows nothing: the memoized total stands.
    const past = await api.get('/customers?include_total=true&limit=100&page=200');
    assert.deepEqual([past.body.data.length, past.body.meta.total], [0, 130]);
    await app.pool.query(`DELETE FROM customers WHERE name = 'Nuevo'`);
  });

  test('include_filtered_total counts after the search; capped at 100 with text search', async () => {
    const res = await api.get('/customers?include_filtered_total=true&q=Cliente%2012&limit=2');
    // "Cliente 12", "Cliente 120".."Cliente 129"
    assert.equal(res.body.meta.filtered_total, 11);
    assert.equal(res.body.meta.filtered_total_pages, 6);
    assert.equal(res.body.meta.filtered_total_capped, false);
    assert.equal(res.body.meta.total, undefined);
    const all = await api.get('/customers?include_filtered_total=true&q=Cliente');
    assert.equal(all.body.meta.filtered_total, 100);
    assert.equal(all.body.meta.filtered_total_capped, true);
    const noSearch = await api.get('/customers?include_filtered_total=true');
    assert.equal(noSearch.body.meta.filtered_total, 130);
    assert.equal(noSearch.body.meta.filtered_total_capped, false);
  });

  test('include_filtered_total without a text search is capped at 10,000 with filtered_total_capped', async () => {
    const big = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    await app.pool.query(
      `INSERT INTO customers (id, company_id, name)
       SELECT 'fe' || lpad(to_hex(i), 22, '0'), $1, 'Masivo ' || i FROM generate_series(1, 10001) i`,
      [big.companyId],
    );
    const res = await client(app.baseUrl, big.key).get('/customers?include_filtered_total=true&limit=100');
    assert.equal(res.body.meta.filtered_total, 10_000);
    assert.equal(res.body.meta.filtered_total_pages, 100);
    assert.equal(res.body.meta.filtered_total_capped, true);
  });

  test('search treats % and _ literally', async () => {
    const res = await api.get('/customers?q=%25');
    assert.equal(res.body.data.length, 0);
  });
});
