// A JSON submission `{data: {answers, locale?, files?}}`: a file is an object
// `{filename, content_type, data}` with base64 `data` (or a data URL); several
// files of one field are an array. The body is in memory by nature (base64
// inside JSON), so its cap is lower than multipart's.
import { displayName, FileStager, PIECE, type Intake } from './intake.ts';

async function* pieces(buffer: Buffer): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < buffer.length; i += PIECE) yield buffer.subarray(i, i + PIECE);
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const LINE_BREAK = /[\r\n]/;
const LINE_BREAKS = /\r?\n/g;
const DATA_URL = /^data:([^,;]*)((?:;[^,;]*)*?);base64,/i;

type FileObject = { filename?: unknown; content_type?: unknown; data: unknown };
const FILE_OBJECT_KEYS = new Set(['filename', 'content_type', 'data']);

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
  const unknown = Object.keys(value).filter((name) => !FILE_OBJECT_KEYS.has(name));
  if (unknown.length) {
    stager.reject(key, `${displayName(clientName)}: campo desconocido en el archivo (${unknown.slice(0, 5).join(', ').slice(0, 200)}); se aceptan filename, content_type y data`);
    return;
  }
  const admitted = stager.admit(key, clientName);
  if (!admitted) return;
  if (typeof value.data !== 'string') {
    stager.reject(key, `${displayName(clientName)}: data debe ser base64 o una data URL`);
    return;
  }
  // Line breaks are MIME's (RFC 2045: lines of 76) and what `base64 file` prints in a shell: not data.
  let payload = LINE_BREAK.test(value.data) ? value.data.replace(LINE_BREAKS, '') : value.data;
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
  // The size is known before decoding: a file that cannot fit the company's storage is never decoded.
  if (decodedSize > (await stager.room())) return stager.refuseForQuota(admitted);
  await stager.write(admitted, pieces(Buffer.from(payload, 'base64')), decodedSize);
}

/** The `data` of a JSON submission, already validated against the route's body schema (api/routes/forms.ts). */
export type SubmissionData = { answers: Record<string, unknown>; locale?: string | null; files?: Record<string, unknown> | null };

/** Splits a JSON submission's answers from its files, staging each file. */
export async function intakeJson(stager: FileStager, data: SubmissionData): Promise<Intake> {
  const out: Record<string, unknown> = {};
  const sources: Array<[string, unknown]> = [...Object.entries(data.answers)];
  // `files` carries files only, each under a key not answered in `answers` too: nothing there may
  // silently replace an answer.
  for (const [key, value] of Object.entries(data.files ?? {})) {
    // Nothing selected (`[]` or null) is no file, as it always was.
    if (value === null || (Array.isArray(value) && !value.length)) continue;
    const list = Array.isArray(value) ? value : [value];
    if (Object.hasOwn(data.answers, key)) stager.reject(key, 'está en answers y en files; envíala una sola vez');
    else if (!list.every(isFileObject)) stager.reject(key, 'files solo lleva archivos ({filename, content_type, data})');
    else sources.push([key, value]);
  }
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
  return { answers: out, locale: data.locale ?? undefined, files: stager.files, sentFileKeys: stager.sentFileKeys, overQuota: stager.overQuota, errors: stager.errors };
}
