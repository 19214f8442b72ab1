// What an uploaded image must be before we store it, and how its thumbnail
// is made. The web process runs `inspectImage` (cheap: magic bytes, header,
// end-of-file marker); the worker runs `makeThumbnail` (decoding is the
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

function endsWithMarker(bytes: Buffer, type: ImageType): boolean {
  const tail = bytes.subarray(Math.max(0, bytes.length - 1024));
  switch (type) {
    // EOI (FF D9). Inside entropy-coded data 0xFF is always stuffed (FF 00),
    // so FF D9 near the end only appears when the file really ends there;
    // some encoders pad a few bytes after it, hence the 1 KB window.
    case 'image/jpeg':
      return tail.includes(Buffer.from([0xff, 0xd9]));
    // IEND chunk: length 0, type IEND, fixed CRC.
    case 'image/png':
      return tail.includes(Buffer.from('0000000049454e44ae426082', 'hex'));
    // Trailer byte 0x3B.
    case 'image/gif':
      return tail.includes(0x3b);
    // RIFF size field (bytes 4..8) + 8 must not exceed what arrived.
    case 'image/webp':
      return bytes.length >= 12 && bytes.readUInt32LE(4) + 8 <= bytes.length;
    // ISO-BMFF boxes: walk top-level box sizes; the last must end within the file.
    case 'image/avif': {
      let offset = 0;
      while (offset + 8 <= bytes.length) {
        let size = bytes.readUInt32BE(offset);
        if (size === 1 && offset + 16 <= bytes.length) size = Number(bytes.readBigUInt64BE(offset + 8));
        if (size === 0) return true; // box extends to end of file
        if (size < 8) return false;
        offset += size;
      }
      return offset === bytes.length;
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
  if (!endsWithMarker(bytes, type)) return { ok: false, reason: 'la imagen está truncada o dañada' };
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
