// Reading a submission body, JSON or multipart, into answers plus files
// staged in blob storage (contract: Forms, "File upload, two ways").
//
// Every file goes through the same `stage` step whatever the transport: field
// and count check, name check, a streamed write with the field's size cap,
// then the magic-bytes check on what was stored. Memory per upload stays at
// about one 256 KB chunk for multipart (busboy streams each part straight into
// the blob writer); a JSON body is in memory by nature (base64 inside JSON),
// which is why multipart is the recommended way for large files.
import busboy from 'busboy';
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Transform, type Readable } from 'node:stream';
import type { Pool } from '../../db/pool.ts';
import { deleteBlob, readBlob, readBlobBuffer, writeBlob } from '../../storage/blobs.ts';
import { ApiError, type FieldErrors } from '../errors.ts';
import type { FormRow, StoredField } from './definition.ts';
import { allowedExtensions, checkContent, checkFileName } from './file-rules.ts';

export type StagedFile = {
  fieldKey: string;
  filename: string;
  contentType: string;
  sizeBytes: number;
  sha256: string;
  blobId: string;
};

/** A file that passed the checks made before reading it (FileStager.admit). */
export type Admitted = { key: string; clientName: string; maxBytes: number; filename: string; extension: string };

export type Intake = {
  answers: Record<string, unknown>;
  locale: unknown;
  files: StagedFile[];
  errors: FieldErrors;
};

const HEAD_BYTES = 4100;
const PIECE = 64 * 1024;

function addError(errors: FieldErrors, key: string, message: string) {
  (errors[`answers.${key}`] ??= []).push(message);
}

/** Collects staged files for one submission and enforces the per-field rules. */
export class FileStager {
  readonly files: StagedFile[] = [];
  readonly errors: FieldErrors = {};
  readonly #counts = new Map<string, number>();
  readonly #pool: Pool;
  readonly #companyId: string;
  readonly #fields: Map<string, StoredField>;
  /** Every blob written and not deleted, recorded the moment its write returns, so `discard` misses none. */
  readonly #written = new Set<string>();
  #aborted = false;

  constructor(pool: Pool, companyId: string, form: FormRow) {
    this.#pool = pool;
    this.#companyId = companyId;
    this.#fields = new Map(form.fields.map((f) => [f.key, f]));
  }

  /**
   * Field, count and name: the checks made before any byte is read (or, for
   * JSON, decoded). Returns what `write` needs, or null when the file is not
   * to be stored: refused (its error recorded), or the submission already
   * certain to fail.
   */
  admit(key: string, clientName: string): Admitted | null {
    if (this.#aborted) return null;
    const field = this.#fields.get(key);
    if (!field) {
      addError(this.errors, key, 'no es un campo del formulario');
      return null;
    }
    if (field.field_type !== 'file' || !field.file) {
      addError(this.errors, key, 'este campo no admite archivos');
      return null;
    }
    const count = (this.#counts.get(key) ?? 0) + 1;
    this.#counts.set(key, count);
    if (count > field.file.max_files) {
      if (count === field.file.max_files + 1) addError(this.errors, key, `admite como máximo ${field.file.max_files} archivo(s)`);
      return null;
    }
    const name = checkFileName(clientName || '', allowedExtensions(field.file));
    if (!name.ok) {
      addError(this.errors, key, `${displayName(clientName)}: ${name.reason}`);
      return null;
    }
    // Once the submission is certain to fail, later files are only checked by name.
    if (Object.keys(this.errors).length > 0) return null;
    return { key, clientName, maxBytes: field.file.max_file_size_bytes, filename: name.filename, extension: name.extension };
  }

  rejectSize(key: string, clientName: string, max: number) {
    addError(this.errors, key, `${displayName(clientName)}: supera el tamaño máximo de ${max} bytes`);
  }

  reject(key: string, message: string) {
    addError(this.errors, key, message);
  }

  /**
   * Stages one file: `admit`, then `write`. `source` is consumed only when the
   * file is admitted; the caller drains it otherwise. Returns whether the
   * source was consumed.
   */
  async stage(key: string, clientName: string, source: AsyncIterable<Uint8Array>): Promise<boolean> {
    const admitted = this.admit(key, clientName);
    return admitted ? this.write(admitted, source) : false;
  }

  /**
   * Writes an admitted file with its size cap, then checks its content.
   * Returns whether the source was consumed (false: the writer stopped early).
   */
  async write(admitted: Admitted, source: AsyncIterable<Uint8Array>): Promise<boolean> {
    const { key, clientName, maxBytes: max } = admitted;
    if (this.#aborted) return false;
    const head: Buffer[] = [];
    let headBytes = 0;
    const stager = this;
    async function* capture() {
      try {
        for await (const piece of source) {
          if (stager.#aborted) return;
          if (headBytes < HEAD_BYTES) {
            head.push(Buffer.from(piece.subarray(0, HEAD_BYTES - headBytes)));
            headBytes += Math.min(piece.length, HEAD_BYTES - headBytes);
          }
          yield piece;
        }
      } catch (error) {
        // On abort the part is destroyed under us: end the write normally so
        // the blob gets an id we can delete (a write that throws leaves an
        // incomplete blob behind until the hourly purge).
        if (!stager.#aborted) throw error;
      }
    }
    const written = await writeBlob(this.#pool, this.#companyId, capture(), { contentType: 'application/octet-stream', maxBytes: max });
    if (!written.ok) {
      this.rejectSize(key, clientName, max);
      return false; // the writer stopped reading: the rest must be drained
    }
    this.#written.add(written.blob.id);
    const drop = () => {
      this.#written.delete(written.blob.id);
      return deleteBlob(this.#pool, written.blob.id);
    };
    if (this.#aborted) {
      await drop();
      return true;
    }
    const content = await checkContent(
      admitted.extension,
      () => readBlob(this.#pool, written.blob.id),
      Buffer.concat(head),
      () => readBlobBuffer(this.#pool, written.blob.id),
    );
    if (!content.ok || written.blob.sizeBytes === 0 || this.#aborted) {
      await drop();
      if (!this.#aborted) addError(this.errors, key, `${displayName(clientName)}: ${content.ok ? 'el archivo está vacío' : content.reason}`);
      return true;
    }
    await this.#pool.query('UPDATE blobs SET content_type = $2 WHERE id = $1', [written.blob.id, content.contentType]);
    this.files.push({
      fieldKey: key,
      filename: admitted.filename,
      contentType: content.contentType,
      sizeBytes: written.blob.sizeBytes,
      sha256: written.blob.sha256,
      blobId: written.blob.id,
    });
    return true;
  }

  /**
   * Stops staging: a write in progress ends at its next piece and deletes
   * its blob; later files are not stored. The caller destroys the sources.
   */
  abort(): void {
    this.#aborted = true;
  }

  /** Deletes every blob this stager wrote: the staged files and any written but not yet recorded. Idempotent. */
  async discard(): Promise<void> {
    this.files.splice(0);
    for (const id of [...this.#written]) {
      this.#written.delete(id);
      await deleteBlob(this.#pool, id);
    }
  }
}

/** A client name shown back in an error: bounded, without control or bidi characters. */
function displayName(name: string): string {
  return (name || 'archivo').replace(/[\p{Cc}\p{Cf}]/gu, '?').slice(0, 120);
}

async function* pieces(buffer: Buffer): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < buffer.length; i += PIECE) yield buffer.subarray(i, i + PIECE);
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URL = /^data:([^,;]*)((?:;[^,;]*)*?);base64,/i;

type FileObject = { filename?: unknown; content_type?: unknown; data: unknown };

function isFileObject(value: unknown): value is FileObject {
  return !!value && typeof value === 'object' && !Array.isArray(value) && 'data' in value;
}

/**
 * One JSON file object: base64 or a data URL. Nothing is decoded before the
 * field, count and name are admitted and the size, known from the length, is
 * within the field's cap.
 */
async function stageJsonFile(stager: FileStager, key: string, value: FileObject): Promise<void> {
  const clientName = typeof value.filename === 'string' ? value.filename : '';
  const admitted = stager.admit(key, clientName);
  if (!admitted) return;
  if (typeof value.data !== 'string') {
    stager.reject(key, `${displayName(clientName)}: data debe ser base64 o una data URL`);
    return;
  }
  let payload = value.data;
  const dataUrl = DATA_URL.exec(payload.slice(0, 300));
  if (dataUrl) payload = payload.slice(dataUrl[0].length); // the declared type is ignored, like content_type
  else if (/^data:/i.test(payload)) {
    stager.reject(key, `${displayName(clientName)}: la data URL debe estar en base64`);
    return;
  }
  const padding = payload.endsWith('==') ? 2 : payload.endsWith('=') ? 1 : 0;
  const decodedSize = Math.floor((payload.length * 3) / 4) - padding;
  if (decodedSize > admitted.maxBytes) {
    // Refused from its length alone: a huge base64 string is never decoded.
    stager.rejectSize(key, clientName, admitted.maxBytes);
    return;
  }
  if (payload.length % 4 !== 0 || !BASE64.test(payload)) {
    stager.reject(key, `${displayName(clientName)}: data no es base64 válido`);
    return;
  }
  await stager.write(admitted, pieces(Buffer.from(payload, 'base64')));
}

/** A JSON body `{data: {answers, locale, files}}`. */
export async function intakeJson(stager: FileStager, body: unknown): Promise<Intake> {
  if (body === null || typeof body !== 'object' || !('data' in body)) {
    throw new ApiError('parameter_missing', 'Falta el parámetro data.');
  }
  const data = (body as { data: unknown }).data;
  if (!data || typeof data !== 'object' || Array.isArray(data)) throw validationShape('data', 'debe ser un objeto');
  const { answers, locale, files, ...rest } = data as Record<string, unknown>;
  if (answers === undefined) throw new ApiError('parameter_missing', 'Falta el parámetro data.answers.');
  if (!answers || typeof answers !== 'object' || Array.isArray(answers)) throw validationShape('answers', 'debe ser un objeto');
  if (files !== undefined && (!files || typeof files !== 'object' || Array.isArray(files))) throw validationShape('files', 'debe ser un objeto');
  const unknown = Object.keys(rest);
  if (unknown.length) throw validationShape(unknown[0], 'no es un campo permitido');

  const out: Record<string, unknown> = {};
  const sources: Array<[string, unknown]> = [...Object.entries(answers), ...Object.entries((files as Record<string, unknown>) ?? {})];
  for (const [key, value] of sources) {
    const list = Array.isArray(value) ? value : [value];
    if (list.length > 0 && list.every(isFileObject)) {
      for (const item of list) await stageJsonFile(stager, key, item);
    } else if (list.some(isFileObject)) {
      stager.reject(key, 'mezcla archivos con otros valores');
    } else {
      out[key] = value;
    }
  }
  return { answers: out, locale, files: stager.files, errors: stager.errors };
}

function validationShape(field: string, message: string): ApiError {
  return new ApiError('validation_failed', undefined, { errors: { [field]: [message] } });
}

// `data[answers][k]`, `answers[k]`, `files[k]`, `data[files][k]`, each with an optional `[]` or `[n]`.
const PART_NAME = /^(?:data\[(answers|files)\]|(answers|files))\[([^\]]+)\](?:\[\d*\])?$/;

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

/** A multipart body, streamed: text parts become answers, file parts go straight to storage. */
export async function intakeMultipart(stager: FileStager, req: IncomingMessage, limit: BodyCap): Promise<Intake> {
  const answers: Record<string, unknown> = {};
  let locale: unknown;
  let work: Promise<unknown> = Promise.resolve();
  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: req.headers,
      preservePath: true, // the name is ours to clean (file-rules.ts), whatever the parser would do
      limits: { fields: 500, fieldSize: 100 * 1024, files: 100, parts: 600, headerPairs: 50 },
    });
  } catch {
    throw new ApiError('validation_failed', 'El cuerpo multipart no es válido.', { errors: { data: ['multipart sin boundary'] } });
  }
  parser.on('field', (name, value) => {
    if (name === 'locale' || name === 'data[locale]') {
      locale = value;
      return;
    }
    const match = PART_NAME.exec(name);
    if (!match) {
      stager.reject(name, 'no es un campo permitido');
      return;
    }
    const key = match[3];
    const isArray = name.endsWith(']') && /\[\d*\]$/.test(name.slice(name.indexOf(key) + key.length + 1));
    const existing = answers[key];
    if (existing === undefined) answers[key] = isArray ? [value] : value;
    else answers[key] = Array.isArray(existing) ? [...existing, value] : [existing, value];
  });
  let failure: unknown = null;
  let current: Readable | null = null;
  parser.on('file', (name, stream: Readable, info) => {
    // A part's own error (the body ended or was cut off mid-part) reaches us
    // through the parser, and through the iterator while a part is read; a
    // part being drained or already left needs a listener not to crash.
    stream.on('error', () => {});
    const match = PART_NAME.exec(name);
    // Parts are handled one at a time, in order; busboy pauses the request
    // while a part waits, so a waiting part costs one buffer, not its size.
    // A part that is not stored is drained, or the parser would wait forever.
    work = work.then(async () => {
      if (failure) return void stream.resume();
      current = stream;
      try {
        if (!match) stager.reject(name, 'no es un campo permitido');
        // destroyOnReturn false: a writer that stops early (size cap) must not
        // destroy the part, which would stall the parser; it is drained instead.
        else await stager.stage(match[3], info.filename ?? '', stream.iterator({ destroyOnReturn: false }));
      } catch (error) {
        failure ??= error;
      } finally {
        current = null;
      }
      if (!stream.readableEnded) stream.resume();
    });
  });
  parser.on('filesLimit', () => stager.reject('files', 'demasiados archivos'));
  const cap = byteCap(limit);
  try {
    await new Promise<void>((resolve, reject) => {
      // On the cap the request is left unread (not destroyed) so the 413 can
      // still be written; the response closes the connection.
      cap.on('error', (error) => {
        req.unpipe(cap);
        reject(error);
      });
      req.on('error', reject);
      parser.on('error', (error: Error) =>
        reject(new ApiError('validation_failed', 'El cuerpo multipart no es válido.', { errors: { data: [error.message] } })),
      );
      parser.on('close', resolve);
      req.pipe(cap).pipe(parser);
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
    cap.unpipe(parser);
    (current as Readable | null)?.destroy();
    parser.destroy();
    await work;
    await stager.discard();
    throw error;
  }
  await work;
  if (failure) throw failure;
  return { answers, locale, files: stager.files, errors: stager.errors };
}

/** What the Idempotency-Key fingerprint covers: the answers, and each file by name, size and SHA-256. */
export function fingerprintMaterial(intake: Intake, queryLocale: unknown): unknown {
  return {
    answers: intake.answers,
    locale: intake.locale ?? queryLocale ?? null,
    files: intake.files.map((f) => ({ field: f.fieldKey, filename: f.filename, size: f.sizeBytes, sha256: f.sha256 })),
  };
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
