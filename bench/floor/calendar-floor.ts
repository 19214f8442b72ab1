// The floor of the calendar scenario: the least a Node process can do to
// answer `GET /api/v1/calendar/events?user_id=&from=&to=&limit=25`: bare
// node:http + pg, the same SQL as listCalendarEvents/listPage (the host and
// the overlap window on the GiST index, keyset order), the same JSON as
// serializeCalendarEvent + listPage's meta, the same pool size.
// bench/scenarios/calendar.ts checks both answer the same bodies.
//
// Env: DATABASE_URL, PORT, COMPANY_ID, PG_POOL_MAX.
import http from 'node:http';
import pg from 'pg';

const companyId = process.env.COMPANY_ID;
if (!process.env.DATABASE_URL || !companyId) throw new Error('DATABASE_URL and COMPANY_ID are required');
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.PG_POOL_MAX || 10), connectionTimeoutMillis: 5000 });
pool.on('error', () => {});

const SQL = (limit: number) => `SELECT * FROM calendar_events WHERE company_id = $1 AND user_id = $2 AND tstzrange(starts_at, ends_at) && tstzrange($3::timestamptz, $4::timestamptz, '()')
    ORDER BY created_at DESC, id DESC LIMIT ${limit + 1} OFFSET 0`;

type Row = Record<string, any>;
const iso = (v: Date | null) => (v === null ? null : v.toISOString());

function serialize(row: Row) {
  return {
    id: row.id,
    user_id: row.user_id,
    title: row.title,
    description: row.description,
    location: row.location,
    color: row.color,
    starts_at: iso(row.starts_at),
    ends_at: iso(row.ends_at),
    all_day: row.all_day,
    timezone: row.timezone,
    kind: row.kind,
    source: row.source,
    meet_url: row.meet_url,
    create_meet: row.create_meet,
    attendees: row.attendees.map((a: any) => ({ name: a.name ?? null, email: a.email })),
    reminders_minutes: row.reminders_minutes,
    google_event_id: row.google_event_id,
    booking_link_id: row.booking_link_id,
    booking_id: row.booking_id,
    booker_lead_id: row.booker_lead_id,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

async function list(url: URL, res: http.ServerResponse): Promise<void> {
  const limit = Math.min(Number(url.searchParams.get('limit') ?? 25), 100);
  const { rows } = await pool.query(SQL(limit), [companyId, url.searchParams.get('user_id'), url.searchParams.get('from'), url.searchParams.get('to')]);
  const page = rows.slice(0, limit);
  send(res, 200, {
    data: page.map(serialize),
    meta: { limit, has_more: rows.length > limit, next_cursor: page.length ? page[page.length - 1].id : null, previous_cursor: page.length ? page[0].id : null },
  });
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://floor');
  let work: Promise<void>;
  if (req.method === 'GET' && url.pathname === '/api/v1/calendar/events') work = list(url, res);
  else if (req.method === 'GET' && url.pathname === '/healthz') work = pool.query('SELECT 1').then(() => send(res, 200, { status: 'ok' }));
  else work = Promise.resolve(send(res, 404, { error: 'not_found' }));
  work.catch(() => (res.headersSent ? res.destroy() : send(res, 500, { error: 'internal_error' })));
});
server.keepAliveTimeout = 65_000;
server.listen(Number(process.env.PORT || 0), '127.0.0.1');
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    server.close(() => void pool.end().then(() => process.exit(0)));
    server.closeAllConnections();
  });
}
