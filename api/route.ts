// The router table. Every REST operation is declared once with its scope,
// schemas and handler; from that one declaration come the Koa route with its
// middleware chain, the OpenAPI document (api/openapi/) and the list of
// routes the cross-tenant test walks (test/security.cross-tenant.test.ts).
import { createHash } from 'node:crypto';
import { readFile, unlink } from 'node:fs/promises';
import { HttpMethodEnum, koaBody } from 'koa-body';
import type { Next } from 'koa';
import { z } from 'zod';
import type { Queryable } from '../db/pool.ts';
import { isObjectId } from '../lib/objectid.ts';
import { ApiError, validationFailed, type ErrorCode } from './errors.ts';
import { authenticateSession, type Permission } from './auth/sessions.ts';
import { authenticate, checkOrigin, requireModule, requireScope } from './middleware/authenticate.ts';
import { IDEMPOTENCY_BODY_LIMIT, idempotency } from './middleware/idempotency.ts';
import { rateLimit } from './middleware/rate-limit.ts';
import { responseCache } from './middleware/response-cache.ts';
import { isStorableText, parseData, parseQuery, refuseArrayBody } from './validation.ts';
import type { ApiContext, ApiMiddleware, ApiRouteMiddleware, ApiRouter } from './types.ts';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** How a path parameter is validated: a strict ObjectId, or an id or slug. */
export type ParamKind = 'id' | 'id_or_slug';

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
   * holding this permission instead of an API key with `scope`.
   */
  session?: Permission;
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
  errors?: ErrorCode[];
};

/** A route with no body (GET, DELETE) or a JSON body `{data: ...}`; Idempotency-Key applies to writes. */
export type JsonRoute<Q = any, D = any> = RouteBase<Q> & {
  /** Schema of the `data` object of the body. */
  body?: z.ZodType<D>;
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

/** The media types a JSON body may carry (koa-body's default list, named so the 415 checks and the parsers agree). */
export const JSON_TYPES = ['application/json', 'application/json-patch+json', 'application/vnd.api+json', 'application/csp-report', 'application/reports+json'];

const jsonBody = koaBody({
  json: true,
  jsonTypes: JSON_TYPES,
  multipart: false,
  urlencoded: false,
  text: false,
  jsonLimit: '1mb',
  includeUnparsed: true,
  parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH],
});

/** An array body is refused before anything reads it, on routes that take no body too (refuseArrayBody). */
async function objectBody(ctx: ApiContext, next: Next) {
  refuseArrayBody(ctx.request.body);
  await next();
}

/**
 * A body declared larger than an Idempotency-Key allows is refused before it
 * is read, so a 5 MB body with a key gets 413 idempotency_body_too_large
 * (what the client must change) rather than the parser's request_too_large.
 */
async function idempotentBodyCap(ctx: ApiContext, next: Next) {
  if (ctx.headers['idempotency-key'] !== undefined && Number(ctx.get('Content-Length')) > IDEMPOTENCY_BODY_LIMIT) {
    throw new ApiError('idempotency_body_too_large');
  }
  await next();
}

/**
 * A JSON route's body must say it is JSON: a body of another type (a form
 * encoding, `text/plain`, which fetch sends for a string body), or one with
 * a length and no Content-Type, is 415 unsupported_media_type, rather than a
 * body the parser skips and a misleading 422 parameter_missing. A request
 * without a body passes (an action whose body is optional), and so does a
 * chunked one with no type, which some clients send for an empty body.
 */
export async function jsonContentType(ctx: ApiContext, next: Next) {
  const typed = !!ctx.get('Content-Type');
  if ((ctx.request.length || (typed && ctx.get('Transfer-Encoding'))) && !ctx.is(JSON_TYPES)) {
    throw new ApiError('unsupported_media_type', 'Tipo de contenido no soportado; envía el cuerpo como application/json.');
  }
  await next();
}

/**
 * multipart/form-data through koa-body's formidable, bounded: one file of at
 * most `maxFileBytes` (formidable stops reading past it), 20 small fields.
 * Parser limits are the client's fault, so they answer 422 validation_failed
 * like any other unacceptable file (contract, Errors: "file too big, too
 * many"). The temp files formidable writes are removed after the handler,
 * whatever happens. For Idempotency-Key the body fingerprint includes the
 * file's SHA-256, so a different file under the same key is detected.
 */
/** formidable's error codes for a part past its size (FormidableError.js): one file, all files, text parts. */
const FORMIDABLE_FILE_TOO_BIG = 1016;
const FORMIDABLE_FILES_TOO_BIG = 1009;
const FORMIDABLE_FIELDS_TOO_BIG = 1006;

function multipartBody(options: MultipartRoute['multipart']): ApiMiddleware {
  const parserFor = (maxFileBytes: number, maxFieldsBytes: number) =>
    koaBody({
      multipart: true,
      json: false,
      urlencoded: false,
      text: false,
      parsedMethods: [HttpMethodEnum.POST],
      formidable: {
        maxFiles: 1,
        maxFileSize: maxFileBytes,
        maxTotalFileSize: maxFileBytes,
        maxFields: 20,
        maxFieldsSize: maxFieldsBytes,
        allowEmptyFiles: true,
        minFileSize: 0,
      },
    });
  const parser = parserFor(options.maxFileBytes, 64 * 1024);
  // With an Idempotency-Key and no Content-Length (chunked), the 100 KB cap is
  // enforced while reading: the file part is held to 100 KB (a file past it is
  // a body past it), and text parts, which an image route does not use, to 4 KB.
  const idempotentParser = parserFor(Math.min(options.maxFileBytes, IDEMPOTENCY_BODY_LIMIT), 4 * 1024);
  return async function multipart(ctx, next) {
    const capped = ctx.headers['idempotency-key'] !== undefined && !ctx.get('Content-Length');
    try {
      await (capped ? idempotentParser : parser)(ctx, async () => {});
    } catch (error) {
      const status = (error as { httpCode?: number; status?: number }).httpCode ?? (error as { status?: number }).status;
      // Refused part way: the rest of the body is left unread, so the connection closes after the answer.
      if (status === 413) ctx.set('Connection', 'close');
      // formidable's size refusals (file, total of files, text parts); too many files or fields stay a 422 below.
      const tooBig = [FORMIDABLE_FILE_TOO_BIG, FORMIDABLE_FILES_TOO_BIG, FORMIDABLE_FIELDS_TOO_BIG].includes((error as { code?: number }).code ?? 0);
      if (capped && tooBig) throw new ApiError('idempotency_body_too_large');
      const reason = status === 413
        ? `se acepta un solo archivo de hasta ${Math.floor(options.maxFileBytes / 1024 / 1024)} MB`
        : 'el cuerpo multipart/form-data no es válido';
      throw validationFailed({ [options.fields[0] ?? 'file']: [reason] });
    }
    const files = ctx.request.files ?? {};
    const all = Object.entries(files).flatMap(([field, f]) => (Array.isArray(f) ? f : [f]).map((file) => ({ field, file })));
    try {
      const chosen = all.find(({ field }) => options.fields.includes(field));
      if (chosen) {
        const bytes = await readFile(chosen.file.filepath);
        ctx.state.upload = { field: chosen.field, filename: chosen.file.originalFilename, declaredType: chosen.file.mimetype, bytes };
        const fields = ctx.request.body;
        const base = fields && typeof fields === 'object' && !Array.isArray(fields) ? fields : {};
        ctx.request.body = { ...base, [chosen.field]: { sha256: createHash('sha256').update(bytes).digest('hex') } };
      }
      await next();
    } finally {
      await Promise.all(all.map(({ file }) => unlink(file.filepath).catch(() => {})));
    }
  };
}

/** Upload bodies being read at once in this process (all upload routes together), and by company. */
let uploadsInFlight = 0;
const uploadsByCompany = new Map<string, number>();

/** A body this small takes no upload slot: its memory is bounded by its size, and it never waits on another company's uploads. */
export const SMALL_UPLOAD_BODY = 64 * 1024;

/**
 * Body handling of an upload route: early size caps (a multipart body up to
 * `maxBytes`, a JSON one up to `maxJsonBytes`), JSON parsed, multipart left as
 * a stream for the handler; and at most `config.uploadConcurrency` bodies read
 * at once per process, so memory stays bounded under a burst: past that the
 * request is answered 503 with Retry-After at once, before a byte is read.
 * One company holds at most half of those slots (one if the bound is 1), so
 * its slow uploads cannot shut every other company out; and a body declared
 * at most SMALL_UPLOAD_BODY (a submission without files) takes none.
 */
function uploadBody(limits: UploadRoute['upload']): ApiMiddleware {
  const json = koaBody({
    json: true,
    jsonTypes: JSON_TYPES,
    multipart: false,
    urlencoded: false,
    text: false,
    jsonLimit: limits.maxJsonBytes,
    includeUnparsed: false,
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH],
  });
  const mib = (bytes: number) => Math.floor(bytes / 1024 / 1024);
  return async function upload(ctx, next) {
    const multipart = ctx.is('multipart/form-data');
    const max = multipart ? limits.maxBytes : limits.maxJsonBytes;
    const length = Number(ctx.get('Content-Length'));
    if (Number.isFinite(length) && length > max) {
      // Answered without reading the body; the connection is closed rather
      // than drained, so the client stops sending at once.
      ctx.set('Connection', 'close');
      throw new ApiError(
        'request_too_large',
        multipart
          ? `El cuerpo supera el máximo de ${mib(max)} MB.`
          : `Un cuerpo JSON no puede pasar de ${mib(max)} MB; envía archivos grandes como multipart/form-data (hasta ${mib(limits.maxBytes)} MB).`,
      );
    }
    if (!multipart && !(ctx.is(JSON_TYPES) || !ctx.get('Content-Type'))) {
      throw new ApiError('unsupported_media_type', 'Tipo de contenido no soportado; usa application/json o multipart/form-data.');
    }
    const read = () => (multipart ? next() : json(ctx, next));
    if (Number.isFinite(length) && ctx.get('Content-Length') !== '' && length <= SMALL_UPLOAD_BODY) return read();
    const limit = ctx.deps.config.uploadConcurrency;
    const companyId = ctx.state.auth!.companyId;
    const mine = uploadsByCompany.get(companyId) ?? 0;
    if (uploadsInFlight >= limit || mine >= Math.max(1, Math.floor(limit / 2))) {
      ctx.set('Connection', 'close');
      ctx.set('Retry-After', '1');
      throw new ApiError('service_unavailable', 'Demasiadas cargas de archivos en curso; reintenta en un momento.');
    }
    uploadsInFlight++;
    uploadsByCompany.set(companyId, mine + 1);
    try {
      await read();
    } finally {
      uploadsInFlight--;
      const left = (uploadsByCompany.get(companyId) ?? 1) - 1;
      if (left > 0) uploadsByCompany.set(companyId, left);
      else uploadsByCompany.delete(companyId);
    }
  };
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

/** The request body, or `{data: {}}` for a route whose body is optional and absent. */
function bodyOf(route: JsonRoute, body: unknown): unknown {
  const empty = body === undefined || body === null || (typeof body === 'object' && Object.keys(body).length === 0);
  return route.bodyOptional && empty ? { data: {} } : body;
}

function handle(route: RouteDef): ApiRouteMiddleware {
  return async function handler(ctx, next) {
    const base = {
      params: ctx.params ?? {},
      query: route.query ? parseQuery(route.query, ctx.query) : {},
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
      : await route.handler(ctx, { ...base, data: route.body ? parseData(route.body, bodyOf(route, ctx.request.body)) : undefined });
    ctx.status = ctx.state.status ?? route.status;
    if (body !== undefined) ctx.body = body;
    await next();
  };
}

/** The middleware chain of one route: authentication, rate limit, scope or permission, module, params, body, cache, handler. */
function chainOf(route: RouteDef, defaultRateLimit: number): ApiRouteMiddleware[] {
  const chain: ApiRouteMiddleware[] = route.session
    ? [authenticateSession(route.session), rateLimit(defaultRateLimit)]
    : [authenticate, rateLimit(defaultRateLimit), checkOrigin, requireScope(route.scope)];
  if (route.module) chain.push(requireModule(route.module));
  if (route.params || route.path.includes(':')) chain.push(validateParams(route.params ?? {}));
  if (route.multipart) chain.push(multipartBody(route.multipart), idempotency);
  else if (route.upload) chain.push(idempotentBodyCap, uploadBody(route.upload));
  else if (route.method !== 'GET' && route.method !== 'DELETE' && !route.ignoresBody) chain.push(idempotentBodyCap, jsonContentType, jsonBody, objectBody, idempotency);
  if (route.cache) chain.push(responseCache(route.cache));
  chain.push(handle(route));
  return chain;
}

export function mountRoutes(router: ApiRouter, routes: RouteDef[], defaultRateLimit: number): void {
  for (const route of routes) router.register(route.path, [route.method], chainOf(route, defaultRateLimit));
}
