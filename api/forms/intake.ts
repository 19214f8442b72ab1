// Reading a submission body, JSON or multipart, into answers plus files
// staged in blob storage (contract: Forms, "File upload, two ways").
//
// Every file goes through the same `stage` step whatever the transport: field
// and count check, name check, a streamed write with the field's size cap,
// then the magic-bytes check on what was stored. Memory per upload stays at
// about one 256 KB chunk for multipart (busboy streams each part straight into
// the blob writer); a JSON body is in memory by nature (base64 inside JSON),
// which is why multipart is the recommended way for large files.
//
// This module holds what both transports share: the FileStager (every file's
// checks and its staged blob) and the Idempotency-Key fingerprint; the
// transports are intake-json.ts and intake-multipart.ts.
import type { Pool } from '../../db/pool.ts';
import { deleteBlob, type BlobStore } from '../../storage/blobs.ts';
import { freeBytes } from '../../storage/files.ts';
import { addFieldError, type FieldErrors } from '../errors.ts';
import type { FormRow, StoredField } from './definition.ts';
import { allowedExtensions, checkContent, checkFileName } from './file-rules.ts';
import { ZIP_TRAILER_WINDOW } from '../../lib/zip-trailer.ts';

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
  /** Keys of the file fields a file was sent for, stored or not (a refused file is its own error, not a missing answer). */
  sentFileKeys: ReadonlySet<string>;
  /** Files not stored because the company's storage is full (contract: files_error; the submission is kept). */
  overQuota: string[];
  errors: FieldErrors;
};

/** Size of the pieces a decoded JSON file is written in. */
export const PIECE = 64 * 1024;

function addError(errors: FieldErrors, key: string, message: string) {
  addFieldError(errors, `answers.${key}`, message);
}

/** Collects staged files for one submission and enforces the per-field rules. */
export class FileStager {
  readonly files: StagedFile[] = [];
  readonly errors: FieldErrors = {};
  /** Keys of the file fields a file was sent for, whatever became of it. */
  readonly sentFileKeys = new Set<string>();
  /** Names of files refused for the storage quota before a byte of them was stored. */
  readonly overQuota: string[] = [];
  /** The company's free bytes when staging began (read once, unlocked; filing checks again under a lock). */
  #free: number | null = null;
  readonly #counts = new Map<string, number>();
  readonly #pool: Pool;
  readonly #blobs: BlobStore;
  readonly #companyId: string;
  readonly #fields: Map<string, StoredField>;
  /** Every blob written and not deleted, recorded the moment its write returns, so `discard` misses none. */
  readonly #written = new Set<string>();
  #aborted = false;

  constructor(pool: Pool, blobs: BlobStore, companyId: string, form: FormRow) {
    this.#pool = pool;
    this.#blobs = blobs;
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
    this.sentFileKeys.add(key);
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

  /** A problem of the body as a whole (too many parts), named `data` as a malformed body is. */
  rejectBody(message: string) {
    addFieldError(this.errors, 'data', message);
  }

  /** A multipart part whose name is none of the accepted shapes: the error names the part as sent. */
  rejectPart(partName: string | undefined) {
    const name = partName || '(parte sin nombre)';
    addFieldError(this.errors, name, 'no es un nombre de parte aceptado: usa data[answers][<clave>], answers[<clave>] o files[<clave>]');
  }

  /**
   * Bytes still free for this submission: the company's free storage minus
   * what it staged already. Checked before streaming a file into PostgreSQL,
   * so a company with no room left stores none of the bytes it would refuse.
   */
  async room(): Promise<number> {
    this.#free ??= await freeBytes(this.#pool, this.#companyId);
    return Math.max(0, this.#free - this.files.reduce((sum, f) => sum + f.sizeBytes, 0));
  }

  /** A file that does not fit the company's storage: the submission is kept, the file named in files_error. */
  refuseForQuota(admitted: Admitted): void {
    this.overQuota.push(admitted.filename);
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
  async write(admitted: Admitted, source: AsyncIterable<Uint8Array>, knownSize?: number): Promise<boolean> {
    const { key, clientName, maxBytes: max } = admitted;
    if (this.#aborted) return false;
    const room = await this.room();
    if ((knownSize ?? 1) > room) {
      this.refuseForQuota(admitted);
      return false; // nothing read: the caller drains the source
    }
    const stager = this;
    // The file's last bytes, for the content check's look at its end (a zip after an image): the recent
    // pieces are kept, not copied, while the ones after them still cover the window.
    const recent: Uint8Array[] = [];
    let recentBytes = 0;
    async function* capture() {
      try {
        for await (const piece of source) {
          if (stager.#aborted) return;
          recent.push(piece);
          recentBytes += piece.length;
          while (recent.length > 1 && recentBytes - recent[0]!.length >= ZIP_TRAILER_WINDOW) recentBytes -= recent.shift()!.length;
          yield piece;
        }
      } catch (error) {
        // On abort the part is destroyed under us: end the write normally so
        // the blob gets an id we can delete (a write that throws leaves an
        // incomplete blob behind until the hourly purge).
        if (!stager.#aborted) throw error;
      }
    }
    // A stream of unknown length stops at whichever comes first: the field's cap or the room left.
    const cap = Math.min(max, room);
    const written = await this.#blobs.write(this.#pool, this.#companyId, capture(), { contentType: 'application/octet-stream', maxBytes: cap });
    if (!written.ok) {
      if (cap < max) this.refuseForQuota(admitted);
      else this.rejectSize(key, clientName, max);
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
      () => this.#blobs.read(this.#pool, written.blob.id),
      () => this.#blobs.readBuffer(this.#pool, written.blob.id),
      Buffer.concat(recent).subarray(-ZIP_TRAILER_WINDOW),
    );
    if (!content.ok || written.blob.sizeBytes === 0 || this.#aborted) {
      await drop();
      // Empty says so whatever the kind (an empty .pdf is not "not a pdf": it is nothing).
      const reason = written.blob.sizeBytes === 0 ? 'el archivo está vacío' : !content.ok ? content.reason : '';
      if (!this.#aborted) addError(this.errors, key, `${displayName(clientName)}: ${reason}`);
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
export function displayName(name: string): string {
  return (name || 'archivo').replace(/[\p{Cc}\p{Cf}]/gu, '?').slice(0, 120);
}

/**
 * What the Idempotency-Key fingerprint covers: the answers, each stored file by name, size and SHA-256,
 * and what became of the files not stored (refused: their errors; over the storage quota: their names).
 * A file refused is part of the body: the same key with one more, refused, file is another body
 * (idempotency_key_reused), not the stored answer's replay, which would say the file was taken.
 */
export function fingerprintMaterial(intake: Intake, queryLocale: unknown): unknown {
  return {
    answers: intake.answers,
    locale: intake.locale ?? queryLocale ?? null,
    files: intake.files.map((f) => ({ field: f.fieldKey, filename: f.filename, size: f.sizeBytes, sha256: f.sha256 })),
    refused: intake.errors,
    over_quota: intake.overQuota,
  };
}

