// The router table. Every REST operation is declared once with its scope,
// schemas and handler; from that one declaration come the Koa route with its
// middleware chain, the OpenAPI document (api/openapi.ts) and the list of
// routes the cross-tenant test walks (test/security.cross-tenant.test.ts).
import { createHash } from 'node:crypto';
import { readFile, unlink } from 'node:fs/promises';
import Router from '@koa/router';
import { koaBody } from 'koa-body';
import type { Next } from 'koa';
import { z } from 'zod';
import { isObjectId } from '../lib/objectid.ts';
import { ApiError, validationFailed, type ErrorCode } from './errors.ts';
import { authenticateSession, type Permission } from './auth/sessions.ts';
import { authenticate, checkOrigin, requireModule, requireScope } from './middleware/authenticate.ts';
import { IDEMPOTENCY_BODY_LIMIT, idempotency } from './middleware/idempotency.ts';
import { rateLimit } from './middleware/rate-limit.ts';
import { responseCache } from './middleware/response-cache.ts';
import { parseData, parseQuery } from './validation.ts';
import type { ApiContext } from './types.ts';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** How a path parameter is validated: a strict ObjectId, or an id or slug. */
export type ParamKind = 'id' | 'id_or_slug';

/** The one file of a multipart route, read into memory (bounded by `maxFileBytes`). */
export type UploadedFile = { field: string; filename: string | null; declaredType: string | null; bytes: Buffer };

export type HandlerInput<Q, D> = {
  params: Record<string, string>;
  query: Q;
  data: D;
  companyId: string;
  /** Multipart routes only; absent when no file came under an accepted field. */
  file?: UploadedFile;
};

export type RouteDef<Q = any, D = any> = {
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
  params?: Record<string, ParamKind>;
  query?: z.ZodType<Q>;
  /** Schema of the `data` object of the body. */
  body?: z.ZodType<D>;
  /** A valid `data` payload: shown in the OpenAPI document, and used by the cross-tenant test to create records. */
  example?: Record<string, unknown>;
  /**
   * multipart/form-data instead of a JSON body, for single-file endpoints
   * (images): one file under one of `fields`, buffered by the router and
   * handed to the handler as `file`; Idempotency-Key works as for JSON.
   * Endpoints taking many large files use `upload` instead.
   */
  multipart?: { fields: readonly string[]; maxFileBytes: number };
  /** Schema of one returned record (`data`, or each item of a list). */
  response?: z.ZodType;
  list?: boolean;
  /** Collection name for the opt-in response cache (lists only). */
  cache?: string;
  status: number;
  errors?: ErrorCode[];
  /**
   * A route that takes uploads: JSON (files in base64, up to `maxBytes`) or
   * multipart/form-data, left unread for the handler to stream. A larger
   * Content-Length is refused with 413 before a byte is read. The handler
   * parses its own body, handles Idempotency-Key itself (runIdempotent, once
   * it can fingerprint the body) and sets ctx.status and ctx.body.
   */
  upload?: { maxBytes: number };
  handler: (ctx: ApiContext, input: HandlerInput<Q, D>) => Promise<unknown>;
};

export function defineRoute<Q, D>(route: RouteDef<Q, D>): RouteDef<Q, D> {
  return route;
}

const jsonBody = koaBody({
  json: true,
  multipart: false,
  urlencoded: false,
  text: false,
  jsonLimit: '1mb',
  includeUnparsed: true,
  parsedMethods: ['POST', 'PUT', 'PATCH'] as never, // koa-body types these as a TS enum
});

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

type FormidableFile = { filepath: string; originalFilename: string | null; mimetype: string | null; size: number };

/**
 * multipart/form-data through koa-body's formidable, bounded: one file of at
 * most `maxFileBytes` (formidable stops reading past it), 20 small fields.
 * Parser limits are the client's fault, so they answer 422 validation_failed
 * like any other unacceptable file (contract, Errors: "file too big, too
 * many"). The temp files formidable writes are removed after the handler,
 * whatever happens. For Idempotency-Key the body fingerprint includes the
 * file's SHA-256, so a different file under the same key is detected.
 */
function multipartBody(options: NonNullable<RouteDef['multipart']>) {
  const parser = koaBody({
    multipart: true,
    json: false,
    urlencoded: false,
    text: false,
    parsedMethods: ['POST'] as never,
    formidable: {
      maxFiles: 1,
      maxFileSize: options.maxFileBytes,
      maxTotalFileSize: options.maxFileBytes,
      maxFields: 20,
      maxFieldsSize: 64 * 1024,
      allowEmptyFiles: true,
      minFileSize: 0,
    },
  });
  return async function multipart(ctx: ApiContext, next: Next) {
    try {
      await parser(ctx as never, async () => {});
    } catch (error) {
      const status = (error as { httpCode?: number; status?: number }).httpCode ?? (error as { status?: number }).status;
      const reason = status === 413
        ? `se acepta un solo archivo de hasta ${Math.floor(options.maxFileBytes / 1024 / 1024)} MB`
        : 'el cuerpo multipart/form-data no es válido';
      throw validationFailed({ file: [reason] });
    }
    const files = (ctx.request as unknown as { files?: Record<string, FormidableFile | FormidableFile[]> }).files ?? {};
    const all = Object.entries(files).flatMap(([field, f]) => (Array.isArray(f) ? f : [f]).map((file) => ({ field, file })));
    try {
      const chosen = all.find(({ field }) => options.fields.includes(field));
      if (chosen) {
        const bytes = await readFile(chosen.file.filepath);
        ctx.state.upload = { field: chosen.field, filename: chosen.file.originalFilename, declaredType: chosen.file.mimetype, bytes };
        const fields = (ctx.request.body ?? {}) as Record<string, unknown>;
        ctx.request.body = { ...fields, [chosen.field]: { sha256: createHash('sha256').update(bytes).digest('hex') } } as never;
      }
      await next();
    } finally {
      await Promise.all(all.map(({ file }) => unlink(file.filepath).catch(() => {})));
    }
  };
}

/** Body handling of an upload route: early size cap, JSON parsed, multipart left as a stream. */
function uploadBody(maxBytes: number) {
  const json = koaBody({
    json: true,
    multipart: false,
    urlencoded: false,
    text: false,
    jsonLimit: maxBytes,
    includeUnparsed: false,
    parsedMethods: ['POST', 'PUT', 'PATCH'] as never,
  });
  return async function upload(ctx: ApiContext, next: Next) {
    const length = Number(ctx.get('Content-Length'));
    if (Number.isFinite(length) && length > maxBytes) {
      // Answered without reading the body; the connection is closed rather
      // than drained, so the client stops sending at once.
      ctx.set('Connection', 'close');
      throw new ApiError('request_too_large', `El cuerpo supera el máximo de ${Math.floor(maxBytes / 1024 / 1024)} MB.`);
    }
    if (ctx.is('multipart/form-data')) return next();
    if (ctx.is('json') || !ctx.get('Content-Type')) return (json as unknown as (c: ApiContext, n: Next) => Promise<void>)(ctx, next);
    throw new ApiError('unsupported_media_type', 'Tipo de contenido no soportado; usa application/json o multipart/form-data.');
  };
}

function validateParams(kinds: Record<string, ParamKind>) {
  return async function params(ctx: ApiContext, next: Next) {
    for (const [name, kind] of Object.entries(kinds)) {
      const value = (ctx as unknown as { params: Record<string, string> }).params[name];
      if (kind === 'id' && !isObjectId(value)) {
        throw new ApiError('invalid_id', `El parámetro ${name} no es un ObjectId válido.`);
      }
    }
    await next();
  };
}

function handle(route: RouteDef) {
  return async function handler(ctx: ApiContext, next: Next) {
    const params = (ctx as unknown as { params: Record<string, string> }).params ?? {};
    const query = route.query ? parseQuery(route.query, ctx.query) : {};
    if (route.upload) {
      await route.handler(ctx, { params, query, data: undefined as never, companyId: ctx.state.auth!.companyId });
      return next();
    }
    const data = route.body ? parseData(route.body, ctx.request.body) : undefined;
    const file = ctx.state.upload;
    const body = await route.handler(ctx, { params, query, data, companyId: ctx.state.auth!.companyId, file });
    ctx.status = route.status;
    if (body !== undefined) ctx.body = body;
    await next();
  };
}

export function mountRoutes(router: Router<any, any>, routes: RouteDef[], defaultRateLimit: number): void {
  for (const route of routes) {
    const chain: Array<(ctx: ApiContext, next: Next) => Promise<void>> = route.session
      ? [authenticateSession(route.session), rateLimit(defaultRateLimit)]
      : [authenticate, rateLimit(defaultRateLimit), checkOrigin, requireScope(route.scope)];
    if (route.module) chain.push(requireModule(route.module));
    if (route.params) chain.push(validateParams(route.params));
    if (route.multipart) chain.push(multipartBody(route.multipart), idempotency);
    else if (route.upload) chain.push(idempotentBodyCap, uploadBody(route.upload.maxBytes));
    else if (route.method !== 'GET' && route.method !== 'DELETE') chain.push(idempotentBodyCap, jsonBody as never, idempotency);
    if (route.cache) chain.push(responseCache(route.cache));
    chain.push(handle(route));
    router.register(route.path, [route.method], chain as never);
  }
}
