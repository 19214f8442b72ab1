// The router table. Every REST operation is declared once with its scope,
// schemas and handler; from that one declaration come the Koa route with its
// middleware chain, the OpenAPI document (api/openapi/) and the list of
// routes the cross-tenant test walks (test/security.cross-tenant.test.ts).
// Body readers are api/middleware/body.ts.
import { z } from 'zod';
import type { Queryable } from '../db/pool.ts';
import { log } from '../lib/log.ts';
import { isObjectId } from '../lib/objectid.ts';
import { ApiError, type ErrorCode } from './errors.ts';
import { authenticateSession, requirePermission } from './auth/sessions.ts';
import type { Permission } from './auth/scopes.ts';
import { authenticate, checkOrigin, requireModule, requireScope } from './middleware/authenticate.ts';
import { absentBodyAsEmptyData, idempotentBodyCap, jsonBody, jsonContentType, multipartBody, objectBody, uploadBody } from './middleware/body.ts';
import { idempotency } from './middleware/idempotency.ts';
import { isClientAbort, toApiError } from './middleware/request.ts';
import { rateLimit } from './middleware/rate-limit.ts';
import { responseCache } from './middleware/response-cache.ts';
import { isStorableText, parseData, parseQuery } from './validation.ts';
import type { ApiContext, ApiRouteMiddleware, ApiRouter } from './types.ts';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** How a path parameter is read: an ObjectId (400 invalid_id otherwise), or an id or slug (a product's, also its sku), resolved by the handler. */
export type ParamKind = 'id' | 'id_or_slug' | 'id_slug_or_sku';

/** The one file of a multipart route, read into memory (bounded by `maxFileBytes`). */
export type UploadedFile = { field: string; filename: string | null; declaredType: string | null; bytes: Buffer };

type BaseInput<Q> = {
  params: Record<string, string>;
  query: Q;
  companyId: string;
  /**
   * Where the handler reads and writes: the request's transaction when it
   * carries an Idempotency-Key (its answer is stored in that same
   * transaction), else the pool. `transaction(db, ...)` joins it.
   */
  db: Queryable;
};

/** What a JSON route's handler receives: `data` is the body's `data`, validated by `body`. */
export type JsonInput<Q, D> = BaseInput<Q> & { data: D };
/** What a multipart route's handler receives: the file, absent when none came under an accepted field. */
export type MultipartInput<Q> = BaseInput<Q> & { file: UploadedFile | undefined };
/** What an upload route's handler receives: `data` validated from a JSON body; undefined for multipart, which the handler streams. */
export type UploadInput<Q, D> = BaseInput<Q> & { data: D | undefined };

/** What every kind of route declares. */
type RouteBase<Q> = {
  method: Method;
  /** Koa path relative to /api/v1, e.g. `/customers/:id`. */
  path: string;
  /** `<action>-<resource>`; every API route has one. */
  scope: string;
  /**
   * In-application routes (`/user/...`): authenticated by a user session
   * holding this permission instead of an API key with `scope`;
   * `signed-in`: any person signed in (a route on their own things).
   */
  session?: Permission | 'signed-in';
  module?: string;
  tag: string;
  summary: string;
  description?: string;
  /** OpenAPI operationId; derived from the method and path when absent. */
  operationId?: string;
  params?: Record<string, ParamKind>;
  query?: z.ZodType<Q>;
  /** Schema of one returned record (`data`, or each item of a list). */
  response?: z.ZodType;
  /** `data` is an array of `response`. */
  list?: boolean;
  /**
   * The `meta` the route answers, for the OpenAPI document: a list's
   * defaults to the pagination meta (`listMetaSchema`); a route that adds to
   * it (`meta.available_events`, `meta.totals`) gives `listMetaSchema.extend(…)`.
   */
  meta?: z.ZodObject;
  /** Collection name for the opt-in response cache (lists only). */
  cache?: string;
  status: number;
  /**
   * Another success status the handler may answer with the same body (`ctx.state.status`): a create
   * that finds the record its `metadata.external_ref` names answers it with 200. Documented in the
   * OpenAPI answers with `description`.
   */
  alsoStatus?: { status: number; description: string };
  /**
   * The success answer is a file, not JSON (an invoice's XML or PDF): its media type, for the
   * OpenAPI document, which describes the body as binary and the `Content-Disposition` it carries.
   */
  file?: { mediaType: string };
  errors?: ErrorCode[];
};

/** A route with no body (GET, DELETE) or a JSON body `{data: ...}`; Idempotency-Key applies to writes. */
export type JsonRoute<Q = any, D = any> = RouteBase<Q> & {
  /** Schema of the `data` object of the body. */
  body?: z.ZodType<D>;
  /**
   * The body as the OpenAPI document describes it, where `body` is looser on purpose: a create whose
   * contract names its own error for a missing field (calendar events: a missing host is 422
   * invalid_user) takes the field as optional so the handler can answer that, while clients are told
   * it is required.
   */
  documentedBody?: z.ZodType;
  /**
   * The body is never read: the route answers alike whatever is sent, of any
   * type or none (POST /automations, "always error body": 422 not_supported_yet).
   */
  ignoresBody?: true;
  /** A valid `data` payload: shown in the OpenAPI document, and used by the cross-tenant test to create records. */
  example?: Record<string, unknown>;
  /** Every field of `body` is optional, so no body at all reads as `{data: {}}` (actions such as cancel). */
  bodyOptional?: boolean;
  multipart?: undefined;
  upload?: undefined;
  handler: (ctx: ApiContext, input: JsonInput<Q, D>) => Promise<unknown>;
};

/**
 * multipart/form-data with one file (images): the file under one of
 * `fields`, buffered by the router and handed to the handler as `file`;
 * Idempotency-Key works as for JSON. Endpoints taking many large files are
 * upload routes instead.
 */
export type MultipartRoute<Q = any> = RouteBase<Q> & {
  multipart: { fields: readonly string[]; maxFileBytes: number };
  body?: undefined;
  example?: undefined;
  upload?: undefined;
  handler: (ctx: ApiContext, input: MultipartInput<Q>) => Promise<unknown>;
};

/**
 * A route that takes uploads: JSON (files in base64, up to `maxBytes`),
 * validated against `body` before the handler runs, or multipart/form-data,
 * left unread for the handler to stream. A larger Content-Length is refused
 * with 413 before a byte is read. The handler parses a multipart body itself,
 * handles Idempotency-Key itself (runIdempotent, once it can fingerprint the
 * body) and sets ctx.status and ctx.body.
 */
export type UploadRoute<Q = any, D = any> = RouteBase<Q> & {
  /**
   * `maxBytes` bounds a multipart body, `maxJsonBytes` a JSON one (lower: a
   * JSON body is held in memory whole and its base64 files decoded, about 3×
   * its size).
   */
  upload: { maxBytes: number; maxJsonBytes: number };
  /** Schema of the JSON body's `data` (multipart parts carry the same fields). */
  body: z.ZodType<D>;
  example?: Record<string, unknown>;
  multipart?: undefined;
  handler: (ctx: ApiContext, input: UploadInput<Q, D>) => Promise<void>;
};

export type RouteDef<Q = any, D = any> = JsonRoute<Q, D> | MultipartRoute<Q> | UploadRoute<Q, D>;

export function defineRoute<Q = Record<string, never>, D = undefined>(route: JsonRoute<Q, D>): JsonRoute<Q, D>;
export function defineRoute<Q = Record<string, never>>(route: MultipartRoute<Q>): MultipartRoute<Q>;
export function defineRoute<Q, D>(route: UploadRoute<Q, D>): UploadRoute<Q, D>;
export function defineRoute(route: RouteDef): RouteDef {
  return route;
}

function validateParams(kinds: Record<string, ParamKind>): ApiRouteMiddleware {
  return async function params(ctx, next) {
    // Contract: a malformed :id is 400 invalid_id (U+0000 included).
    for (const [name, kind] of Object.entries(kinds)) {
      if (kind === 'id' && !isObjectId(ctx.params[name])) {
        throw new ApiError('invalid_id', `El parámetro ${name} no es un ObjectId válido.`);
      }
    }
    // A slug (or an id-or-slug) with U+0000 (%00) names nothing that can exist, and PostgreSQL refuses
    // to compare with it: 404 before any body is read.
    for (const value of Object.values(ctx.params ?? {})) if (typeof value === 'string' && !isStorableText(value)) throw new ApiError('not_found');
    await next();
  };
}

function handle(route: RouteDef): ApiRouteMiddleware {
  return async function handler(ctx, next) {
    const base = {
      params: ctx.params ?? {},
      query: route.query ? parseQuery(route.query, ctx.query, ctx.querystring) : {},
      companyId: ctx.state.auth!.companyId,
      db: ctx.state.db ?? ctx.deps.pool,
    };
    if (route.upload) {
      // A multipart body is the handler's to stream; a JSON one was parsed by uploadBody.
      const data = ctx.is('multipart/form-data') ? undefined : parseData(route.body, ctx.request.body);
      await route.handler(ctx, { ...base, data });
      return next();
    }
    const body = route.multipart
      ? await route.handler(ctx, { ...base, file: ctx.state.upload })
      : await route.handler(ctx, { ...base, data: route.body ? parseData(route.body, ctx.request.body) : undefined });
    ctx.status = ctx.state.status ?? route.status;
    if (body !== undefined) ctx.body = body;
    await next();
  };
}

// service_unavailable: the database unreachable (any route), or an upload route's bodies at their
// bound; always with Retry-After. internal_error: a fault of ours (docs/api.md, Errors).
export const COMMON_ERRORS: readonly ErrorCode[] = ['invalid_key', 'origin_not_allowed', 'insufficient_scope', 'rate_limited', 'internal_error', 'service_unavailable'];

/**
 * Every error code `route` can answer, as its OpenAPI operation lists them: its own `errors`, and what
 * the shared machinery answers whatever the route lists (authentication, rate limit, a bad query
 * value, a paginated list's cursor and page, a JSON body's missing `data` or invalid fields,
 * Idempotency-Key, the optional module).
 */
export function declaredErrors(route: RouteDef): ErrorCode[] {
  // A write that reads its body; a route that never reads it (POST /automations) has no Idempotency-Key.
  const readsWrite = route.method !== 'GET' && route.method !== 'DELETE' && !('ignoresBody' in route && route.ignoresBody);
  const writes: ErrorCode[] = readsWrite
    ? [
        'idempotency_key_reused', 'idempotency_body_too_large', 'idempotency_in_progress', 'invalid_idempotency_key',
        // A body that cannot be read: its framing broke (a bad chunk size) or it stopped short.
        'invalid_request',
        // The body itself (JSON routes and the JSON form of upload routes): malformed, too large, another media type.
        ...(route.multipart ? [] : (['invalid_json', 'request_too_large', 'unsupported_media_type'] as const)),
      ]
    : [];
  const shared: ErrorCode[] = [
    ...(route.query ? (['invalid_parameter'] as const) : []),
    ...(route.list && route.query ? (['invalid_cursor', 'invalid_id', 'offset_too_deep'] as const) : []),
    ...(route.body && !route.multipart ? (['parameter_missing', 'validation_failed'] as const) : []),
  ];
  // A session has no origin allow-list, and a route any signed-in person may use checks no permission.
  const common = COMMON_ERRORS.filter(
    (code) => !(route.session && code === 'origin_not_allowed') && !(route.session === 'signed-in' && code === 'insufficient_scope'),
  );
  return [...new Set<ErrorCode>([...(route.errors ?? []), ...shared, ...common, 'https_required', ...(route.module ? (['module_not_enabled'] as const) : []), ...writes])];
}

/**
 * Error codes routes answered that they do not declare (`METHOD path code`), since the process
 * started. The OpenAPI document lists a route's codes from its declaration, so a generated client
 * would have no branch for these: each is logged, and the test helpers fail the test file that met
 * one (test/helpers/app.ts), so a handler that starts throwing a new code gets it declared.
 */
export const undeclaredErrors = new Set<string>();

/** Notes an error answer whose code the route does not declare (`declaredErrors`). */
function checkDeclared(route: RouteDef): ApiRouteMiddleware {
  const declared = new Set<string>(declaredErrors(route));
  const note = (code: unknown) => {
    if (typeof code !== 'string' || declared.has(code)) return;
    const entry = `${route.method} ${route.path} ${code}`;
    if (!undeclaredErrors.has(entry)) log('route.undeclared_error', { method: route.method, path: route.path, error: code });
    undeclaredErrors.add(entry);
  };
  return async function declaredErrorsOnly(ctx, next) {
    try {
      await next();
    } catch (error) {
      // What requestMiddleware will answer (a body whose framing broke, a reference deleted meanwhile:
      // toApiError); a client that hung up reads no answer, so what it would have been is not noted.
      if (!isClientAbort(error)) note(toApiError(error, { quiet: true })?.code);
      throw error;
    }
    if (ctx.status >= 400) note((ctx.body as { error?: unknown } | undefined)?.error);
  };
}

/** The middleware chain of one route: authentication, rate limit, scope or permission, module, params, body, cache, handler. */
function chainOf(route: RouteDef, defaultRateLimit: number): ApiRouteMiddleware[] {
  const chain: ApiRouteMiddleware[] = [checkDeclared(route)];
  chain.push(
    ...(route.session
      ? [authenticateSession(), rateLimit(defaultRateLimit), ...(route.session === 'signed-in' ? [] : [requirePermission(route.session)])]
      : [authenticate, rateLimit(defaultRateLimit), checkOrigin, requireScope(route.scope)]),
  );
  if (route.module) chain.push(requireModule(route.module));
  if (route.params || route.path.includes(':')) chain.push(validateParams(route.params ?? {}));
  if (route.multipart) chain.push(idempotentBodyCap, multipartBody(route.multipart), idempotency);
  else if (route.upload) chain.push(idempotentBodyCap, uploadBody(route.upload));
  else if (route.method !== 'GET' && route.method !== 'DELETE' && !route.ignoresBody) {
    chain.push(idempotentBodyCap, jsonContentType, jsonBody, objectBody, ...(route.bodyOptional ? [absentBodyAsEmptyData] : []), idempotency);
  }
  if (route.cache) chain.push(responseCache(route.cache, route.query));
  chain.push(handle(route));
  return chain;
}

export function mountRoutes(router: ApiRouter, routes: RouteDef[], defaultRateLimit: number): void {
  for (const route of routes) router.register(route.path, [route.method], chainOf(route, defaultRateLimit));
}
