// The one initTRPC of the admin API. Context carries the process deps; the
// Bearer ADMIN_TOKEN check happens before tRPC sees the request (koa.ts).
import { initTRPC, TRPCError } from '@trpc/server';
import type { Deps } from '../types.ts';
import { AdminError } from './companies.ts';

export type AdminContext = { deps: Deps };

// isDev false: no stack traces in error responses, even to operators.
const t = initTRPC.context<AdminContext>().create({ isDev: false });

const TRPC_CODES = { not_found: 'NOT_FOUND', conflict: 'CONFLICT', bad_request: 'BAD_REQUEST' } as const;

/** Operator errors become tRPC errors with a clear message; the rest stay internal. */
const mapErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && result.error.cause instanceof AdminError) {
    const cause = result.error.cause;
    throw new TRPCError({ code: TRPC_CODES[cause.code], message: cause.message, cause });
  }
  return result;
});

export const router = t.router;
export const adminProcedure = t.procedure.use(mapErrors);
export const createCallerFactory = t.createCallerFactory;
