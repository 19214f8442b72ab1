// `GET /accounting-periods` (scope `read-reports`): the company's closed
// months, newest first. Operators close and reopen them with
// `wsctl period close|open --company --year --month` (api/admin/periods.ts).
import { z } from 'zod';
import { closedPeriods } from '../../db/money/periods.ts';
import { companyZone } from '../../db/companies.ts';
import { defineRoute, type RouteDef } from '../route.ts';

export const periodSchema = z.object({ year: z.number().int(), month: z.number().int(), status: z.literal('closed'), closed_at: z.string() });

export const accountingPeriodRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/accounting-periods',
    scope: 'read-reports',
    tag: 'Accounting periods',
    summary: 'Lista los meses contables cerrados',
    description:
      'Un mes cerrado rechaza toda alta, cambio o baja cuya fecha de dinero (antes o después del cambio) caiga en él: 422 `period_locked` con `year` y `month`. ' +
      'Los meses se leen en la zona horaria de la empresa (`timezone`, por defecto America/Mexico_City). Sin paginación: son pocos.',
    response: periodSchema,
    list: true,
    meta: z.object({ timezone: z.string().describe('La zona en que se leen los meses') }),
    status: 200,
    handler: async (_ctx, { companyId, db }) => {
      const rows = await closedPeriods(db, companyId);
      return { data: rows.map((r) => ({ year: r.year, month: r.month, status: 'closed' as const, closed_at: r.closed_at.toISOString() })), meta: { timezone: await companyZone(db, companyId) } };
    },
  }),
];
