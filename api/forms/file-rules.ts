// What a form file may be (contract: File constraints, always-blocked file
// types). Three independent checks, all of which must pass:
//   1. the name: every extension segment against the always-blocked list, and
//      the last one against what the field allows;
//   2. the size and count (done while streaming, see intake.ts);
//   3. the real content, by magic bytes (file-type), which must agree with the
//      name's extension. The declared content type is never trusted.
//
// OOXML vs zip: a .docx/.xlsx/.pptx is a zip. file-type opens the archive and
// reads `[Content_Types].xml`: the main part's content type tells a docx from
// a docm (macro-enabled) from a bare zip. A bare zip renamed .docx is detected
// as `zip` and a macro-enabled one as `docm`/`xlsm`/`pptm`…: both are refused
// (blocked type, and content not matching the extension). A package whose
// main part says docx is accepted even if it carries other parts: Office does
// not run macros from a package typed as .docx.
//
// Zip bombs: a package (.docx/.xlsx/.pptx/.odt/.ods/.odp) is refused when
// its central directory declares more than 256 MiB once inflated, or an entry
// above 10 MiB inflated that is compressed more than 200:1 (real documents
// compress XML 5–20:1, very repetitive sheets somewhat more; deflate's own
// ceiling is ~1,000:1, which is what bombs use). The directory is read with
// yauzl, nothing is inflated: sizes are the archive's declarations, so the
// check stops the bombs that announce themselves (Office and LibreOffice trust
// the same declarations); inflating to verify is the reader's job.
//
// Legacy .doc/.xls/.ppt: OLE compound files, which file-type only calls
// `cfb` (an .msi installer is one too). The compound file's directory is read
// with `cfb` (SheetJS): the stream of the named format must be at the root
// (WordDocument; Workbook, or Book for Excel 5; PowerPoint Document), no VBA
// storage may appear anywhere (Word's `Macros`, Excel's `_VBA_PROJECT_CUR`,
// `VBA` inside them or inside an embedded object), PowerPoint's VBA record
// must be absent from its document stream, and the root may not carry a
// Windows Installer class id. Those files are read whole to parse (bounded by
// the field's size cap and the 32 MiB request cap).
import CFB from 'cfb';
import { fileTypeFromStream } from 'file-type';
import { Readable } from 'node:stream';
import yauzl from 'yauzl';
import { hasZipTrailer } from '../../lib/zip-trailer.ts';
import { FILE_KINDS, type FileConstraints, type FileKind } from '../../db/forms.ts';

export { FILE_KINDS, type FileConstraints, type FileKind };


/** Extensions of each kind with the MIME type we store for them. */
export const KIND_TYPES: Record<FileKind, Record<string, string>> = {
  images: {
    jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', gif: 'image/gif', webp: 'image/webp',
    heic: 'image/heic', heif: 'image/heif', avif: 'image/avif', bmp: 'image/bmp', tif: 'image/tiff', tiff: 'image/tiff',
  },
  pdf: { pdf: 'application/pdf' },
  documents: {
    doc: 'application/msword',
    docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    odt: 'application/vnd.oasis.opendocument.text',
    rtf: 'application/rtf',
    txt: 'text/plain',
  },
  spreadsheets: {
    xls: 'application/vnd.ms-excel',
    xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    ods: 'application/vnd.oasis.opendocument.spreadsheet',
    csv: 'text/csv',
  },
  presentations: {
    ppt: 'application/vnd.ms-powerpoint',
    pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
    odp: 'application/vnd.oasis.opendocument.presentation',
  },
  videos: { mp4: 'video/mp4', m4v: 'video/x-m4v', mov: 'video/quicktime', webm: 'video/webm', avi: 'video/vnd.avi', mkv: 'video/x-matroska', mpeg: 'video/mpeg' },
  audio: { mp3: 'audio/mpeg', wav: 'audio/wav', ogg: 'audio/ogg', oga: 'audio/ogg', m4a: 'audio/mp4', aac: 'audio/aac', flac: 'audio/flac', opus: 'audio/opus', weba: 'audio/webm' },
};

/** Every extension we know how to check; a field can only allow these. */
export const KNOWN_EXTENSIONS: Record<string, string> = Object.assign({}, ...Object.values(KIND_TYPES));

/**
 * Always blocked, whatever a form allows (contract): executables, scripts,
 * installers, archives, macro-enabled office documents, HTML/SVG, credentials.
 * Every extension segment of a name is checked, so common words that are also
 * rare extensions (`.com` in `acme.com.pdf`, `.app`, `.key`, `.run`, `.pl`, `.war`,
 * `.application`, `.env`) are left out on purpose: they would refuse ordinary names. Their content is still checked.
 */
export const BLOCKED_EXTENSIONS: ReadonlySet<string> = new Set([
  // executables and libraries
  'exe', 'dll', 'so', 'sys', 'drv', 'scr', 'pif', 'cpl', 'ocx', 'elf', 'dylib', 'msc', 'lnk', 'gadget', 'chm', 'inf', 'jnlp',
  // installers and packages
  'msi', 'msp', 'mst', 'msix', 'msixbundle', 'appx', 'appxbundle', 'apk', 'xapk', 'apks', 'aab', 'ipa', 'dmg', 'pkg', 'deb', 'rpm', 'snap',
  'flatpak', 'appimage', 'xpi', 'crx', 'vsix',
  // scripts
  'bat', 'cmd', 'sh', 'bash', 'zsh', 'csh', 'ksh', 'ps1', 'psm1', 'psd1', 'ps1xml', 'vbs', 'vbe', 'js', 'jse', 'mjs', 'cjs',
  'wsf', 'wsh', 'hta', 'jar', 'class', 'php', 'php3', 'php4', 'php5', 'php7', 'phtml', 'phar', 'py', 'pyc', 'pyw', 'pyz',
  'rb', 'lua', 'tcl', 'vb', 'vba', 'ahk', 'au3', 'cgi', 'asp', 'aspx', 'jsp', 'jspx', 'reg', 'scf', 'applescript',
  // archives and disk images
  'zip', 'rar', '7z', 'tar', 'gz', 'tgz', 'bz2', 'tbz', 'tbz2', 'xz', 'txz', 'zst', 'lz', 'lz4', 'lzma', 'lzh', 'lha', 'cpio', 'xar',
  'sitx', 'cab', 'arj', 'iso', 'vhd', 'vhdx', 'vmdk',
  // macro-enabled office documents
  'docm', 'dotm', 'xlsm', 'xltm', 'xlam', 'xlsb', 'pptm', 'potm', 'ppsm', 'ppam', 'sldm',
  // markup that runs in a browser
  'html', 'htm', 'xhtml', 'shtml', 'mht', 'mhtml', 'svg', 'svgz', 'xml', 'xsl', 'xslt',
  // credentials and keys
  'p12', 'pfx', 'pem', 'crt', 'cer', 'der', 'p7b', 'p7c', 'jks', 'keystore', 'kdbx', 'ppk', 'gpg', 'asc', 'ovpn', 'npmrc', 'netrc', 'htpasswd',
]);

/** Detected types that are blocked whatever the name says. */
const BLOCKED_DETECTED: ReadonlySet<string> = new Set([
  ...BLOCKED_EXTENSIONS,
  'elf', 'mach', 'wasm', 'swf', 'ar', 'cpio', 'lzh', 'lz', 'lz4', 'bz2', 'xz', 'zst', 'Z', 'crx', 'dex', 'class',
]);

/** Extensions that name the same real format as what file-type reports. */
const SAME_FORMAT: Record<string, string[]> = {
  jpg: ['jpg'], jpeg: ['jpg'], png: ['png', 'apng'], tif: ['tif'], tiff: ['tif'], heic: ['heic'], heif: ['heic'], m4v: ['m4v', 'mp4'], mp4: ['mp4', 'm4v'],
  m4a: ['m4a', 'mp4'], oga: ['ogg', 'oga'], ogg: ['ogg', 'oga', 'opus'], opus: ['opus', 'ogg'], weba: ['webm'],
  mpeg: ['mpg'], avi: ['avi'], mkv: ['mkv'], wav: ['wav'], aac: ['aac'],
  // Legacy Office files are all OLE compound files: file-type says `cfb`.
  doc: ['cfb'], xls: ['cfb'], ppt: ['cfb'],
};

/** Extensions with no magic number: checked as plain text instead. */
const TEXT_EXTENSIONS: ReadonlySet<string> = new Set(['txt', 'csv']);

/** The extensions a field accepts: union of its kinds, extensions and content types; all kinds when none is set. */
export function allowedExtensions(c: Pick<FileConstraints, 'allowed_kinds' | 'allowed_extensions' | 'allowed_content_types'>): Set<string> {
  const out = new Set<string>();
  const none = !c.allowed_kinds.length && !c.allowed_extensions.length && !c.allowed_content_types.length;
  for (const kind of none ? FILE_KINDS : c.allowed_kinds) for (const ext of Object.keys(KIND_TYPES[kind])) out.add(ext);
  for (const ext of c.allowed_extensions) out.add(ext);
  const types = new Set(c.allowed_content_types);
  for (const [ext, mime] of Object.entries(KNOWN_EXTENSIONS)) if (types.has(mime)) out.add(ext);
  return out;
}

/** The HTML `accept` attribute: every allowed extension with its dot, then the MIME types. */
export function acceptAttribute(c: Parameters<typeof allowedExtensions>[0]): string {
  const exts = [...allowedExtensions(c)].sort();
  const mimes = [...new Set(exts.map((e) => KNOWN_EXTENSIONS[e]).filter(Boolean))].sort();
  return [...exts.map((e) => `.${e}`), ...mimes].join(',');
}

// Bidirectional overrides and isolates make `evil‮fdp.exe` display as
// `evilexe.pdf`; such a name is refused rather than cleaned.
const BIDI_CONTROLS = /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/u;

function percentDecoded(name: string): string {
  let current = name;
  for (let i = 0; i < 3; i++) {
    try {
      const next = decodeURIComponent(current);
      if (next === current) break;
      current = next;
    } catch {
      break;
    }
  }
  return current;
}

export type NameCheck =
  | { ok: true; filename: string; extension: string }
  | { ok: false; reason: string };

/**
 * Checks a client file name and derives the stored one. The stored name never
 * comes from the client's path: only the last path component survives, with
 * control and format characters removed.
 */
export function checkFileName(raw: string, allowed: ReadonlySet<string>): NameCheck {
  // Decoded and normalised until neither changes it (`%EF%BD%85` decodes to a fullwidth `ｅ`, NFKC's `e`;
  // a fullwidth `％65` normalises to `%65`), and only then checked: what is refused sent as is is refused
  // percent-encoded too.
  let decoded = raw;
  for (let round = 0; round < 4; round++) {
    const next = percentDecoded(decoded).normalize('NFKC');
    if (next === decoded) break;
    decoded = next;
  }
  if (BIDI_CONTROLS.test(decoded)) return { ok: false, reason: 'el nombre contiene caracteres de control de dirección de texto' };
  // Invisible format characters (zero-width space and joiner, soft hyphen…)
  // go before the extension check: `invoice.e<U+200B>xe.pdf` is `invoice.exe.pdf`.
  const base = (decoded.split(/[\\/]/).pop() ?? '').replace(/\p{Cf}/gu, '');
  // Every extension segment, also those hidden behind NUL or `%00`, and what a segment holds before a
  // `;` or `:` (IIS ran `a.php;.jpg` as PHP; `a.asp:.jpg` names a stream of `a.asp` on NTFS).
  const segments = base.toLowerCase().split(/[.\u0000]/).map((s) => s.trim());
  for (const segment of segments.slice(1)) {
    const blocked = [segment, segment.split(/[;:]/)[0].trim()].find((s) => BLOCKED_EXTENSIONS.has(s));
    if (blocked) return { ok: false, reason: `el tipo de archivo .${blocked} no está permitido` };
  }
  if (/[\u0000-\u001f\u007f]/.test(base)) return { ok: false, reason: 'el nombre contiene caracteres de control' };
  const cleaned = base.replace(/\p{Cf}/gu, '').replace(/[<>:"|?*]/g, '_').trim();
  const extension = segments.length > 1 ? segments[segments.length - 1] : '';
  if (!extension) return { ok: false, reason: 'el archivo no tiene extensión' };
  if (!allowed.has(extension)) return { ok: false, reason: `la extensión .${extension} no está permitida en este campo` };
  const fullStem = cleaned.slice(0, cleaned.length - extension.length - 1).replace(/^[.\s]+/, '');
  let stem = fullStem.slice(0, 150);
  // A cut inside a segment drops that segment's piece: cut at 150, `x….exeZZZ.pdf` would be stored as
  // `x….exe.pdf` (a blocked segment the client never sent) and `x….json.pdf` as `x….js.pdf`.
  if (fullStem.length > 150 && fullStem[150] !== '.' && stem.lastIndexOf('.') > 0) stem = stem.slice(0, stem.lastIndexOf('.'));
  stem = stem.replace(/[.\s]+$/, '');
  if (!stem) stem = 'archivo';
  // Every segment kept was checked above; checked again as stored, so no later change to the cut can store one.
  for (const segment of stem.toLowerCase().split('.').slice(1)) {
    const blocked = [segment.trim(), segment.split(/[;:]/)[0].trim()].find((s) => BLOCKED_EXTENSIONS.has(s));
    if (blocked) return { ok: false, reason: `el tipo de archivo .${blocked} no está permitido` };
  }
  return { ok: true, filename: `${stem}.${extension}`, extension };
}

export type ContentCheck = { ok: true; contentType: string } | { ok: false; reason: string };

/** The root stream each legacy Office format must have. */
const OLE_MAIN_STREAMS: Record<string, string[]> = { doc: ['WordDocument'], xls: ['Workbook', 'Book'], ppt: ['PowerPoint Document'] };
/** Storages that hold a VBA project: refused wherever they sit (compared upper-case, as CFB names compare). */
const OLE_MACRO_STORAGES: ReadonlySet<string> = new Set(['MACROS', '_VBA_PROJECT_CUR', 'VBA']);
/** Root class ids of Windows Installer files, as `cfb` prints them (the GUID's bytes as stored, little-endian fields). */
const INSTALLER_CLSIDS: ReadonlySet<string> = new Set([
  '84100c0000000000c000000000000046', // {000C1084-0000-0000-C000-000000000046} installer database (.msi)
  '82100c0000000000c000000000000046', // {000C1082-…} transform (.mst)
  '86100c0000000000c000000000000046', // {000C1086-…} patch (.msp)
]);
const CFB_STREAM = 2;
/** PowerPoint keeps its VBA project as a record of its document stream, not as a storage: RT_VbaInfo. */
const PPT_VBA_INFO = 0x03ff;

/** Walks PowerPoint binary records (8-byte headers; a container, recVer 0xF, is entered, an atom skipped). */
function pptHasVba(stream: Uint8Array): boolean {
  const view = Buffer.from(stream.buffer, stream.byteOffset, stream.byteLength);
  for (let pos = 0; pos + 8 <= view.length; ) {
    const verInstance = view.readUInt16LE(pos);
    const type = view.readUInt16LE(pos + 2);
    if (type === PPT_VBA_INFO) return true;
    pos += (verInstance & 0x0f) === 0x0f ? 8 : 8 + view.readUInt32LE(pos + 4);
  }
  return false;
}

/** A legacy Office file (`doc`, `xls`, `ppt`) read as an OLE compound file. */
export function checkCompound(extension: string, bytes: Uint8Array): ContentCheck {
  let container: ReturnType<typeof CFB.parse>;
  try {
    container = CFB.parse(bytes);
  } catch {
    return { ok: false, reason: `el contenido no es un archivo .${extension} válido` };
  }
  const root = container.FileIndex[0];
  if (INSTALLER_CLSIDS.has(String(root?.clsid ?? '').toLowerCase())) return { ok: false, reason: 'el contenido es de un tipo no permitido (instalador msi)' };
  if (container.FileIndex.some((entry) => OLE_MACRO_STORAGES.has(entry.name.toUpperCase()))) {
    return { ok: false, reason: `el documento contiene macros (no se admiten en un archivo .${extension})` };
  }
  const rootPath = container.FullPaths[0];
  const atRoot = new Map<string, Uint8Array>();
  container.FileIndex.forEach((entry, i) => {
    if (entry.type === CFB_STREAM && container.FullPaths[i] === rootPath + entry.name) atRoot.set(entry.name.toUpperCase(), entry.content as Uint8Array);
  });
  const main = OLE_MAIN_STREAMS[extension].find((name) => atRoot.has(name.toUpperCase()));
  if (!main) return { ok: false, reason: `el contenido no es un documento .${extension} (falta el flujo ${OLE_MAIN_STREAMS[extension].join(' o ')})` };
  if (extension === 'ppt' && pptHasVba(atRoot.get(main.toUpperCase()) ?? new Uint8Array())) {
    return { ok: false, reason: 'el documento contiene macros (no se admiten en un archivo .ppt)' };
  }
  return { ok: true, contentType: KNOWN_EXTENSIONS[extension] };
}

/** Control bytes no text file has (tab, line feed, form feed and carriage return are text). */
const BINARY_BYTES = /[\u0000-\u0008\u000b\u000e-\u001f]/;

/** The same in Windows-1252, where the bytes it leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) decode as C1 controls. */
const BINARY_IN_1252 = /[\u0000-\u0008\u000b\u000e-\u001f\u0080-\u009f]/;

/**
 * Whether the whole stream is text, in the encodings text files come in: UTF-8; UTF-16 with its
 * byte-order mark (Notepad's "Unicode"); else Windows-1252 (Excel's "CSV (delimitado por comas)" on a
 * Spanish Windows writes `José` as 4A 6F 73 E9, which is no UTF-8). Decoded chunk by chunk (a sequence
 * split between chunks is carried over), so a text prefix with a binary payload after it is refused
 * wherever the payload starts, in bounded memory. `open` gives a fresh stream of the stored bytes: a
 * file that stops being UTF-8 part way is read again from the start as Windows-1252.
 */
async function streamIsText(open: () => Readable): Promise<boolean> {
  const asUtf8 = await streamDecodes(open(), 'utf-8', BINARY_BYTES);
  return asUtf8 ?? (await streamDecodes(open(), 'windows-1252', BINARY_IN_1252)) === true;
}

/**
 * Whether the stream decodes as `encoding` (or UTF-16 when it starts with that BOM) without `binary`
 * characters or markup at its start; null when it is not `encoding` at all (a fatal decode error).
 */
async function streamDecodes(stream: Readable, encoding: 'utf-8' | 'windows-1252', binary: RegExp): Promise<boolean | null> {
  let decoder: InstanceType<typeof TextDecoder> | undefined;
  let first = true;
  try {
    for await (const chunk of stream) {
      const bytes = chunk as Buffer;
      if (!decoder) {
        const utf16 = bytes[0] === 0xff && bytes[1] === 0xfe ? 'utf-16le' : bytes[0] === 0xfe && bytes[1] === 0xff ? 'utf-16be' : null;
        decoder = new TextDecoder(utf16 ?? encoding, { fatal: true });
        if (utf16) binary = BINARY_BYTES;
      }
      const text = decoder.decode(bytes, { stream: true });
      if (binary.test(text) || (first && MARKUP.test(text))) return false;
      first = false;
    }
    decoder?.decode();
    return true;
  } catch {
    // A UTF-16 file that does not decode is no text in any encoding (its BOM said what it was).
    return decoder && decoder.encoding !== encoding ? false : null;
  } finally {
    stream.destroy();
  }
}

/**
 * A page or a drawing named .txt or .csv (HTML and SVG are refused whatever their name, as executables
 * are): what it starts with, after a byte-order mark and blank space, as a browser sniffing it would read it.
 * The tags are those of the WHATWG MIME Sniffing Standard's HTML patterns (§7.1: `<iframe `, `<p>`, `<a `…),
 * each followed by a space or `>`, after any comments; an XML prolog followed by `<svg`.
 */
const MARKUP = /^\uFEFF?\s*(?:<!--[\s\S]*?-->\s*)*(?:<!doctype\s+html|<(?:html|head|script|iframe|h1|div|font|table|a|style|title|b|body|br|p|svg)[\s>]|<!--|<\?xml[^>]*>\s*(?:<!--[\s\S]*?-->\s*)*<svg[\s>])/i;

/**
 * Checks the real content against the name's extension. `open` gives a fresh
 * stream of the stored bytes: file-type reads only as far as it needs (for a
 * zip, up to the entry that decides), so memory stays bounded. `readAll` (the
 * stored bytes whole, at most the field's size cap) is called for legacy Office
 * files, whose directory is parsed whole, and for zip packages (docx, xlsx, odt…),
 * whose central directory is read for the decompression-bomb check.
 */
export async function checkContent(extension: string, open: () => Readable, readAll: () => Promise<Buffer>, tail?: Buffer): Promise<ContentCheck> {
  const stream = open();
  let detected: { ext: string; mime: string } | undefined;
  try {
    detected = await fileTypeFromStream(Readable.toWeb(stream));
  } finally {
    stream.destroy();
  }
  if (!detected) {
    if (TEXT_EXTENSIONS.has(extension) && (await streamIsText(open))) return { ok: true, contentType: KNOWN_EXTENSIONS[extension] };
    return { ok: false, reason: `el contenido no corresponde a un archivo .${extension}` };
  }
  if (BLOCKED_DETECTED.has(detected.ext)) return { ok: false, reason: `el contenido es de un tipo no permitido (${detected.ext})` };
  const expected = SAME_FORMAT[extension] ?? [extension];
  if (!expected.includes(detected.ext)) {
    return { ok: false, reason: `el contenido es ${detected.ext}, no corresponde a un archivo .${extension}` };
  }
  if (detected.ext === 'cfb' && OLE_MAIN_STREAMS[extension]) {
    const compound = checkCompound(extension, await readAll());
    // A sound .doc/.xls/.ppt still faces the zip check below: an archive appended to it is one too.
    if (!compound.ok) return compound;
  }
  if (ZIP_PACKAGES.has(extension)) {
    const bomb = await zipBombReason(await readAll());
    if (bomb) return { ok: false, reason: bomb };
  } else if (tail && hasZipTrailer(tail)) {
    // A polyglot: a PNG or PDF a viewer opens, with an archive after it that unzip opens (both read
    // their own end of the file). Archives are refused whatever they are dressed as (contract).
    return { ok: false, reason: `el archivo lleva un archivo comprimido (zip) al final: los comprimidos no se admiten` };
  }
  return { ok: true, contentType: KNOWN_EXTENSIONS[extension] ?? detected.mime };
}

/** Office and OpenDocument packages: zip archives underneath. */
const ZIP_PACKAGES: ReadonlySet<string> = new Set(['docx', 'xlsx', 'pptx', 'odt', 'ods', 'odp']);
export const MAX_PACKAGE_INFLATED_BYTES = 256 * 1024 * 1024;
const MAX_ENTRY_RATIO = 200;
const MIN_RATIO_CHECKED_BYTES = 10 * 1024 * 1024;

/** Why a zip package is a decompression bomb, from its central directory's declared sizes; null when it is not. */
async function zipBombReason(bytes: Buffer): Promise<string | null> {
  let archive: yauzl.ZipFile;
  try {
    archive = await yauzl.fromBufferPromise(bytes, { lazyEntries: true, validateEntrySizes: true });
  } catch {
    return 'el archivo comprimido está dañado';
  }
  let total = 0;
  try {
    for (;;) {
      const entry = await new Promise<yauzl.Entry | null>((resolve, reject) => {
        archive.once('entry', resolve).once('end', () => resolve(null)).once('error', reject);
        archive.readEntry();
      });
      archive.removeAllListeners('entry').removeAllListeners('end').removeAllListeners('error');
      if (!entry) return null;
      total += entry.uncompressedSize;
      const ratio = entry.uncompressedSize / Math.max(1, entry.compressedSize);
      if (total > MAX_PACKAGE_INFLATED_BYTES) {
        return `el archivo es una bomba de descompresión (más de ${MAX_PACKAGE_INFLATED_BYTES / 1024 / 1024} MB al descomprimir)`;
      }
      if (entry.uncompressedSize > MIN_RATIO_CHECKED_BYTES && ratio > MAX_ENTRY_RATIO) {
        return `el archivo es una bomba de descompresión (${Math.round(entry.uncompressedSize / 1024 / 1024)} MB al descomprimir ${entry.fileName}, ${Math.round(ratio)}:1)`;
      }
    }
  } catch {
    return 'el archivo comprimido está dañado';
  } finally {
    archive.close();
  }
}
