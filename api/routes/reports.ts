// Reports (scope `read-reports`), read from the daily ledger
// (db/money/ledger.ts), per currency, dates inclusive in the company's zone,
// no currency conversion (docs/money.md):
//   GET /reports/balance-sheet?as_of=YYYY-MM-DD
//   GET /reports/income-statement?start_on=&end_on=
//   GET /reports/cash-flow?start_on=&end_on=
// The reports themselves are report-queries.ts; their bodies, report-schemas.ts.
import { z } from 'zod';
import { companyZone } from '../../db/companies.ts';
import { localDate } from '../../lib/local-dates.ts';
import { validationFailed } from '../errors.ts';
import { defineRoute, type RouteDef } from '../route.ts';
import { localDay } from './money-fields.ts';
import { balanceSheet, cashFlow, incomeStatement } from './report-queries.ts';
import { balanceSheetSchema, cashFlowSchema, incomeStatementSchema } from './report-schemas.ts';

const TAG = 'Reports';

const rangeQuery = z.strictObject({ start_on: localDay, end_on: localDay });
function checkRange(q: { start_on: string; end_on: string }) {
  if (q.end_on < q.start_on) throw validationFailed({ end_on: ['no puede ser anterior a start_on'] });
}

const BASIS =
  'Base devengada: un ingreso o gasto cuenta cuando ocurre (`occurred_at`), una venta por su total cuando se registra y una devolución cuando se hace; ' +
  'lo cobrado y lo pagado se ve en el flujo de efectivo. Así el resultado acumulado es el del balance general. Fechas inclusivas en la zona de la empresa; ' +
  'totales por moneda, sin conversión.';

export const reportRoutes: RouteDef[] = [
  defineRoute({
    method: 'GET',
    path: '/reports/balance-sheet',
    scope: 'read-reports',
    tag: TAG,
    summary: 'Balance general',
    description:
      'Por moneda, al cierre del día `as_of` (por defecto hoy): activos (saldo de cada cuenta; por cobrar: ingresos pendientes y saldo de ventas), pasivos (gastos pendientes) ' +
      'y capital (saldos iniciales y resultado acumulado). Activos = pasivos + capital, exacto. El IVA no se separa como pasivo. ' + BASIS,
    query: z.strictObject({ as_of: localDay.optional() }),
    response: balanceSheetSchema,
    status: 200,
    errors: ['invalid_parameter'],
    handler: async (_ctx, { query, companyId, db }) => {
      const zone = await companyZone(db, companyId);
      return { data: await balanceSheet(db, companyId, query.as_of ?? localDate(Date.now(), zone)) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/reports/income-statement',
    scope: 'read-reports',
    tag: TAG,
    summary: 'Estado de resultados',
    description: 'Por moneda: ingresos por categoría (las ventas como `ventas`, las devoluciones como `devoluciones`, en negativo), gastos por categoría y resultado neto; cada total es la suma de sus líneas. `end_on` antes de `start_on`: 422. ' + BASIS,
    query: rangeQuery,
    response: incomeStatementSchema,
    status: 200,
    errors: ['invalid_parameter', 'validation_failed'],
    handler: async (_ctx, { query, companyId, db }) => {
      checkRange(query);
      return { data: await incomeStatement(db, companyId, query.start_on, query.end_on) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/reports/cash-flow',
    scope: 'read-reports',
    tag: TAG,
    summary: 'Flujo de efectivo',
    description: 'Por cuenta y por moneda: saldo inicial (el saldo de apertura de la cuenta si abrió antes de `start_on`, más lo movido antes de `start_on`), entradas y salidas (con el saldo de apertura de una cuenta que abre dentro del rango: entrada si es positivo, salida si es negativo) y saldo final = inicial + entradas − salidas; así un rango termina donde empieza el siguiente. `end_on` antes de `start_on`: 422.',
    query: rangeQuery,
    response: cashFlowSchema,
    status: 200,
    errors: ['invalid_parameter', 'validation_failed'],
    handler: async (_ctx, { query, companyId, db }) => {
      checkRange(query);
      return { data: await cashFlow(db, companyId, query.start_on, query.end_on) };
    },
  }),
];
