// The MCP server's tools (contract: "MCP server", Tools): read-only, each
// with its scope, an input schema from zod (strict: additionalProperties
// false) and an output schema. Tools reach the data through the same query
// modules and serializers as the REST routes, within the credential's company.
// The order is the contract's table.
import { z } from 'zod';
import { calendarDay, windowBound } from '../date-fields.ts';
import { ALL_SCOPES } from '../auth/scopes.ts';
import type { Queryable } from '../../db/pool.ts';
import type { TotalsCache } from '../pagination.ts';
import { likePattern, listPage, searchTerm, textMatch } from '../pagination.ts';
import { listCalendarEvents } from '../routes/calendar-event-queries.ts';
import { EVENT_KINDS, EVENT_SOURCES } from '../routes/calendar-event-schemas.ts';
import { readCompany } from '../routes/company-queries.ts';
import { CONTACT_SEARCH } from '../routes/crm-fields.ts';
import { serializeCustomer, type CustomerRow } from '../routes/customer-queries.ts';
import { serializeLead, type LeadRow } from '../routes/lead-queries.ts';
import { LEAD_STATUSES } from '../routes/lead-schemas.ts';
import { listProducts, productFilters } from '../routes/product-queries.ts';
import { namedFilter, PRODUCT_STATUSES } from '../routes/product-schemas.ts';
import { listAccounts } from '../routes/account-queries.ts';
import { listMovements } from '../routes/movement-queries.ts';
import { balanceSheet, cashFlow, incomeStatement } from '../routes/report-queries.ts';
import { centsTotal, currency } from '../routes/money-fields.ts';
import { companyZone, windowInstants } from '../../db/companies.ts';
import { localDate } from '../../lib/local-dates.ts';

export type ToolContext = { db: Queryable; totals: TotalsCache; companyId: string };

/** An expected failure of a tool that ran (contract: -32003 execution failed). */
export class ToolFailure extends Error {}

export type Tool<I extends z.ZodObject = z.ZodObject> = {
  name: string;
  title: string;
  description: string;
  scope: string;
  input: I;
  output: z.ZodType;
  /** Runs with the arguments `input` parsed (server.ts), typed by it. */
  run: (ctx: ToolContext, args: z.output<I>) => Promise<Record<string, unknown>>;
};

/** A tool whose handler is checked against its own input schema, as defineRoute checks a route's. */
function defineTool<I extends z.ZodObject>(tool: Tool<I>): Tool {
  return tool as unknown as Tool;
}

const paging = {
  page: z.number().int().min(1).max(200).default(1).describe('Página, desde 1 (máximo 200)'),
  // As REST's `limit` (contract, Limits: "max 100 (silently capped)"): a model asking for 200 gets 100, not an error.
  per_page: z.number().int().min(1).default(25).transform((n) => Math.min(n, 100)).describe('Registros por página (por defecto 25; más de 100 se recorta a 100)'),
};
const listMeta = z.object({
  page: z.number().int(),
  per_page: z.number().int(),
  total: z.number().int(),
  // As REST's filtered_total_capped: a filtered count stops at 10,000 (100 with a text search); true when `total` is that cap, not the count.
  total_capped: z.boolean().optional(),
  has_more: z.boolean(),
});
const records = z.array(z.record(z.string(), z.unknown()));
const listOutput = (key: string) => z.object({ [key]: records, meta: listMeta });

type PageQuery = { limit: number; page: number; include_total?: boolean; include_filtered_total?: boolean };
type PageResult = { data: unknown[]; meta: { has_more: boolean; total?: number; filtered_total?: number; filtered_total_capped?: boolean } };

/** Whether any of these tool arguments narrows the list. */
const filtered = (args: Record<string, unknown>, names: string[]) => names.some((name) => args[name] !== undefined && args[name] !== '');

/** Text search under the REST list's names: `q`, and `search` as its alias (ignored when `q` is given). */
const textSearch = {
  q: z.string().trim().max(200).optional().describe('Texto a buscar (no distingue mayúsculas ni acentos)'),
  search: z.string().trim().max(200).optional().describe('Alias de q; se ignora si q está presente'),
};

/**
 * A REST page turned into the MCP list shape `{<plural>: [...], meta: {page,
 * per_page, total, has_more}}`. `total` of an unfiltered list is the
 * collection's total, memoized 60 s per process like REST's `include_total`
 * (a count per call would cost more than the page itself); a filtered list
 * counts its matches (REST's `filtered_total`, capped: `total_capped: true`
 * says `total` is the cap, as REST's `filtered_total_capped`).
 */
async function asList(key: string, args: { page: number; per_page: number }, isFiltered: boolean, load: (page: PageQuery) => Promise<PageResult>) {
  const result = await load({ limit: args.per_page, page: args.page, ...(isFiltered ? { include_filtered_total: true } : { include_total: true }) });
  const total = (isFiltered ? result.meta.filtered_total : result.meta.total) ?? result.data.length;
  const capped = isFiltered && result.meta.filtered_total_capped === true;
  return { [key]: result.data, meta: { page: args.page, per_page: args.per_page, total, ...(capped ? { total_capped: true } : {}), has_more: result.meta.has_more } };
}

/** A window whose `to` is not after its `from` selects nothing by mistake: -32003, the same on every tool taking one. */
function checkRange(args: { from?: string; to?: string }): void {
  if (args.from && args.to && new Date(args.to) <= new Date(args.from)) throw new ToolFailure('`to` debe ser posterior a `from`');
}

const movementFilters = {
  from: windowBound.optional().describe('Ocurridos desde este instante (ISO 8601), o desde la medianoche de un día YYYY-MM-DD (zona de la empresa)'),
  to: windowBound.optional().describe('Ocurridos antes de este instante (ISO 8601); un día YYYY-MM-DD se incluye entero (zona de la empresa)'),
  account_id: z.string().regex(/^[0-9a-f]{24}$/).optional().describe('Cuenta'),
  status: z.enum(['paid', 'pending']).optional(),
  category: z.string().max(100).optional(),
};

export const TOOLS: readonly Tool[] = [
  defineTool({
    name: 'list_customers',
    title: 'Clientes',
    description: 'Lista los clientes de la empresa, del más reciente al más antiguo; `q` (o su alias `search`) busca en nombre, correo y teléfono.',
    scope: 'read-customers',
    input: z.strictObject({ ...textSearch, q: textSearch.q.describe('Texto a buscar en nombre, correo o teléfono (no distingue mayúsculas ni acentos)'), ...paging }),
    output: listOutput('customers'),
    run: ({ db, totals, companyId }, args) =>
      asList('customers', args, filtered(args, ['q', 'search']), (page) =>
        listPage<CustomerRow>(db, totals, {
          table: 'customers',
          columns: '*',
          companyId,
          searching: !!searchTerm(args),
          where: (p) => (searchTerm(args) ? [textMatch(CONTACT_SEARCH, p.add(likePattern(searchTerm(args)!)))] : []),
          serialize: serializeCustomer,
        }, page),
      ),
  }),
  defineTool({
    name: 'list_products',
    title: 'Productos',
    description: 'Lista el catálogo con los filtros de GET /products: búsqueda de texto (`q`), marca o categoría (ids o slugs separados por comas; `brand_id` y `product_category_id` son sus alias) y estado.',
    scope: 'read-products',
    input: z.strictObject({
      ...textSearch,
      q: textSearch.q.describe('Texto a buscar en nombre, SKU y marca (no distingue mayúsculas ni acentos)'),
      brand: z.string().max(4000).optional().describe('Marcas: ids o slugs separados por comas (hasta 100)'),
      brand_id: z.string().max(4000).optional().describe('Alias de brand; se ignora si brand está presente'),
      category: z.string().max(4000).optional().describe('Categorías: ids o slugs separados por comas (hasta 100)'),
      product_category_id: z.string().max(4000).optional().describe('Alias de category; se ignora si category está presente'),
      status: z.enum(PRODUCT_STATUSES).optional().describe('Solo productos con ese estado'),
      ...paging,
    }),
    output: listOutput('products'),
    run: ({ db, totals, companyId }, given) => {
      // As GET /products reads them: a brand or category of only blanks and commas names nothing.
      const args = { ...given, brand: namedFilter(given.brand), brand_id: namedFilter(given.brand_id), category: namedFilter(given.category), product_category_id: namedFilter(given.product_category_id) };
      return asList('products', args, filtered(args, ['q', 'search', 'brand', 'brand_id', 'category', 'product_category_id', 'status']), (page) =>
        listProducts(db, totals, companyId, productFilters(args), page),
      );
    },
  }),
  defineTool({
    name: 'list_leads',
    title: 'Prospectos',
    description: 'Lista el embudo de prospectos, opcionalmente de una etapa.',
    scope: 'read-leads',
    input: z.strictObject({ status: z.enum(LEAD_STATUSES).optional().describe('Etapa del embudo'), ...textSearch, ...paging }),
    output: listOutput('leads'),
    run: ({ db, totals, companyId }, args) =>
      asList('leads', args, filtered(args, ['status', 'q', 'search']), (page) =>
        listPage<LeadRow>(db, totals, {
          table: 'leads',
          columns: '*',
          companyId,
          searching: !!searchTerm(args),
          where: (p) => [
            ...(args.status ? [`status = ${p.add(args.status)}`] : []),
            ...(searchTerm(args) ? [textMatch(CONTACT_SEARCH, p.add(likePattern(searchTerm(args)!)))] : []),
          ],
          serialize: serializeLead,
        }, page),
      ),
  }),
  defineTool({
    name: 'list_accounts',
    title: 'Cuentas',
    description: 'Cuentas de dinero (efectivo, banco, tarjeta) con su saldo actual; `meta.totals` suma los saldos por moneda.',
    scope: 'read-accounts',
    input: z.strictObject({
      kind: z.enum(['cash', 'bank', 'card', 'other']).optional(),
      currency: currency.optional().describe('ISO 4217 en minúsculas: mxn, usd…'),
      archived: z.boolean().optional(),
      ...paging,
    }),
    output: z.object({
      accounts: records,
      meta: listMeta.extend({ totals: z.record(z.string(), z.object({ balance_cents: centsTotal, accounts: z.number().int() })) }),
    }),
    run: async ({ db, totals, companyId }, args) => {
      const zone = await companyZone(db, companyId);
      const result = await listAccounts(db, totals, companyId, zone, { kind: args.kind, currency: args.currency, archived: args.archived }, { limit: args.per_page, page: args.page });
      // The per-currency totals count every account the filters select: their sum is the list's total.
      const total = Object.values(result.meta.totals).reduce((sum, t) => sum + t.accounts, 0);
      return { accounts: result.data, meta: { page: args.page, per_page: args.per_page, total, has_more: result.meta.has_more, totals: result.meta.totals } };
    },
  }),
  defineTool({
    name: 'list_incomes',
    title: 'Ingresos',
    description: 'Ingresos (cobrados o pendientes), del más reciente al más antiguo; filtros por fecha (`from`/`to`: instantes ISO 8601, o días YYYY-MM-DD en la zona de la empresa, `to` incluido entero), cuenta, cliente, estado y categoría.',
    scope: 'read-incomes',
    input: z.strictObject({ ...movementFilters, customer_id: z.string().regex(/^[0-9a-f]{24}$/).optional().describe('Cliente'), ...paging }),
    output: listOutput('incomes'),
    run: async ({ db, totals, companyId }, args) => {
      const filters = await windowInstants(db, companyId, args);
      checkRange(filters);
      return asList('incomes', args, filtered(args, ['from', 'to', 'account_id', 'status', 'category', 'customer_id']), (page) => listMovements(db, totals, companyId, 'income', filters, page));
    },
  }),
  defineTool({
    name: 'list_expenses',
    title: 'Gastos',
    description: 'Gastos (pagados o pendientes), del más reciente al más antiguo; filtros por fecha (`from`/`to`), cuenta, proveedor (nombre o RFC), estado y categoría.',
    scope: 'read-expenses',
    // The REST list's names: the supplier search is its text search, `q` (alias `search`, then `supplier`).
    input: z.strictObject({
      ...movementFilters,
      q: textSearch.q.describe('Texto a buscar en el nombre o RFC del proveedor (contiene; no distingue mayúsculas ni acentos)'),
      search: textSearch.search,
      supplier: z.string().trim().max(200).optional().describe('Alias de q (nombre o RFC del proveedor, contiene)'),
      ...paging,
    }),
    output: listOutput('expenses'),
    run: async ({ db, totals, companyId }, args) => {
      const filters = { ...(await windowInstants(db, companyId, args)), supplier: searchTerm(args) || args.supplier || undefined };
      checkRange(filters);
      return asList('expenses', args, filtered(args, ['from', 'to', 'account_id', 'status', 'category', 'q', 'search', 'supplier']), (page) => listMovements(db, totals, companyId, 'expense', filters, page));
    },
  }),
  defineTool({
    name: 'list_calendar_events',
    title: 'Eventos del calendario',
    description:
      'Eventos que se traslapan con un rango (terminan después de `from`, empiezan antes de `to`), con los filtros de GET /calendar/events: anfitrión, tipo y origen. Un día YYYY-MM-DD se lee en la zona de la empresa (`to` lo incluye entero).',
    scope: 'read-calendar_events',
    input: z.strictObject({
      from: windowBound.optional().describe('Inicio del rango: instante ISO 8601, o día YYYY-MM-DD desde su medianoche'),
      to: windowBound.optional().describe('Fin del rango: instante ISO 8601, o día YYYY-MM-DD incluido entero'),
      user_id: z.string().regex(/^[0-9a-f]{24}$/).optional().describe('Anfitrión'),
      kind: z.enum(EVENT_KINDS).optional().describe('Tipo'),
      source: z.enum(EVENT_SOURCES).optional().describe('Origen: native, booking (una reserva), google (traído del calendario externo)'),
      ...paging,
    }),
    output: listOutput('calendar_events'),
    run: async ({ db, totals, companyId }, args) => {
      const window = await windowInstants(db, companyId, { from: args.from, to: args.to });
      checkRange(window);
      return asList('calendar_events', args, filtered(args, ['user_id', 'kind', 'source', 'from', 'to']), (page) =>
        listCalendarEvents(db, totals, companyId, { user_id: args.user_id, kind: args.kind, source: args.source, ...window }, page),
      );
    },
  }),
  defineTool({
    name: 'get_company',
    title: 'Empresa',
    description: 'Datos básicos de la empresa y sus módulos habilitados.',
    scope: 'read-company',
    input: z.strictObject({}),
    output: z.object({ company: z.record(z.string(), z.unknown()) }),
    run: async ({ db, companyId }) => ({ company: await readCompany(db, companyId) }),
  }),
  defineTool({
    name: 'get_balance_sheet',
    title: 'Balance general',
    description: 'Balance general por moneda al cierre de `as_of` (fecha, por defecto hoy en la zona de la empresa): cuentas, por cobrar, por pagar, capital; activos = pasivos + capital.',
    scope: 'read-reports',
    input: z.strictObject({ as_of: calendarDay.optional().describe('Fecha de corte YYYY-MM-DD, desde 1900-01-01') }),
    output: z.object({ as_of: z.string(), currencies: records }),
    run: async ({ db, companyId }, args) => balanceSheet(db, companyId, args.as_of ?? localDate(Date.now(), await companyZone(db, companyId))),
  }),
  defineTool({
    name: 'get_income_statement',
    title: 'Estado de resultados',
    description: 'Ingresos y gastos por categoría y resultado neto, por moneda, entre `start_on` y `end_on` (fechas incluidas).',
    scope: 'read-reports',
    input: z.strictObject({ start_on: calendarDay.describe('YYYY-MM-DD, desde 1900-01-01'), end_on: calendarDay.describe('YYYY-MM-DD, no antes de start_on') }),
    output: z.object({ start_on: z.string(), end_on: z.string(), currencies: records }),
    run: async ({ db, companyId }, args) => {
      if (args.end_on < args.start_on) throw new ToolFailure('end_on no puede ser anterior a start_on');
      return incomeStatement(db, companyId, args.start_on, args.end_on);
    },
  }),
  defineTool({
    name: 'get_cash_flow',
    title: 'Flujo de efectivo',
    description: 'Por cuenta y por moneda: saldo inicial, entradas, salidas y saldo final entre `start_on` y `end_on` (fechas incluidas).',
    scope: 'read-reports',
    input: z.strictObject({ start_on: calendarDay.describe('YYYY-MM-DD, desde 1900-01-01'), end_on: calendarDay.describe('YYYY-MM-DD, no antes de start_on') }),
    output: z.object({ start_on: z.string(), end_on: z.string(), accounts: records, currencies: records }),
    run: async ({ db, companyId }, args) => {
      if (args.end_on < args.start_on) throw new ToolFailure('end_on no puede ser anterior a start_on');
      return cashFlow(db, companyId, args.start_on, args.end_on);
    },
  }),
];

/**
 * What a token may be granted: the scopes the tools require (the MCP server is the one resource
 * tokens are for), in the API's order. A client asking for more gets these; an unused read scope on a
 * token would only widen what a leaked token could read if a tool were added later.
 */
export const MCP_SCOPES: readonly string[] = ALL_SCOPES.filter((s) => TOOLS.some((tool) => tool.scope === s));

export const ANNOTATIONS = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } as const;

/** A JSON Schema without its `$schema` line: clients validate with their own draft. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { io }) as Record<string, unknown>;
  return rest;
}

/** A tool as tools/list describes it. */
export function describeTool(tool: Tool) {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: jsonSchema(tool.input, 'input'),
    outputSchema: jsonSchema(tool.output, 'output'),
    annotations: { title: tool.title, ...ANNOTATIONS },
  };
}
