// Real files of every kind a form accepts, built in the test (no fixtures on
// disk), plus a form file and the admin tRPC call that creates it.
import { Readable } from 'node:stream';
import { crc32, createDeflateRaw } from 'node:zlib';
import CFB from 'cfb';
import sharp from 'sharp';
import { adminMutation } from './admin.ts';

/** A zip entry already deflated: its compressed bytes, and the size and CRC of what they inflate to. */
export type DeflatedEntry = { deflated: Buffer; size: number; crc: number };

/** A zip: text and Buffer entries stored (enough for OOXML/ODF packages), `DeflatedEntry` ones deflated. */
export function zip(entries: Record<string, string | Buffer | DeflatedEntry>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of Object.entries(entries)) {
    const stored = typeof content === 'string' || Buffer.isBuffer(content) ? Buffer.from(content) : null;
    const data = stored ?? (content as DeflatedEntry).deflated;
    const method = stored ? 0 : 8;
    const size = stored ? stored.length : (content as DeflatedEntry).size;
    const crc = stored ? crc32(stored) : (content as DeflatedEntry).crc;
    const nameBytes = Buffer.from(name);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(size, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(data.length, 20);
    central.writeUInt32LE(size, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, data);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + data.length;
  }
  const centralDir = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(entries).length, 8);
  end.writeUInt16LE(Object.keys(entries).length, 10);
  end.writeUInt32LE(centralDir.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, centralDir, end]);
}

/**
 * `archive` (a zip of `zip()`, no comment) in the zip64 form, as `zip -fz` writes it: a zip64 end record
 * and its locator between the directory and the end record, which keeps the real counts and size (so the
 * directory is not right before the end record). Zip readers (unzip, Python's zipfile) open it.
 */
export function zip64(archive: Buffer): Buffer {
  const endAt = archive.length - 22;
  const [entries, size, offset] = [archive.readUInt16LE(endAt + 10), archive.readUInt32LE(endAt + 12), archive.readUInt32LE(endAt + 16)];
  const record = Buffer.alloc(56);
  record.writeUInt32LE(0x06064b50, 0);
  record.writeBigUInt64LE(44n, 4);
  record.writeUInt16LE(45, 12);
  record.writeUInt16LE(45, 14);
  record.writeBigUInt64LE(BigInt(entries), 24);
  record.writeBigUInt64LE(BigInt(entries), 32);
  record.writeBigUInt64LE(BigInt(size), 40);
  record.writeBigUInt64LE(BigInt(offset), 48);
  const locator = Buffer.alloc(20);
  locator.writeUInt32LE(0x07064b50, 0);
  locator.writeBigUInt64LE(BigInt(endAt), 8);
  locator.writeUInt32LE(1, 16);
  return Buffer.concat([archive.subarray(0, endAt), record, locator, archive.subarray(endAt)]);
}

/** A zip of `count` small entries: its directory (56 bytes an entry) longer than the 64 KB zip readers search from the end. */
export const manyEntriesZip = (count: number) => zip(Object.fromEntries(Array.from({ length: count }, (_, i) => [`f${String(i).padStart(5, '0')}.txt`, 'x'])));

/** A zip whose last entry is `inflatedBytes` of zeros, deflated (about 1 MB per GB): a decompression bomb. */
export async function zipBomb(entry: string, inflatedBytes: number, extra: Record<string, string> = {}): Promise<Buffer> {
  const zeros = Buffer.alloc(1024 * 1024);
  const pieces = function* () {
    for (let left = inflatedBytes; left > 0; left -= zeros.length) yield zeros.subarray(0, Math.min(left, zeros.length));
  };
  const out: Buffer[] = [];
  for await (const piece of Readable.from(pieces()).pipe(createDeflateRaw({ level: 9 }))) out.push(piece as Buffer);
  // The CRC of the zeros, computed piecewise (never holding them inflated).
  let crc = 0;
  for (const piece of pieces()) crc = crc32(piece, crc);
  return zip({ ...extra, [entry]: { deflated: Buffer.concat(out), size: inflatedBytes, crc } });
}

function ooxml(mainType: string, part: string, extra: Record<string, string | Buffer> = {}): Buffer {
  return zip({
    '[Content_Types].xml': `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/${part}" ContentType="${mainType}"/></Types>`,
    '_rels/.rels': '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"/>',
    [part]: '<?xml version="1.0"?><document/>',
    ...extra,
  });
}

export function pdf(padTo = 0): Buffer {
  const body = '%PDF-1.4\n1 0 obj <</Type /Catalog /Pages 2 0 R>> endobj\n2 0 obj <</Type /Pages /Kids [] /Count 0>> endobj\ntrailer <</Root 1 0 R>>\n';
  const tail = '%%EOF\n';
  const pad = Math.max(0, padTo - body.length - tail.length);
  return Buffer.concat([Buffer.from(body), Buffer.alloc(pad, 0x20), Buffer.from(tail)]);
}

export const docx = () => ooxml('application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml', 'word/document.xml');
export const xlsx = () => ooxml('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml', 'xl/workbook.xml');
export const pptx = () => ooxml('application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml', 'ppt/presentation.xml');
/** A macro-enabled Word document (what a .docm really is). */
export const docm = () =>
  ooxml('application/vnd.ms-word.document.macroEnabled.main+xml', 'word/document.xml', { 'word/vbaProject.bin': Buffer.from('VBA macro bytes') });
export const plainZip = () => zip({ 'readme.txt': 'hola', 'data.csv': 'a,b\n1,2\n' });

/** An OLE compound file (what .doc/.xls/.ppt and .msi are) with these streams, paths making storages. */
export function ole(streams: Record<string, string | Buffer>, rootClsid?: string): Buffer {
  const container = CFB.utils.cfb_new(rootClsid ? { CLSID: rootClsid } : undefined);
  for (const [path, content] of Object.entries(streams)) CFB.utils.cfb_add(container, path, Buffer.isBuffer(content) ? content : Buffer.from(content));
  return Buffer.from(CFB.write(container, { type: 'buffer' }));
}
/** The Windows Installer root class id {000C1084-0000-0000-C000-000000000046}, as stored. */
export const MSI_CLSID = '84100c0000000000c000000000000046';

/** A PowerPoint binary record: 8-byte header (recVer/instance, type, length), then the body. */
function pptRecord(verInstance: number, type: number, body: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt16LE(verInstance, 0);
  header.writeUInt16LE(type, 2);
  header.writeUInt32LE(body.length, 4);
  return Buffer.concat([header, body]);
}
/** A PowerPoint document stream: DocumentContainer (0x03E8) holding a DocumentAtom, and with `vba` a VBAInfoContainer (0x03FF). */
function pptStream(vba: boolean): Buffer {
  const children = [pptRecord(0x0001, 0x03e9, Buffer.alloc(40))];
  if (vba) children.push(pptRecord(0x000f, 0x03ff, pptRecord(0x0002, 0x0400, Buffer.alloc(12))));
  return pptRecord(0x000f, 0x03e8, Buffer.concat(children));
}

export const doc = () => ole({ WordDocument: Buffer.alloc(1536, 0xec), '1Table': Buffer.alloc(512) });
export const docWithMacros = () => ole({ WordDocument: Buffer.alloc(1536, 0xec), '1Table': Buffer.alloc(512), 'Macros/PROJECT': 'ID="{0}"', 'Macros/VBA/dir': Buffer.alloc(64) });
/** An installer database with a WordDocument stream too: only its class id gives it away. */
export const msiAsDoc = () => ole({ WordDocument: Buffer.alloc(1536), '\u0005SummaryInformation': Buffer.alloc(256) }, MSI_CLSID);
export const xls = () => ole({ Workbook: Buffer.alloc(2048, 0x09) });
export const xlsWithMacros = () => ole({ Workbook: Buffer.alloc(2048, 0x09), '_VBA_PROJECT_CUR/PROJECT': 'ID="{0}"', '_VBA_PROJECT_CUR/VBA/dir': Buffer.alloc(64) });
export const ppt = (vba = false) => ole({ 'PowerPoint Document': pptStream(vba), 'Current User': Buffer.alloc(32) });

export async function jpeg(): Promise<Buffer> {
  return sharp({ create: { width: 8, height: 8, channels: 3, background: '#336699' } }).jpeg().toBuffer();
}
export async function png(): Promise<Buffer> {
  return sharp({ create: { width: 8, height: 8, channels: 4, background: '#ff000080' } }).png().toBuffer();
}

/** An ISO base media file (MP4) with its ftyp box and an empty mdat. */
export function mp4(): Buffer {
  const ftyp = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.from([0, 0, 2, 0]), Buffer.from('isomiso2')]);
  const mdat = Buffer.concat([Buffer.from([0, 0, 0, 8]), Buffer.from('mdat')]);
  return Buffer.concat([ftyp, mdat]);
}

/** An MP3 with an ID3v2 tag and one silent MPEG-1 Layer III frame. */
export function mp3(): Buffer {
  const id3 = Buffer.from([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 0]);
  const frame = Buffer.alloc(417);
  frame.set([0xff, 0xfb, 0x90, 0x64]);
  return Buffer.concat([id3, frame]);
}

/** A WAV (RIFF/WAVE, PCM 8 kHz mono) with a few silent samples. */
export function wav(): Buffer {
  const samples = Buffer.alloc(800, 0x80);
  const header = Buffer.alloc(44);
  header.write('RIFF', 0);
  header.writeUInt32LE(36 + samples.length, 4);
  header.write('WAVE', 8);
  header.write('fmt ', 12);
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20);
  header.writeUInt16LE(1, 22);
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(8000, 28);
  header.writeUInt16LE(1, 32);
  header.writeUInt16LE(8, 34);
  header.write('data', 36);
  header.writeUInt32LE(samples.length, 40);
  return Buffer.concat([header, samples]);
}

export const exe = () => Buffer.concat([Buffer.from('MZ'), Buffer.alloc(62), Buffer.from('PE\0\0'), Buffer.alloc(200)]);

/** The JSON shape of one file in a submission. */
export function fileJson(filename: string, bytes: Buffer, contentType = 'application/octet-stream') {
  return { filename, content_type: contentType, data: bytes.toString('base64') };
}

/** A form file with every field type; `cv` takes documents, `photos` images. */
export function sampleFormFile(overrides: Record<string, unknown> = {}) {
  return {
    name: 'Contacto web',
    slug: 'contacto',
    locales: ['es', 'en'],
    default_locale: 'es',
    title: 'Contáctanos',
    title_translations: { en: 'Contact us' },
    description: 'Te respondemos en un día.',
    description_translations: { en: 'We answer within a day.' },
    active: true,
    fields: [
      { key: 'email', field_type: 'email', label: 'Correo', label_translations: { en: 'Email' }, required: true, maps_to: 'lead.email', position: 1 },
      { key: 'name', field_type: 'text', label: 'Nombre', label_translations: { en: 'Name' }, required: true, maps_to: 'lead.name', position: 0 },
      { key: 'phone', field_type: 'phone', label: 'Teléfono', maps_to: 'lead.phone', position: 2 },
      { key: 'company', field_type: 'text', label: 'Empresa', maps_to: 'lead.company_name', position: 3 },
      { key: 'employees', field_type: 'number', label: 'Empleados', position: 4 },
      { key: 'start', field_type: 'date', label: 'Inicio', position: 5 },
      { key: 'plan', field_type: 'select', label: 'Plan', options: ['Básico', 'Pro'], options_translations: { en: ['Basic', 'Pro'] }, position: 6 },
      { key: 'message', field_type: 'textarea', label: 'Mensaje', placeholder: 'Escribe aquí', placeholder_translations: { en: 'Write here' }, position: 7 },
      {
        key: 'cv',
        field_type: 'file',
        label: 'Documentos',
        label_translations: { en: 'Documents' },
        position: 8,
        maps_to: null,
        file: { max_files: 10, max_file_size_mb: 2, allowed_kinds: ['pdf', 'documents', 'spreadsheets', 'presentations'] },
      },
      {
        key: 'media',
        field_type: 'file',
        label: 'Multimedia',
        position: 9,
        file: { max_files: 5, max_file_size_mb: 2, allowed_kinds: ['images', 'videos', 'audio'] },
      },
    ],
    post_actions: {},
    ...overrides,
  };
}

export async function createFormViaAdmin(url: string, companyId: string, form: unknown = sampleFormFile()) {
  const res = await adminMutation(url, 'form.create', { companyId, form });
  if (res.status !== 200) throw new Error(`form.create failed (${res.status}): ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.data;
}

/** Replaces a form's definition through the admin API (`wsctl form update`). */
export async function updateFormViaAdmin(url: string, id: string, form: unknown) {
  const res = await adminMutation(url, 'form.update', { id, form });
  if (res.status !== 200) throw new Error(`form.update failed (${res.status}): ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.data;
}
