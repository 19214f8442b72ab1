// Money through the API: accounts and balances, incomes and expenses with
// payments, the contract's metadata rules and external_ref, sales (VAT per
// line, payments, refunds, statuses), closed months, recurring transactions
// and the three reports on a small hand-checked ledger. Random ledgers
// against an independent computation: test/money.reports.property.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateDue, occurrenceOn, OCCURRENCES_PER_TRANSACTION } from '../db/money/recurring.ts';
import { catchUp, recurringTransactions } from '../worker/jobs/recurring-transactions.ts';
import { apiRoutes } from '../api/routes/index.ts';
import { RECURRING } from '../db/queues.ts';
import { transaction } from '../db/pool.ts';
import { issueKey } from '../api/admin/keys.ts';
import { objectId } from '../lib/objectid.ts';
import { startWorker, type Worker } from '../worker/worker.ts';
import { client, request, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { assertOneLineError, json, wsctl } from './helpers/cli.ts';
import { waitFor } from './helpers/wait.ts';

describe('money', () => {
  let app: TestApp;
  let tenant: Tenant;
  let api: ReturnType<typeof client>;
  let worker: Worker;

  const newTenant = async () => {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    return { t, api: client(app.baseUrl, t.key) };
  };
  const account = async (a: ReturnType<typeof client>, over: Record<string, unknown> = {}) => {
    const res = await a.post('/accounts', { data: { name: 'Banco', kind: 'bank', currency: 'mxn', ...over } });
    assert.equal(res.status, 201, res.text);
    return res.body.data;
  };
  const events = async (companyId: string, name: string) =>
    (await app.pool.query(`SELECT data FROM events WHERE company_id = $1 AND name = $2 ORDER BY created_at, id`, [companyId, name])).rows.map((r) => r.data);

  before(async () => {
    app = await startTestApp();
    ({ t: tenant, api } = await newTenant());
    worker = await startWorker(app.config, app.pool, app.databaseUrl, { boss: { supervise: false, schedule: false } });
  });
  after(async () => {
    await worker.stop();
    await app.close();
  });

  test('list windows take days as the calendar and bookings lists do: a day is read in the company zone, `to` includes it whole', async () => {
    const { api } = await newTenant(); // America/Mexico_City: UTC−6 in March
    const a = await account(api);
    // The last minute of 9 March there, the first and last of the 10th, the first of the 11th.
    const instants = ['2026-03-10T05:59:00Z', '2026-03-10T06:00:00Z', '2026-03-11T05:59:00Z', '2026-03-11T06:00:00Z'];
    const made: Record<string, string[]> = { incomes: [], expenses: [], sales: [] };
    for (const at of instants) {
      for (const path of ['incomes', 'expenses']) {
        const res = await api.post(`/${path}`, { data: { account_id: a.id, amount_cents: 100, occurred_at: at } });
        assert.equal(res.status, 201, res.text);
        made[path].push(res.body.data.id);
      }
      const sale = await api.post('/sales', { data: { currency: 'mxn', occurred_at: at, line_items: [{ description: 'X', quantity: 1, unit_price_cents: 100, vat_rate: 16 }] } });
      assert.equal(sale.status, 201, sale.text);
      made.sales.push(sale.body.data.id);
    }
    const ids = async (query: string) => ((await api.get(query)).body.data ?? []).map((r: any) => r.id).sort();
    for (const path of ['incomes', 'expenses', 'sales']) {
      const tenth = [made[path][1], made[path][2]].sort();
      assert.deepEqual(await ids(`/${path}?from=2026-03-10&to=2026-03-10`), tenth, `${path}: the 10th whole`);
      // The same window as instants; a day and an instant mix.
      assert.deepEqual(await ids(`/${path}?from=2026-03-10T06:00:00Z&to=2026-03-11T06:00:00Z`), tenth, path);
      assert.deepEqual(await ids(`/${path}?from=2026-03-10&to=2026-03-11T05:59:00Z`), [made[path][1]], path);
      assert.deepEqual(await ids(`/${path}?from=2026-03-11`), [made[path][3]], `${path}: from the 11th's midnight`);
      assert.deepEqual(await ids(`/${path}?to=2026-03-09`), [made[path][0]], `${path}: up to the end of the 9th`);
      assert.equal((await api.get(`/${path}?from=2026-02-30`)).body.error, 'invalid_parameter', `${path}: no such day`);
    }
  });

  test('accounts: balance from opening, incomes, expenses; totals per currency in meta; in use → 409 account_in_use, archive instead', async () => {
    const { t, api } = await newTenant();
    const bank = await account(api, { opening_balance_cents: 100_000, opening_on: '2026-01-01' });
    const usd = await account(api, { name: 'Dólares', currency: 'usd', opening_balance_cents: 5_000, opening_on: '2026-01-01' });
    assert.equal(bank.balance_cents, 100_000);
    await api.post('/incomes', { data: { account_id: bank.id, amount_cents: 30_000, occurred_at: '2026-03-01T17:00:00Z' } });
    await api.post('/expenses', { data: { account_id: bank.id, amount_cents: 12_500, occurred_at: '2026-03-02T17:00:00Z', supplier_name: 'Papelería' } });
    // Pending ones do not move the balance until paid.
    await api.post('/expenses', { data: { account_id: bank.id, amount_cents: 999, occurred_at: '2026-03-03T17:00:00Z', status: 'pending' } });
    assert.equal((await api.get(`/accounts/${bank.id}`)).body.data.balance_cents, 117_500);
    const list = await api.get('/accounts');
    assert.deepEqual(list.body.meta.totals, { mxn: { balance_cents: 117_500, accounts: 1 }, usd: { balance_cents: 5_000, accounts: 1 } });
    // A new opening balance shows in the PATCH's own answer, as in the next read.
    const reopened = await api.patch(`/accounts/${bank.id}`, { data: { opening_balance_cents: 101_000 } });
    assert.equal(reopened.status, 200, reopened.text);
    assert.equal(reopened.body.data.balance_cents, 118_500);
    assert.equal((await api.get(`/accounts/${bank.id}`)).body.data.balance_cents, 118_500);
    const refused = await api.delete(`/accounts/${bank.id}`);
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error, 'account_in_use');
    assert.equal((await api.patch(`/accounts/${bank.id}`, { data: { archived: true } })).body.data.archived, true);
    const intoArchived = await api.post('/incomes', { data: { account_id: bank.id, amount_cents: 1, occurred_at: '2026-03-04T17:00:00Z' } });
    assert.equal(intoArchived.status, 422);
    assert.equal((await api.delete(`/accounts/${usd.id}`)).status, 204);
    // The currency never changes.
    assert.equal((await api.patch(`/accounts/${bank.id}`, { data: { currency: 'usd' } })).status, 422);
    void t;
  });

  test('include_total and cursors keep to each collection: incomes and expenses share a table, not a total', async () => {
    const { api } = await newTenant();
    const bank = await account(api);
    for (let i = 0; i < 3; i++) await api.post('/incomes', { data: { account_id: bank.id, amount_cents: 100 + i, occurred_at: '2026-03-01T17:00:00Z' } });
    const expense = (await api.post('/expenses', { data: { account_id: bank.id, amount_cents: 50, occurred_at: '2026-03-02T17:00:00Z' } })).body.data;
    // An expense's id is no cursor of the incomes (it was taken as a position in the shared table).
    for (const cursor of ['starting_after', 'ending_before']) {
      const res = await api.get(`/incomes?${cursor}=${expense.id}`);
      assert.equal(res.status, 400, cursor);
      assert.equal(res.body.error, 'invalid_cursor', cursor);
    }
    const firstIncome = (await api.get('/incomes?limit=1')).body;
    assert.equal((await api.get(`/incomes?starting_after=${firstIncome.meta.next_cursor}`)).body.data.length, 2);
    const incomes = (await api.get('/incomes?include_total=true&limit=1')).body.meta;
    assert.equal(incomes.total, 3);
    assert.equal(incomes.total_pages, 3);
    const expenses = (await api.get('/expenses?include_total=true&include_filtered_total=true&status=pending')).body.meta;
    assert.equal(expenses.total, 1);
    assert.equal(expenses.filtered_total, 0);
  });

  test('the expenses\' supplier search is the list\'s text search: q, search or supplier; trimmed, blanks are none, accents ignored, the filtered total capped at 100', async () => {
    const { api } = await newTenant();
    const bank = await account(api);
    for (let i = 0; i < 102; i++) {
      const res = await api.post('/expenses', { data: { account_id: bank.id, amount_cents: 100 + i, occurred_at: '2026-03-01T17:00:00Z', supplier_name: 'Papelería Núñez' } });
      assert.equal(res.status, 201, res.text);
    }
    await api.post('/expenses', { data: { account_id: bank.id, amount_cents: 70, occurred_at: '2026-03-02T17:00:00Z', supplier_name: 'Gasolinera', supplier_tax_id: 'GAS010101AB1' } });
    const ids = async (query: string) => {
      const res = await api.get(`/expenses?limit=100&${query}`);
      assert.equal(res.status, 200, `${query}: ${res.text}`);
      return res.body;
    };
    for (const query of ['q=gasolinera', 'search=GASOLINERA', 'supplier=gas010101', 'q=%20gasolinera%20', 'q=gasolinera&supplier=papeleria']) {
      assert.deepEqual((await ids(query)).data.map((e: { supplier_name: string }) => e.supplier_name), ['Gasolinera'], query);
    }
    // Blanks are no search: the whole list.
    assert.equal((await ids('supplier=%20%20&include_filtered_total=true')).meta.filtered_total, 103);
    // A text search's filtered total is capped at 100 (the contract), as on every list.
    const searched = (await ids('q=papeleria%20nunez&include_filtered_total=true')).meta;
    assert.deepEqual([searched.filtered_total, searched.filtered_total_capped], [100, true]);
  });

  test('money values: integer cents only, at most 2^53 − 1; lowercase ISO 4217 currencies', async () => {
    const a = await account(api);
    for (const amount_cents of [10.5, 0, -5, 9007199254740992, '100']) {
      const res = await api.post('/incomes', { data: { account_id: a.id, amount_cents, occurred_at: '2026-03-01T17:00:00Z' } });
      assert.equal(res.status, 422, String(amount_cents));
    }
    // One message, the one that fits: a whole number past 2^53 − 1 is not told it has decimals.
    const messages = async (amount_cents: number) =>
      (await api.post('/incomes', { data: { account_id: a.id, amount_cents, occurred_at: '2026-03-01T17:00:00Z' } })).body.errors.amount_cents;
    assert.deepEqual(await messages(9007199254740992), ['pasa de 2^53 − 1']);
    assert.deepEqual(await messages(10.5), ['centavos enteros, sin decimales']);
    for (const currency of ['MXN', 'xyz', 'pesos']) assert.equal((await api.post('/accounts', { data: { name: 'X', kind: 'cash', currency } })).status, 422, currency);
    assert.equal((await api.post('/incomes', { data: { account_id: a.id, amount_cents: Number.MAX_SAFE_INTEGER, occurred_at: '2026-03-01T17:00:00Z' } })).status, 201);
  });

  test('totals past 2^63 − 1: the accounts list and the reports still answer; a write whose day total would overflow is 422, nothing stored', async () => {
    const { t, api: own } = await newTenant();
    const a = await account(own);
    const max = Number.MAX_SAFE_INTEGER;
    for (const occurred_at of ['2026-03-01T17:00:00Z', '2026-03-02T17:00:00Z']) {
      assert.equal((await own.post('/incomes', { data: { account_id: a.id, amount_cents: max, occurred_at } })).status, 201);
    }
    // Two days, each near bigint's maximum (what ~1,000 maximal amounts a day come to).
    await app.pool.query(`UPDATE ledger_daily SET amount_cents = 9223372036854775000 WHERE company_id = $1 AND key = $2 AND line = 'cash_in'`, [t.companyId, a.id]);
    const list = await own.get('/accounts');
    assert.equal(list.status, 200, list.text);
    assert.ok(list.body.meta.totals.mxn.balance_cents > 1.8e19);
    for (const path of ['/reports/balance-sheet', '/reports/income-statement?start_on=2026-03-01&end_on=2026-03-31', '/reports/cash-flow?start_on=2026-03-01&end_on=2026-03-31']) {
      assert.equal((await own.get(path)).status, 200, path);
    }
    const over = await own.post('/incomes', { data: { account_id: a.id, amount_cents: max, occurred_at: '2026-03-01T18:00:00Z', description: 'desborde' } });
    assert.equal(over.status, 422, over.text);
    assert.equal(over.body.error, 'validation_failed');
    const { rows } = await app.pool.query(`SELECT count(*)::int AS n FROM movements WHERE company_id = $1 AND description = 'desborde'`, [t.companyId]);
    assert.equal(rows[0].n, 0);
  });

  test('a write that changes nothing ({data: {}}, or the values as stored) writes nothing: updated_at stays on accounts, incomes, expenses, sales and recurring transactions', async () => {
    const { api } = await newTenant();
    const a = await account(api, { name: 'Caja' });
    const made = async (path: string, data: Record<string, unknown>) => {
      const res = await api.post(path, { data });
      assert.equal(res.status, 201, res.text);
      return res.body.data;
    };
    const records: Array<[string, any, Record<string, unknown>, Record<string, unknown>]> = [
      ['/accounts', a, { name: 'Caja' }, { name: 'Caja chica' }],
      ['/incomes', await made('/incomes', { account_id: a.id, amount_cents: 500, occurred_at: '2099-01-10T12:00:00Z', description: 'Cobro' }), { amount_cents: 500, description: 'Cobro' }, { amount_cents: 600 }],
      ['/expenses', await made('/expenses', { account_id: a.id, amount_cents: 300, occurred_at: '2099-01-10T12:00:00Z', description: 'Papel' }), { amount_cents: 300 }, { description: 'Tinta' }],
      ['/sales', await made('/sales', { currency: 'mxn', occurred_at: '2099-01-10T12:00:00Z', description: 'Pedido', line_items: [{ description: 'X', quantity: 1, unit_price_cents: 100, vat_rate: 16 }] }), { description: 'Pedido' }, { description: 'Pedido 2' }],
      ['/recurring-transactions', await made('/recurring-transactions', { type: 'expense', account_id: a.id, amount_cents: 900, frequency: 'monthly', starts_on: '2099-01-15' }), { amount_cents: 900 }, { amount_cents: 950 }],
    ];
    for (const [path, record, same, change] of records) {
      for (const body of [{}, same]) {
        const res = await api.patch(`${path}/${record.id}`, { data: body });
        assert.equal(res.status, 200, `${path} ${JSON.stringify(body)}: ${res.text}`);
        assert.equal(res.body.data.updated_at, record.updated_at, `${path} ${JSON.stringify(body)} changed nothing`);
      }
      const changed = await api.patch(`${path}/${record.id}`, { data: change });
      assert.equal(changed.status, 200, changed.text);
      assert.ok(changed.body.data.updated_at > record.updated_at, `${path}: a change moves updated_at`);
    }
  });

  test('a sale\'s payment keeps its amount and date: changing either is 422 naming it; the values as stored, sent back, write nothing', async () => {
    const { api } = await newTenant();
    const a = await account(api);
    const s = (await api.post('/sales', { data: { currency: 'mxn', occurred_at: '2099-01-10T12:00:00Z', line_items: [{ description: 'X', quantity: 1, unit_price_cents: 1000, vat_rate: 16 }] } })).body.data;
    const paid = await api.post(`/sales/${s.id}/payments`, { data: { account_id: a.id, amount_cents: 500, paid_at: '2099-01-11T12:00:00Z' } });
    assert.equal(paid.status, 201, paid.text);
    const incomeId = paid.body.data.payments[0].income_id;
    const income = (await api.get(`/incomes/${incomeId}`)).body.data;
    const moved = await api.patch(`/incomes/${incomeId}`, { data: { amount_cents: 400 } });
    assert.deepEqual([moved.status, Object.keys(moved.body.errors ?? {})], [422, ['amount_cents']], moved.text);
    const same = await api.patch(`/incomes/${incomeId}`, { data: { amount_cents: income.amount_cents, occurred_at: income.occurred_at } });
    assert.deepEqual([same.status, same.body.data?.updated_at], [200, income.updated_at], same.text);
  });

  test('a supplier\'s supplier_tax_id is an RFC as a customer\'s tax_id is: stored in capitals, a malformed or blank one is 422 naming it, null clears it', async () => {
    const { api } = await newTenant();
    const a = await account(api);
    const expense = (supplier_tax_id: unknown) => api.post('/expenses', { data: { account_id: a.id, amount_cents: 100, occurred_at: '2099-01-10T12:00:00Z', supplier_tax_id } });
    const lower = await expense(' gode561231gr8 ');
    assert.equal(lower.status, 201, lower.text);
    assert.equal(lower.body.data.supplier_tax_id, 'GODE561231GR8', 'one supplier, one spelling');
    assert.equal((await expense('XEXX010101000')).status, 201, 'the generic RFC of a supplier abroad');
    for (const bad of ['ABC680524P7', 'GODE561231GR8X', 'GODE561331GR8', '']) {
      const res = await expense(bad);
      assert.deepEqual([res.status, Object.keys(res.body.errors ?? {})], [422, ['supplier_tax_id']], `${JSON.stringify(bad)}: ${res.text}`);
    }
    const cleared = await api.patch(`/expenses/${lower.body.data.id}`, { data: { supplier_tax_id: null } });
    assert.equal(cleared.body.data.supplier_tax_id, null);
    const series = await api.post('/recurring-transactions', { data: { type: 'expense', account_id: a.id, amount_cents: 100, frequency: 'monthly', starts_on: '2099-01-15', supplier_tax_id: 'abc' } });
    assert.deepEqual([series.status, Object.keys(series.body.errors ?? {})], [422, ['supplier_tax_id']], series.text);
  });

  test('an income registered as paid: income.created says paid (the body carries the fact), then its income.paid', async () => {
    const { t, api } = await newTenant();
    const a = await account(api);
    const income = (await api.post('/incomes', { data: { account_id: a.id, amount_cents: 777, occurred_at: '2026-04-01T17:00:00Z' } })).body.data;
    assert.equal(income.status, 'paid');
    const [created] = await events(t.companyId, 'income.created');
    assert.equal(created.status, 'paid');
    assert.equal(created.paid_cents, 777);
    const [paid] = await events(t.companyId, 'income.paid');
    assert.equal(paid.payment_cents, 777);
    // On credit it says so.
    await api.post('/incomes', { data: { account_id: a.id, amount_cents: 5, occurred_at: '2026-04-01T17:00:00Z', status: 'pending' } });
    const pending = (await events(t.companyId, 'income.created'))[1];
    assert.deepEqual([pending.status, pending.paid_cents], ['pending', 0]);
  });

  test('a pending income paid in parts: income.created once, income.paid per payment, status paid at the end; overpaying is 422', async () => {
    const { t, api } = await newTenant();
    const a = await account(api);
    const income = (await api.post('/incomes', { data: { account_id: a.id, amount_cents: 10_000, occurred_at: '2026-04-01T17:00:00Z', status: 'pending', due_on: '2026-04-30', metadata: { pedido: 'A-1' } } })).body.data;
    assert.equal(income.status, 'pending');
    assert.equal(income.due_on, '2026-04-30');
    const first = await api.post(`/incomes/${income.id}/payments`, { data: { amount_cents: 4_000, paid_at: '2026-04-05T17:00:00Z' } });
    assert.equal(first.status, 201, first.text);
    assert.equal(first.body.data.status, 'pending');
    assert.equal(first.body.data.paid_cents, 4_000);
    const over = await api.post(`/incomes/${income.id}/payments`, { data: { amount_cents: 6_001 } });
    assert.equal(over.status, 422);
    const last = await api.post(`/incomes/${income.id}/payments`, { data: { amount_cents: 6_000, paid_at: '2026-04-10T17:00:00Z' } });
    assert.equal(last.body.data.status, 'paid');
    assert.equal(last.body.data.paid_at, '2026-04-10T17:00:00.000Z');
    assert.equal(last.body.data.payments.length, 2);
    assert.equal((await events(t.companyId, 'income.created')).length, 1);
    const paid = await events(t.companyId, 'income.paid');
    assert.deepEqual(paid.map((d) => [d.payment_cents, d.status]), [[4_000, 'pending'], [6_000, 'paid']]);
    assert.deepEqual(Object.keys(paid[0]).sort().filter((k) => ['object', 'id', 'status', 'amount_cents', 'currency', 'occurred_at', 'metadata'].includes(k)).length, 7);
    assert.deepEqual(paid[0].metadata, { pedido: 'A-1' });
    // Deleting reverts the balance and sends income.deleted.
    assert.equal((await api.get(`/accounts/${a.id}`)).body.data.balance_cents, 10_000);
    assert.equal((await api.delete(`/incomes/${income.id}`)).status, 204);
    assert.equal((await api.get(`/accounts/${a.id}`)).body.data.balance_cents, 0);
    assert.equal((await events(t.companyId, 'income.deleted')).length, 1);
  });

  test('PATCH amount_cents moves the status with it: lowered to what was paid it is paid (paid_at of the last payment), raised above it pending again', async () => {
    const { api: own } = await newTenant();
    const a = await account(own);
    const e = (await own.post('/expenses', { data: { account_id: a.id, amount_cents: 1000, occurred_at: '2026-04-01T17:00:00Z', status: 'pending' } })).body.data;
    const pay = await own.post(`/expenses/${e.id}/payments`, { data: { account_id: a.id, amount_cents: 400, paid_at: '2026-04-02T17:00:00Z' } });
    assert.equal(pay.status, 201, pay.text);
    const lowered = await own.patch(`/expenses/${e.id}`, { data: { amount_cents: 400 } });
    assert.equal(lowered.status, 200, lowered.text);
    assert.equal(lowered.body.data.status, 'paid');
    assert.equal(lowered.body.data.paid_at, '2026-04-02T17:00:00.000Z');
    const raised = await own.patch(`/expenses/${e.id}`, { data: { amount_cents: 1500 } });
    assert.equal(raised.body.data.status, 'pending');
    assert.equal(raised.body.data.paid_at, null);
    assert.ok((await own.get('/expenses?status=pending')).body.data.some((x: { id: string }) => x.id === e.id));
    assert.equal((await own.post(`/expenses/${e.id}/payments`, { data: { account_id: a.id, amount_cents: 1100, paid_at: '2026-04-03T17:00:00Z' } })).status, 201);
    assert.equal((await own.get(`/expenses/${e.id}`)).body.data.status, 'paid');
  });

  test('metadata: the contract rules give 422 invalid_metadata; external_ref returns the existing record with 200, also under concurrency; taking another one is 409', async () => {
    const a = await account(api);
    const base = { account_id: a.id, amount_cents: 100, occurred_at: '2026-05-01T17:00:00Z' };
    const big = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v']));
    for (const metadata of [big, { ['x'.repeat(41)]: 'v' }, { k: 'v'.repeat(501) }, { k: { nested: true } }, { k: [1] }, { '': 'v' }, [1], 'texto']) {
      const res = await api.post('/incomes', { data: { ...base, metadata } });
      assert.equal(res.status, 422, JSON.stringify(metadata).slice(0, 60));
      assert.equal(res.body.error, 'invalid_metadata');
    }
    // A number JSON reads as Infinity would be stored as the text "Infinity": refused.
    const infinite = await request(app.baseUrl, 'POST', '/incomes', { key: tenant.key, raw: `{"data":${JSON.stringify({ ...base, metadata: { a: 0 } }).replace('"a":0', '"a":1e400')}}` });
    assert.equal(infinite.status, 422, infinite.text);
    assert.equal(infinite.body.error, 'invalid_metadata');
    // An integer past 2^53 has lost digits when JSON reads it (12345678901234567890 -> ...7000): refused, not stored altered.
    const unsafe = await request(app.baseUrl, 'POST', '/incomes', { key: tenant.key, raw: `{"data":${JSON.stringify({ ...base, metadata: { a: 0 } }).replace('"a":0', '"a":12345678901234567890')}}` });
    assert.equal(unsafe.status, 422, unsafe.text);
    assert.equal(unsafe.body.error, 'invalid_metadata');
    const safe = await request(app.baseUrl, 'POST', '/incomes', { key: tenant.key, raw: `{"data":${JSON.stringify({ ...base, metadata: { a: 0 } }).replace('"a":0', '"a":9007199254740991')}}` });
    assert.equal(safe.status, 201, safe.text);
    assert.equal(safe.body.data.metadata.a, '9007199254740991');
    const ok = await api.post('/incomes', { data: { ...base, metadata: { ['x'.repeat(40)]: 'v'.repeat(500), n: 5, b: true } } });
    assert.equal(ok.status, 201, ok.text);
    assert.deepEqual(ok.body.data.metadata.n, '5');
    const results = await Promise.all(Array.from({ length: 10 }, () => api.post('/incomes', { data: { ...base, metadata: { external_ref: 'factura-77' } } })));
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200, 200, 200, 200, 201]);
    assert.equal(new Set(results.map((r) => r.body.data.id)).size, 1);
    const other = (await api.post('/incomes', { data: { ...base, metadata: { external_ref: 'factura-78' } } })).body.data;
    const clash = await api.patch(`/incomes/${other.id}`, { data: { metadata: { external_ref: 'factura-77' } } });
    assert.equal(clash.status, 409);
    assert.equal(clash.body.error, 'duplicate_reference');
    // An expense may reuse an income's external_ref (unique per kind of record).
    assert.equal((await api.post('/expenses', { data: { ...base, metadata: { external_ref: 'factura-77' } } })).status, 201);
    // The 50-key limit holds for what is stored: an update merging new keys into a full set is refused.
    const full = (await api.post('/incomes', { data: { ...base, metadata: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v'])) } })).body.data;
    const over = await api.patch(`/incomes/${full.id}`, { data: { metadata: { extra: 'x' } } });
    assert.equal(over.status, 422, over.text);
    assert.equal(over.body.error, 'invalid_metadata');
    const swap = await api.patch(`/incomes/${full.id}`, { data: { metadata: { k0: null, extra: 'x' } } });
    assert.equal(swap.status, 200, 'removing one and adding one stays at 50');
    assert.equal(Object.keys(swap.body.data.metadata).length, 50);
    // Keys removed count out of the request too: 50 keys set and one removed is 50 stored.
    const fifty = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`n${i}`, 'v']));
    const seeded = (await api.post('/incomes', { data: { ...base, metadata: { seed: '1' } } })).body.data;
    const replaced = await api.patch(`/incomes/${seeded.id}`, { data: { metadata: { seed: null, ...fifty } } });
    assert.equal(replaced.status, 200, replaced.text);
    assert.deepEqual(replaced.body.data.metadata, fifty);
    // Update merges; null removes a key.
    const merged = await api.patch(`/incomes/${other.id}`, { data: { metadata: { extra: 'si', external_ref: null } } });
    assert.deepEqual(merged.body.data.metadata, { extra: 'si' });
  });

  test('external_ref on create answers the existing record only to a key that may read it: without the read scope, 403 insufficient_scope', async () => {
    const { t, api } = await newTenant();
    const a = await account(api);
    const income = (await api.post('/incomes', { data: { account_id: a.id, amount_cents: 4_200, occurred_at: '2026-05-01T17:00:00Z', description: 'Privado', metadata: { external_ref: 'INC-1' } } })).body.data;
    const sale = (await api.post('/sales', { data: { currency: 'mxn', occurred_at: '2026-06-01T17:00:00Z', line_items: [{ description: 'Secreto', quantity: 1, unit_price_cents: 9_900, vat_rate: 16 }], metadata: { external_ref: 'S-1' } } })).body.data;
    const recurring = (await api.post('/recurring-transactions', { data: { type: 'expense', account_id: a.id, amount_cents: 1_000, frequency: 'monthly', starts_on: '2099-01-01', metadata: { external_ref: 'R-1' } } })).body.data;
    const { secret: key } = await issueKey(app.pool, { companyId: t.companyId, name: 'solo crear', scopes: ['create-incomes', 'create-sales', 'create-recurring_transactions'] });
    const writer = client(app.baseUrl, key);
    const cases = [
      ['/incomes', { account_id: a.id, amount_cents: 1, occurred_at: '2026-05-02T17:00:00Z', metadata: { external_ref: 'INC-1' } }, 'read-incomes', income.id],
      ['/sales', { currency: 'mxn', occurred_at: '2026-06-02T17:00:00Z', line_items: [{ description: 'x', quantity: 1, unit_price_cents: 1, vat_rate: 16 }], metadata: { external_ref: 'S-1' } }, 'read-sales', sale.id],
      ['/recurring-transactions', { type: 'expense', account_id: a.id, amount_cents: 1, frequency: 'daily', starts_on: '2099-06-01', metadata: { external_ref: 'R-1' } }, 'read-recurring_transactions', recurring.id],
    ] as const;
    for (const [path, data, scope, id] of cases) {
      const res = await writer.post(path, { data });
      assert.equal(res.status, 403, `${path}: ${res.text}`);
      assert.equal(res.body.error, 'insufficient_scope');
      assert.equal(res.body.required, scope);
      assert.doesNotMatch(res.text, new RegExp(`${id}|Privado|Secreto`), 'nothing of the record');
      // A new reference is still created, and the owner's key still gets the existing record.
      assert.equal((await writer.post(path, { data: { ...data, metadata: { external_ref: `${scope}-nuevo` } } })).status, 201, path);
      const same = await api.post(path, { data });
      assert.deepEqual([same.status, same.body.data.id], [200, id], path);
    }
  });

  test('sales: VAT per line rounded half away from zero, prices with VAT included, statuses through payments and refunds; sale.paid exactly once', async () => {
    const { t, api } = await newTenant();
    const a = await account(api);
    const sale = await api.post('/sales', {
      data: {
        currency: 'mxn',
        occurred_at: '2026-06-01T17:00:00Z',
        line_items: [
          { description: 'Tornillos', quantity: 3, unit_price_cents: 333, vat_rate: 16 },
          { description: 'Flete', quantity: 1.5, unit_price_cents: 999, vat_rate: 8, discount_cents: 0 },
          { description: 'Libro', quantity: 1, unit_price_cents: 25_000, vat_exempt: true },
          { description: 'Exportación', quantity: 1, unit_price_cents: 1_000, vat_rate: 0 },
        ],
        metadata: { external_ref: 'venta-1' },
      },
    });
    assert.equal(sale.status, 201, sale.text);
    const s = sale.body.data;
    // 999 + 160 (159.84); 1499 (1498.5) + 120 (119.92); 25000 exempt; 1000 at 0 %.
    assert.deepEqual(s.line_items.map((l: any) => [l.subtotal_cents, l.tax_cents, l.total_cents]), [[999, 160, 1159], [1499, 120, 1619], [25_000, 0, 25_000], [1_000, 0, 1_000]]);
    assert.equal(s.subtotal_cents, 28_498);
    assert.equal(s.tax_cents, 280);
    assert.equal(s.total_cents, 28_778);
    assert.equal(s.status, 'unpaid');
    assert.equal(s.payment_terms, 'immediate');
    const included = await api.post('/sales', { data: { currency: 'mxn', prices_include_vat: true, line_items: [{ description: 'X', quantity: 1, unit_price_cents: 116, vat_rate: 16 }] } });
    assert.deepEqual([included.body.data.subtotal_cents, included.body.data.tax_cents, included.body.data.total_cents], [100, 16, 116]);

    const pay = (amount_cents: number) => api.post(`/sales/${s.id}/payments`, { data: { account_id: a.id, amount_cents, paid_at: '2026-06-02T17:00:00Z' } });
    assert.equal((await pay(10_000)).body.data.status, 'partially_paid');
    const overpay = await pay(18_779);
    assert.equal(overpay.status, 422);
    const settled = await pay(18_778);
    assert.equal(settled.body.data.status, 'paid');
    assert.equal(settled.body.data.amount_due_cents, 0);
    assert.equal(settled.body.data.payments.length, 2);
    assert.equal((await pay(1)).status, 422);
    // A payment dated before the sale is refused.
    const early = await api.post(`/sales/${s.id}/payments`, { data: { account_id: a.id, amount_cents: 1, paid_at: '2026-05-31T17:00:00Z' } });
    assert.equal(early.status, 422);
    // Three income.paid for two payments? No: one per payment, and one sale.paid.
    assert.equal((await events(t.companyId, 'income.paid')).length, 2);
    assert.equal((await events(t.companyId, 'sale.paid')).length, 1);
    const salePaid = (await events(t.companyId, 'sale.paid'))[0];
    assert.deepEqual([salePaid.object, salePaid.id, salePaid.status, salePaid.amount_cents, salePaid.currency, salePaid.metadata], ['sale', s.id, 'paid', 28_778, 'mxn', { external_ref: 'venta-1' }]);

    const refund = await api.post(`/sales/${s.id}/refunds`, { data: { account_id: a.id, amount_cents: 5_000, reason: 'Devolución parcial' } });
    assert.equal(refund.body.data.status, 'partially_refunded');
    assert.equal((await api.post(`/sales/${s.id}/refunds`, { data: { account_id: a.id, amount_cents: 23_779 } })).status, 422);
    const all = await api.post(`/sales/${s.id}/refunds`, { data: { account_id: a.id, amount_cents: 23_778 } });
    assert.equal(all.body.data.status, 'refunded');
    assert.equal((await events(t.companyId, 'sale.refunded')).length, 2);
    assert.equal((await api.get(`/accounts/${a.id}`)).body.data.balance_cents, 0);
    // An account in another currency cannot take the sale's money.
    const usd = await account(api, { currency: 'usd' });
    const other = (await api.post('/sales', { data: { currency: 'mxn', line_items: [{ description: 'Y', quantity: 1, unit_price_cents: 100 }] } })).body.data;
    assert.equal((await api.post(`/sales/${other.id}/payments`, { data: { account_id: usd.id, amount_cents: 100 } })).status, 422);
    // Deleting a payment's income makes the sale owe it again.
    const paidOnce = (await api.post(`/sales/${other.id}/payments`, { data: { account_id: a.id, amount_cents: 100 } })).body.data;
    assert.equal(paidOnce.status, 'paid');
    assert.equal((await api.delete(`/incomes/${paidOnce.payments[0].income_id}`)).status, 204);
    assert.equal((await api.get(`/sales/${other.id}`)).body.data.status, 'unpaid');
    // A sale of total 0 is settled at its creation: sale.created, then its one sale.paid.
    const free = (await api.post('/sales', { data: { currency: 'mxn', line_items: [{ description: 'Muestra', quantity: 1, unit_price_cents: 0 }] } })).body.data;
    assert.equal(free.status, 'paid');
    assert.deepEqual((await events(t.companyId, 'sale.paid')).filter((e: any) => e.id === free.id).map((e: any) => e.amount_cents), [0]);
    // Recorded in the same millisecond or not, a receiver ordering by created_at sees sale.created first.
    const envelopes = (await app.pool.query(`SELECT payload::json AS p FROM events WHERE data->>'id' = $1`, [free.id])).rows.map((r) => r.p);
    const at = (name: string) => Date.parse(envelopes.find((e) => e.event === name).created_at);
    assert.ok(at('sale.paid') > at('sale.created'), `sale.paid (${at('sale.paid')}) after sale.created (${at('sale.created')})`);
    // A sale is never deleted (docs/money.md): 405 with the methods it has, and the sale stays.
    const removal = await api.delete(`/sales/${free.id}`);
    assert.equal(removal.status, 405);
    assert.equal(removal.body.error, 'method_not_allowed');
    assert.deepEqual(removal.headers.get('allow')!.split(/,\s*/).filter((m) => m !== 'HEAD' && m !== 'OPTIONS').sort(), ['GET', 'PATCH']);
    assert.equal((await api.get(`/sales/${free.id}`)).status, 200);
    const freeRow = await app.pool.query('SELECT settled_at FROM sales WHERE id = $1', [free.id]);
    assert.ok(freeRow.rows[0].settled_at, 'settled at creation: the once-only guard of sale.paid holds');
  });

  test('sales: a refund is not dated before the first payment; payment_terms stay fixed while an invoice is live', async () => {
    const { t, api: own } = await newTenant();
    const a = await account(own);
    const sale = (await own.post('/sales', { data: { currency: 'mxn', occurred_at: '2026-06-20T17:00:00Z', line_items: [{ description: 'X', quantity: 1, unit_price_cents: 1000 }] } })).body.data;
    assert.equal((await own.post(`/sales/${sale.id}/payments`, { data: { account_id: a.id, amount_cents: 1000, paid_at: '2026-06-21T17:00:00Z' } })).status, 201);
    const early = await own.post(`/sales/${sale.id}/refunds`, { data: { account_id: a.id, amount_cents: 400, refunded_at: '2026-06-10T17:00:00Z' } });
    assert.equal(early.status, 422, early.text);
    assert.ok(early.body.errors.refunded_at);
    assert.equal((await own.post(`/sales/${sale.id}/refunds`, { data: { account_id: a.id, amount_cents: 400, refunded_at: '2026-06-22T17:00:00Z' } })).status, 201);
    // A live invoice (the row a stamping leaves: test/invoices.test.ts stamps for real) fixes the terms;
    // the same terms, or other fields, still pass.
    await app.pool.query(
      `INSERT INTO invoices (id, company_id, sale_id, status, provider, payment_method, payment_form, cfdi_use, receiver, currency, total_cents, document)
       VALUES ($3, $1, $2, 'valid', 'development', 'PUE', '01', 'G03', '{}', 'mxn', 1000, '{}')`,
      [t.companyId, sale.id, objectId()],
    );
    const changed = await own.patch(`/sales/${sale.id}`, { data: { payment_terms: 'deferred' } });
    assert.equal(changed.status, 422, changed.text);
    assert.ok(changed.body.errors.payment_terms);
    assert.equal((await own.patch(`/sales/${sale.id}`, { data: { payment_terms: 'immediate', description: 'ok' } })).status, 200);
  });

  test('a payment dated in the future is taken: the sale is paid now (sale.paid now), the account counts it from its date', async () => {
    const { t, api: own } = await newTenant();
    const a = await account(own);
    const sale = (await own.post('/sales', { data: { currency: 'mxn', occurred_at: new Date().toISOString(), line_items: [{ description: 'Posfechado', quantity: 1, unit_price_cents: 1000 }] } })).body.data;
    const nextMonth = new Date(Date.now() + 31 * 86_400_000).toISOString();
    const paid = await own.post(`/sales/${sale.id}/payments`, { data: { account_id: a.id, amount_cents: 1000, paid_at: nextMonth } });
    assert.equal(paid.status, 201, paid.text);
    assert.equal((await own.get(`/sales/${sale.id}`)).body.data.status, 'paid');
    assert.deepEqual((await events(t.companyId, 'sale.paid')).map((e) => e.id), [sale.id]);
    assert.equal((await own.get(`/accounts/${a.id}`)).body.data.balance_cents, 0, 'not in the balance before its day');
  });

  test('sales: deleting a payment may not leave a refund dated before every payment left; a payment\'s date or amount is named as sent', async () => {
    const { api: own } = await newTenant();
    const a = await account(own);
    const sale = (await own.post('/sales', { data: { currency: 'mxn', occurred_at: '2026-11-01T17:00:00Z', line_items: [{ description: 'X', quantity: 1, unit_price_cents: 1000 }] } })).body.data;
    const pay = async (amount_cents: number, paid_at: string) => (await own.post(`/sales/${sale.id}/payments`, { data: { account_id: a.id, amount_cents, paid_at } })).body.data;
    await pay(100, '2026-11-02T17:00:00Z');
    assert.equal((await own.post(`/sales/${sale.id}/refunds`, { data: { account_id: a.id, amount_cents: 50, refunded_at: '2026-11-03T17:00:00Z' } })).status, 201);
    await pay(900, '2026-11-05T17:00:00Z');
    const payments = (await own.get(`/sales/${sale.id}`)).body.data.payments;
    const first = payments.find((p: any) => p.amount_cents === 100);
    const incomeId = first.income_id ?? first.id;
    const refused = await own.delete(`/incomes/${incomeId}`);
    assert.equal(refused.status, 422, refused.text);
    assert.match(refused.body.errors.id[0], /devoluciones al 2026-11-03T17:00:00.000Z que los pagos anteriores a esa fecha no cubrirían/);
    assert.equal((await own.get(`/sales/${sale.id}`)).body.data.paid_cents, 1000, 'nothing changed');
    const dated = await own.patch(`/incomes/${incomeId}`, { data: { occurred_at: '2026-11-04T17:00:00Z' } });
    assert.deepEqual([dated.status, Object.keys(dated.body.errors ?? {})], [422, ['occurred_at']]);
  });

  test('sales: a refund is never more than was paid by its date (nor by a later refund\'s), and deleting a payment keeps that true', async () => {
    const { api: own } = await newTenant();
    const a = await account(own);
    const sale = (await own.post('/sales', { data: { currency: 'mxn', occurred_at: '2026-11-02T17:00:00Z', line_items: [{ description: 'X', quantity: 1, unit_price_cents: 10_000 }] } })).body.data;
    const pay = async (amount_cents: number, paid_at: string) => (await own.post(`/sales/${sale.id}/payments`, { data: { account_id: a.id, amount_cents, paid_at } })).body.data;
    const refund = (amount_cents: number, refunded_at: string) => own.post(`/sales/${sale.id}/refunds`, { data: { account_id: a.id, amount_cents, refunded_at } });
    await pay(1_000, '2026-11-03T17:00:00Z');
    await pay(9_000, '2026-11-20T17:00:00Z');
    // On Nov 5 only 1,000 had come in.
    const early = await refund(8_000, '2026-11-05T12:00:00Z');
    assert.deepEqual([early.status, Object.keys(early.body.errors ?? {})], [422, ['refunded_at']], early.text);
    assert.match(early.body.errors.refunded_at[0], /^al 2026-11-05T12:00:00.000Z lo devuelto superaría lo pagado hasta entonces/);
    assert.equal((await refund(1_000, '2026-11-05T12:00:00Z')).status, 201);
    // A refund dated before one already made counts in that one's date too: 500 on Nov 4 makes 1,500 by Nov 5.
    const before = await refund(500, '2026-11-04T12:00:00Z');
    assert.deepEqual([before.status, Object.keys(before.body.errors ?? {})], [422, ['refunded_at']], before.text);
    assert.match(before.body.errors.refunded_at[0], /^al 2026-11-05T12:00:00.000Z/);
    assert.equal((await refund(8_000, '2026-11-21T12:00:00Z')).status, 201, 'after the second payment it is covered');
    const read = (await own.get(`/sales/${sale.id}`)).body.data;
    assert.deepEqual([read.paid_cents, read.refunded_cents, read.refunds.length], [10_000, 9_000, 2]);

    // Deleting a payment: the refunds left must still be covered at each of their dates, not only in total
    // and not only the first (paid 100 on the 2nd, 1,000 on the 4th, 2,000 on the 10th; refunded 50 on the 3rd and
    // 500 on the 5th: without the 1,000, the 5th's 550 would stand on 100).
    const other = (await own.post('/sales', { data: { currency: 'mxn', occurred_at: '2026-11-01T17:00:00Z', line_items: [{ description: 'Y', quantity: 1, unit_price_cents: 5_000 }] } })).body.data;
    const payOther = async (amount_cents: number, paid_at: string) => (await own.post(`/sales/${other.id}/payments`, { data: { account_id: a.id, amount_cents, paid_at } })).body.data;
    await payOther(100, '2026-11-02T17:00:00Z');
    await payOther(1_000, '2026-11-04T17:00:00Z');
    await payOther(2_000, '2026-11-10T17:00:00Z');
    for (const [amount_cents, refunded_at] of [[50, '2026-11-03T17:00:00Z'], [500, '2026-11-05T17:00:00Z']] as const) {
      assert.equal((await own.post(`/sales/${other.id}/refunds`, { data: { account_id: a.id, amount_cents, refunded_at } })).status, 201);
    }
    const thousand = (await own.get(`/sales/${other.id}`)).body.data.payments.find((p: any) => p.amount_cents === 1_000);
    const refused = await own.delete(`/incomes/${thousand.income_id ?? thousand.id}`);
    assert.equal(refused.status, 422, refused.text);
    assert.match(refused.body.errors.id[0], /devoluciones al 2026-11-05T17:00:00.000Z/);
    assert.equal((await own.get(`/sales/${other.id}`)).body.data.paid_cents, 3_100, 'nothing changed');
    const twoThousand = (await own.get(`/sales/${other.id}`)).body.data.payments.find((p: any) => p.amount_cents === 2_000);
    assert.equal((await own.delete(`/incomes/${twoThousand.income_id ?? twoThousand.id}`)).status, 204, 'a payment no refund needs goes');
  });

  test('sales: a sale paid in part and that part returned is partially_refunded (it still owes), not refunded', async () => {
    const { api: own } = await newTenant();
    const a = await account(own);
    const sale = (await own.post('/sales', { data: { currency: 'mxn', line_items: [{ description: 'Mitad', quantity: 1, unit_price_cents: 10_000 }] } })).body.data;
    assert.equal((await own.post(`/sales/${sale.id}/payments`, { data: { account_id: a.id, amount_cents: 5_000 } })).status, 201);
    const back = await own.post(`/sales/${sale.id}/refunds`, { data: { account_id: a.id, amount_cents: 5_000 } });
    assert.equal(back.status, 201, back.text);
    assert.deepEqual([back.body.data.status, back.body.data.amount_due_cents], ['partially_refunded', 5_000]);
    assert.deepEqual((await own.get('/sales?status=refunded')).body.data.map((s: any) => s.id), []);
    assert.deepEqual((await own.get('/sales?status=partially_refunded')).body.data.map((s: any) => s.id), [sale.id]);
    // Paid in full and all of it returned: refunded.
    assert.equal((await own.post(`/sales/${sale.id}/payments`, { data: { account_id: a.id, amount_cents: 5_000 } })).body.data.status, 'partially_refunded');
    assert.equal((await own.post(`/sales/${sale.id}/refunds`, { data: { account_id: a.id, amount_cents: 5_000 } })).body.data.status, 'refunded');
  });

  test('closed months refuse writes dated in them (422 period_locked with year and month); wsctl period close|open; GET /accounting-periods', async () => {
    const { t, api } = await newTenant();
    const a = await account(api, { opening_on: '2026-01-01' });
    const march = (await api.post('/incomes', { data: { account_id: a.id, amount_cents: 100, occurred_at: '2026-03-15T17:00:00Z' } })).body.data;
    const closed = await json(app, ['period', 'close', '--company', t.companyId, '--year', '2026', '--month', '3']);
    assert.deepEqual(closed, { company_id: t.companyId, year: 2026, month: 3, status: 'closed' });
    const create = await api.post('/incomes', { data: { account_id: a.id, amount_cents: 100, occurred_at: '2026-03-20T17:00:00Z' } });
    assert.equal(create.status, 422);
    assert.deepEqual([create.body.error, create.body.year, create.body.month], ['period_locked', 2026, 3]);
    // Months are read in the company's zone: 2026-04-01T03:00Z is still March 31 in Mexico City.
    assert.equal((await api.post('/incomes', { data: { account_id: a.id, amount_cents: 100, occurred_at: '2026-04-01T03:00:00Z' } })).status, 422);
    assert.equal((await api.patch(`/incomes/${march.id}`, { data: { description: 'x' } })).status, 422);
    assert.equal((await api.patch(`/incomes/${march.id}`, { data: { occurred_at: '2026-04-15T17:00:00Z' } })).status, 422);
    assert.equal((await api.delete(`/incomes/${march.id}`)).status, 422);
    // A sale dated in a closed month takes no change either, not only a new date.
    await json(app, ['period', 'open', '--company', t.companyId, '--year', '2026', '--month', '3']);
    const marchSale = (await api.post('/sales', { data: { currency: 'mxn', occurred_at: '2026-03-10T17:00:00Z', line_items: [{ description: 'X', quantity: 1, unit_price_cents: 100 }] } })).body.data;
    await json(app, ['period', 'close', '--company', t.companyId, '--year', '2026', '--month', '3']);
    for (const data of [{ description: 'x' }, { metadata: { k: 'v' } }, { payment_terms: 'deferred' }]) {
      const res = await api.patch(`/sales/${marchSale.id}`, { data });
      assert.equal(res.body.error, 'period_locked', JSON.stringify(data));
    }
    const april = (await api.post('/incomes', { data: { account_id: a.id, amount_cents: 100, occurred_at: '2026-04-15T17:00:00Z' } })).body.data;
    assert.equal((await api.patch(`/incomes/${april.id}`, { data: { occurred_at: '2026-03-31T17:00:00Z' } })).body.error, 'period_locked');
    const periods = await api.get('/accounting-periods');
    assert.deepEqual(periods.body.data.map((p: any) => [p.year, p.month, p.status]), [[2026, 3, 'closed']]);
    await json(app, ['period', 'open', '--company', t.companyId, '--year', '2026', '--month', '3']);
    assert.equal((await api.delete(`/incomes/${march.id}`)).status, 204);
    const bad = await wsctl(app, ['period', 'close', '--company', t.companyId, '--year', '2026', '--month', '13', '--json']);
    assert.notEqual(bad.code, 0);
  });

  test('recurring: a series on an archived account stops (recurring.deactivated) instead of writing into it; PATCH keeps the create rules per type', async () => {
    const { t, api: own } = await newTenant();
    const a = await account(own);
    const r = (await own.post('/recurring-transactions', { data: { type: 'expense', account_id: a.id, amount_cents: 3, frequency: 'daily', starts_on: '2099-01-01' } })).body.data;
    const customer = (await own.post('/customers', { data: { name: 'Cliente real' } })).body.data;
    const onExpense = await own.patch(`/recurring-transactions/${r.id}`, { data: { customer_id: customer.id } });
    assert.equal(onExpense.status, 422, onExpense.text);
    assert.match(onExpense.body.errors.customer_id[0], /solo en ingresos/);
    const income = (await own.post('/recurring-transactions', { data: { type: 'income', account_id: a.id, amount_cents: 3, frequency: 'daily', starts_on: '2099-01-01' } })).body.data;
    const supplier = await own.patch(`/recurring-transactions/${income.id}`, { data: { supplier_name: 'Proveedor' } });
    assert.equal(supplier.status, 422, supplier.text);
    assert.match(supplier.body.errors.supplier_name[0], /solo en gastos/);
    // Each misplaced field is the one named, on create as on update.
    const taxIdOnly = await own.post('/recurring-transactions', { data: { type: 'income', account_id: a.id, amount_cents: 3, frequency: 'daily', starts_on: '2099-01-01', supplier_tax_id: 'XAXX010101000' } });
    assert.equal(taxIdOnly.status, 422, taxIdOnly.text);
    assert.deepEqual(taxIdOnly.body.errors, { supplier_tax_id: ['solo en gastos'] });
    const both = await own.patch(`/recurring-transactions/${income.id}`, { data: { supplier_name: 'Proveedor', supplier_tax_id: 'XAXX010101000' } });
    assert.deepEqual(both.body.errors, { supplier_name: ['solo en gastos'], supplier_tax_id: ['solo en gastos'] });
    const early = await own.patch(`/recurring-transactions/${income.id}`, { data: { ends_on: '2098-12-31' } });
    assert.equal(early.status, 422, early.text);
    assert.deepEqual(early.body.errors.ends_on, ['no puede ser anterior a starts_on']);
    assert.equal((await own.patch(`/recurring-transactions/${income.id}`, { data: { ends_on: '2099-01-01' } })).status, 200, 'the start itself is a valid end');
    assert.equal((await own.patch(`/accounts/${a.id}`, { data: { archived: true } })).status, 200);
    // Due now: the generator finds the account archived.
    await app.pool.query(`UPDATE recurring_transactions SET next_occurrence_on = '2026-01-01' WHERE id = $1`, [r.id]);
    // The worker of this file may be running the same series at that moment (busy): asked again until
    // one run has it; whichever did, it makes nothing and ends the series.
    const result = await waitFor(async () => {
      const run = await transaction(app.pool, (client) => generateDue(client, r.id, '2026-01-10'));
      return !run.busy && run;
    }, 20_000, 'a run that holds the series');
    assert.deepEqual(result, { made: 0, more: false });
    const after = (await own.get(`/recurring-transactions/${r.id}`)).body.data;
    assert.equal(after.active, false);
    assert.equal((await own.get(`/expenses?account_id=${a.id}`)).body.data.length, 0);
    assert.equal((await events(t.companyId, 'recurring.deactivated')).length, 1);
    // A deactivation repeated (a client retrying after a timeout), or an empty PATCH, of a series
    // already over: 200 with the series as it is, and no second event.
    for (const data of [{ active: false }, {}]) {
      const again = await own.patch(`/recurring-transactions/${r.id}`, { data });
      assert.equal(again.status, 200, again.text);
      assert.equal(again.body.data.active, false);
    }
    assert.equal((await events(t.companyId, 'recurring.deactivated')).length, 1);
  });

  test('recurring: dates from starts_on with the month-end rule; each occurrence once even with concurrent runs; a closed month moves it to the next open one; ends_count ends it', async () => {
    assert.deepEqual([0, 1, 2, 3].map((n) => occurrenceOn({ starts_on: '2027-01-31', frequency: 'monthly', interval: 1 }, n)), ['2027-01-31', '2027-02-28', '2027-03-31', '2027-04-30']);
    assert.equal(occurrenceOn({ starts_on: '2028-02-29', frequency: 'yearly', interval: 1 }, 1), '2029-02-28');
    assert.equal(occurrenceOn({ starts_on: '2026-01-05', frequency: 'weekly', interval: 2 }, 3), '2026-02-16');
    const { t, api } = await newTenant();
    const a = await account(api);
    await json(app, ['period', 'close', '--company', t.companyId, '--year', '2026', '--month', '2']);
    const r = await api.post('/recurring-transactions', { data: { type: 'expense', account_id: a.id, amount_cents: 1_000, category: 'renta', frequency: 'monthly', starts_on: '2026-01-31', ends_count: 4, metadata: { external_ref: 'renta-2026' } } });
    assert.equal(r.status, 201, r.text);
    // The worker makes the four due ones (Jan 31, Feb 28 → March 1, Mar 31, Apr 30), then the series ends.
    const done = await waitFor(async () => {
      const got = (await api.get(`/recurring-transactions/${r.body.data.id}`)).body.data;
      return got.occurrences_count === 4 && got;
    }, 20_000, 'four occurrences');
    assert.equal(done.active, false);
    assert.equal(done.next_occurrence_on, null);
    assert.ok(done.ended_at);
    // Concurrent runs after the fact make nothing more.
    const again = await Promise.all([1, 2, 3].map(() => transaction(app.pool, (c) => generateDue(c, r.body.data.id, '2027-12-31'))));
    assert.deepEqual(again, [0, 0, 0].map(() => ({ made: 0, more: false })));
    const { rows } = await app.pool.query(
      `SELECT to_char(recurring_on, 'YYYY-MM-DD') AS on, occurred_at FROM movements WHERE recurring_id = $1 ORDER BY recurring_on`,
      [r.body.data.id],
    );
    assert.deepEqual(rows.map((x: any) => x.on), ['2026-01-31', '2026-02-28', '2026-03-31', '2026-04-30']);
    // February is closed: its occurrence is dated at noon of March 1 in Mexico City (18:00Z).
    assert.equal(rows[1].occurred_at.toISOString(), '2026-03-01T18:00:00.000Z');
    // The API shows both: the due day the series gave and the day the money is dated.
    const listed = (await api.get('/expenses?limit=100')).body.data.filter((x: any) => x.recurring_id === r.body.data.id);
    const moved = listed.find((x: any) => x.recurring_on === '2026-02-28');
    assert.equal(moved?.occurred_at, '2026-03-01T18:00:00.000Z', JSON.stringify(listed.map((x: any) => [x.recurring_on, x.occurred_at])));
    assert.equal((await events(t.companyId, 'recurring.occurrence_created')).map((d) => d.recurring_occurrence_on).join(), '2026-01-31,2026-02-28,2026-03-31,2026-04-30');
    assert.equal((await events(t.companyId, 'recurring.ended')).length, 1);
    const same = await api.post('/recurring-transactions', { data: { type: 'expense', account_id: a.id, amount_cents: 5, frequency: 'daily', starts_on: '2099-01-01', metadata: { external_ref: 'renta-2026' } } });
    assert.equal(same.status, 200);
    assert.equal(same.body.data.id, r.body.data.id);
  });

  test('recurring: an occurrence is dated at noon on the wall clock, also on the days a DST change makes 23 or 25 hours long', async () => {
    const { t, api } = await newTenant();
    await json(app, ['company', 'update', t.companyId, '--timezone', 'America/New_York']);
    const a = await account(api);
    const dated: Record<string, string> = {};
    for (const [starts_on, ends_on] of [['2025-03-08', '2025-03-10'], ['2025-11-01', '2025-11-03']]) {
      const r = await api.post('/recurring-transactions', { data: { type: 'income', account_id: a.id, amount_cents: 100, frequency: 'daily', starts_on, ends_on } });
      assert.equal(r.status, 201, r.text);
      await waitFor(async () => (await api.get(`/recurring-transactions/${r.body.data.id}`)).body.data.occurrences_count === 3, 20_000, `the series from ${starts_on} made`);
      for (const x of (await api.get(`/incomes?limit=100`)).body.data) if (x.recurring_id === r.body.data.id) dated[x.recurring_on] = x.occurred_at;
    }
    // 12:00 EST is 17:00Z, 12:00 EDT 16:00Z; March 9 and November 2 are the changes.
    assert.deepEqual(dated, {
      '2025-03-08': '2025-03-08T17:00:00.000Z',
      '2025-03-09': '2025-03-09T16:00:00.000Z',
      '2025-03-10': '2025-03-10T16:00:00.000Z',
      '2025-11-01': '2025-11-01T16:00:00.000Z',
      '2025-11-02': '2025-11-02T17:00:00.000Z',
      '2025-11-03': '2025-11-03T17:00:00.000Z',
    });
  });

  test('recurring: a long backfill is made in short transactions, so the series can be switched off while it runs', async () => {
    const { api } = await newTenant();
    const a = await account(api);
    // Starts in the future, so the worker has nothing due yet; generateDue is run here with a later `today`.
    const r = await api.post('/recurring-transactions', { data: { type: 'income', account_id: a.id, amount_cents: 100, frequency: 'daily', starts_on: '2099-01-01' } });
    assert.equal(r.status, 201, r.text);
    const id = r.body.data.id;
    const first = await transaction(app.pool, (c) => generateDue(c, id, '2099-01-10', 3));
    assert.deepEqual(first, { made: 3, more: true });
    // The batch committed and released the row: switching it off is answered at once.
    const off = await api.patch(`/recurring-transactions/${id}`, { data: { active: false } });
    assert.equal(off.status, 200, off.text);
    const next = await transaction(app.pool, (c) => generateDue(c, id, '2099-01-10', 3));
    assert.deepEqual(next, { made: 0, more: false }, 'switched off: nothing more is made');
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM movements WHERE recurring_id = $1', [id]);
    assert.equal(rows[0].n, 3);
  });

  test('recurring: deleting an active series tells receivers it stopped (recurring.deactivated, deleted: true); one already off says nothing more', async () => {
    const { t, api } = await newTenant();
    const a = await account(api);
    const series = async () => (await api.post('/recurring-transactions', { data: { type: 'expense', account_id: a.id, amount_cents: 100, frequency: 'weekly', starts_on: '2099-01-01' } })).body.data;
    const live = await series();
    assert.equal((await api.delete(`/recurring-transactions/${live.id}`)).status, 204);
    assert.equal((await api.get(`/recurring-transactions/${live.id}`)).status, 404);
    const off = await series();
    await api.patch(`/recurring-transactions/${off.id}`, { data: { active: false } });
    assert.equal((await api.delete(`/recurring-transactions/${off.id}`)).status, 204);
    const sent = await events(t.companyId, 'recurring.deactivated');
    assert.deepEqual(sent.map((e: any) => [e.id, e.status, e.deleted ?? false, e.next_occurrence_on]), [[live.id, 'inactive', true, null], [off.id, 'inactive', false, null]]);
    assert.equal((await api.delete(`/recurring-transactions/${live.id}`)).status, 404);
  });

  test('recurring: a customer deleted since the series was made is on none of its new occurrences', async () => {
    await worker.stop(); // the pass is run here
    try {
      const { api } = await newTenant();
      const a = await account(api);
      const customer = (await api.post('/customers', { data: { name: 'Se irá' } })).body.data;
      const r = await api.post('/recurring-transactions', { data: { type: 'income', account_id: a.id, customer_id: customer.id, amount_cents: 100, frequency: 'daily', starts_on: '2099-01-01' } });
      assert.equal(r.status, 201, r.text);
      assert.equal((await api.delete(`/customers/${customer.id}`)).status, 204);
      await app.pool.query(`UPDATE recurring_transactions SET next_occurrence_on = (now() AT TIME ZONE 'America/Mexico_City')::date WHERE id = $1`, [r.body.data.id]);
      await catchUp({ pool: app.pool, jobs: app.deps.jobs }, [r.body.data.id]);
      const { rows } = await app.pool.query('SELECT customer_id FROM movements WHERE recurring_id = $1', [r.body.data.id]);
      assert.deepEqual(rows, [{ customer_id: null }]);
    } finally {
      worker = await startWorker(app.config, app.pool, app.databaseUrl, { boss: { supervise: false, schedule: false } });
    }
  });

  test('recurring: a series whose occurrence cannot be written is skipped and logged; the series after it, of any company, still get theirs', async () => {
    await worker.stop(); // the pass is run here
    try {
      const broken = await newTenant();
      const fine = await newTenant();
      const today = (await app.pool.query(`SELECT (now() AT TIME ZONE timezone)::date::text AS day FROM companies WHERE id = $1`, [broken.t.companyId])).rows[0].day;
      const series = async (api: typeof broken.api, category: string) => {
        const a = await account(api);
        const r = await api.post('/recurring-transactions', { data: { type: 'income', account_id: a.id, amount_cents: 100, category, frequency: 'daily', starts_on: today } });
        assert.equal(r.status, 201, r.text);
        return { id: r.body.data.id as string, accountId: a.id as string };
      };
      const bad = await series(broken.api, 'desbordada');
      const good = await series(fine.api, 'normal');
      // The broken company's totals for today are at the top of what a bigint holds: its occurrence
      // would take them past it (SQLSTATE 22003), as 1,024 incomes of 2^53 cents in one day would.
      const top = '9223372036854775800';
      await app.pool.query(
        `INSERT INTO ledger_daily (company_id, currency, day, line, key, amount_cents)
         VALUES ($1, 'mxn', $2, 'income', 'desbordada', $3), ($1, 'mxn', $2, 'cash_in', $4, $3), ($1, 'mxn', $2, 'receivable', 'incomes', $3)`,
        [broken.t.companyId, today, top, bad.accountId],
      );
      const made = async (id: string) => (await app.pool.query('SELECT count(*)::int AS n FROM movements WHERE recurring_id = $1', [id])).rows[0].n as number;
      // The broken series first, as it sorts when it is the longest due.
      const { failed } = await catchUp({ pool: app.pool, jobs: app.deps.jobs }, [bad.id, good.id]);
      assert.deepEqual(failed.map((f) => [f.id, (f.error as { code?: string }).code]), [[bad.id, '22003']]);
      assert.equal(await made(good.id), 1, 'the series after it got its occurrence');
      assert.equal(await made(bad.id), 0);
      // The 15-minute pass completes (a data error is the series', not the moment's: no retry of the pass).
      await recurringTransactions.handler({ pool: app.pool, jobs: app.deps.jobs } as never, [{ id: 'pass', name: RECURRING.name, data: {} } as never]);
      assert.equal((await broken.api.get(`/recurring-transactions/${bad.id}`)).body.data.active, true, 'left as it is, for its company to change');
    } finally {
      worker = await startWorker(app.config, app.pool, app.databaseUrl, { boss: { supervise: false, schedule: false } });
    }
  });

  test('recurring: a catch-up that finds the series held by another transaction (a PATCH between two batches) waits for it and finishes', async () => {
    await worker.stop(); // the catch-up is run here, beside a transaction holding the series
    try {
      const { api } = await newTenant();
      const a = await account(api);
      // Daily since more days ago than one batch makes, whenever the test runs (a fixed start grew by a row a day).
      const startsOn = new Date(Date.now() - (OCCURRENCES_PER_TRANSACTION + 50) * 86_400_000).toISOString().slice(0, 10);
      const r = await api.post('/recurring-transactions', { data: { type: 'income', account_id: a.id, amount_cents: 100, frequency: 'daily', starts_on: startsOn } });
      assert.equal(r.status, 201, r.text);
      const id = r.body.data.id;
      const holder = await app.pool.connect();
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM recurring_transactions WHERE id = $1 FOR UPDATE', [id]);
      // Held, the series is busy to a run (not finished: it once answered "nothing more" and the
      // catch-up stopped until the next run, up to 15 minutes later).
      assert.deepEqual(await transaction(app.pool, (c) => generateDue(c, id)), { made: 0, more: true, busy: true });
      // The hold ends when the catch-up has met it; the catch-up asks again and finishes.
      let met = 0;
      const release = async () => {
        await holder.query('COMMIT').catch(() => {});
        holder.release();
      };
      try {
        await catchUp({ pool: app.pool, jobs: app.deps.jobs }, [id], { onBusy: () => void (met++ === 0 && release()) });
      } finally {
        if (!met) await release();
      }
      assert.ok(met > 0, 'the catch-up met the held series');
      const { rows } = await app.pool.query(
        `SELECT count(*)::int AS made, (SELECT next_occurrence_on > (now() AT TIME ZONE 'America/Mexico_City')::date FROM recurring_transactions WHERE id = $1) AS done
           FROM movements WHERE recurring_id = $1`,
        [id],
      );
      assert.ok(rows[0].made > OCCURRENCES_PER_TRANSACTION, `a catch-up of more than one batch (${rows[0].made})`);
      assert.equal(rows[0].done, true, 'every due occurrence made, none left for the next run');
    } finally {
      worker = await startWorker(app.config, app.pool, app.databaseUrl, { boss: { supervise: false, schedule: false } });
    }
  });

  test('reports on a hand-checked ledger: the balance-sheet identity, the income statement as the sum of its lines, closing = opening + in − out; end_on before start_on is 422', async () => {
    const { api } = await newTenant();
    const bank = await account(api, { opening_balance_cents: 50_000, opening_on: '2026-01-01' });
    await api.post('/incomes', { data: { account_id: bank.id, amount_cents: 20_000, occurred_at: '2026-07-01T17:00:00Z', category: 'servicios' } });
    await api.post('/incomes', { data: { account_id: bank.id, amount_cents: 8_000, occurred_at: '2026-07-02T17:00:00Z', category: 'servicios', status: 'pending' } });
    await api.post('/expenses', { data: { account_id: bank.id, amount_cents: 6_000, occurred_at: '2026-07-03T17:00:00Z', category: 'renta' } });
    await api.post('/expenses', { data: { account_id: bank.id, amount_cents: 1_500, occurred_at: '2026-07-04T17:00:00Z', category: 'luz', status: 'pending' } });
    const sale = (await api.post('/sales', { data: { currency: 'mxn', occurred_at: '2026-07-05T17:00:00Z', line_items: [{ description: 'S', quantity: 1, unit_price_cents: 10_000, vat_rate: 16 }] } })).body.data;
    await api.post(`/sales/${sale.id}/payments`, { data: { account_id: bank.id, amount_cents: 5_000, paid_at: '2026-07-06T17:00:00Z' } });
    await api.post(`/sales/${sale.id}/refunds`, { data: { account_id: bank.id, amount_cents: 1_000, refunded_at: '2026-07-07T17:00:00Z' } });

    const bs = (await api.get('/reports/balance-sheet?as_of=2026-07-31')).body.data.currencies[0];
    // cash 50000 + 20000 − 6000 + 5000 − 1000 = 68000; receivables 8000 + (11600 − 5000) = 14600; payables 1500.
    assert.equal(bs.assets.cash_cents, 68_000);
    assert.deepEqual(bs.assets.receivables, { incomes_cents: 8_000, sales_cents: 6_600, total_cents: 14_600 });
    assert.equal(bs.liabilities.total_cents, 1_500);
    // result 20000 + 8000 + 11600 − 1000 − 6000 − 1500 = 31100; equity 50000 + 31100.
    assert.deepEqual([bs.equity.opening_balances_cents, bs.equity.retained_result_cents], [50_000, 31_100]);
    assert.equal(bs.assets.total_cents, bs.liabilities.total_cents + bs.equity.total_cents);
    const before = (await api.get('/reports/balance-sheet?as_of=2026-06-30')).body.data.currencies[0];
    assert.equal(before.assets.total_cents, 50_000);

    const is = (await api.get('/reports/income-statement?start_on=2026-07-01&end_on=2026-07-31')).body.data.currencies[0];
    assert.deepEqual(is.income.lines, [{ category: 'devoluciones', amount_cents: -1_000 }, { category: 'servicios', amount_cents: 28_000 }, { category: 'ventas', amount_cents: 11_600 }]);
    assert.deepEqual(is.expenses.lines, [{ category: 'luz', amount_cents: 1_500 }, { category: 'renta', amount_cents: 6_000 }]);
    assert.equal(is.net_cents, 31_100);
    // Dates are inclusive: one day.
    const oneDay = (await api.get('/reports/income-statement?start_on=2026-07-03&end_on=2026-07-03')).body.data.currencies[0];
    assert.equal(oneDay.net_cents, -6_000);

    const cf = (await api.get('/reports/cash-flow?start_on=2026-07-02&end_on=2026-07-06')).body.data.accounts[0];
    assert.deepEqual([cf.opening_balance_cents, cf.inflows_cents, cf.outflows_cents, cf.closing_balance_cents], [70_000, 5_000, 6_000, 69_000]);
    const bad = await api.get('/reports/cash-flow?start_on=2026-07-06&end_on=2026-07-02');
    assert.equal(bad.status, 422);
    assert.equal((await api.get('/reports/income-statement?start_on=2026-07-01')).status, 400);
  });

  test('dates before 1900 are refused where they are sent (they once answered 500 or left money out of the ledger); unknown report parameters are named', async () => {
    const { api } = await newTenant();
    const a = await account(api, { opening_on: '2026-01-01' });
    const refusedBodies: Array<[string, Record<string, unknown>, string]> = [
      ['/accounts', { name: 'Vieja', kind: 'cash', currency: 'mxn', opening_on: '0000-06-01' }, 'opening_on'],
      ['/incomes', { account_id: a.id, amount_cents: 7, occurred_at: '0001-01-01T00:00:00Z' }, 'occurred_at'],
      ['/expenses', { account_id: a.id, amount_cents: 7, occurred_at: '2026-05-01T17:00:00Z', status: 'pending', due_on: '0000-01-01' }, 'due_on'],
      ['/recurring-transactions', { type: 'income', account_id: a.id, amount_cents: 1000, frequency: 'daily', starts_on: '1899-12-31' }, 'starts_on'],
    ];
    for (const [path, data, field] of refusedBodies) {
      const res = await api.post(path, { data });
      assert.equal(res.status, 422, `${path}: ${res.text}`);
      assert.deepEqual(Object.keys(res.body.errors), [field], path);
    }
    for (const query of ['/reports/balance-sheet?as_of=0000-12-31', '/reports/income-statement?start_on=0000-12-31&end_on=0001-01-01', '/reports/cash-flow?start_on=0000-12-31&end_on=0001-01-01']) {
      const res = await api.get(query);
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.equal(res.body.error, 'invalid_parameter');
    }
    // List filters only compare: the usual "no limit" instants pass; year 0000, which PostgreSQL cannot read, is 400.
    // The messages say what is wanted in plain Spanish (zod's own read "Inválido fecha ISO").
    assert.equal((await api.get('/reports/balance-sheet?as_of=2026-02-30')).body.message, 'El parámetro as_of no es válido: debe ser una fecha válida con la forma AAAA-MM-DD');
    assert.equal((await api.get('/reports/income-statement?end_on=2026-02-01')).body.message, 'Falta el parámetro start_on, que es obligatorio.');
    assert.match((await api.get('/incomes?from=2026-01-01T10:00')).body.message, /^El parámetro from no es válido: debe ser un día YYYY-MM-DD .* o un instante ISO 8601 con su zona/);
    const badDay = await api.post('/incomes', { data: { account_id: a.id, amount_cents: 7, occurred_at: 'ayer' } });
    assert.deepEqual(badDay.body.errors, { occurred_at: ['debe ser un instante ISO 8601 con su zona horaria, como 2026-11-24T10:00:00Z o 2026-11-24T04:00:00-06:00'] });
    // Every list with a from/to filter (the router table's), alike: a client shares one window helper across them.
    const windowed = apiRoutes.filter((r) => r.list && !r.path.includes('/:') && (r.query as { shape?: Record<string, unknown> } | undefined)?.shape?.from);
    assert.deepEqual(windowed.map((r) => r.path).filter((p) => ['/incomes', '/expenses', '/sales'].includes(p)).sort(), ['/expenses', '/incomes', '/sales']);
    for (const { path } of windowed) {
      for (const query of ['from=0001-01-01T00:00:00Z', 'to=9999-12-31T23:59:59Z', 'from=1899-12-31T00:00:00Z']) assert.equal((await api.get(`${path}?${query}`)).status, 200, `${path}?${query}`);
      assert.equal((await api.get(`${path}?from=0000-12-31T00:00:00Z`)).body.error, 'invalid_parameter', path);
    }
    // ISO 8601 allows offsets to ±23:59; PostgreSQL reads to ±15:59 (it answered 500): 400 in a filter, 422 in a body.
    assert.equal((await api.get('/incomes?from=2027-01-01T00:00:00%2B16:00')).body.error, 'invalid_parameter');
    assert.equal((await api.get('/incomes?from=2027-01-01T00:00:00%2B14:00')).status, 200);
    const farOffset = await api.post('/incomes', { data: { account_id: a.id, amount_cents: 7, occurred_at: '2026-05-01T10:00:00-16:00' } });
    assert.deepEqual([farOffset.status, Object.keys(farOffset.body.errors ?? {})], [422, ['occurred_at']]);
    const unknown = await api.get('/reports/cash-flow?start_on=2026-01-01&end_on=2026-01-31&currency=usd');
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.message, /currency/);
    // A due date belongs to one on credit: with status paid it is refused, not dropped.
    const paidWithDue = await api.post('/incomes', { data: { account_id: a.id, amount_cents: 7, occurred_at: '2026-05-01T17:00:00Z', status: 'paid', due_on: '2026-06-01' } });
    assert.equal(paidWithDue.status, 422, paidWithDue.text);
    assert.deepEqual(Object.keys(paidWithDue.body.errors), ['due_on']);
    const paid = (await api.post('/incomes', { data: { account_id: a.id, amount_cents: 7, occurred_at: '2026-05-01T17:00:00Z' } })).body.data;
    const dueLater = await api.patch(`/incomes/${paid.id}`, { data: { due_on: '2026-06-01' } });
    assert.equal(dueLater.status, 422, 'the same on PATCH');
    assert.deepEqual(Object.keys(dueLater.body.errors), ['due_on']);
    // Not due before it happened (the record's local day; 03:00Z on May 2 is May 1 in Mexico City).
    const early = await api.post('/incomes', { data: { account_id: a.id, amount_cents: 7, occurred_at: '2026-05-02T03:00:00Z', status: 'pending', due_on: '2026-04-30' } });
    assert.equal(early.status, 422, early.text);
    assert.deepEqual(Object.keys(early.body.errors), ['due_on']);
    const sameDay = (await api.post('/incomes', { data: { account_id: a.id, amount_cents: 7, occurred_at: '2026-05-02T03:00:00Z', status: 'pending', due_on: '2026-05-01' } })).body.data;
    assert.equal(sameDay.due_on, '2026-05-01');
    const movedPast = await api.patch(`/incomes/${sameDay.id}`, { data: { occurred_at: '2026-05-10T17:00:00Z' } });
    assert.equal(movedPast.status, 422, 'a later occurred_at than the due date it keeps');
    assert.deepEqual(Object.keys(movedPast.body.errors), ['due_on']);
  });

  test('money moved before an account opening date shows in the cash flow as in the balance sheet', async () => {
    const { api } = await newTenant();
    const late = await account(api, { opening_balance_cents: 0, opening_on: '2026-11-26' });
    assert.equal((await api.post('/incomes', { data: { account_id: late.id, amount_cents: 5_000, occurred_at: '2026-11-20T17:00:00Z' } })).status, 201);
    const bs = (await api.get('/reports/balance-sheet?as_of=2026-11-25')).body.data.currencies[0];
    assert.equal(bs.assets.cash_cents, 5_000);
    const cf = (await api.get('/reports/cash-flow?start_on=2026-11-01&end_on=2026-11-25')).body.data;
    assert.deepEqual(cf.accounts.map((x: any) => [x.account_id, x.opening_balance_cents, x.inflows_cents, x.closing_balance_cents]), [[late.id, 0, 5_000, 5_000]]);
    assert.equal(cf.currencies[0].closing_balance_cents, bs.assets.cash_cents);
  });

  test('an account opening within a cash-flow range brings its opening balance in as an inflow: consecutive ranges chain', async () => {
    const { api } = await newTenant();
    await account(api, { name: 'Vieja', currency: 'usd', opening_balance_cents: 1_000, opening_on: '2026-01-01' });
    const opened = await account(api, { name: 'Nueva', currency: 'usd', opening_balance_cents: 500, opening_on: '2026-06-15' });
    assert.equal((await api.post('/incomes', { data: { account_id: opened.id, amount_cents: 70, occurred_at: '2026-06-20T17:00:00Z' } })).status, 201);
    const may = (await api.get('/reports/cash-flow?start_on=2026-05-01&end_on=2026-05-31')).body.data.currencies[0];
    const june = (await api.get('/reports/cash-flow?start_on=2026-06-01&end_on=2026-06-30')).body.data;
    const july = (await api.get('/reports/cash-flow?start_on=2026-07-01&end_on=2026-07-31')).body.data.currencies[0];
    const newOne = june.accounts.find((x: any) => x.account_id === opened.id);
    assert.deepEqual([newOne.opening_balance_cents, newOne.inflows_cents, newOne.closing_balance_cents], [0, 570, 570]);
    const cash = async (day: string) => (await api.get(`/reports/balance-sheet?as_of=${day}`)).body.data.currencies[0].assets.cash_cents;
    assert.equal(june.currencies[0].opening_balance_cents, may.closing_balance_cents);
    assert.equal(june.currencies[0].opening_balance_cents, await cash('2026-05-31'));
    assert.equal(june.currencies[0].closing_balance_cents, await cash('2026-06-30'));
    assert.equal(july.opening_balance_cents, june.currencies[0].closing_balance_cents);
  });

  test('the company time zone: GET /company shows it; an operator changing it moves money days (the ledger is rebuilt)', async () => {
    const { t, api } = await newTenant();
    assert.equal((await api.get('/company')).body.data.timezone, 'America/Mexico_City');
    const a = await account(api, { opening_on: '2026-01-01' });
    // 03:00Z on Sept 1 is still August 31 in Mexico City, and September 1 in Madrid.
    await api.post('/incomes', { data: { account_id: a.id, amount_cents: 700, occurred_at: '2026-09-01T03:00:00Z' } });
    const august = async () => (await api.get('/reports/income-statement?start_on=2026-08-01&end_on=2026-08-31')).body.data.currencies.length;
    assert.equal(await august(), 1);
    const updated = await json(app, ['company', 'update', t.companyId, '--timezone', 'Europe/Madrid']);
    assert.equal(updated.timezone, 'Europe/Madrid');
    assert.equal(await august(), 0);
    assert.equal((await api.get('/company')).body.data.timezone, 'Europe/Madrid');
    const bad = await wsctl(app, ['company', 'update', t.companyId, '--timezone', 'Mars/Base', '--json']);
    assert.notEqual(bad.code, 0);
  });

  test('a time-zone change that would move money into or out of a closed month is refused, and changes nothing', async () => {
    const { t, api } = await newTenant();
    const a = await account(api, { opening_on: '2026-01-01' });
    // 03:00Z on Sept 1: August 31 in Mexico City, September 1 in Madrid. August is closed.
    await api.post('/incomes', { data: { account_id: a.id, amount_cents: 700, occurred_at: '2026-09-01T03:00:00Z' } });
    // One that moves a day within August (17:00Z on Aug 15 is Aug 15 both ways) does not block.
    await api.post('/incomes', { data: { account_id: a.id, amount_cents: 50, occurred_at: '2026-08-15T17:00:00Z' } });
    await json(app, ['period', 'close', '--company', t.companyId, '--year', '2026', '--month', '8']);
    const august = async () => (await api.get('/reports/income-statement?start_on=2026-08-01&end_on=2026-08-31')).body.data.currencies[0]?.net_cents;
    const before = await august();
    assert.equal(before, 750);
    const refused = await wsctl(app, ['company', 'update', t.companyId, '--timezone', 'Europe/Madrid']);
    assertOneLineError(refused, /closed month\(s\) 2026-08; reopen them first \(wsctl period open\)/);
    assert.equal((await api.get('/company')).body.data.timezone, 'America/Mexico_City', 'the zone is kept');
    assert.equal(await august(), before, 'the closed month\'s figures are kept');
    // Reopened, the change goes through; a zone that moves nothing across a closed month was never blocked.
    assert.equal((await json(app, ['company', 'update', t.companyId, '--timezone', 'America/Monterrey'])).timezone, 'America/Monterrey');
    await json(app, ['period', 'open', '--company', t.companyId, '--year', '2026', '--month', '8']);
    assert.equal((await json(app, ['company', 'update', t.companyId, '--timezone', 'Europe/Madrid'])).timezone, 'Europe/Madrid');
  });

  test('a time-zone change is refused when one record leaves a closed month and an equal one arrives: the totals would agree, the records would not', async () => {
    const { t, api } = await newTenant();
    const a = await account(api, { opening_on: '2026-01-01' });
    // In Mexico City 03:00Z on March 1 is February, and 03:00Z on April 1 is March 31; in UTC, one is
    // March and the other April. The same amount and category: March's totals are the same either way.
    const leaving = (await api.post('/incomes', { data: { account_id: a.id, amount_cents: 100, category: 'renta', occurred_at: '2026-04-01T03:00:00Z' } })).body.data;
    await api.post('/incomes', { data: { account_id: a.id, amount_cents: 100, category: 'renta', occurred_at: '2026-03-01T03:00:00Z' } });
    await json(app, ['period', 'close', '--company', t.companyId, '--year', '2026', '--month', '3']);
    const refused = await wsctl(app, ['company', 'update', t.companyId, '--timezone', 'UTC']);
    assertOneLineError(refused, /closed month\(s\) 2026-03; reopen them first/);
    assert.equal((await api.get('/company')).body.data.timezone, 'America/Mexico_City');
    // The income dated in the closed March stays there: it cannot be deleted.
    const deleted = await api.delete(`/incomes/${leaving.id}`);
    assert.equal(deleted.status, 422, deleted.text);
    assert.equal(deleted.body.error, 'period_locked');
  });

  test('scopes and tenant isolation', async () => {
    const a = await account(api);
    const income = (await api.post('/incomes', { data: { account_id: a.id, amount_cents: 100, occurred_at: '2026-08-01T17:00:00Z' } })).body.data;
    const { api: other } = await newTenant();
    assert.equal((await other.get(`/accounts/${a.id}`)).status, 404);
    assert.equal((await other.get(`/incomes/${income.id}`)).status, 404);
    assert.equal((await other.post('/incomes', { data: { account_id: a.id, amount_cents: 100, occurred_at: '2026-08-01T17:00:00Z' } })).status, 422);
    assert.equal((await other.get('/reports/balance-sheet')).body.data.currencies.length, 0);
    const limited = await seedTenant(app.pool, { scopes: ['read-accounts'] });
    const ro = client(app.baseUrl, limited.key);
    assert.equal((await ro.get('/accounts')).status, 200);
    assert.equal((await ro.get('/reports/balance-sheet')).status, 403);
    assert.equal((await ro.post('/sales', { data: {} })).status, 403);
  });
});
