// The bodies of the three reports (api/routes/reports.ts), for the OpenAPI
// document: what report-queries.ts builds. Amounts are integer cents, per
// currency, never converted (docs/money.md, Reports).
import { z } from 'zod';

const cents = z.number().int();
const day = z.string().meta({ format: 'date' }).describe('YYYY-MM-DD');

export const balanceSheetSchema = z.object({
  as_of: day,
  currencies: z.array(
    z.object({
      currency: z.string(),
      assets: z.object({
        accounts: z.array(z.object({ account_id: z.string(), name: z.string(), balance_cents: cents })),
        cash_cents: cents,
        receivables: z.object({ incomes_cents: cents, sales_cents: cents, total_cents: cents }),
        total_cents: cents,
      }),
      liabilities: z.object({ payables_cents: cents, total_cents: cents }),
      equity: z.object({ opening_balances_cents: cents, retained_result_cents: cents, total_cents: cents }),
    }),
  ),
});

const statementLines = z.object({
  lines: z.array(z.object({ category: z.string(), amount_cents: cents })).describe('Por categoría, en orden alfabético; sin líneas en cero'),
  total_cents: cents,
});

export const incomeStatementSchema = z.object({
  start_on: day,
  end_on: day,
  currencies: z.array(z.object({ currency: z.string(), income: statementLines, expenses: statementLines, net_cents: cents })),
});

const flows = { opening_balance_cents: cents, inflows_cents: cents, outflows_cents: cents, closing_balance_cents: cents };

export const cashFlowSchema = z.object({
  start_on: day,
  end_on: day,
  accounts: z.array(z.object({ account_id: z.string(), name: z.string(), currency: z.string(), ...flows })),
  currencies: z.array(z.object({ currency: z.string(), ...flows })),
});
