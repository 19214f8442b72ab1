// `wsctl period close|open --company <id> --year Y --month M` (DESIGN.md,
// CLI contract): a closed month refuses money writes dated in it (422 period_locked).
import type { Command } from 'commander';
import { action } from '../action.ts';
import { intUpTo, yearOption } from '../options.ts';

export function registerPeriodCommands(program: Command): void {
  const period = program.command('period').description('accounting months of a company');
  for (const verb of ['close', 'open'] as const) {
    period
      .command(verb)
      .description(verb === 'close' ? 'close a month: money writes dated in it are refused' : 'reopen a closed month')
      .requiredOption('--company <id>', 'company id')
      .requiredOption('--year <year>', 'year, e.g. 2026 (1900 to 9999)', yearOption)
      .requiredOption('--month <month>', 'month, 1-12', intUpTo(12))
      .action(
        action(
          async ({ api, opts }) => api.period[verb].mutate({ companyId: opts.company, year: opts.year, month: opts.month }),
          (p) => `${p.year}-${String(p.month).padStart(2, '0')} of ${p.company_id}: ${p.status}`,
        ),
      );
  }
}
