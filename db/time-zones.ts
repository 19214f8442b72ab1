// The time zones PostgreSQL knows. Every `timezone` the API or wsctl stores is
// read later by SQL (`AT TIME ZONE`: a booking link's daily limit, money's local
// days, the recurring cron over every company), so a name Intl takes and the
// database does not would pass validation and fail every read after it. Each
// process (web, worker) reads the database's names once at start.
import { restrictTimeZones } from '../lib/local-dates.ts';
import type { Queryable } from './pool.ts';

export async function loadDatabaseTimeZones(db: Queryable): Promise<void> {
  const { rows } = await db.query<{ name: string }>('SELECT name FROM pg_timezone_names');
  restrictTimeZones(new Set(rows.map((row) => row.name)));
}
