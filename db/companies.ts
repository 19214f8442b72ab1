// What every part reads of a company row: its time zone, in which money
// dates, report days, calendar days and booking windows are read
// (operators change it: wsctl company update --timezone).
import { endOfLocalDate, isDateOnly, startOfLocalDate } from '../lib/local-dates.ts';
import type { Queryable } from './pool.ts';

export const DEFAULT_COMPANY_ZONE = 'America/Mexico_City';

export async function companyZone(db: Queryable, companyId: string): Promise<string> {
  const { rows } = await db.query<{ timezone: string }>('SELECT timezone FROM companies WHERE id = $1', [companyId]);
  return rows[0]?.timezone ?? DEFAULT_COMPANY_ZONE;
}

/**
 * A list's window as instants (calendar events, bookings, incomes, expenses, sales; REST and MCP
 * alike): a day (`YYYY-MM-DD`, which ISO 8601 allows) is read in the company's time zone, `from`
 * from its first moment and `to` up to the next day's, so `to` includes its day whole.
 */
export async function windowInstants<W extends { from?: string; to?: string }>(db: Queryable, companyId: string, window: W): Promise<W> {
  let { from, to } = window;
  if (isDateOnly(from) || isDateOnly(to)) {
    const zone = await companyZone(db, companyId);
    if (isDateOnly(from)) from = new Date(startOfLocalDate(from, zone)).toISOString();
    if (isDateOnly(to)) to = new Date(endOfLocalDate(to, zone)).toISOString();
  }
  return { ...window, from, to };
}

/** The lock a change of the company's time zone holds alone and every money write shares. */
const ZONE_LOCK = 'SELECT pg_advisory_xact_lock%s(hashtextextended($1, 0))';
const zoneLockKey = (companyId: string) => `company-zone:${companyId}`;

/**
 * The zone a money write works in, held until its transaction ends: a change of the zone (which
 * rebuilds the ledger and checks the closed months in the new zone) waits for the write, or the
 * write waits for the change and reads the new zone. Without it a write that read the old zone and
 * committed after the rebuild put money in a month closed in the new one, and left its ledger days
 * in the old zone. Call it first in the write's transaction, before any row lock (a write holding a
 * row another write needs while queued behind a waiting zone change would deadlock). The zone is read
 * by a statement of its own, after the lock: a statement's snapshot is taken when it starts.
 */
export async function companyZoneForWrite(db: Queryable, companyId: string): Promise<string> {
  await db.query(ZONE_LOCK.replace('%s', '_shared'), [zoneLockKey(companyId)]);
  return companyZone(db, companyId);
}

/** Taken by a change of the zone, first in its transaction: it waits for the money writes in flight. */
export async function lockCompanyZone(db: Queryable, companyId: string): Promise<void> {
  await db.query(ZONE_LOCK.replace('%s', ''), [zoneLockKey(companyId)]);
}
