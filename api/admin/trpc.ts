// The one initTRPC of the admin API. Context carries the process deps; the
// Bearer ADMIN_TOKEN check happens before tRPC sees the request (koa.ts).
import { initTRPC, TRPCError } from '@trpc/server';
import { z } from 'zod';
import { isObjectId } from '../../lib/objectid.ts';
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
/** A record id argument (24 hex characters, lib/objectid.ts). */
export const adminId = z.string().refine(isObjectId, 'must be a 24-hex id');
export const adminProcedure = t.procedure.use(mapErrors);
export const createCallerFactory = t.createCallerFactory;
