// SQL of accounts. Balances come from the daily ledger (db/money/ledger.ts):
// opening + money in − money out, for the days up to today in the company's zone.
import type { Queryable } from '../../db/pool.ts';
import { iso, type Timestamp } from '../../db/timestamps.ts';
import { localDate } from '../../lib/local-dates.ts';
import { objectId } from '../../lib/objectid.ts';
import { validationFailed } from '../errors.ts';
import { listPage, type PaginationQuery, type TotalsCache } from '../pagination.ts';
import { changesAny, setList } from '../../db/tables.ts';
import type { z } from 'zod';
import type { ACCOUNT_KINDS, accountSchema } from './account-schemas.ts';

export type AccountRow = {
  id: string;
  company_id: string;
  name: string;
  kind: (typeof ACCOUNT_KINDS)[number];
  currency: string;
  opening_balance_cents: string;
  opening_on: string;
  archived: boolean;
  created_at: Timestamp;
  updated_at: Timestamp;
  balance_cents?: string;
};

/** Balance of the accounts `alias` names, from the ledger, up to `$today`. */
const BALANCE = (alias: string, today: string) => `coalesce((SELECT sum(CASE d.line WHEN 'cash_out' THEN -d.amount_cents ELSE d.amount_cents END)
    FROM ledger_daily d WHERE d.company_id = ${alias}.company_id AND d.currency = ${alias}.currency AND d.key = ${alias}.id
     AND d.line IN ('opening', 'cash_in', 'cash_out') AND d.day <= ${today}::date), 0)`;

export function serializeAccount(row: AccountRow): z.output<typeof accountSchema> {
  return {
    id: row.id,
    name: row.name,
    kind: row.kind,
    currency: row.currency,
    opening_balance_cents: Number(row.opening_balance_cents),
    opening_on: row.opening_on,
    balance_cents: Number(row.balance_cents ?? 0),
    archived: row.archived,
    created_at: iso(row.created_at)!,
    updated_at: iso(row.updated_at)!,
  };
}

export function today(zone: string): string {
  return localDate(Date.now(), zone);
}

/**
 * An account with its balance. `lock`: `true` for a change of the account itself (FOR UPDATE);
 * `'share'` for a write of money into it, which holds the account as read (not archived meanwhile)
 * until it commits: an archive then waits for it, and a write after the archive sees it.
 */
export async function findAccount(db: Queryable, companyId: string, id: string, zone: string, lock: boolean | 'share' = false): Promise<AccountRow | null> {
  const locking = lock === 'share' ? ' FOR SHARE OF a' : lock ? ' FOR UPDATE' : '';
  const { rows } = await db.query<AccountRow>(
    `SELECT a.*, to_char(a.opening_on, 'YYYY-MM-DD') AS opening_on, ${BALANCE('a', '$3')} AS balance_cents FROM accounts a WHERE a.company_id = $1 AND a.id = $2${locking}`,
    [companyId, id, today(zone)],
  );
  return rows[0] ?? null;
}

/**
 * An account of the company that can take money (not archived), held FOR SHARE until the write commits
 * (findAccount), or 422 validation_failed naming `field`. Incomes, expenses, sale payments and refunds,
 * and recurring series all write through it.
 */
export async function usableAccount(db: Queryable, companyId: string, zone: string, id: string, field = 'account_id'): Promise<AccountRow> {
  const account = await findAccount(db, companyId, id, zone, 'share');
  if (!account) throw validationFailed({ [field]: ['no existe en la empresa'] });
  if (account.archived) throw validationFailed({ [field]: ['la cuenta está archivada'] });
  return account;
}

export async function insertAccount(db: Queryable, companyId: string, data: { name: string; kind: string; currency: string; opening_balance_cents: number; opening_on: string }): Promise<string> {
  const id = objectId();
  await db.query(
    'INSERT INTO accounts (id, company_id, name, kind, currency, opening_balance_cents, opening_on) VALUES ($1, $2, $3, $4, $5, $6, $7)',
    [id, companyId, data.name, data.kind, data.currency, data.opening_balance_cents, data.opening_on],
  );
  return id;
}

/** Writes the fields given, and moves `updated_at`, only when one of them differs from what is stored. */
export async function updateAccount(db: Queryable, companyId: string, id: string, data: Record<string, unknown>): Promise<void> {
  const entries = Object.entries(data).filter(([, v]) => v !== undefined);
  if (!entries.length) return;
  const names = entries.map(([k]) => k);
  await db.query(
    `UPDATE accounts SET ${setList(names, 3)}, updated_at = now() WHERE company_id = $1 AND id = $2${changesAny(names, 3)}`,
    [companyId, id, ...entries.map(([, v]) => v)],
  );
}

/** Whether anything moved money through the account (then it can only be archived). */
export async function deleteAccount(db: Queryable, companyId: string, id: string): Promise<void> {
  await db.query('DELETE FROM accounts WHERE company_id = $1 AND id = $2', [companyId, id]);
}

export async function accountInUse(db: Queryable, companyId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `SELECT 1 WHERE EXISTS (SELECT 1 FROM movements WHERE company_id = $1 AND account_id = $2)
        OR EXISTS (SELECT 1 FROM movement_payments WHERE company_id = $1 AND account_id = $2)
        OR EXISTS (SELECT 1 FROM sale_refunds WHERE company_id = $1 AND account_id = $2)
        OR EXISTS (SELECT 1 FROM recurring_transactions WHERE company_id = $1 AND account_id = $2)`,
    [companyId, id],
  );
  return (rowCount ?? 0) > 0;
}

export type AccountFilters = { kind?: string; currency?: string; archived?: boolean };

function filterSql(filters: AccountFilters, add: (v: unknown) => string): string[] {
  const conditions: string[] = [];
  if (filters.kind) conditions.push(`kind = ${add(filters.kind)}`);
  if (filters.currency) conditions.push(`currency = ${add(filters.currency)}`);
  if (filters.archived !== undefined) conditions.push(`archived = ${add(filters.archived)}`);
  return conditions;
}

export async function listAccounts(db: Queryable, totals: TotalsCache, companyId: string, zone: string, filters: AccountFilters, page: PaginationQuery) {
  const day = today(zone);
  const result = await listPage<AccountRow>(
    db,
    totals,
    {
      table: 'accounts',
      columns: `*, to_char(opening_on, 'YYYY-MM-DD') AS opening_on, ${BALANCE('accounts', `'${day}'`)} AS balance_cents`,
      companyId,
      where: (p) => filterSql(filters, (v) => p.add(v)),
      serialize: serializeAccount,
    },
    page,
  );
  // Totals per currency over every account the filters select (all pages).
  const values: unknown[] = [companyId];
  const conditions = filterSql(filters, (v) => `$${values.push(v)}`);
  const { rows } = await db.query<{ currency: string; balance_cents: string; count: number }>(
    `SELECT a.currency, sum(${BALANCE('a', `'${day}'`)}) AS balance_cents, count(*)::int AS count
       FROM accounts a WHERE a.company_id = $1 ${conditions.map((c) => `AND a.${c}`).join(' ')} GROUP BY a.currency ORDER BY a.currency`,
    values,
  );
  const byCurrency = Object.fromEntries(rows.map((r) => [r.currency, { balance_cents: Number(r.balance_cents), accounts: r.count }]));
  return { data: result.data, meta: { ...result.meta, totals: byCurrency } };
}
