// The floor of the booking-slots scenario: the least a Node process can do to
// answer `GET /api/v1/booking-links/:id/slots?from&to&timezone`: bare
// node:http + pg, the same three queries as slotContext (the host's blocked
// bookings, their calendar events, the link's bookings per day) and the same
// slot function (lib/booking-slots.ts) and JSON, the same pool size. It skips
// what the service adds: authentication, rate limit, scopes, validation of
// the query, the id-or-slug lookup. bench/scenarios/bookings.ts checks both
// answer the same bodies.
//
// Env: DATABASE_URL, PORT, COMPANY_ID, PG_POOL_MAX.
import http from 'node:http';
import pg from 'pg';
import { freeSlots, groupByLocalDate } from '../../lib/booking-slots.ts';
import { startOfLocalDate } from '../../lib/local-dates.ts';

const companyId = process.env.COMPANY_ID;
if (!process.env.DATABASE_URL || !companyId) throw new Error('DATABASE_URL and COMPANY_ID are required');
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.PG_POOL_MAX || 10), connectionTimeoutMillis: 5000 });
pool.on('error', () => {});

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

const DAY = 86_400_000;

async function slots(linkId: string, url: URL, res: http.ServerResponse): Promise<void> {
  const { rows: links } = await pool.query('SELECT * FROM booking_links WHERE company_id = $1 AND id = $2', [companyId, linkId]);
  const link = links[0];
  const zone = url.searchParams.get('timezone') ?? link.timezone;
  const from = startOfLocalDate(url.searchParams.get('from')!, zone);
  const next = new Date(`${url.searchParams.get('to')}T00:00:00Z`);
  next.setUTCDate(next.getUTCDate() + 1);
  const to = startOfLocalDate(next.toISOString().slice(0, 10), zone);
  const margin = (link.buffer_before_minutes + link.buffer_after_minutes) * 60_000 + 2 * DAY;
  const lo = new Date(from - margin);
  const hi = new Date(to + margin);
  const [booked, blocks, events, perDay] = await Promise.all([
    pool.query(`SELECT lower(blocked) AS start, upper(blocked) AS end FROM bookings WHERE user_id = $1 AND status = 'confirmed' AND blocked && tstzrange($2, $3)`, [link.user_id, lo, hi]),
    pool.query(`SELECT (settings_preferences->>'block_overlapping_bookings')::boolean AS on FROM users WHERE id = $1`, [link.user_id]),
    pool.query(`SELECT starts_at AS start, ends_at AS end FROM calendar_events WHERE user_id = $1 AND tstzrange(starts_at, ends_at) && tstzrange($2, $3)`, [link.user_id, lo, hi]),
    link.max_bookings_per_day === null
      ? Promise.resolve({ rows: [] })
      : pool.query(
          `SELECT to_char(starts_at AT TIME ZONE $2, 'YYYY-MM-DD') AS day, count(*)::int AS n FROM bookings
            WHERE booking_link_id = $1 AND status = 'confirmed' AND starts_at >= $3 AND starts_at < $4 GROUP BY 1`,
          [link.id, link.timezone, lo, hi],
        ),
  ]);
  const busy = booked.rows.map((b) => ({ start: b.start.getTime(), end: b.end.getTime() }));
  if (blocks.rows[0]?.on === true) for (const e of events.rows) busy.push({ start: e.start.getTime(), end: e.end.getTime() });
  const list = freeSlots(link, { now: Date.now(), busy, bookingsPerDay: new Map(perDay.rows.map((r: any) => [r.day, r.n])) }, from, to);
  send(res, 200, {
    data: {
      booking_link_id: link.id,
      timezone: zone,
      duration_minutes: link.duration_minutes,
      from: new Date(from).toISOString(),
      to: new Date(to).toISOString(),
      days: groupByLocalDate(list, zone).map((day) => ({
        date: day.date,
        slots: day.slots.map((s) => ({ starts_at: new Date(s.start).toISOString(), ends_at: new Date(s.end).toISOString() })),
      })),
    },
  });
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://floor');
  const match = /^\/api\/v1\/booking-links\/([0-9a-f]{24})\/slots$/.exec(url.pathname);
  let work: Promise<void>;
  if (req.method === 'GET' && match) work = slots(match[1], url, res);
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
