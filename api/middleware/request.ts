// First middleware: request id, version headers, the contract's error body,
// and one structured log line per request. Anything that is not an ApiError
// becomes a logged 500 with the request id; no stack or SQL reaches a client.
import { randomUUID } from 'node:crypto';
import type { Next } from 'koa';
import { log, logError } from '../../lib/log.ts';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { API_RELEASED_AT, API_VERSION } from '../../lib/version.ts';
import { CommitOutcomeUnknown } from '../../db/pool.ts';
import { S3Error } from '../../storage/s3.ts';
import { ApiError, ERROR_CODES, validationFailed } from '../errors.ts';
import { observeRequest } from '../metrics.ts';
import { discardUnreadBody } from './unread-body.ts';
import type { ApiContext } from '../types.ts';

const INBOUND_ID = /^[A-Za-z0-9._-]{8,200}$/;

/**
 * PostgreSQL unreachable or going away (connection refused or reset, the
 * server shutting down or starting, the pool unable to connect in time), or a
 * statement it cancelled (57014: a statement_timeout an operator set on the
 * role, docs/operations.md): the request did not happen, and trying again
 * shortly may work: 503.
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  const e = error as { code?: string; message?: string };
  if (!e) return false;
  if (isClientAbort(error) || isUnreadableRequest(error)) return false;
  // The bucket's socket errors carry the same codes: that outage is the blob store's (toApiError).
  if (error instanceof S3Error) return false;
  if (error instanceof CommitOutcomeUnknown) return true;
  if (typeof e.code === 'string' && (/^08/.test(e.code) || ['57P01', '57P02', '57P03', '57014', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'].includes(e.code))) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connect ECONNREFUSED/i.test(e.message ?? '');
}

/**
 * A client that hangs up mid-body surfaces as ECONNRESET "aborted" from Node's
 * HTTP server, or as raw-body's `request.aborted` through a JSON body parser:
 * the client went away (nobody reads the answer), the database is fine.
 */
export function isClientAbort(error: unknown): boolean {
  if ((error as { type?: string })?.type === 'request.aborted') return true;
  return (error as { message?: string })?.message === 'aborted' && (error as { code?: string }).code === 'ECONNRESET';
}

/**
 * The body parser found the request stream already destroyed (raw-body's 500 "stream is not
 * readable"): the client hung up, or its body's framing was broken (a bad chunk size, an unknown
 * Transfer-Encoding) and Node cut the connection (answerClientError answers it when it can). The
 * client's fault, not a 500 of ours.
 */
function isUnreadableRequest(error: unknown): boolean {
  return (error as { type?: string })?.type === 'stream.not.readable';
}

/** zlib's failures to decode a compressed body (Z_DATA_ERROR for gzip/deflate, ERR__ERROR_* for brotli, ZSTD_* for zstd). */
function isDecompressionError(error: unknown): boolean {
  const e = error as { code?: unknown; errno?: unknown };
  return typeof e?.errno === 'number' && typeof e.code === 'string' && /^(Z_|ERR__ERROR_|ZSTD_)/.test(e.code);
}

/**
 * The field a foreign-key violation of an insert or update names: the constraint's column
 * (`movements_account_id_fkey` → account_id, `products_company_id_brand_id_fkey` → brand_id; the tenant
 * column of a composite key is not the field). Null for any other error, and for a delete that another
 * table's rows still need (that is the route's own conflict to answer, as account_in_use is).
 */
function referencedField(error: unknown): string | null {
  const e = error as { code?: unknown; constraint?: unknown; table?: unknown; message?: unknown };
  if (e?.code !== '23503' || typeof e.constraint !== 'string' || typeof e.table !== 'string') return null;
  if (typeof e.message !== 'string' || !e.message.startsWith('insert or update on table')) return null;
  const columns = e.constraint.startsWith(`${e.table}_`) && e.constraint.endsWith('_fkey') ? e.constraint.slice(e.table.length + 1, -'_fkey'.length) : '';
  const field = columns.replace(/^company_id_/, '');
  return /^[a-z][a-z0-9_]*$/.test(field) ? field : 'data';
}

/**
 * The answer an error thrown in the chain gets; null for a fault of ours (500). `quiet`: only the
 * answer is wanted (the route's declared-errors check), the log lines are written once, here.
 */
export function toApiError(error: unknown, { quiet = false } = {}): ApiError | null {
  if (error instanceof ApiError) return error;
  if (isClientAbort(error)) return new ApiError('invalid_parameter', 'El cliente cerró la conexión antes de terminar de enviar el cuerpo.');
  if (isUnreadableRequest(error)) return new ApiError('invalid_request', 'El cuerpo de la petición no se pudo leer: la conexión se cerró o su codificación (Transfer-Encoding, chunks) no es válida.');
  // The one 503 after which the write may have been saved: the connection failed during its COMMIT.
  if (error instanceof CommitOutcomeUnknown) {
    return new ApiError(
      'service_unavailable',
      'La base de datos se desconectó mientras confirmaba la escritura: pudo haberse guardado. Reintenta con la misma Idempotency-Key (devuelve la respuesta si se guardó) o consulta el registro antes de repetirla.',
    );
  }
  if (isDatabaseUnavailable(error)) return new ApiError('service_unavailable', 'La base de datos no está disponible; reintenta en unos segundos.');
  // The blob store's own outage (S3 answering 5xx: SlowDown, InternalError): the client may retry.
  if (error instanceof S3Error && error.httpStatus >= 500) return new ApiError('service_unavailable', 'El almacenamiento de archivos no está disponible; reintenta en unos segundos.');
  // A value or a running total past what its column holds (SQLSTATE 22003, numeric_value_out_of_range):
  // each amount is within its limit, but a day's ledger total of them is not. The client's data, not our fault.
  if ((error as { code?: unknown })?.code === '22003') {
    return validationFailed({ data: ['un valor o un total acumulado queda fuera del rango que se puede guardar'] });
  }
  // A record the write names was deleted between the handler's check and its insert (SQLSTATE 23503 on
  // the insert or update): what the check answers when the delete wins, 422 naming the field, not a 500.
  const fkField = referencedField(error);
  if (fkField) {
    // Logged: the same answer would hide a bug of ours that names a wrong id in a column the client never sent.
    if (!quiet) log('request.reference_vanished', { constraint: (error as { constraint?: string }).constraint, field: fkField });
    return validationFailed({ [fkField]: ['no existe en la empresa'] });
  }
  const status = (error as { status?: number; statusCode?: number })?.status ?? (error as { statusCode?: number })?.statusCode;
  const type = (error as { type?: string })?.type;
  // Errors raised by the body parser (co-body / formidable) carry a status.
  if (status === 413 || type === 'entity.too.large') return new ApiError('request_too_large');
  if (status === 415) {
    // The body parser's inflation: a Content-Encoding it does not decode (zstd, compress).
    const encoding = /^Unsupported Content-Encoding: (.*)$/.exec((error as Error).message ?? '')?.[1];
    if (encoding !== undefined) return new ApiError('unsupported_media_type', `Content-Encoding ${encoding.slice(0, 40)} no se admite: envía el cuerpo sin comprimir, o con gzip, deflate o br.`);
    return new ApiError('unsupported_media_type');
  }
  if (status === 400 && (type === 'entity.parse.failed' || error instanceof SyntaxError)) {
    // co-body refuses a "__proto__" key anywhere (prototype poisoning); the message says why.
    if (/forbidden prototype property/.test((error as Error).message)) return new ApiError('invalid_json', 'El cuerpo tiene una clave "__proto__", que no se acepta en ningún objeto.');
    // Valid JSON that is not an object (`"x"`, `42`): co-body's strict mode refuses it; say what is expected.
    if (/only supports object and array/.test((error as Error).message)) return new ApiError('invalid_json', 'El cuerpo debe ser un objeto JSON: {"data": {…}}.');
    return new ApiError('invalid_json');
  }
  // A body whose Content-Encoding (gzip, deflate, br) does not decode: zlib's own error, without a status.
  if (isDecompressionError(error)) return new ApiError('invalid_json', 'El cuerpo no se puede descomprimir según su Content-Encoding.');
  if (status === 400) return new ApiError('invalid_parameter', (error as Error).message);
  return null;
}

/** A host name (letters, digits, `-`, `_`, dots) or a bracketed IPv6 address, then an optional port. */
const HOST_VALUE = /^(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?$/;

/** Why a request's Host header is unusable (sent twice, or no host[:port]), or null when it is fine or absent. */
function badHost(req: IncomingMessage): string | null {
  const host = req.headers.host;
  if (host === undefined) return null;
  let count = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 4 && raw[i]!.toLowerCase() === 'host') count++;
  if (count > 1) return 'La cabecera Host va una sola vez.';
  const match = HOST_VALUE.exec(host);
  if (!match || (match[1] !== undefined && Number(match[1]) > 65535)) return `La cabecera Host "${host.slice(0, 100)}" no es un host[:puerto] válido.`;
  return null;
}

export function requestMiddleware() {
  return async function request(ctx: ApiContext, next: Next) {
    const started = performance.now();
    const inbound = ctx.get('X-Request-Id');
    const requestId = INBOUND_ID.test(inbound) ? inbound : randomUUID();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    ctx.set('X-Service-API-Version', API_VERSION);
    ctx.set('X-Service-API-Released-At', API_RELEASED_AT);
    // Answers hold a company's data (names, emails, RFCs, secrets): no cache stores them, as with
    // Stripe's. The few meant to be kept (openapi.json, public media, the booking page's script) say so.
    ctx.set('Cache-Control', 'no-store');
    // No browser guesses another type than the one declared (JSON, the HTML pages, files).
    ctx.set('X-Content-Type-Options', 'nosniff');
    let failure: unknown;
    try {
      // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400 (Node's own answer had no body or headers of ours).
      // Both refusals close the connection (docs/api.md, 400 invalid_request), as the parser's own do: a
      // request this malformed says nothing trustworthy about where the next one starts.
      if (ctx.req.httpVersionMajor === 1 && ctx.req.httpVersionMinor >= 1 && ctx.req.headers.host === undefined) {
        ctx.set('Connection', 'close');
        throw new ApiError('invalid_request', 'Falta la cabecera Host, obligatoria en HTTP/1.1.');
      }
      // RFC 9112 §3.2 too: more than one Host, or one that is no host[:port], is a 400 (Node keeps the first).
      const hostProblem = badHost(ctx.req);
      if (hostProblem) {
        ctx.set('Connection', 'close');
        throw new ApiError('invalid_request', hostProblem);
      }
      // RFC 9112 §6.1: chunked is the only transfer coding read here. Node takes `gzip, chunked` and hands
      // on the still-compressed bytes; refused rather than parsed as if plain (Content-Encoding is the way).
      const codings = ctx.req.headers['transfer-encoding'];
      if (codings !== undefined && !/^\s*chunked\s*$/i.test(codings)) {
        ctx.set('Connection', 'close');
        throw new ApiError('invalid_request', `Transfer-Encoding "${codings.slice(0, 100)}" no se admite: solo chunked (para comprimir, Content-Encoding).`);
      }
      await next();
      if (ctx.status === 404 && ctx.body === undefined) throw new ApiError('not_found');
    } catch (error) {
      // A body cut off while this process drains (SIGTERM) was cut by the stop, not by the client: 503, as
      // the single-file reader says it (middleware/body.ts); every reader's abort is counted the same way.
      const apiError = isClientAbort(error) && ctx.deps.lifecycle.draining
        ? new ApiError('service_unavailable', 'El proceso se detuvo antes de terminar de leer el cuerpo; reintenta.')
        : toApiError(error);
      if (apiError) {
        ctx.status = apiError.status;
        ctx.body = apiError.toBody();
        if (apiError.code === 'service_unavailable' && !ctx.response.get('Retry-After')) ctx.set('Retry-After', '2');
        if (isDatabaseUnavailable(error)) logError('request.database_unavailable', error, { request_id: requestId, method: ctx.method, path: loggablePath(ctx.path) });
        if (error instanceof S3Error) logError('request.blob_store_unavailable', error, { request_id: requestId, method: ctx.method, path: loggablePath(ctx.path) });
      } else {
        failure = error;
        logError('request.failed', error, { request_id: requestId, method: ctx.method, path: loggablePath(ctx.path) });
        ctx.status = 500;
        // Exactly {error, message} (contract, Errors); the id a client quotes to
        // support is in the message and in X-Request-Id, never a stack or SQL.
        ctx.body = { error: 'internal_error', message: `Error interno del servidor. Referencia: ${requestId}.` };
      }
    }
    // RFC 9110 §11.6.1: a 401 carries a challenge. The API key, a session token and the metrics token
    // (invalid_key) are Bearer credentials. One challenge for every refusal, without RFC 6750's error
    // code: the contract wants the same answer whether the key is missing, malformed, unknown or revoked.
    // MCP sets its own, with resource metadata and the code its OAuth clients read (mcp/server.ts);
    // OAuth's token endpoint and sign-in page are not Bearer-protected.
    if (ctx.status === 401 && (ctx.body as { error?: string } | undefined)?.error === 'invalid_key' && !ctx.response.get('WWW-Authenticate')) {
      ctx.set('WWW-Authenticate', 'Bearer realm="api"');
    }
    // A stopping process (SIGTERM, api/server.ts) finishes what it has and takes nothing new: this
    // connection closes after the answer instead of staying open for the client's next request.
    if (ctx.deps.lifecycle.draining) ctx.set('Connection', 'close');
    // Answered before its body was read in full: the rest is discarded, not cut off (unread-body.ts).
    if (!ctx.req.complete) discardUnreadBody(ctx.req, ctx.res);
    observeRequest(ctx, (performance.now() - started) / 1000);
    log('request', {
      request_id: requestId,
      method: ctx.method,
      path: loggablePath(ctx.path),
      status: ctx.status,
      duration_ms: Math.round((performance.now() - started) * 10) / 10,
      company_id: ctx.state.auth?.companyId,
      key_id: ctx.state.auth?.keyId,
      ...(failure ? { error: true } : {}),
    });
  };
}

/**
 * The path as logs keep it: a booking's manage token (`/book/manage/<token>`, docs/bookings.md) opens the
 * booking to whoever holds it, so it is written `[token]`; logs often go to another service.
 */
export function loggablePath(path: string): string {
  return path.replace(/(\/manage\/)[A-Za-z0-9_-]+/, '$1[token]');
}

/** The platform's probes, which reach the process directly over plain HTTP. */
const PROBES = new Set(['/healthz', '/readyz']);

/**
 * The scheme the client used. Behind the platform router TLS ends there and it says so in
 * X-Forwarded-Proto; like X-Forwarded-For, only the entry of the outermost trusted proxy counts,
 * counted from the right (a proxy that appends leaves the client's own value on the left), and with
 * no trusted proxy (TRUST_PROXY_HOPS=0) the header is the client's and the socket decides.
 */
function clientProtocol(ctx: ApiContext, trustProxyHops: number): string {
  const entries = trustProxyHops > 0 ? ctx.get('X-Forwarded-Proto').split(',').map((e) => e.trim()).filter(Boolean) : [];
  const entry = entries.length ? entries[Math.max(0, entries.length - trustProxyHops)] : ctx.req.socket && 'encrypted' in ctx.req.socket ? 'https' : 'http';
  return entry.toLowerCase();
}

/** Whether `httpsOnly` answers this request 426 (production, plain HTTP, not a probe). */
export function refusesPlainHttp(enabled: boolean, trustProxyHops: number): (ctx: ApiContext) => boolean {
  return (ctx) => enabled && !PROBES.has(ctx.path) && clientProtocol(ctx, trustProxyHops) !== 'https';
}

/** HSTS on every HTTPS answer in production: browsers (the booking page, the OAuth sign-in) keep to https for a year. */
export const HSTS = 'max-age=31536000';

/**
 * NODE_ENV=production: plain HTTP is refused with 426 (contract, Authentication 7), the probes
 * excepted; the 426 names the protocol to use in `Upgrade` (RFC 9110 §15.5.22 requires one), and
 * every answer over HTTPS carries `Strict-Transport-Security`.
 */
export function httpsOnly(enabled: boolean, trustProxyHops: number) {
  const refused = refusesPlainHttp(enabled, trustProxyHops);
  return async function requireHttps(ctx: ApiContext, next: Next) {
    if (enabled && !PROBES.has(ctx.path)) {
      if (refused(ctx)) {
        // RFC 9110 §7.8: a sender of Upgrade lists it in Connection too.
        ctx.set('Upgrade', 'TLS/1.2, HTTP/1.1');
        ctx.set('Connection', 'Upgrade');
        throw new ApiError('https_required');
      }
      ctx.set('Strict-Transport-Security', HSTS);
      // The cookies library asks Koa, which reads the first X-Forwarded-Proto entry (the client's): told
      // here from the trusted one, or a client's "http, https" would make setting a Secure cookie throw.
      ctx.cookies.secure = true;
    }
    await next();
  };
}

/** How long an answer written outside Koa may take to leave before its connection is cut. */
const ANSWER_OUTSIDE_KOA_MS = 5_000;

/** The contract's error answer written on a response outside Koa (the server's own events), then the connection closed. */
function answerOutsideKoa(res: ServerResponse, code: 'invalid_request' | 'request_timeout' | 'expectation_failed', done?: () => void): void {
  const { status, message } = ERROR_CODES[code];
  const body = JSON.stringify({ error: code, message });
  res.shouldKeepAlive = false;
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'X-Service-API-Version': API_VERSION, 'X-Service-API-Released-At': API_RELEASED_AT, Connection: 'close' });
  res.end(body, done);
}

/** An `Expect` other than 100-continue (RFC 9110 §10.1.1): 417 in the contract's shape, the connection closed. */
export function answerExpectation(req: IncomingMessage, res: ServerResponse): void {
  answerOutsideKoa(res, 'expectation_failed');
  req.resume();
}

/**
 * What Node answers itself, before any middleware runs, to a request it cannot parse: headers over its
 * 16 KB (431), a request line or headers that are not HTTP (400), a client too slow to send its headers
 * (408). Node's own answers are a bare status line; these carry the contract's error body and the
 * version headers every response has (contract, Versioning), and close the connection.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse })._httpMessage;
  // The request being answered is the one whose body broke the parser (a bad chunk size, an unknown
  // Transfer-Encoding) or did not arrive within Node's requestTimeout, and its answer has not started:
  // it gets the 400 (the 408), then the connection is cut.
  // Not when the client is gone (a reset, or the connection ended mid-body: HPE_INVALID_EOF_STATE):
  // nobody would read it, and the handler must see its read fail (an upload frees its slot).
  const clientGone = error.code === 'ECONNRESET' || error.code === 'HPE_INVALID_EOF_STATE';
  if (inFlight && !clientGone && socket.writable && !inFlight.headersSent && inFlight.req && !inFlight.req.complete) {
    // Once answered, Node lets go of the request: its stream would never end nor fail, and whatever
    // reads it (a JSON parser, an upload holding one of the process's upload slots) would wait for
    // ever. When the connection closes, its body ends as a hang-up does (isClientAbort).
    const req = inFlight.req;
    socket.once('close', () => {
      if (!req.destroyed) req.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    });
    // A client that never reads the answer does not keep the connection (and that reader) either.
    setTimeout(() => socket.destroy(), ANSWER_OUTSIDE_KOA_MS).unref();
    const code = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout' : 'invalid_request';
    return answerOutsideKoa(inFlight, code, () => socket.destroy());
  }
  // A request of this connection still being answered (garbage pipelined after it): no status line of
  // ours where its answer goes, neither inside a body under way nor in place of one not started; the
  // connection is cut.
  if (error.code === 'ECONNRESET' || !socket.writable || inFlight) return void socket.destroy();
  const code =
    error.code === 'HPE_HEADER_OVERFLOW' ? 'headers_too_large'
    : error.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW' ? 'request_too_large'
    : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'request_timeout'
    : 'invalid_request';
  endWithError(socket, code);
}

/**
 * CONNECT (a tunnel request, which Node hands to the server's `connect` event rather than to Koa): no
 * tunnel here. Answered as a method Node cannot parse is, 400 invalid_request, rather than a connection
 * closed without a byte.
 */
export function answerConnect(_req: IncomingMessage, socket: Duplex): void {
  endWithError(socket, 'invalid_request', 'Este servidor no abre túneles (CONNECT).');
}

/** A raw answer in the contract's shape with the version headers, then the connection closed. */
function endWithError(socket: Duplex, code: 'invalid_request' | 'headers_too_large' | 'request_too_large' | 'request_timeout', text?: string): void {
  const { status, message } = ERROR_CODES[code];
  const body = JSON.stringify({ error: code, message: text ?? message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Service-API-Version: ${API_VERSION}\r\nX-Service-API-Released-At: ${API_RELEASED_AT}\r\nConnection: close\r\n\r\n${body}`,
  );
}
