// The MCP server's tools (contract: "MCP server", Tools): read-only, each
// with its scope, an input schema from zod (strict: additionalProperties
// false) and an output schema. Tools reach the data through the same query
// modules and serializers as the REST routes, within the credential's company.
// The money tools (list_accounts, list_incomes, list_expenses and the three
// reports) join when the money resources land; until then they are not listed.
import { z } from 'zod';
import type { Queryable } from '../../db/pool.ts';
import type { TotalsCache } from '../pagination.ts';
import { likePattern, listPage } from '../pagination.ts';
import { listCalendarEvents } from '../routes/calendar-event-queries.ts';
import { readCompany } from '../routes/company-queries.ts';
import { splitIdsAndSlugs } from '../routes/catalog-fields.ts';
import { serializeCustomer, type CustomerRow } from '../routes/customers.ts';
import { LEAD_STATUSES, serializeLead, type LeadRow } from '../routes/leads.ts';
import { listProducts } from '../routes/product-queries.ts';

export type ToolContext = { db: Queryable; totals: TotalsCache; companyId: string };

/** An expected failure of a tool that ran (contract: -32003 execution failed). */
export class ToolFailure extends Error {}

export type Tool = {
  name: string;
  title: string;
  description: string;
  scope: string;
  input: z.ZodObject;
  output: z.ZodType;
  run: (ctx: ToolContext, args: any) => Promise<Record<string, unknown>>;
};

const paging = {
  page: z.number().int().min(1).max(200).default(1).describe('Página, desde 1 (máximo 200)'),
  per_page: z.number().int().min(1).max(100).default(25).describe('Registros por página (máximo 100)'),
};
const listMeta = z.object({ page: z.number().int(), per_page: z.number().int(), total: z.number().int(), has_more: z.boolean() });
const records = z.array(z.record(z.string(), z.unknown()));
const listOutput = (key: string) => z.object({ [key]: records, meta: listMeta });

type PageQuery = { limit: number; page: number; include_total?: boolean; include_filtered_total?: boolean };
type PageResult = { data: unknown[]; meta: { has_more: boolean; total?: number; filtered_total?: number } };

/** Whether any of these tool arguments narrows the list. */
const filtered = (args: Record<string, unknown>, names: string[]) => names.some((name) => args[name] !== undefined && args[name] !== '');

/**
 * A REST page turned into the MCP list shape `{<plural>: [...], meta: {page,
 * per_page, total, has_more}}`. `total` of an unfiltered list is the
 * collection's total, memoized 60 s per process like REST's `include_total`
 * (a count per call would cost more than the page itself); a filtered list
 * counts its matches (REST's `filtered_total`, capped).
 */
async function asList(key: string, args: { page: number; per_page: number }, isFiltered: boolean, load: (page: PageQuery) => Promise<PageResult>) {
  const result = await load({ limit: args.per_page, page: args.page, ...(isFiltered ? { include_filtered_total: true } : { include_total: true }) });
  const total = (isFiltered ? result.meta.filtered_total : result.meta.total) ?? result.data.length;
  return { [key]: result.data, meta: { page: args.page, per_page: args.per_page, total, has_more: result.meta.has_more } };
}

const SEARCH = "(coalesce(name, '') || ' ' || coalesce(email, '') || ' ' || coalesce(phone, ''))";

export const TOOLS: readonly Tool[] = [
  {
    name: 'list_customers',
    title: 'Clientes',
    description: 'Lista los clientes de la empresa, del más reciente al más antiguo; `search` busca en nombre, correo y teléfono.',
    scope: 'read-customers',
    input: z.strictObject({ search: z.string().trim().max(200).optional().describe('Texto a buscar en nombre, correo o teléfono'), ...paging }),
    output: listOutput('customers'),
    run: ({ db, totals, companyId }, args) =>
      asList('customers', args, filtered(args, ['search']), (page) =>
        listPage<CustomerRow>(db, totals, {
          table: 'customers',
          columns: '*',
          companyId,
          searching: !!args.search,
          where: (p) => (args.search ? [`${SEARCH} ILIKE ${p.add(likePattern(args.search))}`] : []),
          serialize: serializeCustomer,
        }, page),
      ),
  },
  {
    name: 'list_products',
    title: 'Productos',
    description: 'Lista el catálogo: búsqueda de texto y filtros por marca o categoría (ids o slugs separados por comas).',
    scope: 'read-products',
    input: z.strictObject({
      search: z.string().trim().max(200).optional(),
      brand: z.string().max(2000).optional().describe('Marcas: ids o slugs separados por comas'),
      category: z.string().max(2000).optional().describe('Categorías: ids o slugs separados por comas'),
      ...paging,
    }),
    output: listOutput('products'),
    run: ({ db, totals, companyId }, args) =>
      asList('products', args, filtered(args, ['search', 'brand', 'category']), (page) =>
        listProducts(db, totals, companyId, {
          term: args.search || undefined,
          brand: args.brand ? splitIdsAndSlugs(args.brand, 'brand') : undefined,
          category: args.category ? splitIdsAndSlugs(args.category, 'category') : undefined,
        }, page),
      ),
  },
  {
    name: 'list_leads',
    title: 'Prospectos',
    description: 'Lista el embudo de prospectos, opcionalmente de una etapa.',
    scope: 'read-leads',
    input: z.strictObject({ status: z.enum(LEAD_STATUSES).optional().describe('Etapa del embudo'), search: z.string().trim().max(200).optional(), ...paging }),
    output: listOutput('leads'),
    run: ({ db, totals, companyId }, args) =>
      asList('leads', args, filtered(args, ['status', 'search']), (page) =>
        listPage<LeadRow>(db, totals, {
          table: 'leads',
          columns: '*',
          companyId,
          searching: !!args.search,
          where: (p) => [
            ...(args.status ? [`status = ${p.add(args.status)}`] : []),
            ...(args.search ? [`${SEARCH} ILIKE ${p.add(likePattern(args.search))}`] : []),
          ],
          serialize: serializeLead,
        }, page),
      ),
  },
  {
    name: 'list_calendar_events',
    title: 'Eventos del calendario',
    description: 'Eventos que se traslapan con un rango (terminan después de `from`, empiezan antes de `to`), opcionalmente de un anfitrión.',
    scope: 'read-calendar_events',
    input: z.strictObject({
      from: z.iso.datetime({ offset: true }).optional().describe('Inicio del rango, ISO 8601'),
      to: z.iso.datetime({ offset: true }).optional().describe('Fin del rango, ISO 8601'),
      user_id: z.string().regex(/^[0-9a-f]{24}$/).optional().describe('Anfitrión'),
      ...paging,
    }),
    output: listOutput('calendar_events'),
    run: async ({ db, totals, companyId }, args) => {
      if (args.from && args.to && new Date(args.to) <= new Date(args.from)) throw new ToolFailure('`to` debe ser posterior a `from`');
      return asList('calendar_events', args, filtered(args, ['user_id', 'from', 'to']), (page) => listCalendarEvents(db, totals, companyId, { user_id: args.user_id, from: args.from, to: args.to }, page));
    },
  },
  {
    name: 'get_company',
    title: 'Empresa',
    description: 'Datos básicos de la empresa y sus módulos habilitados.',
    scope: 'read-company',
    input: z.strictObject({}),
    output: z.object({ company: z.record(z.string(), z.unknown()) }),
    run: async ({ db, companyId }) => ({ company: await readCompany(db, companyId) }),
  },
];

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
