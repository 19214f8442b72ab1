// The MCP server (contract: "MCP server", MCP error codes, MCP quota): the
// official TypeScript SDK client connects with an API key, lists and calls
// the tools; raw JSON-RPC checks each error code and protocol-version case;
// the quota is exact under concurrency.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { updateCompany } from '../api/admin/companies.ts';
import { issueKey } from '../api/admin/keys.ts';
import { KeyCache } from '../api/auth/key-cache.ts';
import { ActivityLog } from '../api/mcp/activity-log.ts';
import { cycleOf, McpQuota } from '../api/mcp/quota.ts';
import { createPool } from '../db/pool.ts';
import { client, requestRepeatingHeaders, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { json } from './helpers/cli.ts';
import { waitFor } from './helpers/wait.ts';

describe('MCP server', () => {
  let app: TestApp;
  let tenant: Tenant;
  let url: string;
  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { plan: 'starter', rateLimitPerMinute: 100_000 });
    url = `${app.url}/api/mcp/v1`;
    const api = client(app.baseUrl, tenant.key);
    await api.post('/customers', { data: { name: 'Ana Pérez', email: 'ana@example.com' } });
    await api.post('/customers', { data: { name: 'Beto Ruiz', email: 'beto@example.com' } });
  });
  after(() => app.close());

  const rpc = async (body: unknown, key = tenant.key, headers: Record<string, string> = {}) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  };
  const call = (name: string, args: unknown = {}, key = tenant.key, id: number | string = 1) => rpc({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }, key);

  test("list tools take the REST list's filters under its names: q (search is its alias), status, brand_id and product_category_id", async () => {
    const api = client(app.baseUrl, tenant.key);
    const brand = (await api.post('/brands', { data: { name: `Marca MCP ${Date.now()}` } })).body.data;
    const kept = (await api.post('/products', { data: { name: 'Taza filtro MCP', prices_cents: { mxn: 100 }, brand_id: brand.id } })).body.data;
    const archived = (await api.post('/products', { data: { name: 'Plato filtro MCP', prices_cents: { mxn: 100 }, brand_id: brand.id, status: 'archived' } })).body.data;
    const names = async (name: string, args: Record<string, unknown>) => {
      const res = await call(name, args);
      assert.ok(res.body.result, `${name} ${JSON.stringify(args)}: ${JSON.stringify(res.body.error)}`);
      const key = name.slice('list_'.length);
      return res.body.result.structuredContent[key].map((r: any) => r.name).sort();
    };
    assert.deepEqual(await names('list_products', { brand_id: brand.id, status: 'archived' }), [archived.name]);
    assert.deepEqual(await names('list_products', { brand_id: brand.id, status: 'active' }), [kept.name]);
    assert.deepEqual(await names('list_products', { q: 'filtro MCP', status: 'active' }), [kept.name]);
    // As in REST: with both, q wins over its alias.
    assert.deepEqual(await names('list_customers', { q: 'beto', search: 'ana' }), ['Beto Ruiz']);
    assert.deepEqual(await names('list_customers', { search: 'ana' }), ['Ana Pérez']);
    assert.deepEqual(await names('list_customers', { q: 'PEREZ' }), ['Ana Pérez'], 'accents and case ignored, as in REST');
    assert.deepEqual(await names('list_leads', { q: 'nadie-con-este-nombre' }), []);
    const rest = (await api.get(`/products?brand_id=${brand.id}&status=archived`)).body.data.map((p: any) => p.name);
    assert.deepEqual(rest, [archived.name], 'the REST list agrees');
    // A brand or category of only commas and blanks names nothing, as in REST: the filter is absent (the alias then counts).
    for (const [args, query] of [
      [{ brand: ',', brand_id: brand.id, status: 'archived' }, `brand=,&brand_id=${brand.id}&status=archived`],
      [{ category: ' , ', q: 'filtro MCP', status: 'active' }, 'category=%20,%20&q=filtro%20MCP&status=active'],
    ] as const) {
      const viaRest = (await api.get(`/products?${query}`)).body.data.map((p: any) => p.name).sort();
      assert.ok(viaRest.length > 0, query);
      assert.deepEqual(await names('list_products', args), viaRest, query);
    }
  });

  test('every list tool takes the filters of its REST list under the same names (DESIGN.md), as the published documents say', async () => {
    const sdk = new Client({ name: 'test-client', version: '1.0.0' });
    await sdk.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${tenant.key}` } } }));
    const { tools } = await sdk.listTools();
    const openapi = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as any;
    // Paging is the tools' own (page, per_page); the rest of a REST list's parameters are filters.
    const paging = new Set(['limit', 'starting_after', 'ending_before', 'page', 'include_total', 'include_filtered_total']);
    const lists: Record<string, string> = {
      list_customers: '/customers', list_products: '/products', list_leads: '/leads', list_accounts: '/accounts',
      list_incomes: '/incomes', list_expenses: '/expenses', list_calendar_events: '/calendar/events',
    };
    for (const [tool, path] of Object.entries(lists)) {
      const filters = openapi.paths[path].get.parameters.filter((p: any) => p.in === 'query' && !paging.has(p.name)).map((p: any) => p.name);
      const takes = Object.keys((tools.find((t) => t.name === tool)!.inputSchema as any).properties);
      assert.deepEqual(filters.filter((name: string) => !takes.includes(name)), [], `${tool} lacks filters of GET ${path}`);
    }
    await sdk.close();
  });

  test('the official SDK client connects with an API key, lists the tools and calls them', async () => {
    const sdk = new Client({ name: 'test-client', version: '1.0.0' });
    await sdk.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${tenant.key}` } } }));
    const { tools } = await sdk.listTools();
    // The contract's eleven tools, in its order.
    assert.deepEqual(tools.map((t) => t.name), [
      'list_customers', 'list_products', 'list_leads', 'list_accounts', 'list_incomes', 'list_expenses',
      'list_calendar_events', 'get_company', 'get_balance_sheet', 'get_income_statement', 'get_cash_flow',
    ]);
    for (const tool of tools) {
      assert.equal(tool.annotations?.readOnlyHint, true);
      assert.equal((tool.inputSchema as any).additionalProperties, false, tool.name);
      assert.ok(tool.outputSchema, tool.name);
    }
    // What the published input schemas refuse, the server refuses, and the other way round: a client
    // validating its arguments against them does not send a call that fails (-32602).
    const ajv = new Ajv2020({ strict: false });
    const schemaOf = (name: string) => ajv.compile(tools.find((t) => t.name === name)!.inputSchema);
    const refusedByBoth: Array<[string, Record<string, unknown>]> = [
      ['get_balance_sheet', { as_of: '1899-12-31' }],
      ['get_income_statement', { start_on: '0999-01-01', end_on: '2026-01-31' }],
      ['list_accounts', { currency: 'MXN' }],
      ['list_incomes', { from: '0000-01-01T00:00:00Z' }],
      ['list_incomes', { account_id: 'ABCDEF0123456789ABCDEF01' }],
      ['list_calendar_events', { to: '1899-12-31' }],
      ['list_incomes', { from: '9999-12-31' }],
      ['list_calendar_events', { to: '9999-12-31' }],
    ];
    for (const [name, args] of refusedByBoth) {
      assert.equal(schemaOf(name)(args), false, `${name} ${JSON.stringify(args)}: the schema refuses it`);
      assert.equal((await call(name, args)).body.error?.code, -32602, `${name} ${JSON.stringify(args)}: the server refuses it`);
    }
    for (const [name, args] of [['get_balance_sheet', { as_of: '1900-01-01' }], ['list_incomes', { from: '0001-01-01T00:00:00Z' }], ['list_accounts', { currency: 'mxn' }], ['list_expenses', { to: '9999-12-30' }]] as const) {
      assert.equal(schemaOf(name)(args), true, `${name} ${JSON.stringify(args)}: the schema takes it`);
      assert.equal((await call(name, args)).body.error, undefined, `${name} ${JSON.stringify(args)}: the server takes it`);
    }
    const customers = await sdk.callTool({ name: 'list_customers', arguments: { search: 'ana' } });
    assert.equal(customers.isError, false);
    const structured = customers.structuredContent as any;
    assert.deepEqual(structured.customers.map((c: any) => c.name), ['Ana Pérez']);
    assert.deepEqual(structured.meta, { page: 1, per_page: 25, total: 1, has_more: false });
    assert.deepEqual(JSON.parse((customers.content as any)[0].text), structured);
    const company = await sdk.callTool({ name: 'get_company', arguments: {} });
    assert.equal((company.structuredContent as any).company.id, tenant.companyId);
    for (const name of ['list_products', 'list_leads', 'list_calendar_events', 'list_accounts', 'list_incomes', 'list_expenses']) {
      const res = await sdk.callTool({ name, arguments: { per_page: 5 } });
      assert.equal(res.isError, false, name);
    }
    // The money tools read what the REST API wrote (the SDK checks every result against its outputSchema).
    const api = client(app.baseUrl, tenant.key);
    const bank = (await api.post('/accounts', { data: { name: 'Banco MCP', kind: 'bank', currency: 'mxn', opening_balance_cents: 1000, opening_on: '2026-01-01' } })).body.data;
    const income = (await api.post('/incomes', { data: { account_id: bank.id, amount_cents: 500, occurred_at: '2026-02-10T17:00:00Z', category: 'servicios' } })).body.data;
    await api.post('/expenses', { data: { account_id: bank.id, amount_cents: 200, occurred_at: '2026-02-11T17:00:00Z', supplier_name: 'Papelería Sol', status: 'pending' } });
    await api.post('/accounts', { data: { name: 'Cuenta en dólares', kind: 'bank', currency: 'usd' } });
    const accounts = (await sdk.callTool({ name: 'list_accounts', arguments: { currency: 'mxn' } })).structuredContent as any;
    assert.deepEqual(accounts.accounts.find((a: any) => a.id === bank.id).balance_cents, 1500);
    assert.equal(accounts.meta.totals.mxn.balance_cents >= 1500, true);
    // A filtered list's total counts its matches (it was every account of the company).
    assert.equal(accounts.meta.total, accounts.accounts.length);
    assert.equal(accounts.accounts.every((a: any) => a.currency === 'mxn'), true);
    const usd = (await sdk.callTool({ name: 'list_accounts', arguments: { currency: 'usd' } })).structuredContent as any;
    assert.deepEqual([usd.accounts.length, usd.meta.total], [1, 1]);
    const archived = (await sdk.callTool({ name: 'list_accounts', arguments: { archived: true } })).structuredContent as any;
    assert.deepEqual([archived.accounts.length, archived.meta.total], [0, 0]);
    const incomes = (await sdk.callTool({ name: 'list_incomes', arguments: { account_id: bank.id, from: '2026-02-01T00:00:00Z', to: '2026-03-01T00:00:00Z' } })).structuredContent as any;
    assert.deepEqual(incomes.incomes.map((i: any) => i.id), [income.id]);
    assert.equal(incomes.meta.total, 1);
    // Days, as list_calendar_events and the REST lists read them: the company's zone, `to` included whole.
    const byDay = async (from: string, to: string) => ((await sdk.callTool({ name: 'list_incomes', arguments: { account_id: bank.id, from, to } })).structuredContent as any).incomes.map((i: any) => i.id);
    assert.deepEqual(await byDay('2026-02-10', '2026-02-10'), [income.id]);
    assert.deepEqual(await byDay('2026-02-11', '2026-02-28'), []);
    assert.deepEqual(await byDay('2026-02-01', '2026-02-09'), []);
    const expenses = (await sdk.callTool({ name: 'list_expenses', arguments: { supplier: 'sol', status: 'pending' } })).structuredContent as any;
    assert.deepEqual(expenses.expenses.map((e: any) => e.supplier_name), ['Papelería Sol']);
    // The REST list's text search, under its names: q (search its alias), as GET /expenses?q= takes.
    for (const args of [{ q: 'PAPELERIA' }, { search: 'papelería sol' }, { q: 'sol', supplier: 'nadie' }]) {
      const found = (await sdk.callTool({ name: 'list_expenses', arguments: args })).structuredContent as any;
      assert.deepEqual(found.expenses.map((e: any) => e.supplier_name), ['Papelería Sol'], JSON.stringify(args));
    }
    const sheet = (await sdk.callTool({ name: 'get_balance_sheet', arguments: { as_of: '2026-02-28' } })).structuredContent as any;
    const mxn = sheet.currencies.find((c: any) => c.currency === 'mxn');
    assert.equal(mxn.assets.total_cents, mxn.liabilities.total_cents + mxn.equity.total_cents);
    const statement = (await sdk.callTool({ name: 'get_income_statement', arguments: { start_on: '2026-02-01', end_on: '2026-02-28' } })).structuredContent as any;
    assert.equal(statement.currencies[0].net_cents, 300);
    const flow = (await sdk.callTool({ name: 'get_cash_flow', arguments: { start_on: '2026-02-01', end_on: '2026-02-28' } })).structuredContent as any;
    assert.deepEqual(flow.currencies[0], { currency: 'mxn', opening_balance_cents: 1000, inflows_cents: 500, outflows_cents: 0, closing_balance_cents: 1500 });
    const backwards = await sdk.callTool({ name: 'get_income_statement', arguments: { start_on: '2026-02-28', end_on: '2026-02-01' } }).catch((e) => e);
    assert.equal(backwards.code ?? backwards.isError, -32003);
    assert.deepEqual(await sdk.ping(), {});
    await sdk.close();
  });

  test('JSON-RPC errors: -32700, -32600, -32601, -32602, -32002, -32001, -32003; notifications are 202 with no body', async () => {
    assert.equal((await rpc('{"jsonrpc": "2.0", "id": 1,')).body.error.code, -32700);
    // Valid JSON over the 256 KB limit: 413 with an error naming the limit, not a parse error.
    const big = await rpc({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(300 * 1024) } });
    assert.deepEqual([big.status, big.body.error.code], [413, -32600]);
    assert.match(big.body.error.message, /256 KB/);
    assert.equal((await rpc({ id: 1, method: 'ping' })).body.error.code, -32600);
    assert.equal((await rpc({ jsonrpc: '1.0', id: 1, method: 'ping' })).body.error.code, -32600);
    // An invalid message's id is echoed only when it is one (a string or a number); a 100-deep object id is null, not a crash.
    const deepId = JSON.parse(`${'{"a":'.repeat(100)}1${'}'.repeat(100)}`);
    const odd = await rpc({ jsonrpc: '2.0', id: deepId, method: 'ping' });
    assert.equal(odd.status, 200);
    assert.deepEqual([odd.body.id, odd.body.error.code], [null, -32600]);
    assert.equal((await rpc({ jsonrpc: '2.0', id: 1, method: 'resources/list' })).body.error.code, -32601);
    // A page size past 100 is cut to 100, as REST's `limit` (contract, Limits: silently capped); below 1 it is refused.
    const capped = await call('list_customers', { per_page: 500 });
    assert.equal(capped.body.result.structuredContent.meta.per_page, 100, JSON.stringify(capped.body));
    assert.equal((await call('list_customers', { per_page: 0 })).body.error.code, -32602);
    assert.equal((await call('list_customers', { nope: true })).body.error.code, -32602);
    // Arguments that are not an object are named as `arguments`, the field the client sent.
    for (const args of [[1], null, 'x']) {
      const notObject = await call('list_customers', args);
      assert.equal(notObject.body.error.code, -32602, JSON.stringify(args));
      assert.deepEqual(Object.keys(notObject.body.error.data.errors), ['arguments']);
    }
    // A day that does not exist is named as what is expected, not as a bare "invalid input".
    const noDay = await call('list_calendar_events', { from: '2026-02-30' });
    assert.equal(noDay.body.error.code, -32602);
    assert.match(noDay.body.error.data.errors.from[0], /YYYY-MM-DD/);
    // Text no column can hold is an invalid argument (it reached the query and answered -32603).
    for (const search of ['a\u0000b', 'a\ud800b']) {
      const bad = await call('list_customers', { search });
      assert.equal(bad.body.error.code, -32602, JSON.stringify(search));
      assert.ok(bad.body.error.data.errors.search, JSON.stringify(bad.body.error));
    }
    assert.equal((await call('delete_everything')).body.error.code, -32002);
    assert.equal((await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { arguments: {} } })).body.error.code, -32602, 'no name: invalid params');
    const scoped = await seedTenant(app.pool, { plan: 'starter', scopes: ['read-customers'] });
    const forbidden = await call('list_products', {}, scoped.key);
    assert.equal(forbidden.body.error.code, -32001);
    const listed = await rpc({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, scoped.key);
    assert.deepEqual(listed.body.result.tools.map((t: any) => t.name), ['list_customers'], 'tools/list hides what the credential cannot use');
    // A window ending before it starts is -32003 on every tool that takes one.
    for (const tool of ['list_calendar_events', 'list_incomes', 'list_expenses']) {
      const failed = await call(tool, { from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' });
      assert.equal(failed.body.error?.code, -32003, tool);
    }
    // An argument the REST query refuses (more than 100 brand values) is an invalid argument, not a failed run.
    const brands = await call('list_products', { brand: Array.from({ length: 101 }, (_, i) => `marca-${i}`).join(',') });
    assert.equal(brands.body.error?.code, -32602, JSON.stringify(brands.body));
    assert.match(brands.body.error.data.errors.brand[0], /100/, 'data.errors names the argument, as every -32602 does');
    // Positional params are valid JSON-RPC with invalid params for MCP's methods: -32602, not -32600.
    assert.equal((await rpc({ jsonrpc: '2.0', id: 1, method: 'ping', params: [] })).body.error.code, -32602);
    assert.equal((await rpc({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: ['list_customers', {}] })).body.error.code, -32602);
    assert.equal((await rpc({ jsonrpc: '2.0', id: 1, method: 'ping', params: 'x' })).body.error.code, -32600, 'params neither object nor array: a bad structure');
    // MCP: a request id is never null; a response sent by the client is accepted with 202 and no body.
    const nullId = await rpc({ jsonrpc: '2.0', id: null, method: 'ping' });
    assert.deepEqual([nullId.body.id, nullId.body.error?.code], [null, -32600]);
    const response = await rpc({ jsonrpc: '2.0', id: 1, result: {} });
    assert.deepEqual([response.status, response.body], [202, null]);
    const note = await rpc({ jsonrpc: '2.0', method: 'notifications/initialized' });
    assert.equal(note.status, 202);
    assert.equal(note.body, null);
  });

  test('list_calendar_events takes the REST list\'s filters: a day read in the company\'s zone, kind and source', async () => {
    const t = await seedTenant(app.pool, { plan: 'starter', rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, t.key);
    // Company zone America/Mexico_City (-06:00): 2026-12-01 runs from 06:00Z to 06:00Z the next day.
    const make = async (title: string, starts_at: string, ends_at: string, kind = 'event') =>
      (await api.post('/calendar/events', { data: { user_id: t.ownerId, title, starts_at, ends_at, kind } })).body.data.id;
    const late = await make('Tarde del 1', '2026-12-02T03:00:00Z', '2026-12-02T04:00:00Z', 'meeting'); // 21:00 local on Dec 1
    const early = await make('Mañana del 1', '2026-12-01T15:00:00Z', '2026-12-01T16:00:00Z');
    await make('Del 2', '2026-12-02T15:00:00Z', '2026-12-02T16:00:00Z');
    const ids = async (args: Record<string, unknown>) => {
      const res = await call('list_calendar_events', args, t.key);
      assert.equal(res.body.error, undefined, JSON.stringify(res.body.error));
      return res.body.result.structuredContent.calendar_events.map((e: any) => e.id).sort();
    };
    const rest = async (query: string) => (await api.get(`/calendar/events?${query}`)).body.data.map((e: any) => e.id).sort();
    assert.deepEqual(await ids({ from: '2026-12-01', to: '2026-12-01' }), [late, early].sort());
    assert.deepEqual(await ids({ from: '2026-12-01', to: '2026-12-01' }), await rest('from=2026-12-01&to=2026-12-01'), 'the same as REST');
    assert.deepEqual(await ids({ from: '2026-12-01', to: '2026-12-01', kind: 'meeting' }), [late]);
    assert.deepEqual(await ids({ from: '2026-12-01', source: 'booking' }), []);
    assert.equal((await call('list_calendar_events', { from: '2026-12-02', to: '2026-12-01' }, t.key)).body.error.code, -32003, 'a window ending before it starts');
    assert.equal((await call('list_calendar_events', { kind: 'party' }, t.key)).body.error.code, -32602);
  });

  test('a filtered total at its cap says so (total_capped), as REST\'s filtered_total_capped', async () => {
    const t = await seedTenant(app.pool, { plan: 'starter', rateLimitPerMinute: 100_000 });
    const api = client(app.baseUrl, t.key);
    for (let i = 0; i < 110; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => api.post('/customers', { data: { name: `Capado ${i + j}` } })));
    }
    const capped = (await call('list_customers', { search: 'Capado' }, t.key)).body.result.structuredContent.meta;
    assert.deepEqual([capped.total, capped.total_capped], [100, true]);
    const rest = (await api.get('/customers?search=Capado&include_filtered_total=true')).body.meta;
    assert.deepEqual([rest.filtered_total, rest.filtered_total_capped], [100, true], 'the same cap as REST');
    const exact = (await call('list_customers', { search: 'Capado 10' }, t.key)).body.result.structuredContent.meta;
    assert.equal(exact.total, 11); // "Capado 10" and "Capado 100" … "Capado 109"
    assert.equal(exact.total_capped, undefined);
  });

  test('protocol versions: a supported one is echoed, an unknown one gets the newest; an unsupported header is HTTP 400 -32600', async () => {
    for (const [asked, answered] of [['2025-03-26', '2025-03-26'], ['2025-06-18', '2025-06-18'], ['2099-01-01', '2025-11-25']]) {
      const res = await rpc({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: asked, capabilities: {}, clientInfo: { name: 't', version: '1' } } });
      assert.equal(res.body.result.protocolVersion, answered);
    }
    // MCP's InitializeRequest requires protocolVersion, capabilities and clientInfo: without them, -32602 (it answered a result).
    for (const params of [undefined, { protocolVersion: 5, capabilities: {}, clientInfo: { name: 't', version: '1' } }, { protocolVersion: '2025-03-26', clientInfo: { name: 't', version: '1' } }, { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't' } }]) {
      const res = await rpc({ jsonrpc: '2.0', id: 7, method: 'initialize', ...(params ? { params } : {}) });
      assert.deepEqual([res.status, res.body.id, res.body.error?.code, res.body.result], [200, 7, -32602, undefined], JSON.stringify(params));
    }
    const bad = await rpc({ jsonrpc: '2.0', id: 1, method: 'ping' }, tenant.key, { 'mcp-protocol-version': '1999-01-01' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, -32600);
    assert.equal((await rpc({ jsonrpc: '2.0', id: 1, method: 'ping' }, tenant.key, { 'mcp-session-id': 'ignored' })).body.result !== undefined, true);
  });

  test('a failure of ours inside a tool is JSON-RPC -32603 with the request id (HTTP 200), alone as in a batch, not the REST API\'s 500', async () => {
    // A query that fails for a reason no argument explains: its table away for a moment.
    await app.pool.query('ALTER TABLE leads RENAME TO leads_parked');
    try {
      const alone = await call('list_leads', {}, tenant.key, 'solo');
      assert.equal(alone.status, 200);
      assert.equal(alone.body.id, 'solo');
      assert.equal(alone.body.error.code, -32603);
      assert.match(alone.body.error.message, /^Error interno/);
      assert.doesNotMatch(JSON.stringify(alone.body), /leads_parked|relation|SELECT/, 'no SQL reaches the client');
      const batch = await rpc([
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_leads', arguments: {} } },
        { jsonrpc: '2.0', id: 2, method: 'ping' },
      ]);
      assert.deepEqual(batch.body.map((r: any) => [r.id, r.error?.code ?? 'ok']), [[1, -32603], [2, 'ok']]);
    } finally {
      await app.pool.query('ALTER TABLE leads_parked RENAME TO leads');
    }
    assert.ok((await call('list_leads')).body.result, 'and it answers again');
  });

  test('JSON-RPC batches (protocol 2025-03-26): answered in order in one array; refused under 2025-06-18 and later', async () => {
    const batch = [
      { jsonrpc: '2.0', id: 'a', method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'list_customers', arguments: { search: 'Ana' } } },
      { id: 'c', method: 'ping' },
      { jsonrpc: '2.0', id: 'd', method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
      { jsonrpc: '2.0', id: 'z', result: {} },
    ];
    // Without the header a server assumes 2025-03-26 (transport spec), as with it.
    for (const headers of [{}, { 'mcp-protocol-version': '2025-03-26' }] as Array<Record<string, string>>) {
      const res = await rpc(batch, tenant.key, headers);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.map((r: any) => r.id), ['a', 'b', 'c', 'd']);
      assert.deepEqual(res.body[0].result, {});
      assert.deepEqual(res.body[1].result.structuredContent.customers.map((c: any) => c.name), ['Ana Pérez']);
      assert.equal(res.body[2].error.code, -32600);
      assert.equal(res.body[3].error.code, -32600, 'initialize is never batched');
    }
    const onlyNotifications = await rpc([{ jsonrpc: '2.0', method: 'notifications/initialized' }]);
    assert.equal(onlyNotifications.status, 202);
    assert.equal(onlyNotifications.body, null);
    assert.equal((await rpc([])).body.error.code, -32600);
    assert.equal((await rpc(Array.from({ length: 51 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' })))).body.error.code, -32600);
    for (const version of ['2025-06-18', '2025-11-25']) {
      const refused = await rpc([{ jsonrpc: '2.0', id: 1, method: 'ping' }], tenant.key, { 'mcp-protocol-version': version });
      assert.equal(refused.body.error.code, -32600, version);
    }
  });

  test('HTTP level: an invalid key is 401 invalid_key with WWW-Authenticate; GET is the handshake, or 405 for an event stream', async () => {
    const refused = await rpc({ jsonrpc: '2.0', id: 1, method: 'ping' }, 'service_sk_' + 'x'.repeat(43));
    assert.equal(refused.status, 401);
    assert.equal(refused.body.error, 'invalid_key');
    assert.match(refused.headers.get('www-authenticate') ?? '', /^Bearer resource_metadata="http:\/\/.*\/\.well-known\/oauth-protected-resource\/api\/mcp\/v1", scope="read-[a-z_]+( read-[a-z_]+)*", error="invalid_token"$/);
    // No credential at all: the challenge without an error code (RFC 6750 §3.1), what starts a client's OAuth flow.
    const bare = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) });
    assert.equal(bare.status, 401);
    assert.match(bare.headers.get('www-authenticate') ?? '', /^Bearer resource_metadata="[^"]+", scope="[^"]+"$/);
    // `scope` names what to ask for: the resource metadata's scopes_supported (MCP authorization, 2025-11-25).
    const prm = (await (await fetch(new URL('/.well-known/oauth-protected-resource/api/mcp/v1', url))).json()) as { scopes_supported: string[] };
    assert.deepEqual(/scope="([^"]+)"/.exec(bare.headers.get('www-authenticate')!)![1].split(' '), prm.scopes_supported);
    // A malformed Bearer header is a credential sent, and malformed (invalid_request); another scheme is none.
    const challenge = async (authorization: string) =>
      (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }) })).headers.get('www-authenticate') ?? '';
    assert.match(await challenge(`Bearer ${tenant.key} extra`), /^Bearer resource_metadata="[^"]+", scope="[^"]+", error="invalid_request"$/);
    assert.match(await challenge('Bearer'), /^Bearer resource_metadata="[^"]+", scope="[^"]+", error="invalid_request"$/);
    assert.match(await challenge('Basic dXNlcjpwYXNz'), /^Bearer resource_metadata="[^"]+", scope="[^"]+"$/);
    // Two Authorization headers are a malformed request, even when the first is a valid key (Node keeps the first).
    const twice = await requestRepeatingHeaders(url, 'POST', { 'content-type': 'application/json', authorization: [`Bearer ${tenant.key}`, 'Bearer service_sk_other'] }, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }));
    assert.equal(twice.status, 401);
    assert.equal(JSON.parse(twice.text).error, 'invalid_key');
    assert.match(String(twice.headers['www-authenticate']), /^Bearer resource_metadata="[^"]+", scope="[^"]+", error="invalid_request"$/);
    const hello = await fetch(url);
    assert.equal(hello.status, 200);
    assert.deepEqual(((await hello.json()) as any).protocol_versions, ['2025-11-25', '2025-06-18', '2025-03-26']);
    const sse = await fetch(url, { headers: { accept: 'text/event-stream' } });
    assert.equal(sse.status, 405);
    assert.equal(sse.headers.get('allow'), 'POST');
  });

  test('quota cycles are whole months from the company\'s creation; a month without that day ends on its last day', () => {
    const iso = (c: { start: Date; end: Date }) => [c.start.toISOString(), c.end.toISOString()];
    const jan31 = new Date('2026-01-31T10:00:00Z');
    assert.deepEqual(iso(cycleOf(jan31, new Date('2026-02-15T00:00:00Z'))), ['2026-01-31T10:00:00.000Z', '2026-02-28T10:00:00.000Z']);
    assert.deepEqual(iso(cycleOf(jan31, new Date('2026-03-01T12:00:00Z'))), ['2026-02-28T10:00:00.000Z', '2026-03-31T10:00:00.000Z']);
    assert.deepEqual(iso(cycleOf(jan31, new Date('2026-03-31T09:59:59Z'))), ['2026-02-28T10:00:00.000Z', '2026-03-31T10:00:00.000Z']);
    assert.deepEqual(iso(cycleOf(jan31, new Date('2026-04-30T10:00:00Z'))), ['2026-04-30T10:00:00.000Z', '2026-05-31T10:00:00.000Z']);
    assert.deepEqual(iso(cycleOf(new Date('2024-02-29T00:00:00Z'), new Date('2025-02-28T00:00:00Z'))), ['2025-02-28T00:00:00.000Z', '2025-03-29T00:00:00.000Z']);
    assert.deepEqual(iso(cycleOf(new Date('2026-05-30T00:00:00Z'), new Date('2027-02-28T23:00:00Z'))), ['2027-02-28T00:00:00.000Z', '2027-03-30T00:00:00.000Z']);
    assert.deepEqual(iso(cycleOf(new Date('2026-11-15T08:00:00Z'), new Date('2026-11-15T08:00:00Z'))), ['2026-11-15T08:00:00.000Z', '2026-12-15T08:00:00.000Z']);
    // Every instant of two years falls in the cycle returned for it, and cycles follow one another.
    for (const anchor of ['2026-01-29T23:30:00Z', '2026-01-30T00:00:00Z', '2026-01-31T12:00:00Z', '2026-03-31T00:00:00Z']) {
      let previous: { start: Date; end: Date } | null = null;
      for (let t = Date.parse(anchor); t < Date.parse(anchor) + 730 * 86_400_000; t += 6 * 3_600_000) {
        const c = cycleOf(new Date(anchor), new Date(t));
        assert.ok(c.start.getTime() <= t && t < c.end.getTime(), `${anchor} at ${new Date(t).toISOString()}`);
        if (previous && previous.start.getTime() !== c.start.getTime()) assert.equal(c.start.getTime(), previous.end.getTime());
        previous = c;
      }
    }
  });

  test('quota: a plan without MCP is -32004 available:false; 600 concurrent calls on a 500-call plan give exactly 500', async () => {
    const free = await seedTenant(app.pool, { plan: 'free' });
    const none = await call('list_customers', {}, free.key);
    assert.equal(none.body.error.code, -32004);
    assert.equal(none.body.error.data.available, false);
    assert.equal(none.body.error.data.limit, 0);
    assert.match(none.body.error.data.resets_at, /^\d{4}-\d\d-\d\dT/);
    const starter = await seedTenant(app.pool, { plan: 'starter', rateLimitPerMinute: 100_000 });
    const results = await Promise.all(Array.from({ length: 600 }, (_, i) => call('get_company', {}, starter.key, i)));
    const ok = results.filter((r) => r.body.result).length;
    const over = results.filter((r) => r.body.error?.code === -32004);
    assert.equal(ok, 500);
    assert.equal(over.length, 100);
    assert.deepEqual({ ...over[0].body.error.data, resets_at: undefined }, { limit: 500, used: 500, available: true, resets_at: undefined });
    await updateCompany(app.pool, starter.companyId, { plan: 'enterprise', mcpQuota: 501 });
    assert.ok((await call('get_company', {}, starter.key)).body.result, 'an operator raising the quota lets calls through');
  });

  test('quota far from the limit is counted in batches: waves of calls on a 200-call plan give exactly 200, and the stored count catches up', async () => {
    const t = await seedTenant(app.pool, { plan: 'starter', rateLimitPerMinute: 100_000 });
    await updateCompany(app.pool, t.companyId, { plan: 'enterprise', mcpQuota: 200 });
    const used = async () => (await app.pool.query('SELECT coalesce(sum(used), 0)::int AS n FROM mcp_usage WHERE company_id = $1', [t.companyId])).rows[0].n;
    assert.ok((await call('get_company', {}, t.key)).body.result, 'the first call, exact, syncs the view');
    // 30 waves of 10: most are admitted in memory (far from the limit), the last 50 one by one.
    const outcomes: any[] = [];
    for (let wave = 0; wave < 30; wave++) outcomes.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => call('get_company', {}, t.key, `${wave}-${i}`)))));
    const ok = 1 + outcomes.filter((r) => r.body.result).length;
    const refused = outcomes.filter((r) => r.body.error?.code === -32004);
    assert.equal(ok, 200);
    assert.equal(refused.length, 101);
    assert.equal(refused.at(-1).body.error.data.used, 200);
    assert.equal(await waitFor(async () => ((await used()) === 200 ? 200 : null), 5_000, 'the batched counts to reach the row'), 200);

    // Far from the limit the row is behind for at most a flush interval, then holds every call.
    const big = await seedTenant(app.pool, { plan: 'starter', rateLimitPerMinute: 100_000 });
    await updateCompany(app.pool, big.companyId, { plan: 'enterprise', mcpQuota: 100_000 });
    const bigUsed = async () => (await app.pool.query('SELECT coalesce(sum(used), 0)::int AS n FROM mcp_usage WHERE company_id = $1', [big.companyId])).rows[0].n;
    await call('get_company', {}, big.key);
    for (let wave = 0; wave < 10; wave++) await Promise.all(Array.from({ length: 10 }, (_, i) => call('get_company', {}, big.key, `${wave}-${i}`)));
    assert.equal(await waitFor(async () => ((await bigUsed()) === 101 ? 101 : null), 5_000, 'every call counted'), 101);
  });

  test('quota counts that cannot be written make the exact path refuse (503) rather than risk passing the limit', async () => {
    const t = await seedTenant(app.pool, { plan: 'starter' });
    await updateCompany(app.pool, t.companyId, { plan: 'enterprise', mcpQuota: 1000 });
    const keyCache = new KeyCache(app.databaseUrl);
    await keyCache.start();
    const failing = createPool(app.databaseUrl, 2);
    const quota = new McpQuota(failing, keyCache);
    try {
      assert.deepEqual(await quota.consume(t.companyId), { ok: true }, 'exact: syncs the view');
      for (let i = 0; i < 10; i++) assert.deepEqual(await quota.consume(t.companyId), { ok: true }, 'admitted in memory');
      await failing.end(); // from here on every statement of this counter fails
      await quota.flush(); // the 10 pending calls cannot be written
      await assert.rejects(quota.consume(t.companyId), (error: any) => error.code === 'service_unavailable');
      const { rows } = await app.pool.query('SELECT coalesce(sum(used), 0)::int AS n FROM mcp_usage WHERE company_id = $1', [t.companyId]);
      assert.equal(rows[0].n, 1, 'only the exact call reached the row');
    } finally {
      await quota.close(); // its retries against the ended pool stop here
      await keyCache.close();
    }
  });

  test('quota: a process forgets the views of companies that stopped calling (memory stays bounded by the active ones)', async () => {
    const [a, b] = [await seedTenant(app.pool, { plan: 'starter' }), await seedTenant(app.pool, { plan: 'starter' })];
    for (const t of [a, b]) await updateCompany(app.pool, t.companyId, { plan: 'enterprise', mcpQuota: 1000 });
    const keyCache = new KeyCache(app.databaseUrl);
    await keyCache.start();
    const quota = new McpQuota(app.pool, keyCache);
    try {
      assert.deepEqual(await quota.consume(a.companyId), { ok: true });
      for (let i = 0; i < 5; i++) assert.deepEqual(await quota.consume(a.companyId), { ok: true });
      assert.equal(quota.trackedCompanies, 1);
      await quota.flush();
      // Once a's view is older than the sync interval (1 s), any flush drops it; b's first call flushes.
      await waitFor(async () => {
        assert.deepEqual(await quota.consume(b.companyId), { ok: true });
        await quota.flush();
        return quota.trackedCompanies === 1;
      }, 5_000, 'a forgotten, b tracked');
      const used = async (id: string) => (await app.pool.query('SELECT coalesce(sum(used), 0)::int AS n FROM mcp_usage WHERE company_id = $1', [id])).rows[0].n;
      assert.equal(await used(a.companyId), 6, 'every call of a counted before its view went');
      assert.deepEqual(await quota.consume(a.companyId), { ok: true }, 'a calls again: a fresh exact view');
      assert.equal(await used(a.companyId), 7);
    } finally {
      await keyCache.close();
    }
  });

  test('wsctl mcp activity: the last 25 calls and the 24-hour success rate', async () => {
    const t = await seedTenant(app.pool, { plan: 'starter' });
    await call('get_company', {}, t.key);
    await call('delete_everything', {}, t.key);
    const report = await json(app, ['mcp', 'activity', '--company', t.companyId]);
    assert.deepEqual(report.recent.map((c: any) => [c.tool, c.ok, c.error_code]), [['delete_everything', false, -32002], ['get_company', true, null]]);
    assert.deepEqual(report.last_24h, { calls: 2, succeeded: 1, success_rate: 0.5 });
  });

  test('activity: a tool name no column can hold (U+0000, any length) is kept readable, and costs no other company its rows', async () => {
    const [a, b] = [await seedTenant(app.pool, { plan: 'starter' }), await seedTenant(app.pool, { plan: 'starter' })];
    // Sent together, so both calls wait in the same batch of the activity log.
    const [nul, long, ok] = await Promise.all([call('evil\u0000name', {}, a.key), call('x'.repeat(250_000), {}, a.key), call('list_leads', {}, b.key)]);
    assert.equal(nul.body.error.code, -32002);
    assert.equal(long.body.error.code, -32002);
    assert.ok(long.body.error.message.length < 200, 'the unknown name is not echoed whole');
    assert.ok(ok.body.result);
    const recent = async (t: Tenant) => (await json(app, ['mcp', 'activity', '--company', t.companyId])).recent.map((c: any) => [c.tool, c.error_code]);
    assert.deepEqual(await recent(b), [['list_leads', null]]);
    assert.deepEqual((await recent(a)).sort(), [['evil\uFFFDname', -32002], ['x'.repeat(100), -32002]]);
  });

  test('activity: a row the database refuses (its company deleted while the row waited) is lost alone, not with the batch', async () => {
    const [a, b] = [await seedTenant(app.pool), await seedTenant(app.pool)];
    const log = new ActivityLog(app.pool);
    const row = (companyId: string) => ({ companyId, credential: 'key:test', tool: 'get_company', ok: true, errorCode: null, durationMs: 1 });
    log.record(row(a.companyId));
    log.record(row('co_deleted_meanwhile'));
    log.record(row(b.companyId));
    await log.flush();
    const { rows } = await app.pool.query('SELECT company_id FROM mcp_calls WHERE company_id = ANY($1) ORDER BY id', [[a.companyId, b.companyId, 'co_deleted_meanwhile']]);
    assert.deepEqual(rows.map((r) => r.company_id), [a.companyId, b.companyId]);
  });

  test('Origin: a browser page on a plain-http site cannot drive the server (403 origin_not_allowed); https and loopback origins pass', async () => {
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    const refused = await rpc(ping, tenant.key, { origin: 'http://evil.example' });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error, 'origin_not_allowed');
    assert.equal((await rpc(ping, tenant.key, { origin: 'null' })).status, 403);
    assert.deepEqual((await rpc(ping, tenant.key, { origin: 'https://claude.ai' })).body.result, {});
    assert.deepEqual((await rpc(ping, tenant.key, { origin: 'http://localhost:6274' })).body.result, {});
  });

  test('CORS: a browser client on an accepted origin passes the preflight and reads answers and the 401 challenge; a refused origin gets no CORS', async () => {
    const origin = 'http://localhost:6274'; // the MCP Inspector
    const preflight = (from: string, path = '/api/mcp/v1') =>
      fetch(`${app.url}${path}`, { method: 'OPTIONS', headers: { origin: from, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, mcp-protocol-version' } });
    const allowed = await preflight(origin);
    assert.equal(allowed.status, 204);
    assert.equal(allowed.headers.get('access-control-allow-origin'), origin);
    assert.match(allowed.headers.get('access-control-allow-methods') ?? '', /POST/);
    for (const header of ['authorization', 'content-type', 'mcp-protocol-version']) assert.match((allowed.headers.get('access-control-allow-headers') ?? '').toLowerCase(), new RegExp(header));
    const ping = await rpc({ jsonrpc: '2.0', id: 1, method: 'ping' }, tenant.key, { origin });
    assert.equal(ping.headers.get('access-control-allow-origin'), origin);
    assert.match(ping.headers.get('vary') ?? '', /Origin/i);
    // Discovery in a browser starts from the 401's WWW-Authenticate, which the page must be allowed to read.
    const denied = await rpc({ jsonrpc: '2.0', id: 1, method: 'ping' }, 'service_sk_wrong', { origin });
    assert.equal(denied.status, 401);
    assert.equal(denied.headers.get('access-control-allow-origin'), origin);
    assert.match(denied.headers.get('access-control-expose-headers') ?? '', /WWW-Authenticate/i);
    // So must a refusal's rate-limit headers (Retry-After on a 429) and the version headers, as on REST.
    const exposed = (denied.headers.get('access-control-expose-headers') ?? '').toLowerCase().split(/\s*,\s*/);
    for (const header of ['retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'x-service-api-version', 'x-service-api-released-at']) {
      assert.ok(exposed.includes(header), header);
      assert.ok(denied.headers.get(header) !== null || header === 'retry-after', `${header} is sent on the 401`);
    }
    // A page elsewhere gets no CORS headers on the preflight (its browser sends nothing) nor on a request.
    const hostile = await preflight('http://evil.example');
    assert.equal(hostile.status, 403);
    assert.equal(hostile.headers.get('access-control-allow-origin'), null);
    assert.equal((await rpc({ jsonrpc: '2.0', id: 1, method: 'ping' }, tenant.key, { origin: 'http://evil.example' })).headers.get('access-control-allow-origin'), null);
    // A key pinned to origins (contract, Authentication 5) is held to its list as on REST: Origin, else
    // Referer, must name a listed host, and a request carrying neither is refused.
    const pinned = await issueKey(app.pool, { companyId: tenant.companyId, scopes: ['read-customers'], origins: ['app.example.com'] });
    const ping2 = { jsonrpc: '2.0', id: 1, method: 'ping' };
    for (const headers of [{ origin: 'https://evil.example' }, { referer: 'https://evil.example/page' }, {}] as Record<string, string>[]) {
      const refused = await rpc(ping2, pinned.secret, headers);
      assert.deepEqual([refused.status, refused.body.error], [403, 'origin_not_allowed'], JSON.stringify(headers));
      const rest = await fetch(`${app.url}/api/v1/customers`, { headers: { authorization: `Bearer ${pinned.secret}`, ...headers } });
      assert.equal(rest.status, 403, `REST answers the same: ${JSON.stringify(headers)}`);
    }
    assert.deepEqual((await rpc(ping2, pinned.secret, { origin: 'https://app.example.com' })).body.result, {});
    assert.deepEqual((await rpc(ping2, pinned.secret, { referer: 'https://app.example.com/tools' })).body.result, {});
    // The discovery documents answer their own preflight (the SDK sends MCP-Protocol-Version with them).
    for (const path of ['/.well-known/oauth-protected-resource/api/mcp/v1', '/.well-known/oauth-authorization-server']) {
      const res = await preflight(origin, path);
      assert.equal(res.status, 204, path);
      assert.equal(res.headers.get('access-control-allow-origin'), '*', path);
      assert.match((res.headers.get('access-control-allow-headers') ?? '').toLowerCase(), /mcp-protocol-version/, path);
    }
  });
});
