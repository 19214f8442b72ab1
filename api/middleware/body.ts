// How a route reads its body (api/route.ts chains these by the route's kind):
// JSON through koa-body (the 415 when the body says another type, an array
// refused, the Idempotency-Key size cap before reading), one bounded file
// through formidable for image slots, and the slots that bound how many
// upload bodies one process reads at once (and one company of them).
import type { IncomingMessage } from 'node:http';
import { createHash } from 'node:crypto';
import { readFile, unlink } from 'node:fs/promises';
import { HttpMethodEnum, koaBody } from 'koa-body';
import contentDisposition from 'content-disposition';
import type { Next } from 'koa';
import { ApiError, validationFailed } from '../errors.ts';
import type { MultipartRoute, UploadRoute } from '../route.ts';
import type { ApiContext, ApiMiddleware } from '../types.ts';
import { refuseArrayBody } from '../validation.ts';
import { checkKeyShape, IDEMPOTENCY_BODY_LIMIT } from './idempotency.ts';

/** The media types a JSON body may carry (koa-body's default list, named so the 415 checks and the parsers agree). */
export const JSON_TYPES = ['application/json', 'application/json-patch+json', 'application/vnd.api+json', 'application/csp-report', 'application/reports+json'];

export const jsonBody = koaBody({
  json: true,
  jsonTypes: JSON_TYPES,
  multipart: false,
  urlencoded: false,
  text: false,
  jsonLimit: '1mb',
  includeUnparsed: true,
  parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH],
});

/**
 * Runs a body parser, then `next`; an error the parser throws (the body, not the handler after it) goes
 * to `onParseError`, which answers it in its own terms or throws. Errors from `next` pass through.
 */
export async function parseBody<C extends { request: unknown }>(
  parser: (ctx: C, next: () => Promise<void>) => Promise<unknown>,
  ctx: C,
  next: () => Promise<unknown>,
  onParseError: (error: unknown) => void,
): Promise<void> {
  let parsed = false;
  try {
    await parser(ctx, async () => {
      parsed = true;
      await next();
    });
  } catch (error) {
    if (parsed) throw error;
    onParseError(error);
  }
}

/** An array body is refused before anything reads it, on routes that take no body too (refuseArrayBody). */
export async function objectBody(ctx: ApiContext, next: Next) {
  refuseArrayBody(ctx.request.body);
  await next();
}

/**
 * A route whose body is optional (actions such as cancel or rotate-secret): no body, `null` or
 * `{}` is `{data: {}}`. Before the idempotency fingerprint, so the three, and `{"data": {}}` itself,
 * are one body under one Idempotency-Key.
 */
export async function absentBodyAsEmptyData(ctx: ApiContext, next: Next) {
  const body: unknown = ctx.request.body;
  if (body === undefined || body === null || (typeof body === 'object' && Object.keys(body).length === 0)) ctx.request.body = { data: {} };
  await next();
}

/**
 * A body declared larger than an Idempotency-Key allows is refused before it
 * is read, so a 5 MB body with a key gets 413 idempotency_body_too_large
 * (what the client must change) rather than the parser's request_too_large.
 */
export async function idempotentBodyCap(ctx: ApiContext, next: Next) {
  if (ctx.headers['idempotency-key'] !== undefined) {
    // The header first, before any body is read: every write, JSON, multipart or upload, answers a
    // malformed key the same way whatever its body holds.
    checkKeyShape(ctx);
    if (Number(ctx.get('Content-Length')) > IDEMPOTENCY_BODY_LIMIT) throw new ApiError('idempotency_body_too_large');
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
  const problem = await notJson(ctx, 'envía el cuerpo como application/json');
  if (problem) throw problem;
  await next();
}

/**
 * Why a request's body cannot be read as JSON (415), or null: a body in another media type, or bytes with no
 * type at all (the parser would skip them and the route answer as if nothing was sent); JSON declared in
 * another charset than UTF-8. `use` says what to send instead.
 */
async function notJson(ctx: ApiContext, use: string): Promise<ApiError | null> {
  const typed = !!ctx.get('Content-Type');
  const refuse = () => new ApiError('unsupported_media_type', `Tipo de contenido no soportado; ${use}.`);
  if ((ctx.request.length || (typed && ctx.get('Transfer-Encoding'))) && !ctx.is(JSON_TYPES)) return refuse();
  // JSON is UTF-8 (RFC 8259 §8.1): a body declared in another charset would be read as UTF-8 and its text altered.
  const charset = typed ? ctx.request.charset : '';
  if (charset && !/^(utf-?8|us-ascii)$/i.test(charset)) {
    return new ApiError('unsupported_media_type', `El cuerpo JSON va en UTF-8; se declaró charset=${charset.slice(0, 40)}.`);
  }
  // Chunked with no type: passed only if it turns out empty; one with bytes in it would be skipped by the parser.
  if (!typed && ctx.get('Transfer-Encoding') && !(await bodyIsEmpty(ctx.req))) return refuse();
  return null;
}

/** Whether a request's body ends before its first byte (reads at most its first chunk; the rest is discarded with the answer). */
function bodyIsEmpty(req: IncomingMessage): Promise<boolean> {
  if (req.readableEnded) return Promise.resolve(true);
  return new Promise((resolve, reject) => {
    const done = (result: boolean | Error) => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('aborted', onAborted);
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const onData = (chunk: Buffer) => {
      if (chunk.length === 0) return;
      req.pause();
      done(false);
    };
    const onEnd = () => done(true);
    const onError = (error: Error) => done(error);
    const onAborted = () => done(Object.assign(new Error('request aborted'), { type: 'request.aborted' }));
    req.on('data', onData).on('end', onEnd).on('error', onError).on('aborted', onAborted);
  });
}

/**
 * multipart/form-data through koa-body's formidable, bounded: one file of at
 * most `maxFileBytes` (formidable stops reading past it), 20 small fields.
 * Parser limits are the client's fault, so they answer 422 validation_failed
 * like any other unacceptable file (contract, Errors: "file too big, too
 * many"). The temp files formidable writes are removed after the handler,
 * whatever happens. For Idempotency-Key the body fingerprint includes the
 * file's SHA-256 and its name, so a different file, or the same bytes under
 * another name (the name is in the image's URL), under the same key is
 * `idempotency_key_reused`.
 */
/** formidable's error codes for a part past its size (FormidableError.js): one file, all files, text parts. */
const FORMIDABLE_FILE_TOO_BIG = 1016;
const FORMIDABLE_FILES_TOO_BIG = 1009;
const FORMIDABLE_FIELDS_TOO_BIG = 1006;
/** formidable's error code for more text parts than `maxFields`. */
const FORMIDABLE_TOO_MANY_FIELDS = 1007;
/** Text parts a multipart body may carry beside its file (an image route reads none of them), and their bytes in all. */
const MAX_TEXT_PARTS = 20;
const MAX_TEXT_PART_BYTES = 64 * 1024;

/**
 * A part's file name from its Content-Disposition, RFC 5987's `filename*` (UTF-8 or ISO-8859-1) before
 * `filename`, as the content-disposition package (Koa's own) reads it; null without one, or for a header it
 * cannot read.
 */
function dispositionFileName(disposition: string | undefined): string | null {
  if (!disposition) return null;
  try {
    return contentDisposition.parse(disposition).parameters.filename ?? null;
  } catch {
    return null;
  }
}

export function multipartBody(options: MultipartRoute['multipart']): ApiMiddleware {
  // `onFile` hears each file part's name as it begins: a part refused for its size is reported under it.
  // `onBegin` is given every temp file formidable creates: its `maxFiles` refuses a second file part at
  // once (the rest of the body is not read) but only after creating that part's temp file, which its own
  // clean-up misses (an open descriptor and a file left behind per request), so ours removes them all.
  const parserFor = (maxFileBytes: number, maxFieldsBytes: number, onFile: (name: string | null) => void, onBegin: (file: TempFile) => void) =>
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
        maxFields: MAX_TEXT_PARTS,
        maxFieldsSize: maxFieldsBytes,
        allowEmptyFiles: true,
        minFileSize: 0,
        filter: (part) => {
          onFile(part.name);
          return true;
        },
        // formidable reads a part by its Content-Type: none is a text field, any is a file. A part is read
        // by its file name instead, as busboy reads the forms' parts: one with a name (`filename`, or RFC
        // 5987's `filename*` alone, which formidable does not read) is the file, with or without a type (RFC
        // 7578 §4.4 allows none: Python requests sends none, and a photo sent so was refused as text past
        // 64 KB); one with an empty name is no file (a browser's empty file input sends one beside the image).
        // The declared type is ignored anyway: the bytes decide.
        onPart: (part, handlePart) => {
          // formidable keeps the part's headers (its Part type does not list them).
          const headers = (part as typeof part & { headers?: Record<string, string> }).headers;
          const name = part.originalFilename || dispositionFileName(headers?.['content-disposition']);
          if (name) {
            part.originalFilename = name;
            part.mimetype ||= 'application/octet-stream';
          } else if (part.originalFilename === '') {
            part.mimetype = null;
          }
          handlePart(part);
        },
        onFileBegin: (_name, file) => onBegin(file as unknown as TempFile),
      },
    });
  return async function multipart(ctx, next) {
    // With an Idempotency-Key and no Content-Length (chunked), the 100 KB cap is
    // enforced while reading: the file part is held to 100 KB (a file past it is
    // a body past it), and text parts, which an image route does not use, to 4 KB.
    const capped = ctx.headers['idempotency-key'] !== undefined && !ctx.get('Content-Length');
    let filePart: string | null = null;
    const onFile = (name: string | null) => {
      filePart ??= name;
    };
    // Every temp file is closed and removed when the request is done, whatever happened; one that a
    // failed parse still creates afterwards (formidable creates files asynchronously) as soon as it is.
    const temp: TempFile[] = [];
    let done = false;
    const onBegin = (file: TempFile) => {
      if (done) setImmediate(() => discard(file));
      else temp.push(file);
    };
    const parser = capped
      ? parserFor(Math.min(options.maxFileBytes, IDEMPOTENCY_BODY_LIMIT), 4 * 1024, onFile, onBegin)
      : parserFor(options.maxFileBytes, MAX_TEXT_PART_BYTES, onFile, onBegin);
    const oneFile = `se acepta un solo archivo de hasta ${Math.floor(options.maxFileBytes / 1024 / 1024)} MB`;
    const fieldOfFile = () => (filePart !== null && options.fields.includes(filePart) ? filePart : (options.fields[0] ?? 'file'));
    // A client that hangs up before formidable listens to the request (while the key or the rate limit was
    // looked up) leaves it waiting for an end or an error that already came: this settles the read then.
    let onClose: (() => void) | undefined;
    const cut = new Promise<never>((_, reject) => {
      onClose = () => {
        if (!ctx.req.complete) reject(Object.assign(new Error('request aborted'), { type: 'request.aborted' }));
      };
      if (ctx.req.destroyed) onClose();
      else ctx.req.once('close', onClose);
    });
    cut.catch(() => {}); // settled by the race below, or after it when nothing awaits it any more
    try {
      try {
        await Promise.race([parser(ctx, async () => {}), cut]);
      } catch (error) {
        // The connection closed before the body ended: not a bad body. The client hung up (logged as the
        // JSON routes log it, 400), or this process cut it at the end of its drain (SIGTERM): a stop, 503.
        if (!ctx.req.complete && (ctx.req.destroyed || ctx.req.socket?.destroyed)) {
          if (ctx.deps.lifecycle.draining) throw new ApiError('service_unavailable', 'El proceso se detuvo antes de terminar de leer el cuerpo; reintenta.');
          throw Object.assign(new Error('request aborted'), { type: 'request.aborted' });
        }
        const status = (error as { httpCode?: number; status?: number }).httpCode ?? (error as { status?: number }).status;
        // formidable's size refusals (file, total of files, text parts); too many files or fields stay a 422 below.
        const tooBig = [FORMIDABLE_FILE_TOO_BIG, FORMIDABLE_FILES_TOO_BIG, FORMIDABLE_FIELDS_TOO_BIG].includes((error as { code?: number }).code ?? 0);
        if (capped && tooBig) throw new ApiError('idempotency_body_too_large');
        // The text parts' refusals say so: a client told its file was too big would shrink the wrong thing.
        const code = (error as { code?: number }).code;
        const message =
          code === FORMIDABLE_TOO_MANY_FIELDS ? `el cuerpo lleva más de ${MAX_TEXT_PARTS} campos de texto; envía solo el archivo`
          : code === FORMIDABLE_FIELDS_TOO_BIG ? `los campos de texto del cuerpo pasan de ${MAX_TEXT_PART_BYTES / 1024} KB; envía solo el archivo`
          : status === 413 ? oneFile
          : 'el cuerpo multipart/form-data no es válido';
        throw validationFailed({ [fieldOfFile()]: [message] });
      }
      const files = ctx.request.files ?? {};
      const all = Object.entries(files).flatMap(([field, f]) => (Array.isArray(f) ? f : [f]).map((file) => ({ field, file })));
      const chosen = all.find(({ field }) => options.fields.includes(field));
      if (chosen) {
        const bytes = await readFile(chosen.file.filepath);
        ctx.state.upload = { field: chosen.field, filename: chosen.file.originalFilename, declaredType: chosen.file.mimetype, bytes };
        const fields = ctx.request.body;
        const base = fields && typeof fields === 'object' && !Array.isArray(fields) ? fields : {};
        // What the stored image depends on: the bytes and the name the client gave them (it is in the URL).
        ctx.request.body = { ...base, [chosen.field]: { sha256: createHash('sha256').update(bytes).digest('hex'), filename: chosen.file.originalFilename ?? null } };
      }
      await next();
    } finally {
      ctx.req.off('close', onClose!);
      done = true;
      await Promise.all(temp.map(discard));
    }
  };
}

/** A temp file formidable writes a file part to (its PersistentFile; `_writeStream` is its fs.WriteStream, once opened). */
type TempFile = { filepath: string; destroy?: () => void; _writeStream?: { closed?: boolean; once(event: 'close', listener: () => void): unknown } };

/**
 * Closes a temp file's stream (a refused part may leave it open) and removes the file once the stream
 * has closed: a stream still opening creates the file after an earlier unlink would have run.
 */
async function discard(file: TempFile): Promise<void> {
  const stream = file._writeStream;
  const closed = stream && !stream.closed ? new Promise<void>((resolve) => stream.once('close', resolve)) : Promise.resolve();
  try {
    file.destroy?.();
  } catch {
    // already closed
  }
  await closed;
  await unlink(file.filepath).catch(() => {});
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
export function uploadBody(limits: UploadRoute['upload']): ApiMiddleware {
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
  // With an Idempotency-Key and no declared length, the 100 KB cap is the parser's own limit: the
  // body is measured as sent, whitespace included, while it is read.
  const keyedJson = koaBody({
    json: true,
    jsonTypes: JSON_TYPES,
    multipart: false,
    urlencoded: false,
    text: false,
    jsonLimit: IDEMPOTENCY_BODY_LIMIT,
    includeUnparsed: false,
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH],
  });
  const readKeyedJson = (ctx: ApiContext, next: Next) =>
    parseBody(keyedJson, ctx, next, (error) => {
      if ((error as { status?: number }).status !== 413) throw error;
      throw new ApiError('idempotency_body_too_large');
    });
  const mib = (bytes: number) => Math.floor(bytes / 1024 / 1024);
  return async function upload(ctx, next) {
    const multipart = ctx.is('multipart/form-data');
    const max = multipart ? limits.maxBytes : limits.maxJsonBytes;
    const length = Number(ctx.get('Content-Length'));
    if (Number.isFinite(length) && length > max) {
      // Answered without reading the body (what arrives meanwhile is discarded: middleware/unread-body.ts).
      throw new ApiError(
        'request_too_large',
        multipart
          ? `El cuerpo supera el máximo de ${mib(max)} MB.`
          : `Un cuerpo JSON no puede pasar de ${mib(max)} MB; envía archivos grandes como multipart/form-data (hasta ${mib(limits.maxBytes)} MB).`,
      );
    }
    // The JSON form follows the JSON routes' rules (a body with no type is 415 there too, not read as none).
    const problem = multipart ? null : await notJson(ctx, 'usa application/json o multipart/form-data');
    if (problem) throw problem;
    const keyedChunked = ctx.headers['idempotency-key'] !== undefined && ctx.get('Content-Length') === '';
    const read = () => (multipart ? next() : keyedChunked ? readKeyedJson(ctx, next) : json(ctx, next));
    if (Number.isFinite(length) && ctx.get('Content-Length') !== '' && length <= SMALL_UPLOAD_BODY) return read();
    const limit = ctx.deps.config.uploadConcurrency;
    const companyId = ctx.state.auth!.companyId;
    const mine = uploadsByCompany.get(companyId) ?? 0;
    if (uploadsInFlight >= limit || mine >= Math.max(1, Math.floor(limit / 2))) {
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
