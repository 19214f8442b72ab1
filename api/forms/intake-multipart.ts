// A multipart/form-data submission, streamed: busboy hands each file part
// straight to the blob writer (about one 256 KB chunk in memory per upload),
// text parts become answers, and the body is cut off at its cap.
import busboy from 'busboy';
import type { IncomingMessage } from 'node:http';
import { Transform, type Readable } from 'node:stream';
import { addFieldError, ApiError } from '../errors.ts';
import { isStorableText, TEXT_REASON } from '../validation.ts';
import { FileStager, type Intake } from './intake.ts';

// `data[answers][k]`, `answers[k]`, `files[k]`, `data[files][k]`, each with an optional `[]` or `[n]`.
const PART_NAME = /^(?:data\[(answers|files)\]|(answers|files))\[([^\]]+)\](?:\[\d*\])?$/;

/** busboy's reasons, in the API's language (contract: messages in Spanish). */
const PARSER_REASONS: Record<string, string> = {
  'Unexpected end of form': 'el cuerpo terminó antes del límite final (--boundary--)',
  'Unexpected end of file': 'una parte terminó antes de tiempo',
  'Malformed part header': 'el encabezado de una parte está mal formado',
  'Malformed content type': 'Content-Type no es válido',
  'Missing Content-Type': 'falta Content-Type',
  'Multipart: Boundary not found': 'Content-Type no indica boundary',
};
const parserReason = (error: Error) => PARSER_REASONS[error.message] ?? 'el cuerpo multipart está mal formado';

/**
 * The most a multipart body may carry, and the 413 past it: the request cap
 * (request_too_large), or 100 KB with an Idempotency-Key
 * (idempotency_body_too_large). Enforced while streaming, for bodies sent
 * without Content-Length; a declared length is checked before reading.
 */
export type BodyCap = { bytes: number; code: 'request_too_large' | 'idempotency_body_too_large' };

/** Counts request bytes and fails with the cap's 413 past it. */
function byteCap(cap: BodyCap) {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (seen > cap.bytes) done(new ApiError(cap.code));
      else done(null, chunk);
    },
  });
}

/**
 * Counts the parts of a multipart body as its delimiters (`--boundary` at the start of the body or
 * after a CRLF), to tell the parts busboy handed over from those it skipped without a word (no
 * `Content-Disposition: form-data`, or a `name` it could not read): those are refused, never dropped.
 */
function partCounter(boundary: string) {
  const needle = Buffer.from(`\r\n--${boundary}`);
  const DASH = 0x2d;
  let delimiters = 0;
  let closed = false; // past the close delimiter (`--boundary--`): the epilogue, which the parser ignores
  // Bytes not searched yet; a CRLF in front lets a delimiter at the very start of the body match too.
  let pending = Buffer.from('\r\n');
  const stream = new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (!closed) {
        const window = Buffer.concat([pending, chunk]);
        let from = 0;
        for (;;) {
          const at = window.indexOf(needle, from);
          if (at === -1) {
            pending = window.subarray(Math.max(from, window.length - (needle.length - 1))); // a delimiter cut by the chunk
            break;
          }
          const after = at + needle.length;
          if (after + 2 > window.length) {
            pending = window.subarray(at); // whether it closes the body is in the next chunk
            break;
          }
          delimiters++;
          if (window[after] === DASH && window[after + 1] === DASH) {
            closed = true;
            pending = Buffer.alloc(0);
            break;
          }
          from = after;
        }
      }
      done(null, chunk);
    },
  });
  // The last delimiter closes the body; every one before it opens a part.
  return { stream, parts: () => Math.max(0, delimiters - 1) };
}

/** The boundary of a multipart Content-Type, or null. */
function boundaryOf(contentType: string | undefined): string | null {
  const m = /;\s*boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType ?? '');
  return m ? (m[1] ?? m[2]) : null;
}

/** Parts of one multipart submission: text, file, and all together. */
export const MAX_TEXT_PARTS = 500;
export const MAX_FILE_PARTS = 100;
export const MAX_PARTS = 600;

/** A file part with an empty filename: no file when it is empty too (a browser's empty input), else refused. */
async function emptyFileInput(stager: FileStager, key: string, stream: Readable): Promise<void> {
  let bytes = 0;
  for await (const chunk of stream) bytes += (chunk as Buffer).length;
  if (bytes > 0) stager.reject(key, 'un archivo sin nombre (filename vacío) no se acepta');
}

/** A multipart body, streamed: text parts become answers, file parts go straight to storage. */
export async function intakeMultipart(stager: FileStager, req: IncomingMessage, limit: BodyCap): Promise<Intake> {
  // No prototype: a part named answers[__proto__] is an answer key like any other (and refused as one).
  const answers: Record<string, unknown> = Object.create(null);
  let locale: unknown;
  let work: Promise<unknown> = Promise.resolve();
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      preservePath: true, // the name is ours to clean (file-rules.ts), whatever the parser would do
      // File names arrive as raw UTF-8 (what browsers and fetch send); busboy's default reads them as latin1,
      // which turns an invisible U+200B into three visible characters that hide a blocked extension.
      defParamCharset: 'utf8',
      limits: { fields: MAX_TEXT_PARTS, fieldSize: 100 * 1024, files: MAX_FILE_PARTS, parts: MAX_PARTS, headerPairs: 50 },
    });
  } catch {
    throw new ApiError('validation_failed', 'El cuerpo multipart no es válido.', { errors: { data: ['multipart sin boundary'] } });
  }
  let seenParts = 0;
  parser.on('field', (name, value) => {
    seenParts++;
    if (name === 'locale' || name === 'data[locale]') {
      // Two spellings of one value: sent twice, they must agree (the last one does not silently win).
      if (locale !== undefined && locale !== value) addFieldError(stager.errors, 'locale', 'llegó dos veces con valores distintos; envía un solo locale');
      locale = value;
      return;
    }
    const match = PART_NAME.exec(name ?? '');
    if (!match) {
      stager.rejectPart(name);
      return;
    }
    const key = match[3];
    // A `files[...]` part carries a file (a filename in its Content-Disposition), never a text answer.
    // Empty, it is a file input left empty sent without a Content-Type (`filename=""`, which busboy
    // reports as a field): no file, as a browser's empty input is.
    if ((match[1] ?? match[2]) === 'files') {
      if (value !== '') stager.reject(key, 'una parte files[...] lleva un archivo (con filename), no texto');
      return;
    }
    if (!isStorableText(value)) {
      stager.reject(key, TEXT_REASON);
      return;
    }
    const isArray = name.endsWith(']') && /\[\d*\]$/.test(name.slice(name.indexOf(key) + key.length + 1));
    const existing = answers[key];
    if (existing === undefined) answers[key] = isArray ? [value] : value;
    else answers[key] = Array.isArray(existing) ? [...existing, value] : [existing, value];
  });
  let failure: unknown = null;
  let current: Readable | null = null;
  parser.on('file', (name, stream: Readable, info) => {
    seenParts++;
    // A part's own error (the body ended or was cut off mid-part) reaches us
    // through the parser, and through the iterator while a part is read; a
    // part being drained or already left needs a listener not to crash.
    stream.on('error', () => {});
    const match = PART_NAME.exec(name ?? '');
    // Parts are handled one at a time, in order; busboy pauses the request
    // while a part waits, so a waiting part costs one buffer, not its size.
    // A part that is not stored is drained, or the parser would wait forever.
    work = work.then(async () => {
      if (failure) return void stream.resume();
      current = stream;
      try {
        if (!match) stager.rejectPart(name);
        // What a browser sends for a file input left empty: filename="" (busboy reports no filename), no
        // bytes. No file, as if absent.
        else if (!info.filename) await emptyFileInput(stager, match[3], stream);
        // destroyOnReturn false: a writer that stops early (size cap) must not
        // destroy the part, which would stall the parser; it is drained instead.
        else await stager.stage(match[3], info.filename, stream.iterator({ destroyOnReturn: false }));
      } catch (error) {
        failure ??= error;
      } finally {
        current = null;
      }
      if (!stream.readableEnded) stream.resume();
    });
  });
  // Past a limit busboy drops the parts that follow: the submission is refused, never stored without them.
  let overLimit = false;
  const refuseOverLimit = (reason: string) => {
    overLimit = true;
    stager.rejectBody(reason);
  };
  parser.on('filesLimit', () => refuseOverLimit(`demasiados archivos: como máximo ${MAX_FILE_PARTS} partes de archivo`));
  parser.on('fieldsLimit', () => refuseOverLimit(`demasiadas respuestas: como máximo ${MAX_TEXT_PARTS} partes de texto`));
  parser.on('partsLimit', () => refuseOverLimit(`demasiadas partes: como máximo ${MAX_PARTS}`));
  const cap = byteCap(limit);
  const counter = partCounter(boundaryOf(req.headers['content-type']) ?? '');
  try {
    await new Promise<void>((resolve, reject) => {
      // On the cap the request is left unread (not destroyed) so the 413 can
      // still be written; the response closes the connection.
      cap.on('error', (error) => {
        req.unpipe(cap);
        reject(error);
      });
      req.on('error', reject);
      // A client gone before the body ended: 'error' may have been emitted before
      // these listeners existed, 'close' is checked here too so the read never waits forever.
      req.on('close', () => {
        if (!req.readableEnded) reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
      });
      if (req.destroyed && !req.readableEnded) reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
      parser.on('error', (error: Error) =>
        reject(new ApiError('validation_failed', 'El cuerpo multipart no es válido.', { errors: { data: [parserReason(error)] } })),
      );
      parser.on('close', resolve);
      req.pipe(cap).pipe(counter.stream).pipe(parser);
    });
  } catch (error) {
    // The body stops here (cap, client gone, malformed). Unpiped alone, the
    // parser and the part being written would wait forever for bytes, the
    // write holding an incomplete blob: stop staging, destroy both, let the
    // work in flight settle (an aborted write deletes its blob), and only then
    // delete what was staged, so no blob is written after the discard.
    failure ??= error;
    stager.abort();
    req.unpipe(cap);
    cap.unpipe(counter.stream);
    counter.stream.unpipe(parser);
    (current as Readable | null)?.destroy();
    parser.destroy();
    await work;
    await stager.discard();
    throw error;
  }
  await work;
  if (failure) throw failure;
  // A body with no part at all is what a browser sends for a form left empty: no answers, as `{answers: {}}`.
  // (Past a limit the parts busboy dropped are those it did not hand over, not unreadable ones.)
  if (!overLimit && counter.parts() > seenParts) {
    stager.rejectBody('una parte no tiene Content-Disposition: form-data con un name legible (name="data[answers][<clave>]"); no se descarta en silencio');
  }
  return { answers, locale, files: stager.files, sentFileKeys: stager.sentFileKeys, overQuota: stager.overQuota, errors: stager.errors };
}
