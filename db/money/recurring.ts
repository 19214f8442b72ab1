// Recurring transactions (docs/money.md): the dates of their occurrences and
// the generation of each due occurrence exactly once. A date is computed
// from `starts_on` (occurrence n is starts_on + n × interval units), never
// from the previous one, so a monthly one on the 31st falls on the last day
// of shorter months and comes back to the 31st (Temporal's `constrain`).
// Each occurrence is a paid income or expense with `recurring_id` and
// `recurring_on`, unique together: retries, two workers and catch-up after
// downtime cannot double it. An occurrence due in a closed month is dated at
// noon of the first day of the next open month (its `recurring_on` stays the
// due date).
import { Temporal } from 'temporal-polyfill';
import { recordEvent } from '../events.ts';
import type { Client, Queryable } from '../pool.ts';
import { iso, type Timestamp } from '../timestamps.ts';
import { companyZoneForWrite } from '../companies.ts';
import { postOnce } from './ledger.ts';
import { insertMovement } from './movements.ts';
import { firstClosed, lockMonthsShared } from './periods.ts';

export const FREQUENCIES = ['daily', 'weekly', 'monthly', 'yearly'] as const;
export type Frequency = (typeof FREQUENCIES)[number];

export type RecurringRow = {
  id: string;
  company_id: string;
  direction: 'income' | 'expense';
  account_id: string;
  amount_cents: string;
  category: string;
  description: string | null;
  customer_id: string | null;
  supplier_name: string | null;
  supplier_tax_id: string | null;
  frequency: Frequency;
  interval: number;
  starts_on: string;
  ends_on: string | null;
  ends_count: number | null;
  active: boolean;
  ended_at: Timestamp | null;
  next_occurrence_on: string | null;
  occurrences_count: number;
  metadata: Record<string, string>;
  created_at: Timestamp;
  updated_at: Timestamp;
};

export const RECURRING_SELECT = `SELECT *, to_char(starts_on, 'YYYY-MM-DD') AS starts_on, to_char(ends_on, 'YYYY-MM-DD') AS ends_on,
  to_char(next_occurrence_on, 'YYYY-MM-DD') AS next_occurrence_on FROM recurring_transactions`;

const UNIT: Record<Frequency, 'days' | 'weeks' | 'months' | 'years'> = { daily: 'days', weekly: 'weeks', monthly: 'months', yearly: 'years' };

/** The date of occurrence `n` (0-based). */
export function occurrenceOn(r: Pick<RecurringRow, 'starts_on' | 'frequency' | 'interval'>, n: number): string {
  return Temporal.PlainDate.from(r.starts_on).add({ [UNIT[r.frequency]]: n * r.interval }, { overflow: 'constrain' }).toString();
}

/** The next occurrence after `count` have been made, or null when the series is exhausted. */
export function nextOccurrence(r: Pick<RecurringRow, 'starts_on' | 'frequency' | 'interval' | 'ends_on' | 'ends_count'>, count: number): string | null {
  if (r.ends_count !== null && count >= r.ends_count) return null;
  const next = occurrenceOn(r, count);
  if (r.ends_on !== null && next > r.ends_on) return null;
  return next;
}

export function recurringEventData(r: RecurringRow, extra: Record<string, unknown> = {}) {
  return {
    object: 'recurring_transaction',
    id: r.id,
    type: r.direction,
    status: r.active ? 'active' : r.ended_at ? 'ended' : 'inactive',
    amount_cents: Number(r.amount_cents),
    frequency: r.frequency,
    interval: r.interval,
    next_occurrence_on: r.next_occurrence_on,
    occurrences_count: r.occurrences_count,
    created_at: iso(r.created_at),
    metadata: r.metadata,
    ...extra,
  };
}

/** Noon of a local date in the company's zone, or of the first day of the next open month when its month is closed. */
async function occurrenceInstant(db: Queryable, companyId: string, zone: string, date: string): Promise<Date> {
  let day = Temporal.PlainDate.from(date);
  for (let guard = 0; guard < 600; guard++) {
    await lockMonthsShared(db, companyId, [{ year: day.year, month: day.month }]);
    const closed = await firstClosed(db, companyId, [{ year: day.year, month: day.month }]);
    if (!closed) break;
    day = day.with({ day: 1 }).add({ months: 1 });
  }
  // Noon on the wall clock, also on the days a DST change makes 23 or 25 hours long.
  return new Date(day.toZonedDateTime({ timeZone: zone, plainTime: '12:00' }).epochMilliseconds);
}

/**
 * Occurrences made in one transaction at most. A series started long ago
 * (daily since 1900: 46,000 occurrences, two events each) is made in many
 * short transactions, each releasing the series' row lock, so a PATCH of it
 * (switching it off) waits one batch, not the whole backfill.
 */
export const OCCURRENCES_PER_TRANSACTION = 200;

/**
 * Generates the due occurrences of one recurring transaction (locked, in the
 * caller's transaction) up to `today` (company zone), `limit` at most;
 * returns how many it made and whether more are due (the caller runs it again
 * in a new transaction).
 */
export async function generateDue(
  db: Client,
  recurringId: string,
  today: string | null = null,
  limit = OCCURRENCES_PER_TRANSACTION,
): Promise<{ made: number; more: boolean; busy?: true }> {
  const { rows } = await db.query<RecurringRow>(`${RECURRING_SELECT} WHERE id = $1 FOR UPDATE SKIP LOCKED`, [recurringId]);
  let r = rows[0];
  if (!r) {
    // Locked by another transaction (a PATCH, another worker's batch) or gone: the caller asks again
    // later while it is still there and active, so a PATCH between two batches does not end a catch-up.
    const { rowCount } = await db.query('SELECT 1 FROM recurring_transactions WHERE id = $1 AND active', [recurringId]);
    return rowCount ? { made: 0, more: true, busy: true } : { made: 0, more: false };
  }
  if (!r.active) return { made: 0, more: false };
  // The zone lock is shared here after the recurring row's: a zone change takes no recurring row, so
  // it cannot wait on this run while this run waits on it (db/companies.ts).
  const zone = await companyZoneForWrite(db, r.company_id);
  const until = today ?? Temporal.Now.plainDateISO(zone).toString();
  // Shared lock: an archive of the account waits for this run, or this run sees it archived.
  const account = (await db.query<{ id: string; currency: string; archived: boolean }>('SELECT id, currency, archived FROM accounts WHERE id = $1 FOR SHARE', [r.account_id])).rows[0];
  if (account.archived && r.next_occurrence_on && r.next_occurrence_on <= until) {
    // An archived account takes no new movements (money.md): the series stops, as if deactivated.
    const { rows: stopped } = await db.query<RecurringRow>(
      `UPDATE recurring_transactions SET active = false, next_occurrence_on = NULL, updated_at = now() WHERE id = $1
        RETURNING *, to_char(starts_on, 'YYYY-MM-DD') AS starts_on, to_char(ends_on, 'YYYY-MM-DD') AS ends_on, to_char(next_occurrence_on, 'YYYY-MM-DD') AS next_occurrence_on`,
      [r.id],
    );
    await recordEvent(db, r.company_id, 'recurring.deactivated', recurringEventData(stopped[0]));
    return { made: 0, more: false };
  }
  // The series' customer, if still a customer of the company (held against deletion until this commits):
  // a customer deleted since is on no new occurrence, as a create naming it would be refused (422).
  const customerId =
    r.customer_id && (await db.query('SELECT 1 FROM customers WHERE company_id = $1 AND id = $2 FOR KEY SHARE', [r.company_id, r.customer_id])).rowCount
      ? r.customer_id
      : null;
  // Every occurrence's ledger entries in one statement at the end (ledger.ts postOnce): a batch spans
  // up to `limit` days, and taking their rows day after day could deadlock with an API write.
  return postOnce(db, r.company_id, async () => {
    let made = 0;
    let steps = 0;
    while (r.next_occurrence_on && r.next_occurrence_on <= until) {
      if (steps++ === limit) return { made, more: true };
      const on = r.next_occurrence_on;
      const exists = await db.query('SELECT 1 FROM movements WHERE recurring_id = $1 AND recurring_on = $2', [r.id, on]);
      if (!exists.rowCount) {
        const occurredAt = await occurrenceInstant(db, r.company_id, zone, on);
        await insertMovement(db, r.company_id, zone, {
          direction: r.direction,
          account,
          amount_cents: Number(r.amount_cents),
          occurred_at: occurredAt,
          status: 'paid',
          category: r.category,
          description: r.description,
          customer_id: customerId,
          supplier_name: r.supplier_name,
          supplier_tax_id: r.supplier_tax_id,
          recurring_id: r.id,
          recurring_on: on,
          metadata: Object.fromEntries(Object.entries(r.metadata).filter(([key]) => key !== 'external_ref')),
        });
        made++;
      }
      const count = r.occurrences_count + 1;
      const next = nextOccurrence(r, count);
      const updated = await db.query<RecurringRow>(
        `UPDATE recurring_transactions SET occurrences_count = $2, next_occurrence_on = $3, active = $4, ended_at = CASE WHEN $4 THEN NULL ELSE now() END, updated_at = now()
          WHERE id = $1 RETURNING *, to_char(starts_on, 'YYYY-MM-DD') AS starts_on, to_char(ends_on, 'YYYY-MM-DD') AS ends_on, to_char(next_occurrence_on, 'YYYY-MM-DD') AS next_occurrence_on`,
        [r.id, count, next, next !== null],
      );
      r = updated.rows[0];
      await recordEvent(db, r.company_id, 'recurring.occurrence_created', recurringEventData(r, { recurring_occurrence_on: on }));
      if (!next) await recordEvent(db, r.company_id, 'recurring.ended', recurringEventData(r));
    }
    return { made, more: false };
  });
}
