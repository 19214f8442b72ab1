// The one initTRPC of the admin API. Context carries the process deps; the
// Bearer ADMIN_TOKEN check happens before tRPC sees the request (koa.ts).
// One error model: procedures throw ApiError (api/errors.ts) like the REST
// routes do, and this file maps each to a tRPC error by its status.
import { initTRPC, TRPCError } from '@trpc/server';
import { z } from 'zod';
import { isObjectId } from '../../lib/objectid.ts';
import { log, logError } from '../../lib/log.ts';
import { isDatabaseUnavailable } from '../middleware/request.ts';
import { ApiError } from '../errors.ts';
import type { Deps } from '../types.ts';

export type AdminContext = { deps: Deps; requestId?: string; address?: string };

// isDev false: no stack traces in error responses, even to operators.
const t = initTRPC.context<AdminContext>().create({ isDev: false });

type TrpcCode = ConstructorParameters<typeof TRPCError>[0]['code'];

/** ApiError status → tRPC code; anything else stays an internal error. */
const BY_STATUS: Record<number, TrpcCode> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  422: 'BAD_REQUEST',
  429: 'TOO_MANY_REQUESTS',
  // A service the call needs is out of reach (Google, Facturapi): retry later, as the REST API's 503.
  503: 'SERVICE_UNAVAILABLE',
};

/** Maps ApiError to tRPC errors, and writes the audit line of every call: who (address), what, which company, how it ended. */
const mapErrorsAndAudit = t.middleware(async ({ ctx, path, type, getRawInput, next }) => {
  const result = await next();
  let error: string | null = null;
  if (!result.ok) {
    const cause = result.error.cause;
    error = cause instanceof ApiError ? cause.code : result.error.code;
  }
  const input = (await getRawInput().catch(() => undefined)) as Record<string, unknown> | undefined;
  const companyId = typeof input?.companyId === 'string' ? input.companyId : path.startsWith('company.') && typeof input?.id === 'string' ? input.id : undefined;
  // The record acted on: named in the input, or made by the call (a create answers it, as `{id}` or `{key: {id}}`-like shapes).
  const made = result.ok ? (result.data as { id?: unknown; key?: { id?: unknown }; company?: { id?: unknown } } | undefined) : undefined;
  const madeId = [made?.id, made?.key?.id, made?.company?.id].find((v): v is string => typeof v === 'string');
  // Named in the input: by `id`, or by the key a procedure names its record with (`--user`,
  // `--endpoint`); else what a create made; else the company the call is about (tax-profile set).
  const named = [input?.id, input?.userId, input?.endpointId].find((v): v is string => typeof v === 'string');
  const targetId = named ?? madeId ?? companyId;
  // Every key on every line (null when none), as DESIGN.md shows the line: a log parser reads fixed fields.
  log('admin.call', { procedure: path, type, ok: result.ok, error, company_id: companyId ?? (path === 'company.create' ? madeId : undefined) ?? null, target_id: targetId ?? null, address: ctx.address ?? null, request_id: ctx.requestId ?? null });
  if (!result.ok && result.error.cause instanceof ApiError) {
    const cause = result.error.cause;
    const code = BY_STATUS[cause.status];
    // A validation failure's reasons per field are the message, which is what a client (wsctl) prints
    // after `invalid input:`; the general sentence before them only repeated them.
    const fields = cause.extra.errors as Record<string, string[]> | undefined;
    const message = fields ? Object.entries(fields).map(([field, reasons]) => `${field}: ${reasons.join(', ')}`).join('; ') : cause.message;
    if (code) throw new TRPCError({ code, message, cause });
  }
  if (!result.ok && !(result.error.cause instanceof ApiError) && result.error.code === 'INTERNAL_SERVER_ERROR') {
    // No SQL or stack reaches a client (DESIGN.md): the operator reads them in the log, by request id.
    const cause = result.error.cause ?? result.error;
    const pgCode = (cause as { code?: unknown }).code;
    // Text PostgreSQL cannot hold (U+0000, a \u0000 escape in JSON): the input's fault, said as such.
    if (pgCode === '22021' || pgCode === '22P05') {
      throw new TRPCError({ code: 'BAD_REQUEST', message: 'text holding U+0000 cannot be stored' });
    }
    // The database unreachable: a transient outage the operator can retry, as the REST API's 503 says.
    if (isDatabaseUnavailable(cause)) {
      logError('admin.database_unavailable', cause, { procedure: path, request_id: ctx.requestId });
      throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: `the database is unavailable (request ${ctx.requestId ?? 'without id'}); retry in a few seconds` });
    }
    log('admin.error', { procedure: path, request_id: ctx.requestId, error: String((cause as Error).message), stack: (cause as Error).stack });
    const answer = new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: `Internal error (request ${ctx.requestId ?? 'without id'}); the server log has the details.` });
    loggedErrors.add(answer);
    throw answer;
  }
  return result;
});

/** The internal errors answered after `admin.error` logged them (the HTTP layer logs only the others). */
export const loggedErrors = new WeakSet<Error>();

export const router = t.router;
/** A whole number stored in an `integer` column: from `min` to PostgreSQL's largest (a larger one answered 500). */
export const storedInt = (min: number) => z.number().int().min(min).max(2_147_483_647);
/** A record id argument (24 hex characters, lib/objectid.ts). */
export const adminId = z.string().refine(isObjectId, 'must be a 24-hex id');
/** The path of the first string PostgreSQL cannot store as written (a lone UTF-16 surrogate, U+0000), or null. */
function unstorablePath(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.includes('\0') || !value.isWellFormed() ? path || '(input)' : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = unstorablePath(value[i], `${path}.${i}`);
      if (found) return found;
    }
  } else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const found = unstorablePath(key, `${path}.${key}`) ?? unstorablePath(item, path ? `${path}.${key}` : key);
      if (found) return found;
    }
  }
  return null;
}

/**
 * Text no column can hold is the input's fault, said before any write (as the REST API's 422 does):
 * a lone surrogate inside an automation's steps was a 500 from the jsonb insert, and one in a name
 * was stored silently as U+FFFD.
 */
const storableInput = t.middleware(async ({ getRawInput, next }) => {
  const found = unstorablePath(await getRawInput(), '');
  if (found) throw new TRPCError({ code: 'BAD_REQUEST', message: `${found.replace(/^\./, '')}: holds text that cannot be stored (a lone UTF-16 surrogate or U+0000)` });
  return next();
});

export const adminProcedure = t.procedure.use(mapErrorsAndAudit).use(storableInput);
