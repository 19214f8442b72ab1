// What an uploaded image must be before we store it, and how its thumbnail
// is made. The web process runs `inspectImage` (cheap: magic bytes, header,
// where the file ends, with nothing riding after it); the worker runs `makeThumbnail` (decoding is the
// expensive and dangerous part, so it never happens in the web process).
//
// Limits (docs/catalog.md):
// - 10 MB per file: far above any product photo worth sending, well below the
//   ~32 MB the HTTP infrastructure allows.
// - 40 megapixels counting every frame (width × page height × frames): a
//   7,000 × 5,700 photo fits; a decompression bomb (a 20,000 × 20,000 PNG is
//   a few KB on disk and 1.6 GB decoded) does not. sharp's own default is
//   268 megapixels per frame, far too generous for a shared worker.
// - 300 frames for animated GIF/WebP.
import { fileTypeFromBuffer } from 'file-type';
import sharp, { type Metadata } from 'sharp';
import { hasZipTrailer, ZIP_TRAILER_WINDOW } from '../lib/zip-trailer.ts';

// libvips's operation cache keeps recent operations and their results for
// reuse; every image here is a different one, so it only costs the lookups
// (about 3% of a thumbnail's CPU, measured) and up to 50 MB. Off for every
// process that imports this module (the web inspects, the worker decodes).
sharp.cache(false);

export const MAX_IMAGE_BYTES = 10 * 1024 * 1024;
export const MAX_IMAGE_PIXELS = 40_000_000;
export const MAX_IMAGE_FRAMES = 300;
export const THUMBNAIL_SIZE = 400;
export const THUMBNAIL_TYPE = 'image/webp';

/** Detected MIME type → the format name sharp reports and our file extension. */
export const ALLOWED_IMAGE_TYPES = {
  'image/jpeg': { sharp: 'jpeg', ext: 'jpg' },
  'image/png': { sharp: 'png', ext: 'png' },
  'image/webp': { sharp: 'webp', ext: 'webp' },
  'image/avif': { sharp: 'heif', ext: 'avif' },
  'image/gif': { sharp: 'gif', ext: 'gif' },
} as const;

export type ImageType = keyof typeof ALLOWED_IMAGE_TYPES;

export type InspectedImage = { contentType: ImageType; ext: string; width: number; height: number; frames: number };

export type Inspection = { ok: true; image: InspectedImage } | { ok: false; reason: string };

/**
 * What may follow an image's end: a few bytes, or a run of padding that some encoders write (zeros,
 * 0xFF fill, line ends). Anything more is another file riding on the image (served publicly under our
 * domain), refused.
 */
function onlyPadding(rest: Buffer): boolean {
  if (rest.length <= 16) return true;
  return rest.length <= 1024 && rest.every((b) => b === 0x00 || b === 0xff || b === 0x0a || b === 0x0d || b === 0x20);
}

const JPEG_EOI = Buffer.from([0xff, 0xd9]);

/** Where a GIF's trailer (0x3B) ends it, walking its blocks; -1 when the structure breaks first (truncated). */
function gifEnd(bytes: Buffer): number {
  if (bytes.length < 13) return -1;
  let at = 13;
  if (bytes[10] & 0x80) at += 3 * 2 ** ((bytes[10] & 0x07) + 1); // global colour table
  const skipSubBlocks = (from: number) => {
    let i = from;
    while (i < bytes.length && bytes[i] !== 0) i += bytes[i] + 1;
    return i < bytes.length ? i + 1 : -1;
  };
  while (at >= 0 && at < bytes.length) {
    const block = bytes[at];
    if (block === 0x3b) return at + 1;
    if (block === 0x21) at = skipSubBlocks(at + 2); // extension: label, then sub-blocks
    else if (block === 0x2c) {
      if (at + 10 > bytes.length) return -1;
      const local = bytes[at + 9];
      at += 10 + (local & 0x80 ? 3 * 2 ** ((local & 0x07) + 1) : 0) + 1; // descriptor, local table, LZW code size
      at = skipSubBlocks(at);
    } else return -1;
  }
  return -1;
}

/** Why the bytes do not end where the image does (truncated, or carrying something after it); null when they do. */
function endProblem(bytes: Buffer, type: ImageType): string | null {
  const truncated = 'la imagen está truncada o dañada';
  const after = 'la imagen lleva datos después de su final (otro archivo pegado a ella): no se admite';
  const ending = (end: number) => (end < 0 || end > bytes.length ? truncated : onlyPadding(bytes.subarray(end)) ? null : after);
  switch (type) {
    // The last EOI (FF D9): inside entropy-coded data 0xFF is always stuffed (FF 00), so it marks the end.
    case 'image/jpeg': {
      const at = bytes.lastIndexOf(JPEG_EOI);
      return at < 2 ? truncated : ending(at + 2);
    }
    // Chunks walked from the signature to IEND (length, type, data, CRC).
    case 'image/png': {
      let at = 8;
      while (at + 12 <= bytes.length) {
        const length = bytes.readUInt32BE(at);
        const chunk = bytes.toString('latin1', at + 4, at + 8);
        at += 12 + length;
        if (chunk === 'IEND') return ending(at);
      }
      return truncated;
    }
    case 'image/gif':
      return ending(gifEnd(bytes));
    // The RIFF size field (bytes 4..8) says where the file ends.
    case 'image/webp':
      return bytes.length < 12 ? truncated : ending(bytes.readUInt32LE(4) + 8);
    // ISO-BMFF boxes: walk top-level box sizes; the last must end with the file.
    case 'image/avif': {
      let offset = 0;
      while (offset + 8 <= bytes.length) {
        let size = bytes.readUInt32BE(offset);
        if (size === 1 && offset + 16 <= bytes.length) size = Number(bytes.readBigUInt64BE(offset + 8));
        if (size === 0) return null; // box extends to end of file
        if (size < 8) return truncated;
        offset += size;
      }
      return offset === bytes.length ? null : truncated;
    }
  }
}

/** The reason given for content that is no image of an accepted format. */
export const NOT_AN_IMAGE = 'el contenido no es una imagen JPEG, PNG, WebP, AVIF o GIF';

/**
 * Judges the bytes, never the declared type or file name. Expected failures
 * are returned as a reason (they become 422 validation_failed).
 */
export async function inspectImage(bytes: Buffer): Promise<Inspection> {
  if (bytes.length === 0) return { ok: false, reason: 'el archivo está vacío' };
  if (bytes.length > MAX_IMAGE_BYTES) return { ok: false, reason: `la imagen supera ${MAX_IMAGE_BYTES / 1024 / 1024} MB` };
  const detected = await fileTypeFromBuffer(bytes);
  const type = detected?.mime as ImageType | undefined;
  if (!type || !(type in ALLOWED_IMAGE_TYPES)) {
    return { ok: false, reason: NOT_AN_IMAGE };
  }
  // A zip at the end makes the image an archive too (unzip reads it from the end); named for what it is.
  if (hasZipTrailer(bytes.subarray(-ZIP_TRAILER_WINDOW))) return { ok: false, reason: 'la imagen lleva un archivo comprimido (zip) al final: no se admite' };
  const ends = endProblem(bytes, type);
  if (ends) return { ok: false, reason: ends };
  let meta: Metadata;
  try {
    // Reads the header only; no pixel is decoded here.
    meta = await sharp(bytes, { limitInputPixels: false }).metadata();
  } catch {
    return { ok: false, reason: 'la imagen está dañada' };
  }
  if (meta.format !== ALLOWED_IMAGE_TYPES[type].sharp) return { ok: false, reason: 'el contenido no coincide con su formato' };
  const width = meta.width ?? 0;
  const frames = meta.pages ?? 1;
  const frameHeight = meta.pageHeight ?? meta.height ?? 0;
  if (width < 1 || frameHeight < 1) return { ok: false, reason: 'la imagen no tiene dimensiones válidas' };
  if (frames > MAX_IMAGE_FRAMES) return { ok: false, reason: `la animación supera ${MAX_IMAGE_FRAMES} cuadros` };
  if (width * frameHeight * frames > MAX_IMAGE_PIXELS) {
    return { ok: false, reason: `la imagen supera ${MAX_IMAGE_PIXELS / 1_000_000} megapíxeles (contando todos los cuadros)` };
  }
  // The dimensions as the image is shown: EXIF orientations 5–8 turn it a quarter (its thumbnail is made turned).
  const turned = (meta.orientation ?? 1) >= 5;
  return { ok: true, image: { contentType: type, ext: ALLOWED_IMAGE_TYPES[type].ext, width: turned ? frameHeight : width, height: turned ? width : frameHeight, frames } };
}

/**
 * Decodes the first frame and writes a WebP thumbnail that fits in 400×400.
 * `rotate()` applies the EXIF orientation; sharp writes no metadata unless
 * asked (`keepMetadata`), so EXIF (GPS included) is stripped. The pixel limit
 * is enforced again by libvips itself, whatever the header claimed.
 */
export async function makeThumbnail(original: Buffer): Promise<Buffer> {
  return sharp(original, { limitInputPixels: MAX_IMAGE_PIXELS, failOn: 'error', animated: false, sequentialRead: true })
    .rotate()
    .resize(THUMBNAIL_SIZE, THUMBNAIL_SIZE, { fit: 'inside', withoutEnlargement: true })
    .webp({ quality: 80 })
    .toBuffer();
}

/** A file name safe in a URL path, with the extension of the detected type. */
export function safeFilename(original: string | null | undefined, ext: string, fallback = 'image'): string {
  const base = (original ?? '')
    .replace(/\.[^.]*$/, '')
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 80);
  return `${base || fallback}.${ext}`;
}
