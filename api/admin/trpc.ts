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

/** A failure tRPC raised itself (a procedure's input, an unknown procedure) in the API's error vocabulary. */
const CODE_OF_TRPC: Partial<Record<TrpcCode, string>> = {
  BAD_REQUEST: 'validation_failed',
  UNAUTHORIZED: 'invalid_key',
  NOT_FOUND: 'not_found',
  CONFLICT: 'conflict',
  // A service the call needs is not set up here (Google Calendar without its credentials).
  PRECONDITION_FAILED: 'service_unavailable',
  PAYLOAD_TOO_LARGE: 'request_too_large',
  TOO_MANY_REQUESTS: 'rate_limited',
  SERVICE_UNAVAILABLE: 'service_unavailable',
};

/**
 * The answer a failed call gets: an ApiError as the tRPC error of its status, with its code; anything
 * else as what it is (the input's text PostgreSQL cannot hold, the database out of reach) or an internal
 * error whose details stay in the log. `code` is the API's error code, what the audit line records.
 */
function answerOf(error: TRPCError, ctx: AdminContext, path: string): { answer: TRPCError; code: string } {
  const cause = error.cause;
  if (cause instanceof ApiError) {
    const trpcCode = BY_STATUS[cause.status];
    if (!trpcCode) return { answer: error, code: cause.code };
    // A validation failure's reasons per field are the message, which is what a client (wsctl) prints
    // after `invalid input:`; the general sentence before them only repeated them.
    const fields = cause.extra.errors as Record<string, string[]> | undefined;
    const message = fields ? Object.entries(fields).map(([field, reasons]) => `${field}: ${reasons.join(', ')}`).join('; ') : cause.message;
    return { answer: new TRPCError({ code: trpcCode, message, cause }), code: cause.code };
  }
  if (error.code !== 'INTERNAL_SERVER_ERROR') return { answer: error, code: CODE_OF_TRPC[error.code] ?? 'internal_error' };
  // No SQL or stack reaches a client (DESIGN.md): the operator reads them in the log, by request id.
  const inner = error.cause ?? error;
  const pgCode = (inner as { code?: unknown }).code;
  // Text PostgreSQL cannot hold (U+0000, a \u0000 escape in JSON): the input's fault, said as such.
  if (pgCode === '22021' || pgCode === '22P05') {
    return { answer: new TRPCError({ code: 'BAD_REQUEST', message: 'text holding U+0000 cannot be stored' }), code: 'validation_failed' };
  }
  // The database unreachable: a transient outage the operator can retry, as the REST API's 503 says.
  if (isDatabaseUnavailable(inner)) {
    logError('admin.database_unavailable', inner, { procedure: path, request_id: ctx.requestId });
    return {
      answer: new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: `the database is unavailable (request ${ctx.requestId ?? 'without id'}); retry in a few seconds` }),
      code: 'service_unavailable',
    };
  }
  log('admin.error', { procedure: path, request_id: ctx.requestId, error: String((inner as Error).message), stack: (inner as Error).stack });
  const answer = new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: `Internal error (request ${ctx.requestId ?? 'without id'}); the server log has the details.` });
  loggedErrors.add(answer);
  return { answer, code: 'internal_error' };
}

/** An id as the audit line records it: only one that is an id (a malformed one the call refused is no record). */
const auditedId = (value: unknown): string | undefined => (isObjectId(value) ? value : undefined);

/**
 * Maps failures to the answers the caller gets (answerOf), and writes the audit line of every call:
 * who (address), what, which company, how it ended (`error`: the API's code of the answer given).
 */
const mapErrorsAndAudit = t.middleware(async ({ ctx, path, type, getRawInput, next }) => {
  const result = await next();
  const failure = result.ok ? null : answerOf(result.error, ctx, path);
  const input = (await getRawInput().catch(() => undefined)) as Record<string, unknown> | undefined;
  const companyId = auditedId(input?.companyId) ?? (path.startsWith('company.') ? auditedId(input?.id) : undefined);
  // The record acted on: named in the input, or made by the call (a create answers it, as `{id}` or `{key: {id}}`-like shapes).
  const made = result.ok ? (result.data as { id?: unknown; key?: { id?: unknown }; company?: { id?: unknown } } | undefined) : undefined;
  const madeId = [made?.id, made?.key?.id, made?.company?.id].find((v): v is string => typeof v === 'string');
  // Named in the input: by `id`, or by the key a procedure names its record with (`--user`,
  // `--endpoint`); else what a create made; else the company the call is about (tax-profile set).
  const named = [input?.id, input?.userId, input?.endpointId].map(auditedId).find((v) => v !== undefined);
  const targetId = named ?? madeId ?? companyId;
  // Every key on every line (null when none), as docs/cli.md shows the line: a log parser reads fixed fields.
  log('admin.call', { procedure: path, type, ok: result.ok, error: failure?.code ?? null, company_id: companyId ?? (path === 'company.create' ? madeId : undefined) ?? null, target_id: targetId ?? null, address: ctx.address ?? null, request_id: ctx.requestId ?? null });
  if (failure) throw failure.answer;
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
