// The hostile-upload corpus of the `hostile-uploads` drill: every kind of
// file the image endpoints (storage/images.ts) and form file fields
// (api/forms/file-rules.ts) refuse, built in memory, no fixtures on disk.
// Not here: an image whose header is sound but whose pixels are not. The web
// process never decodes pixels; the worker marks such an image `failed`
// (docs/catalog.md), so its upload is accepted by design. The
// well-formed pieces come from the test builders (test/helpers/forms.ts) so
// the drill and the tests agree on what a .doc or a .docx is.
import { crc32, deflateSync } from 'node:zlib';
import sharp, { type SharpOptions } from 'sharp';
import * as files from '../test/helpers/forms.ts';

export type HostileFile = { label: string; filename: string; bytes: Buffer; type?: string };

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

/** A PNG whose header claims `width`×`height` over whatever IDAT it is given. */
function craftedPng(width: number, height: number, idat: Buffer): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = 2;
  return Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), pngChunk('IHDR', ihdr), pngChunk('IDAT', idat), pngChunk('IEND', Buffer.alloc(0))]);
}

const DOCX_TYPES =
  '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>';

/** What POST /products/:id/image must refuse (multipart field `file`). */
export async function imageCorpus(): Promise<HostileFile[]> {
  const jpeg = await sharp({ create: { width: 300, height: 300, channels: 3, noise: { type: 'gaussian', mean: 128, sigma: 30 } } } as SharpOptions).jpeg().toBuffer();
  const gif = await sharp({ create: { width: 16, height: 16, channels: 3, background: '#123456' } }).gif().toBuffer();
  const frames = await sharp(
    Array.from({ length: 8 }, (_, n) => ({ create: { width: 2400, height: 2400, channels: 3, background: { r: n * 30, g: 0, b: 255 - n * 30 } } })) as never,
    { join: { animated: true } } as SharpOptions,
  )
    .gif({ effort: 1, colours: 16 })
    .toBuffer();
  // A JPEG comment segment (FF FE, its length) right after SOI: the rest of the image follows the payload.
  const withComment = (image: Buffer, payload: Buffer) => {
    const segment = Buffer.concat([Buffer.from([0xff, 0xfe, (payload.length + 2) >> 8, (payload.length + 2) & 0xff]), payload]);
    return Buffer.concat([image.subarray(0, 2), segment, image.subarray(2)]);
  };
  const smallPng = await sharp({ create: { width: 10, height: 10, channels: 3, background: '#000' } }).png().toBuffer();
  return [
    { label: 'text named .png, declared image/png', filename: 'evil.png', bytes: Buffer.from('hello, I am not a picture\n'.repeat(20)), type: 'image/png' },
    { label: 'PNG bomb: 20,000×20,000 header over 60 KB', filename: 'bomb.png', bytes: craftedPng(20_000, 20_000, deflateSync(Buffer.alloc(60_001))) },
    { label: 'PNG bomb: 100,000×100,000', filename: 'bomb2.png', bytes: craftedPng(100_000, 100_000, deflateSync(Buffer.alloc(300_001))) },
    { label: 'JPEG cut at 60 %', filename: 'cut.jpg', bytes: jpeg.subarray(0, Math.floor(jpeg.length * 0.6)) },
    { label: 'GIF of 8 frames × 2,400² (46 MP in all)', filename: 'anim.gif', bytes: frames },
    { label: 'over 10 MB', filename: 'big.png', bytes: Buffer.concat([smallPng, Buffer.alloc(10 * 1024 * 1024 + 10)]) },
    { label: 'PDF named photo.jpg', filename: 'photo.jpg', bytes: files.pdf(), type: 'image/jpeg' },
    { label: 'SVG with a script', filename: 'logo.svg', bytes: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), type: 'image/svg+xml' },
    { label: 'HTML named .jpg', filename: 'x.jpg', bytes: Buffer.from('<!doctype html><script>alert(document.cookie)</script>') },
    { label: 'Windows executable named .png', filename: 'setup.png', bytes: files.exe() },
    { label: 'polyglot: GIF followed by a ZIP (GIFAR)', filename: 'gifar.gif', bytes: Buffer.concat([gif, files.zip({ 'META-INF/MANIFEST.MF': 'Manifest-Version: 1.0\n'.repeat(80) })]) },
    { label: 'polyglot: JPEG followed by a ZIP', filename: 'jpegzip.jpg', bytes: Buffer.concat([jpeg, files.zip({ 'payload.js': 'alert(1);\n'.repeat(200) })]) },
    { label: 'polyglot: JPEG with a ZIP in a comment segment, the image after it', filename: 'jpegcom.jpg', bytes: withComment(jpeg, files.zip({ 'e.html': '<script>alert(1)</script>' })) },
    { label: 'polyglot: GIF header that is also JavaScript', filename: 'gifjs.gif', bytes: Buffer.from('GIF89a/*\x01\x00\x01\x00\x00\x00\x00*/=1;alert(1);') },
    { label: 'empty file', filename: 'empty.png', bytes: Buffer.alloc(0) },
  ];
}

/**
 * What POST /company/logo must refuse of the SVGs it draws (storage/svg.ts; field `logo`): documents that
 * reach outside themselves however the reference is written, entity expansion, an embedded bomb, and
 * filters that cost minutes of CPU in under a kilobyte (stopped after 5 s).
 */
export function svgCorpus(): HostileFile[] {
  const svg = (body: string, size = 'width="100" height="100"') =>
    Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" ${size}>${body}</svg>`);
  const filtered = '<rect width="6000" height="6000" filter="url(#f)" opacity="0.5"/>'.repeat(40);
  const bomb = craftedPng(30_000, 30_000, deflateSync(Buffer.alloc(90_001)));
  return [
    { label: 'SVG: filters costing minutes of CPU', filename: 'heavy.svg', bytes: svg(`<filter id="f" x="0" y="0" width="1" height="1"><feTurbulence baseFrequency="0.05" numOctaves="30"/><feGaussianBlur stdDeviation="500"/></filter>${filtered}`, 'width="6000" height="6000"') },
    { label: 'SVG: image from the metadata address', filename: 'ssrf.svg', bytes: svg('<image href="http://169.254.169.254/latest/meta-data/" width="10" height="10"/>') },
    { label: 'SVG: xlink:href to a local file', filename: 'file.svg', bytes: svg('<image xlink:href="file:///etc/passwd" width="10" height="10"/>') },
    { label: 'SVG: url() behind a CSS escape', filename: 'escape.svg', bytes: svg('<rect style="fill:u\\72l(http://169.254.169.254/x)" width="1" height="1"/>') },
    { label: 'SVG: url() behind a character reference', filename: 'charref.svg', bytes: svg('<rect style="fill:&#117;rl(http://evil.example/x)" width="1" height="1"/>') },
    { label: 'SVG: @import in a style sheet', filename: 'import.svg', bytes: svg('<style>@import "http://evil.example/a.css";</style>') },
    { label: 'SVG: xml-stylesheet instruction', filename: 'pi.svg', bytes: Buffer.concat([Buffer.from('<?xml version="1.0"?><?xml-stylesheet href="http://evil.example/a.css"?>'), svg('')]) },
    { label: 'SVG: entity expansion', filename: 'lol.svg', bytes: Buffer.from('<?xml version="1.0"?><!DOCTYPE s [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><svg xmlns="http://www.w3.org/2000/svg"><text>&b;</text></svg>') },
    { label: 'SVG: embedded 30,000² PNG bomb', filename: 'embedded.svg', bytes: svg(`<image href="data:image/png;base64,${bomb.toString('base64')}" width="10" height="10"/>`) },
  ];
}

/** What a form's file fields must refuse (`cv` takes documents, `media` images, video and audio). */
export async function formCorpus(): Promise<Array<HostileFile & { field: 'cv' | 'media' }>> {
  return [
    { field: 'cv', label: 'executable named .pdf', filename: 'programa.pdf', bytes: files.exe() },
    { field: 'cv', label: 'blocked segment: invoice.exe.pdf', filename: 'invoice.exe.pdf', bytes: files.pdf() },
    { field: 'cv', label: 'blocked segment hidden by a zero-width space', filename: 'invoice.e\u200Bxe.pdf', bytes: files.pdf() },
    { field: 'cv', label: 'right-to-left override in the name', filename: 'factura\u202Efdp.exe', bytes: files.pdf() },
    { field: 'cv', label: 'PHP name', filename: 'a.PhP', bytes: files.pdf() },
    { field: 'media', label: 'NUL byte in the name', filename: 'a.php\u0000.jpg', bytes: files.pdf() },
    { field: 'cv', label: 'plain ZIP named .docx', filename: 'report.docx', bytes: files.plainZip() },
    { field: 'cv', label: 'macro-enabled document named .docx', filename: 'macros.docx', bytes: files.docm() },
    { field: 'cv', label: '.doc with a VBA storage', filename: 'macros.doc', bytes: files.docWithMacros() },
    { field: 'cv', label: '.xls with a VBA storage', filename: 'macros.xls', bytes: files.xlsWithMacros() },
    { field: 'cv', label: '.ppt with a VBA container', filename: 'macros.ppt', bytes: files.ppt(true) },
    { field: 'cv', label: 'Windows Installer named .doc', filename: 'setup.doc', bytes: files.msiAsDoc() },
    { field: 'cv', label: 'CSV that turns into an executable after 5 KB', filename: 'datos.csv', bytes: Buffer.concat([Buffer.from('a,b,c\n'.repeat(900)), files.exe()]) },
    { field: 'cv', label: 'text with binary bytes', filename: 'notas.txt', bytes: Buffer.concat([Buffer.from('texto'), Buffer.from([0, 1, 2, 3])]) },
    { field: 'cv', label: 'PDF followed by a ZIP', filename: 'doble.docx', bytes: Buffer.concat([files.pdf(), files.docx()]) },
    { field: 'cv', label: 'zip bomb named .docx: 1 GB of zeros once inflated', filename: 'bomba.docx', bytes: await files.zipBomb('word/document.xml', 1024 ** 3, { '[Content_Types].xml': DOCX_TYPES }) },
    { field: 'cv', label: 'over the field’s 2 MB', filename: 'grande.pdf', bytes: files.pdf(2 * 1024 * 1024 + 1) },
    { field: 'media', label: 'PDF named photo.jpg', filename: 'photo.jpg', bytes: files.pdf() },
    { field: 'media', label: 'SVG', filename: 'logo.svg', bytes: Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>') },
    { field: 'media', label: 'WAV named .mp3', filename: 'cancion.mp3', bytes: files.wav() },
    { field: 'media', label: 'HTML named .mp4', filename: 'video.mp4', bytes: Buffer.from('<html><body onload="alert(1)"></body></html>') },
  ];
}
