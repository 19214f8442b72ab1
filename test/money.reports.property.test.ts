// Reports by property: fast-check generates random ledgers (accounts in three
// currencies, incomes and expenses paid or pending, partial payments, sales
// with VAT lines, sale payments, refunds and deletions), the test performs
// them through the API and keeps its own simple model of what happened, and
// the three reports must equal what the model computes from scratch: the
// balance sheet (and its identity), the income statement (and each total as
// the sum of its lines) and the cash flow (closing = opening + in − out).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { rebuildLedger } from '../db/money/rebuild.ts';
import { lineAmounts } from '../lib/vat.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';

const CURRENCIES = ['mxn', 'usd', 'eur'] as const;
const CATEGORIES = ['servicios', 'renta', 'nomina', 'otros'];
const DAYS = Array.from({ length: 60 }, (_, i) => new Date(Date.UTC(2026, 0, 1 + i)).toISOString().slice(0, 10));
const at = (day: string) => `${day}T17:00:00Z`; // 11:00 in Mexico City: the same local day

type Op =
  | { kind: 'account'; currency: number; opening: number; day: number }
  | { kind: 'movement'; direction: 'income' | 'expense'; account: number; amount: number; day: number; category: number; pending: boolean }
  | { kind: 'pay'; movement: number; part: number; day: number }
  | { kind: 'sale'; currency: number; lines: Array<{ qty: number; price: number; rate: number }>; day: number }
  | { kind: 'salePay'; sale: number; part: number; day: number; account: number }
  | { kind: 'refund'; sale: number; part: number; day: number; account: number }
  | { kind: 'delete'; movement: number };

const RATES = [16, 8, 0, null, 'exempt'] as const;

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('account' as const), currency: fc.nat(2), opening: fc.integer({ min: -50_000, max: 500_000 }), day: fc.nat(59) }) },
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('movement' as const), direction: fc.constantFrom('income' as const, 'expense' as const), account: fc.nat(), amount: fc.integer({ min: 1, max: 200_000 }), day: fc.nat(59), category: fc.nat(3), pending: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('pay' as const), movement: fc.nat(), part: fc.double({ min: 0.1, max: 1, noNaN: true }), day: fc.nat(59) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('sale' as const), currency: fc.nat(2), lines: fc.array(fc.record({ qty: fc.integer({ min: 1, max: 5000 }).map((n) => n / 1000 * 3), price: fc.integer({ min: 0, max: 90_000 }), rate: fc.nat(4) }), { minLength: 1, maxLength: 4 }), day: fc.nat(59) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('salePay' as const), sale: fc.nat(), part: fc.double({ min: 0.1, max: 1, noNaN: true }), day: fc.nat(59), account: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('refund' as const), sale: fc.nat(), part: fc.double({ min: 0.1, max: 1, noNaN: true }), day: fc.nat(59), account: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), movement: fc.nat() }) },
);

type Account = { id: string; currency: string; opening: number; openingOn: string };
type Flow = { account: string; amount: number; day: string };
type Movement = { id: string; direction: 'income' | 'expense'; currency: string; account: string; amount: number; day: string; category: string; payments: Flow[]; saleId: string | null; deleted: boolean };
type Sale = { id: string; currency: string; total: number; day: string; paid: number; refunds: Flow[] };

describe('reports by property (random ledgers against an independent computation)', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  test('balance sheet, income statement and cash flow equal the model for random ledgers', { timeout: 600_000 }, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1000, maxLength: 1100 }), async (ops) => {
        const t = await seedTenant(app.pool, { rateLimitPerMinute: 1_000_000 });
        const api = client(app.baseUrl, t.key);
        const accounts: Account[] = [];
        const movements: Movement[] = [];
        const sales: Sale[] = [];
        const ok = (res: { status: number; text: string }, what: string) => assert.ok(res.status === 201 || res.status === 204, `${what}: ${res.status} ${res.text}`);
        // What a sale had been paid by a day (without one payment), and refunded by it: refunds never exceed payments at a refund's date.
        const paidBy = (saleId: string, day: string, without?: Movement) =>
          movements.filter((m) => m.saleId === saleId && !m.deleted && m !== without && m.day <= day).reduce((n, m) => n + m.amount, 0);
        const refundedBy = (s: Sale, day: string) => s.refunds.filter((r) => r.day <= day).reduce((n, r) => n + r.amount, 0);

        for (const op of ops) {
          if (op.kind === 'account' || accounts.length === 0) {
            const a = op.kind === 'account' ? op : { currency: 0, opening: 10_000, day: 0 };
            const res = await api.post('/accounts', { data: { name: 'Cuenta', kind: 'bank', currency: CURRENCIES[a.currency], opening_balance_cents: a.opening, opening_on: DAYS[a.day] } });
            ok(res, 'account');
            accounts.push({ id: res.body.data.id, currency: CURRENCIES[a.currency], opening: a.opening, openingOn: DAYS[a.day] });
            if (op.kind === 'account') continue;
          }
          const live = movements.filter((m) => !m.deleted);
          if (op.kind === 'movement') {
            const account = accounts[op.account % accounts.length];
            const res = await api.post(`/${op.direction === 'income' ? 'incomes' : 'expenses'}`, {
              data: { account_id: account.id, amount_cents: op.amount, occurred_at: at(DAYS[op.day]), category: CATEGORIES[op.category], status: op.pending ? 'pending' : 'paid' },
            });
            ok(res, 'movement');
            movements.push({ id: res.body.data.id, direction: op.direction, currency: account.currency, account: account.id, amount: op.amount, day: DAYS[op.day], category: CATEGORIES[op.category], payments: op.pending ? [] : [{ account: account.id, amount: op.amount, day: DAYS[op.day] }], saleId: null, deleted: false });
          } else if (op.kind === 'pay') {
            const open = live.filter((m) => !m.saleId && m.payments.reduce((n, p) => n + p.amount, 0) < m.amount);
            if (!open.length) continue;
            const m = open[op.movement % open.length];
            const left = m.amount - m.payments.reduce((n, p) => n + p.amount, 0);
            const amount = Math.max(1, Math.floor(left * op.part));
            const day = DAYS[op.day] < m.day ? m.day : DAYS[op.day]; // never before it occurred
            ok(await api.post(`/${m.direction === 'income' ? 'incomes' : 'expenses'}/${m.id}/payments`, { data: { amount_cents: amount, paid_at: at(day) } }), 'pay');
            m.payments.push({ account: m.account, amount, day });
          } else if (op.kind === 'sale') {
            const lines = op.lines.map((l) => {
              const rate = RATES[l.rate];
              return { description: 'Línea', quantity: Math.round(l.qty * 1000) / 1000, unit_price_cents: l.price, ...(rate === 'exempt' ? { vat_exempt: true } : { vat_rate: rate }) };
            });
            const res = await api.post('/sales', { data: { currency: CURRENCIES[op.currency], occurred_at: at(DAYS[op.day]), line_items: lines } });
            ok(res, 'sale');
            // The model's own arithmetic for the total.
            const total = lines.reduce((n, l) => n + lineAmounts({ quantity: l.quantity, unit_price_cents: l.unit_price_cents, vat_rate: 'vat_exempt' in l ? 'exempt' : l.vat_rate === null || l.vat_rate === undefined ? 'none' : (String(l.vat_rate) as '16') }, false).total_cents, 0);
            assert.equal(res.body.data.total_cents, total);
            sales.push({ id: res.body.data.id, currency: CURRENCIES[op.currency], total, day: DAYS[op.day], paid: 0, refunds: [] });
          } else if (op.kind === 'salePay') {
            const owing = sales.filter((s) => s.paid < s.total && accounts.some((a) => a.currency === s.currency));
            if (!owing.length) continue;
            const s = owing[op.sale % owing.length];
            const choices = accounts.filter((a) => a.currency === s.currency);
            const account = choices[op.account % choices.length];
            const amount = Math.max(1, Math.floor((s.total - s.paid) * op.part));
            const day = DAYS[op.day] < s.day ? s.day : DAYS[op.day];
            const res = await api.post(`/sales/${s.id}/payments`, { data: { account_id: account.id, amount_cents: amount, paid_at: at(day) } });
            ok(res, 'sale payment');
            const incomeId = res.body.data.payments.find((p: any) => !movements.some((m) => m.id === p.income_id)).income_id;
            s.paid += amount;
            movements.push({ id: incomeId, direction: 'income', currency: s.currency, account: account.id, amount, day, category: 'ventas', payments: [{ account: account.id, amount, day }], saleId: s.id, deleted: false });
          } else if (op.kind === 'refund') {
            const refundable = sales.filter((s) => s.paid - s.refunds.reduce((n, r) => n + r.amount, 0) > 0);
            if (!refundable.length) continue;
            const s = refundable[op.sale % refundable.length];
            const choices = accounts.filter((a) => a.currency === s.currency);
            const account = choices[op.account % choices.length];
            // Not before the sale's first payment, and never more than was paid by its date nor by a later
            // refund's (422 otherwise): the money must have come in.
            const firstPaid = movements.filter((m) => m.saleId === s.id && !m.deleted).map((m) => m.day).sort()[0];
            const day = firstPaid && DAYS[op.day] < firstPaid ? firstPaid : DAYS[op.day];
            const room = Math.min(...[day, ...s.refunds.map((r) => r.day).filter((d) => d > day)].map((d) => paidBy(s.id, d) - refundedBy(s, d)));
            if (room <= 0) continue;
            const amount = Math.max(1, Math.floor(room * op.part));
            ok(await api.post(`/sales/${s.id}/refunds`, { data: { account_id: account.id, amount_cents: amount, refunded_at: at(day) } }), 'refund');
            s.refunds.push({ account: account.id, amount, day });
          } else if (op.kind === 'delete') {
            // A sale payment its refunds need cannot go (422): at some refund's date the refunds up to it
            // would exceed the payments left up to it. The model skips those.
            const deletable = live.filter((m) => {
              if (!m.saleId) return true;
              const s = sales.find((x) => x.id === m.saleId)!;
              return s.refunds.every((r) => paidBy(s.id, r.day, m) - refundedBy(s, r.day) >= 0);
            });
            if (!deletable.length) continue;
            const m = deletable[op.movement % deletable.length];
            ok(await api.delete(`/${m.direction === 'income' ? 'incomes' : 'expenses'}/${m.id}`), 'delete');
            m.deleted = true;
            if (m.saleId) sales.find((x) => x.id === m.saleId)!.paid -= m.amount;
          }
        }

        // The ledger kept write by write is what a rebuild from the records gives.
        const snapshot = async () => (await app.pool.query(`SELECT currency, to_char(day, 'YYYY-MM-DD') AS day, line, key, amount_cents FROM ledger_daily WHERE company_id = $1 AND amount_cents <> 0 ORDER BY 1, 2, 3, 4`, [t.companyId])).rows;
        const incremental = await snapshot();
        await rebuildLedger(app.pool, t.companyId);
        assert.deepEqual(await snapshot(), incremental, 'rebuilding the ledger changes nothing');

        // The model's reports.
        const live = movements.filter((m) => !m.deleted);
        const sum = (xs: number[]) => xs.reduce((n, x) => n + x, 0);
        for (const asOf of [DAYS[10], DAYS[35], DAYS[59]]) {
          const bs = (await api.get(`/reports/balance-sheet?as_of=${asOf}`)).body.data;
          for (const c of bs.currencies) {
            const cash = (accountId: string) => {
              const a = accounts.find((x) => x.id === accountId)!;
              const inflow = sum(live.filter((m) => m.direction === 'income').flatMap((m) => m.payments).filter((p) => p.account === accountId && p.day <= asOf).map((p) => p.amount));
              const outflow = sum(live.filter((m) => m.direction === 'expense').flatMap((m) => m.payments).filter((p) => p.account === accountId && p.day <= asOf).map((p) => p.amount));
              const refunds = sum(sales.flatMap((s) => s.refunds).filter((r) => r.account === accountId && r.day <= asOf).map((r) => r.amount));
              return (a.openingOn <= asOf ? a.opening : 0) + inflow - outflow - refunds;
            };
            for (const a of c.assets.accounts) assert.equal(a.balance_cents, cash(a.account_id), `balance of ${a.account_id} at ${asOf}`);
            const mine = live.filter((m) => m.currency === c.currency);
            const cSales = sales.filter((s) => s.currency === c.currency);
            const receivableIncomes = sum(mine.filter((m) => m.direction === 'income' && !m.saleId && m.day <= asOf).map((m) => m.amount - sum(m.payments.filter((p) => p.day <= asOf).map((p) => p.amount))));
            const receivableSales = sum(cSales.filter((s) => s.day <= asOf).map((s) => s.total)) - sum(mine.filter((m) => m.saleId).flatMap((m) => m.payments).filter((p) => p.day <= asOf).map((p) => p.amount));
            const payables = sum(mine.filter((m) => m.direction === 'expense' && m.day <= asOf).map((m) => m.amount - sum(m.payments.filter((p) => p.day <= asOf).map((p) => p.amount))));
            const result =
              sum(mine.filter((m) => m.direction === 'income' && !m.saleId && m.day <= asOf).map((m) => m.amount)) +
              sum(cSales.filter((s) => s.day <= asOf).map((s) => s.total)) -
              sum(cSales.flatMap((s) => s.refunds).filter((r) => r.day <= asOf).map((r) => r.amount)) -
              sum(mine.filter((m) => m.direction === 'expense' && m.day <= asOf).map((m) => m.amount));
            const opening = sum(accounts.filter((a) => a.currency === c.currency && a.openingOn <= asOf).map((a) => a.opening));
            assert.deepEqual([c.assets.receivables.incomes_cents, c.assets.receivables.sales_cents, c.liabilities.payables_cents, c.equity.retained_result_cents, c.equity.opening_balances_cents], [receivableIncomes, receivableSales, payables, result, opening], `${c.currency} at ${asOf}`);
            assert.equal(c.assets.total_cents, c.liabilities.total_cents + c.equity.total_cents, `identity ${c.currency} at ${asOf}`);
          }
        }
        for (const [start, end] of [[DAYS[0], DAYS[59]], [DAYS[5], DAYS[20]], [DAYS[30], DAYS[30]]]) {
          const is = (await api.get(`/reports/income-statement?start_on=${start}&end_on=${end}`)).body.data;
          const within = (d: string) => d >= start && d <= end;
          for (const c of is.currencies) {
            const mine = live.filter((m) => m.currency === c.currency && !m.saleId && within(m.day));
            const cSales = sales.filter((s) => s.currency === c.currency);
            const income = sum(mine.filter((m) => m.direction === 'income').map((m) => m.amount)) + sum(cSales.filter((s) => within(s.day)).map((s) => s.total)) - sum(cSales.flatMap((s) => s.refunds).filter((r) => within(r.day)).map((r) => r.amount));
            const expense = sum(mine.filter((m) => m.direction === 'expense').map((m) => m.amount));
            assert.equal(c.income.total_cents, income, `income ${c.currency} ${start}..${end}`);
            assert.equal(c.expenses.total_cents, expense, `expenses ${c.currency} ${start}..${end}`);
            assert.equal(c.income.total_cents, sum(c.income.lines.map((l: any) => l.amount_cents)));
            assert.equal(c.expenses.total_cents, sum(c.expenses.lines.map((l: any) => l.amount_cents)));
            assert.equal(c.net_cents, income - expense);
          }
          const cf = (await api.get(`/reports/cash-flow?start_on=${start}&end_on=${end}`)).body.data;
          const movedBy = (id: string) =>
            live.flatMap((m) => m.payments).some((p) => p.account === id && p.day <= end) || sales.flatMap((x) => x.refunds).some((r) => r.account === id && r.day <= end);
          assert.deepEqual(
            cf.accounts.map((a: any) => a.account_id).sort(),
            accounts.filter((a) => a.openingOn <= end || movedBy(a.id)).map((a) => a.id).sort(),
            `accounts in the cash flow ${start}..${end}`,
          );
          for (const a of cf.accounts) {
            const flows = (pred: (d: string) => boolean) => {
              const inflow = sum(live.filter((m) => m.direction === 'income').flatMap((m) => m.payments).filter((p) => p.account === a.account_id && pred(p.day)).map((p) => p.amount));
              const outflow = sum(live.filter((m) => m.direction === 'expense').flatMap((m) => m.payments).filter((p) => p.account === a.account_id && pred(p.day)).map((p) => p.amount)) + sum(sales.flatMap((s) => s.refunds).filter((r) => r.account === a.account_id && pred(r.day)).map((r) => r.amount));
              return { inflow, outflow };
            };
            const account = accounts.find((x) => x.id === a.account_id)!;
            const before = flows((d) => d < start);
            const inside = flows(within);
            // The opening balance counts from opening_on: opened before start_on, in the opening; within the
            // range, an inflow; after end_on (listed when money moved in it by then), not at all (as in the balance sheet).
            const openedBefore = account.openingOn < start ? account.opening : 0;
            const openedWithin = account.openingOn >= start && account.openingOn <= end ? account.opening : 0;
            assert.deepEqual(
              [a.opening_balance_cents, a.inflows_cents, a.outflows_cents],
              [openedBefore + before.inflow - before.outflow, Math.max(openedWithin, 0) + inside.inflow, Math.max(-openedWithin, 0) + inside.outflow],
              `cash flow ${a.account_id}`,
            );
            assert.equal(a.closing_balance_cents, a.opening_balance_cents + a.inflows_cents - a.outflows_cents);
          }
        }
      }),
      { numRuns: 3, seed: 20261124, endOnFailure: true },
    );
  });
});
