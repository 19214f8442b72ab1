// The daily ledger the reports read (table ledger_daily, migration 060): each
// money effect becomes signed amounts per company, currency, local day
// (company zone), line and key, added in the transaction of the write that
// has the effect, and subtracted again when it is undone. Lines:
//
//   opening     key account   an account's opening balance, on its opening date
//   cash_in     key account   money into an account (income and sale payments)
//   cash_out    key account   money out of an account (expense payments, refunds)
//   income      key category  incomes (not a sale's payments), when they occur
//   expense     key category  expenses, when they occur
//   sale        key 'sales'   sales at their total, when they occur
//   refund      key 'sales'   refunds, when made
//   receivable  key 'incomes' | 'sales'   what customers owe: + when it occurs, − when paid
//   payable     key 'expenses'            what the company owes: + when it occurs, − when paid
//
// so that, for any day: cash = opening + cash_in − cash_out; receivables and
// payables are their running sums; the result is income + sale − refund −
// expense; and assets (cash + receivables) = liabilities (payables) + equity
// (opening + result) holds by construction (docs/money.md).
import type { Queryable } from '../pool.ts';
import { localDate } from '../../lib/local-dates.ts';

export type LedgerLine = 'opening' | 'cash_in' | 'cash_out' | 'income' | 'expense' | 'sale' | 'refund' | 'receivable' | 'payable';
export type Entry = { currency: string; day: string; line: LedgerLine; key: string; amount: number };

/**
 * Adds the entries in one statement; `sign` −1 undoes them. Entries of one row are summed first, and
 * the rows are written in one order (currency, line, key, day) whoever writes them. Two writes that
 * take the same rows in opposite orders deadlock (a payment takes cash_in then receivable, a paid
 * income income then receivable): so a write posts all its entries at once (`undo` for those it takes
 * back), and no two writes ever wait on each other's rows in a cycle.
 */
export async function post(db: Queryable, companyId: string, entries: Entry[], sign: 1 | -1 = 1): Promise<void> {
  const gathered = gathering.get(db);
  if (gathered) {
    if (gathered.companyId !== companyId) throw new Error('post: another company inside postOnce');
    for (const e of entries) gathered.entries.push(sign === 1 ? e : { ...e, amount: -e.amount });
    return;
  }
  const rows = new Map<string, Entry>();
  for (const e of entries) {
    const row = `${e.currency}\u0000${e.line}\u0000${e.key}\u0000${e.day}`;
    const seen = rows.get(row);
    rows.set(row, seen ? { ...seen, amount: seen.amount + e.amount } : e);
  }
  const live = [...rows].filter(([, e]) => e.amount !== 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, e]) => e);
  if (!live.length) return;
  await db.query(
    `INSERT INTO ledger_daily (company_id, currency, day, line, key, amount_cents)
     SELECT $1, e.currency, e.day, e.line, e.key, e.amount
       FROM unnest($2::text[], $3::date[], $4::text[], $5::text[], $6::bigint[]) AS e(currency, day, line, key, amount)
     ON CONFLICT (company_id, currency, line, key, day) DO UPDATE SET amount_cents = ledger_daily.amount_cents + EXCLUDED.amount_cents`,
    [companyId, live.map((e) => e.currency), live.map((e) => e.day), live.map((e) => e.line), live.map((e) => e.key), live.map((e) => sign * e.amount)],
  );
}

/** Connections inside postOnce: what their posts gather instead of writing. */
const gathering = new WeakMap<Queryable, { companyId: string; entries: Entry[] }>();

/**
 * Runs `write` with the posts it makes on `db` gathered, and writes them in one statement at its end:
 * for a write of many records in one transaction (a recurring series' catch-up, up to 200 occurrences
 * over as many days), which would otherwise take the ledger's rows day after day while another write
 * takes its own in one sorted statement, and the two could each hold a row the other waits for.
 * `write` must not read the ledger: what it posted is not there yet.
 */
export async function postOnce<T>(db: Queryable, companyId: string, write: () => Promise<T>): Promise<T> {
  const gathered = { companyId, entries: [] as Entry[] };
  gathering.set(db, gathered);
  try {
    const result = await write();
    gathering.delete(db);
    await post(db, companyId, gathered.entries);
    return result;
  } finally {
    gathering.delete(db);
  }
}

/** The entries taken back (to post with others in one statement). */
export function undo(entries: Entry[]): Entry[] {
  return entries.map((e) => ({ ...e, amount: -e.amount }));
}

const day = (at: Date | string, zone: string) => localDate(new Date(at).getTime(), zone);

export function openingEntries(account: { id: string; currency: string; opening_balance_cents: number | string; opening_on: string }): Entry[] {
  return [{ currency: account.currency, day: account.opening_on, line: 'opening', key: account.id, amount: Number(account.opening_balance_cents) }];
}

type MovementLike = { direction: 'income' | 'expense'; currency: string; category: string; amount_cents: number | string; occurred_at: Date | string; sale_id: string | null };

/** What an income or expense is worth when it occurs (a sale's payment: nothing; the sale counted already). */
export function movementEntries(m: MovementLike, zone: string): Entry[] {
  if (m.sale_id) return [];
  const d = day(m.occurred_at, zone);
  const amount = Number(m.amount_cents);
  return m.direction === 'income'
    ? [{ currency: m.currency, day: d, line: 'income', key: m.category, amount }, { currency: m.currency, day: d, line: 'receivable', key: 'incomes', amount }]
    : [{ currency: m.currency, day: d, line: 'expense', key: m.category, amount }, { currency: m.currency, day: d, line: 'payable', key: 'expenses', amount }];
}

/** A payment of an income (into its account) or of an expense (out of it). */
export function paymentEntries(m: Pick<MovementLike, 'direction' | 'currency' | 'sale_id'>, payment: { account_id: string; amount_cents: number | string; paid_at: Date | string }, zone: string): Entry[] {
  const d = day(payment.paid_at, zone);
  const amount = Number(payment.amount_cents);
  return m.direction === 'income'
    ? [{ currency: m.currency, day: d, line: 'cash_in', key: payment.account_id, amount }, { currency: m.currency, day: d, line: 'receivable', key: m.sale_id ? 'sales' : 'incomes', amount: -amount }]
    : [{ currency: m.currency, day: d, line: 'cash_out', key: payment.account_id, amount }, { currency: m.currency, day: d, line: 'payable', key: 'expenses', amount: -amount }];
}

export function saleEntries(sale: { currency: string; total_cents: number | string; occurred_at: Date | string }, zone: string): Entry[] {
  const d = day(sale.occurred_at, zone);
  const amount = Number(sale.total_cents);
  return [{ currency: sale.currency, day: d, line: 'sale', key: 'sales', amount }, { currency: sale.currency, day: d, line: 'receivable', key: 'sales', amount }];
}

export function refundEntries(sale: { currency: string }, refund: { account_id: string; amount_cents: number | string; refunded_at: Date | string }, zone: string): Entry[] {
  const d = day(refund.refunded_at, zone);
  const amount = Number(refund.amount_cents);
  return [{ currency: sale.currency, day: d, line: 'cash_out', key: refund.account_id, amount }, { currency: sale.currency, day: d, line: 'refund', key: 'sales', amount }];
}
