// `wsctl webhook ...` and `wsctl delivery ...` (DESIGN.md, CLI contract).
// Operators act across companies, so lookups here are by id alone; the REST
// routes scope the same queries by company.
import { z } from 'zod';
import { transaction } from '../../../db/pool.ts';
import { EVENT_NAMES } from '../../../lib/webhook-events.ts';
import { ApiError } from '../../errors.ts';
import {
  findDelivery,
  findEndpoint,
  listEndpointsOf,
  recentDeliveries,
  replayDelivery,
  rotateSecret,
  serializeDelivery,
  serializeEndpoint,
} from '../../routes/webhook-endpoint-queries.ts';
import { DELIVERY_STATUSES } from '../../routes/webhook-endpoint-schemas.ts';
import { requireCompany } from '../exists.ts';
import { adminId as id, adminProcedure, router } from '../trpc.ts';

/** `wsctl delivery list` shows the newest deliveries first, up to this many. */
const DELIVERY_LIST_LIMIT = 100;

export const webhookRouter = router({
  list: adminProcedure
    .input(z.strictObject({ companyId: id }))
    .query(async ({ ctx, input }) => {
      await requireCompany(ctx.deps.pool, input.companyId);
      return (await listEndpointsOf(ctx.deps.pool, input.companyId)).map((row) => serializeEndpoint(row));
    }),
  rotateSecret: adminProcedure.input(z.strictObject({ id })).mutation(async ({ ctx, input }) => {
    const row = await rotateSecret(ctx.deps.pool, null, input.id);
    if (!row) throw new ApiError('not_found', `Webhook endpoint ${input.id} not found`);
    return { id: row.id, secret: row.secret };
  }),
});

export const deliveryRouter = router({
  list: adminProcedure
    .input(z.strictObject({ endpointId: id, status: z.enum(DELIVERY_STATUSES).optional(), event: z.enum(EVENT_NAMES).optional() }))
    .query(async ({ ctx, input }) => {
      if (!(await findEndpoint(ctx.deps.pool, null, input.endpointId))) throw new ApiError('not_found', `Webhook endpoint ${input.endpointId} not found`);
      const rows = await recentDeliveries(ctx.deps.pool, input.endpointId, { status: input.status, event: input.event, limit: DELIVERY_LIST_LIMIT });
      return rows.map((row) => serializeDelivery(row));
    }),
  show: adminProcedure.input(z.strictObject({ id })).query(async ({ ctx, input }) => {
    const row = await findDelivery(ctx.deps.pool, null, input.id);
    if (!row) throw new ApiError('not_found', `Delivery ${input.id} not found`);
    return serializeDelivery(row, { full: true });
  }),
  replay: adminProcedure.input(z.strictObject({ id })).mutation(async ({ ctx, input }) => {
    const row = await transaction(ctx.deps.pool, (db) => replayDelivery(db, null, input.id));
    if (!row) throw new ApiError('not_found', `Delivery ${input.id} not found`);
    return serializeDelivery(row, { full: true });
  }),
});
