// The three reports as data (api/routes/reports.ts serves them; the MCP
// report tools call them too): read from the daily ledger (db/money/ledger.ts),
// per currency, dates inclusive in the company's zone, no conversion. A report
// reads a few rows per day, account and category, whatever the number of
// movements behind them.
import type { Queryable } from '../../db/pool.ts';

type Sum = { currency: string; line: string; key: string; amount: string };

async function sums(db: Queryable, companyId: string, range: { from?: string; to: string }, lines: string[]): Promise<Sum[]> {
  const { rows } = await db.query<Sum>(
    `SELECT currency, line, key, sum(amount_cents) AS amount FROM ledger_daily
      WHERE company_id = $1 AND line = ANY($2) AND day <= $3::date ${range.from ? 'AND day >= $4::date' : ''}
      GROUP BY currency, line, key`,
    range.from ? [companyId, lines, range.to, range.from] : [companyId, lines, range.to],
  );
  return rows;
}

async function accountsOf(db: Queryable, companyId: string) {
  const { rows } = await db.query<{ id: string; name: string; currency: string; opening_on: string }>(
    `SELECT id, name, currency, to_char(opening_on, 'YYYY-MM-DD') AS opening_on FROM accounts WHERE company_id = $1 ORDER BY name, id`,
    [companyId],
  );
  return rows;
}

/**
 * Which accounts a report lists on `day`: those open by then, and any whose money moved by then before
 * its opening date (`moved`: account ids with a non-zero cash sum; a deleted movement leaves a zero).
 * The balance sheet and the cash flow list the same accounts, so their cash ties.
 */
function listed<A extends { id: string; opening_on: string }>(accounts: A[], day: string, moved: ReadonlySet<string>): A[] {
  return accounts.filter((a) => a.opening_on <= day || moved.has(a.id));
}

const cashMoved = (rows: Sum[]) => new Set(rows.filter((r) => (r.line === 'cash_in' || r.line === 'cash_out') && Number(r.amount) !== 0).map((r) => r.key));

const byCurrency = <T>(make: () => T) => {
  const map = new Map<string, T>();
  return { get: (c: string) => map.get(c) ?? (map.set(c, make()), map.get(c)!), entries: () => [...map.entries()].sort(([a], [b]) => a.localeCompare(b)) };
};

export async function balanceSheet(db: Queryable, companyId: string, asOf: string) {
  const [rows, accounts] = await Promise.all([sums(db, companyId, { to: asOf }, ['opening', 'cash_in', 'cash_out', 'income', 'expense', 'sale', 'refund', 'receivable', 'payable']), accountsOf(db, companyId)]);
  const currencies = byCurrency(() => ({ balances: new Map<string, number>(), opening: 0, receivables: { incomes: 0, sales: 0 }, payables: 0, result: 0 }));
  for (const r of rows) {
    const c = currencies.get(r.currency);
    const amount = Number(r.amount);
    if (r.line === 'opening' || r.line === 'cash_in') c.balances.set(r.key, (c.balances.get(r.key) ?? 0) + amount);
    if (r.line === 'cash_out') c.balances.set(r.key, (c.balances.get(r.key) ?? 0) - amount);
    if (r.line === 'opening') c.opening += amount;
    if (r.line === 'receivable') c.receivables[r.key as 'incomes' | 'sales'] += amount;
    if (r.line === 'payable') c.payables += amount;
    if (r.line === 'income' || r.line === 'sale') c.result += amount;
    if (r.line === 'expense' || r.line === 'refund') c.result -= amount;
  }
  const moved = cashMoved(rows);
  for (const a of listed(accounts, asOf, moved)) currencies.get(a.currency);
  return {
    as_of: asOf,
    currencies: currencies.entries().map(([currency, c]) => {
      const list = listed(accounts, asOf, moved).filter((a) => a.currency === currency).map((a) => ({ account_id: a.id, name: a.name, balance_cents: c.balances.get(a.id) ?? 0 }));
      const cash = list.reduce((n, a) => n + a.balance_cents, 0);
      const receivables = c.receivables.incomes + c.receivables.sales;
      return {
        currency,
        assets: { accounts: list, cash_cents: cash, receivables: { incomes_cents: c.receivables.incomes, sales_cents: c.receivables.sales, total_cents: receivables }, total_cents: cash + receivables },
        liabilities: { payables_cents: c.payables, total_cents: c.payables },
        equity: { opening_balances_cents: c.opening, retained_result_cents: c.result, total_cents: c.opening + c.result },
      };
    }),
  };
}

export async function incomeStatement(db: Queryable, companyId: string, startOn: string, endOn: string) {
  const rows = await sums(db, companyId, { from: startOn, to: endOn }, ['income', 'sale', 'refund', 'expense']);
  const currencies = byCurrency(() => ({ income: new Map<string, number>(), expenses: new Map<string, number>() }));
  for (const r of rows) {
    const c = currencies.get(r.currency);
    const amount = Number(r.amount);
    if (r.line === 'income') c.income.set(r.key, (c.income.get(r.key) ?? 0) + amount);
    if (r.line === 'sale') c.income.set('ventas', (c.income.get('ventas') ?? 0) + amount);
    if (r.line === 'refund') c.income.set('devoluciones', (c.income.get('devoluciones') ?? 0) - amount);
    if (r.line === 'expense') c.expenses.set(r.key, (c.expenses.get(r.key) ?? 0) + amount);
  }
  const lines = (m: Map<string, number>) => [...m.entries()].filter(([, v]) => v !== 0).sort(([a], [b]) => a.localeCompare(b)).map(([category, amount_cents]) => ({ category, amount_cents }));
  return {
    start_on: startOn,
    end_on: endOn,
    currencies: currencies.entries().map(([currency, c]) => {
      const income = lines(c.income);
      const expenses = lines(c.expenses);
      const incomeTotal = income.reduce((n, l) => n + l.amount_cents, 0);
      const expenseTotal = expenses.reduce((n, l) => n + l.amount_cents, 0);
      return { currency, income: { lines: income, total_cents: incomeTotal }, expenses: { lines: expenses, total_cents: expenseTotal }, net_cents: incomeTotal - expenseTotal };
    }).filter((c) => c.income.lines.length || c.expenses.lines.length),
  };
}

export async function cashFlow(db: Queryable, companyId: string, startOn: string, endOn: string) {
  const [before, inside, accounts] = await Promise.all([
    db.query<Sum>(
      `SELECT currency, line, key, sum(amount_cents) AS amount FROM ledger_daily
        WHERE company_id = $1 AND line IN ('cash_in', 'cash_out') AND day < $2::date GROUP BY currency, line, key`,
      [companyId, startOn],
    ),
    sums(db, companyId, { from: startOn, to: endOn }, ['cash_in', 'cash_out']),
    db.query<{ id: string; name: string; currency: string; opening_balance_cents: string; opening_on: string }>(
      `SELECT id, name, currency, opening_balance_cents, to_char(opening_on, 'YYYY-MM-DD') AS opening_on FROM accounts WHERE company_id = $1 ORDER BY currency, name, id`,
      [companyId],
    ),
  ]);
  const get = (rows: Sum[], line: string, key: string) => Number(rows.find((r) => r.line === line && r.key === key)?.amount ?? 0);
  const perAccount = listed(accounts.rows, endOn, cashMoved([...before.rows, ...inside])).map((a) => {
    // The opening balance is cash from its opening_on: before the range it is in the opening, within it
    // an inflow, so one range's closing is the next one's opening (and the balance sheet's the day before).
    const openingBalance = Number(a.opening_balance_cents);
    const openedBefore = a.opening_on < startOn;
    const openedWithin = !openedBefore && a.opening_on <= endOn;
    const opening = (openedBefore ? openingBalance : 0) + get(before.rows, 'cash_in', a.id) - get(before.rows, 'cash_out', a.id);
    // A negative opening balance (a card that owes) opening within the range is money out, not a negative inflow.
    const openedIn = openedWithin ? openingBalance : 0;
    const inflows = Math.max(openedIn, 0) + get(inside, 'cash_in', a.id);
    const outflows = Math.max(-openedIn, 0) + get(inside, 'cash_out', a.id);
    return { account_id: a.id, name: a.name, currency: a.currency, opening_balance_cents: opening, inflows_cents: inflows, outflows_cents: outflows, closing_balance_cents: opening + inflows - outflows };
  });
  const totals = byCurrency(() => ({ opening: 0, inflows: 0, outflows: 0, closing: 0 }));
  for (const a of perAccount) {
    const t = totals.get(a.currency);
    t.opening += a.opening_balance_cents;
    t.inflows += a.inflows_cents;
    t.outflows += a.outflows_cents;
    t.closing += a.closing_balance_cents;
  }
  return {
    start_on: startOn,
    end_on: endOn,
    accounts: perAccount,
    currencies: totals.entries().map(([currency, t]) => ({ currency, opening_balance_cents: t.opening, inflows_cents: t.inflows, outflows_cents: t.outflows, closing_balance_cents: t.closing })),
  };
}
