// What an uploaded image must be before we store it, and how its thumbnail
// is made. The web process runs `inspectImage` (cheap: magic bytes, header,
// where the image ends: what follows is dropped); the worker runs `makeThumbnail` (decoding is the
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

/**
 * `bytes`: the image itself, what is stored and served. What a file carries after the image's end is
 * dropped: a camera's trailer (Samsung's `SEFT` block, a motion photo's video), an encoder's padding,
 * anything else riding on it, which would otherwise be served under our domain. A zip there is refused
 * instead (inspectImage): that file is an archive too.
 */
export type Inspection = { ok: true; image: InspectedImage; bytes: Buffer } | { ok: false; reason: string };

/**
 * Where a JPEG ends: its markers walked from SOI (each segment skipped by its length, an EXIF
 * thumbnail's EOI inside APP1 with it) and each scan's entropy-coded data to the next marker that is
 * neither stuffing (FF 00), a restart (FF D0–D7) nor fill (FF FF), up to the EOI. -1 when it breaks first.
 */
function jpegEnd(bytes: Buffer): number {
  if (bytes.length < 4 || bytes[0] !== 0xff || bytes[1] !== 0xd8) return -1;
  let at = 2;
  while (at + 1 < bytes.length) {
    if (bytes[at] !== 0xff) return -1;
    const marker = bytes[at + 1];
    if (marker === 0xff) {
      at++; // fill before a marker
      continue;
    }
    if (marker === 0xd9) return at + 2;
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      at += 2; // markers without a length
      continue;
    }
    if (at + 4 > bytes.length) return -1;
    const length = bytes.readUInt16BE(at + 2);
    if (length < 2) return -1;
    at += 2 + length;
    if (marker !== 0xda) continue;
    // A scan: entropy-coded data, in which 0xFF is always followed by 00 or a restart marker.
    for (;;) {
      at = bytes.indexOf(0xff, at);
      if (at < 0 || at + 1 >= bytes.length) return -1;
      const next = bytes[at + 1];
      if (next === 0x00 || (next >= 0xd0 && next <= 0xd7)) at += 2;
      else if (next === 0xff) at += 1;
      else break;
    }
  }
  return -1;
}

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

/** A PNG's chunks from its signature on (length, type, data, CRC): each type, where its data starts, where it ends. */
function* pngChunks(png: Buffer): Generator<{ type: string; data: number; end: number }> {
  let at = 8;
  while (at + 12 <= png.length) {
    const end = at + 12 + png.readUInt32BE(at);
    yield { type: png.toString('latin1', at + 4, at + 8), data: at + 8, end };
    at = end;
  }
}

/** An animated PNG's frame count (its acTL chunk, before the image data); 1 for a still PNG. */
function apngFrames(png: Buffer): number {
  for (const chunk of pngChunks(png)) {
    // acTL's data: num_frames, num_plays (4 bytes each).
    if (chunk.type === 'acTL' && chunk.end - 4 - chunk.data >= 8 && chunk.data + 8 <= png.length) return Math.max(1, png.readUInt32BE(chunk.data));
    if (chunk.type === 'IDAT' || chunk.type === 'IEND') return 1;
  }
  return 1;
}

/** Where the image ends in `bytes`, by its own structure; -1 when it is cut short (truncated or damaged). */
function imageEnd(bytes: Buffer, type: ImageType): number {
  switch (type) {
    case 'image/jpeg':
      return jpegEnd(bytes);
    // Chunks walked from the signature to IEND.
    case 'image/png': {
      for (const chunk of pngChunks(bytes)) if (chunk.type === 'IEND') return chunk.end <= bytes.length ? chunk.end : -1;
      return -1;
    }
    case 'image/gif':
      return gifEnd(bytes);
    // The RIFF size field (bytes 4..8) says where the file ends.
    case 'image/webp': {
      const end = bytes.length < 12 ? -1 : bytes.readUInt32LE(4) + 8;
      return end <= bytes.length ? end : -1;
    }
    // ISO-BMFF boxes: top-level boxes walked while each is whole (a box of size 0 runs to the end). Once the
    // image's `meta` and `mdat` are whole, what does not read as a whole box is a trailer, dropped as the
    // other formats' are; before that, the file is cut short or damaged.
    case 'image/avif': {
      let offset = 0;
      const whole = new Set<string>();
      while (offset < bytes.length) {
        const complete = whole.has('meta') && whole.has('mdat');
        if (offset + 8 > bytes.length) return complete ? offset : -1;
        let size = bytes.readUInt32BE(offset);
        const box = bytes.toString('latin1', offset + 4, offset + 8);
        if (size === 1) size = offset + 16 <= bytes.length ? Number(bytes.readBigUInt64BE(offset + 8)) : 0;
        else if (size === 0) size = bytes.length - offset;
        if (!/^[\x20-\x7e]{4}$/.test(box) || size < 8 || offset + size > bytes.length) return complete ? offset : -1;
        whole.add(box);
        offset += size;
      }
      return offset;
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
  // An animated PNG is a PNG (its first frame is the PNG every decoder shows): stored and served as one.
  const type = (detected?.mime === 'image/apng' ? 'image/png' : detected?.mime) as ImageType | undefined;
  if (!type || !(type in ALLOWED_IMAGE_TYPES)) {
    return { ok: false, reason: NOT_AN_IMAGE };
  }
  // A zip that zip readers find makes the file an archive too (they read it from the end): a polyglot,
  // refused (archives are refused whatever they are dressed as, the forms' rule), not quietly cut off.
  // Hidden in the image (in a chunk or a segment, whatever follows it), or after the image's end.
  const end = imageEnd(bytes, type);
  if (end >= 0 && hasZipTrailer(bytes.subarray(0, end).subarray(-ZIP_TRAILER_WINDOW))) return { ok: false, reason: 'la imagen lleva un archivo comprimido (zip) dentro: no se admite' };
  if (hasZipTrailer(bytes.subarray(-ZIP_TRAILER_WINDOW))) return { ok: false, reason: 'la imagen lleva un archivo comprimido (zip) al final: no se admite' };
  if (end < 0) return { ok: false, reason: 'la imagen está truncada o dañada' };
  const image = bytes.subarray(0, end);
  let meta: Metadata;
  try {
    // Reads the header only; no pixel is decoded here.
    meta = await sharp(image, { limitInputPixels: false }).metadata();
  } catch {
    return { ok: false, reason: 'la imagen está dañada' };
  }
  if (meta.format !== ALLOWED_IMAGE_TYPES[type].sharp) return { ok: false, reason: 'el contenido no coincide con su formato' };
  const width = meta.width ?? 0;
  // An APNG's frames are counted from its acTL chunk (libvips reads its first frame only).
  const frames = Math.max(meta.pages ?? 1, type === 'image/png' ? apngFrames(image) : 1);
  const frameHeight = meta.pageHeight ?? meta.height ?? 0;
  if (width < 1 || frameHeight < 1) return { ok: false, reason: 'la imagen no tiene dimensiones válidas' };
  if (frames > MAX_IMAGE_FRAMES) return { ok: false, reason: `la animación supera ${MAX_IMAGE_FRAMES} cuadros` };
  if (width * frameHeight * frames > MAX_IMAGE_PIXELS) {
    return { ok: false, reason: `la imagen supera ${MAX_IMAGE_PIXELS / 1_000_000} megapíxeles (contando todos los cuadros)` };
  }
  // The dimensions as the image is shown: EXIF orientations 5–8 turn it a quarter (its thumbnail is made turned).
  const turned = (meta.orientation ?? 1) >= 5;
  return { ok: true, image: { contentType: type, ext: ALLOWED_IMAGE_TYPES[type].ext, width: turned ? frameHeight : width, height: turned ? width : frameHeight, frames }, bytes: image };
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
