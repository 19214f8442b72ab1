// The floor of the customers scenario: the least a Node process can do to
// answer `GET /api/v1/customers?limit=&starting_after=`: a bare node:http
// server with `pg`, no framework and no middleware (no auth, rate limit,
// request id, version headers, validation library). It runs exactly the SQL of
// api/pagination.ts listPage (keyset query with the cursor resolved inside it,
// same statement text, unnamed statements like ours, the cursor-existence check
// on an empty page) and writes the JSON shape of api/routes/customer-queries.ts
// serializeCustomer + listPage's meta, with the same pool size as the web
// process. bench/scenarios/customers.ts checks that both answer the same bodies.
//
// Env: DATABASE_URL, PORT, COMPANY_ID (the tenant, since there is no key to
// resolve it from), PG_POOL_MAX (default 10, as db/pool.ts).
import http from 'node:http';
import pg from 'pg';

const DEFAULT_LIMIT = 25;
const MAX_LIMIT = 100;
const OBJECT_ID = /^[0-9a-f]{24}$/;
const RESERVED = new Set([
  'id', 'name', 'email', 'phone', 'legal_name', 'tax_id', 'address', 'notes', 'tags', 'created_at', 'updated_at',
  'custom_properties', 'object', 'company_id', 'metadata',
]);

const companyId = process.env.COMPANY_ID;
if (!process.env.DATABASE_URL || !companyId) throw new Error('DATABASE_URL and COMPANY_ID are required');
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.PG_POOL_MAX || 10),
  connectionTimeoutMillis: 5000,
  idleTimeoutMillis: 30_000,
});
pool.on('error', () => {});

const FIRST_PAGE = (limit: number) => `SELECT * FROM customers WHERE company_id = $1 
    ORDER BY created_at DESC, id DESC LIMIT ${limit + 1} OFFSET 0`;
const AFTER_CURSOR = (limit: number) => `SELECT * FROM customers WHERE company_id = $1 AND (created_at, id) < (SELECT created_at, id FROM customers WHERE company_id = $1 AND id = $2)
    ORDER BY created_at DESC, id DESC LIMIT ${limit + 1} OFFSET 0`;

type Row = Record<string, any>;

function iso(value: Date | string | null): string | null {
  if (value === null || value === undefined) return null;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

function serialize(row: Row): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: row.id,
    name: row.name,
    email: row.email,
    phone: row.phone,
    legal_name: row.legal_name,
    tax_id: row.tax_id,
    address: row.address
      ? (({ line1 = null, line2 = null, city = null, state = null, postal_code = null, country = null }) => ({ line1, line2, city, state, postal_code, country }))(row.address as Record<string, string | null>)
      : null,
    notes: row.notes,
    tags: row.tags,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
  const props = row.custom_properties as Record<string, unknown> | null;
  if (props) for (const key in props) if (!RESERVED.has(key) && !(key in out)) out[key] = props[key];
  return out;
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

async function listCustomers(url: URL, res: http.ServerResponse): Promise<void> {
  const limitParam = url.searchParams.get('limit');
  const limit = Math.min(limitParam ? Number(limitParam) : DEFAULT_LIMIT, MAX_LIMIT);
  const cursor = url.searchParams.get('starting_after');
  if (!Number.isInteger(limit) || limit < 1 || (cursor !== null && !OBJECT_ID.test(cursor))) {
    return send(res, 400, { error: 'invalid_parameter' });
  }
  const { rows } = cursor ? await pool.query(AFTER_CURSOR(limit), [companyId, cursor]) : await pool.query(FIRST_PAGE(limit), [companyId]);
  const hasMore = rows.length > limit;
  const pageRows = rows.slice(0, limit);
  if (pageRows.length === 0 && cursor) {
    const found = await pool.query('SELECT 1 FROM customers WHERE company_id = $1 AND id = $2', [companyId, cursor]);
    if (found.rowCount === 0) return send(res, 400, { error: 'invalid_cursor' });
  }
  send(res, 200, {
    data: pageRows.map(serialize),
    meta: {
      limit,
      has_more: hasMore,
      next_cursor: pageRows.length ? pageRows[pageRows.length - 1].id : null,
      previous_cursor: pageRows.length ? pageRows[0].id : null,
    },
  });
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://floor');
  let work: Promise<void>;
  if (req.method === 'GET' && url.pathname === '/api/v1/customers') work = listCustomers(url, res);
  else if (req.method === 'GET' && url.pathname === '/healthz') work = pool.query('SELECT 1').then(() => send(res, 200, { status: 'ok' }));
  else work = Promise.resolve(send(res, 404, { error: 'not_found' }));
  work.catch(() => {
    if (!res.headersSent) send(res, 500, { error: 'internal_error' });
    else res.destroy();
  });
});
server.keepAliveTimeout = 65_000; // as api/server.ts
server.listen(Number(process.env.PORT || 0), '127.0.0.1');

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.close(() => void pool.end().then(() => process.exit(0)));
    server.closeAllConnections();
  });
}
