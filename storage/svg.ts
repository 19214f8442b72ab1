// SVG logos: judged and drawn to PNG in a child process (storage/svg-child.ts).
//
// An SVG is never stored or served as such: it could carry scripts run by a
// browser that opens it. It is drawn to a PNG with sharp (librsvg), which runs
// no script. Drawing a vector document has no cost bound a header can show (a
// few hundred bytes of filters can take minutes of CPU), so it never runs in
// the web process: the child gets SVG_TIMEOUT_MS and is killed after it, its
// libvips threads are its own (the web process's thread pool, which also
// hashes passwords and inspects uploads, is never held), and one runs at a
// time per process (SVG_CHILDREN).
//
// Refused before drawing (`svgProblem`), because librsvg would act on them: a
// DOCTYPE with an internal subset or entity declarations (entity expansion,
// "billion laughs"; an external DTD reference alone, as Illustrator writes it,
// is never fetched and is taken), a
// processing instruction other than the XML declaration (`xml-stylesheet`
// loads a style sheet), and references to anything outside the document:
// `href` other than `#fragment` or an embedded raster image (exactly
// `data:image/<png|jpeg|gif|webp>;base64,<base64>`, itself within
// MAX_IMAGE_PIXELS; any other `data:` anywhere is refused), `url()` other than
// `#fragment`, `@import`. The text is checked after decoding XML character
// references and CSS escapes, so `u\72l(` or `&#117;rl(` hide nothing.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { MAX_IMAGE_PIXELS } from './images.ts';

/** An SVG document by its first bytes (after an optional BOM, whitespace, processing instructions, comments and DOCTYPE). */
export function looksLikeSvg(bytes: Buffer): boolean {
  const head = bytes.subarray(0, 4096).toString('utf8').replace(/^\uFEFF/, '');
  return /^\s*(<\?[^>]*\?>\s*|<!--[\s\S]*?-->\s*)*(<!DOCTYPE[^>]*>\s*)?<svg[\s>]/i.test(head);
}

/** The longest side of a drawn SVG logo. */
export const SVG_RASTER_SIZE = 1024;
/** What a logo may take to draw, start-up of the child included (a real logo takes well under a second). */
export const SVG_TIMEOUT_MS = 5_000;
/** SVGs drawn at once by one process; the next waits its turn. */
const SVG_CHILDREN = 1;
/**
 * SVGs waiting for their turn in one process, at most; the next is 503 with Retry-After. Each waits up to
 * SVG_TIMEOUT_MS per SVG ahead of it, holding its body: without a bound one client's slow SVGs would
 * delay every company's logo for as long as it kept sending them.
 */
const SVG_WAITING = 4;
/** Exit status of the child for a refused document (its reason on stdout). */
export const SVG_REFUSED_EXIT = 3;

export type SvgResult = { ok: true; png: Buffer } | { ok: false; reason: string };

const REFERENCES = 'el SVG hace referencia a recursos externos, que no se aceptan';
const EMBEDDED_TYPES = new Set(['png', 'jpeg', 'gif', 'webp']);

/** The text as librsvg's parsers see it: XML character references and CSS escapes decoded, CSS comments removed. */
function decoded(text: string): string {
  const named: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
  const codePoint = (n: number) => (Number.isInteger(n) && n >= 0 && n <= 0x10ffff ? String.fromCodePoint(n) : '');
  return text
    .replace(/&#x([0-9a-f]+);?/gi, (_, hex: string) => codePoint(parseInt(hex, 16)))
    .replace(/&#([0-9]+);?/g, (_, dec: string) => codePoint(Number(dec)))
    .replace(/&(amp|lt|gt|quot|apos);/g, (_, name: string) => named[name])
    .replace(/\\([0-9a-f]{1,6})[ \t\r\n\f]?/gi, (_, hex: string) => codePoint(parseInt(hex, 16)))
    .replace(/\\([^\r\n\f0-9a-f])/gi, '$1')
    .replace(/\/\*[\s\S]*?\*\//g, '');
}

// A reference's value, quoted or not, that is not a fragment (and, for `href`, not `data:`).
// The quote is matched before the lookahead so that backtracking cannot skip it.
const HREF = /\bhref\s*=\s*(?:"(?!\s*(?:#|data:))|'(?!\s*(?:#|data:))|(?![\s"'#]|data:))/i;
const URL_FUNCTION = /\burl\(\s*(?:"(?!\s*#)|'(?!\s*#)|(?![\s"'#]))/i;
// Every `data:` in the text, and the one form taken: a base64 raster image that fills its attribute value.
const DATA = /data:/gi;
const EMBEDDED_IMAGE = /data:image\/(?:png|jpeg|gif|webp);base64,([A-Za-z0-9+/=\s]*)(?=["'])/iy;

/** Why the document is refused, or null. Runs in the child: the text may be 10 MB. */
export async function svgProblem(text: string): Promise<string | null> {
  if (/<!ENTITY|<!DOCTYPE[^>]*\[/i.test(text)) return 'el SVG declara entidades o un DOCTYPE con subconjunto interno, que no se aceptan';
  if (/<\?(?!xml[\s?])/i.test(text)) return 'el SVG lleva instrucciones de procesamiento (xml-stylesheet), que no se aceptan';
  const plain = decoded(text);
  if (HREF.test(plain) || URL_FUNCTION.test(plain) || /@import/i.test(plain)) return REFERENCES;
  for (const found of plain.matchAll(DATA)) {
    EMBEDDED_IMAGE.lastIndex = found.index;
    const image = EMBEDDED_IMAGE.exec(plain);
    if (!image) return 'lo incrustado en el SVG (data:) solo puede ser una imagen PNG, JPEG, GIF o WebP en base64 (data:image/png;base64,…)';
    let meta;
    try {
      meta = await sharp(Buffer.from(image[1].replace(/\s+/g, ''), 'base64'), { limitInputPixels: false }).metadata();
    } catch {
      return 'una imagen incrustada en el SVG está dañada';
    }
    if (!EMBEDDED_TYPES.has(meta.format ?? '')) return 'una imagen incrustada en el SVG debe ser PNG, JPEG, GIF o WebP en base64';
    if ((meta.width ?? 0) * (meta.pageHeight ?? meta.height ?? 0) * (meta.pages ?? 1) > MAX_IMAGE_PIXELS) {
      return `una imagen incrustada en el SVG supera ${MAX_IMAGE_PIXELS / 1_000_000} megapíxeles`;
    }
  }
  return null;
}

/**
 * Draws the document straight at SVG_RASTER_SIZE on its longest side (the
 * density is chosen from its declared size, so a 200,000-unit-wide document
 * costs what a 1,024-pixel one does), never at its own size first.
 */
export async function drawSvg(bytes: Buffer): Promise<SvgResult> {
  const problem = await svgProblem(bytes.toString('utf8'));
  if (problem) return { ok: false, reason: problem };
  let width: number;
  let height: number;
  try {
    const meta = await sharp(bytes, { limitInputPixels: false }).metadata();
    width = meta.width ?? 0;
    height = meta.height ?? 0;
  } catch {
    return { ok: false, reason: 'el SVG no se puede interpretar' };
  }
  if (width < 1 || height < 1) return { ok: false, reason: 'el SVG no tiene dimensiones válidas' };
  // sharp takes 1–100,000 dpi; 72 dpi draws one pixel per user unit.
  const density = Math.min(100_000, Math.max(1, (72 * SVG_RASTER_SIZE) / Math.max(width, height)));
  try {
    const png = await sharp(bytes, { density, limitInputPixels: 4 * SVG_RASTER_SIZE * SVG_RASTER_SIZE })
      .resize(SVG_RASTER_SIZE, SVG_RASTER_SIZE, { fit: 'inside' })
      .png()
      .toBuffer();
    return { ok: true, png };
  } catch {
    return { ok: false, reason: 'el SVG no se puede interpretar' };
  }
}

/** Too many SVGs waiting in this process (SVG_WAITING): the route answers 503 with Retry-After. */
export class SvgBusyError extends Error {}

const CHILD = fileURLToPath(new URL('./svg-child.ts', import.meta.url));
let running = 0;
const waiting: (() => void)[] = [];

async function turn<T>(work: () => Promise<T>): Promise<T> {
  if (running >= SVG_CHILDREN) {
    if (waiting.length >= SVG_WAITING) throw new SvgBusyError();
    await new Promise<void>((resolve) => waiting.push(resolve));
  }
  running++;
  try {
    return await work();
  } finally {
    running--;
    waiting.shift()?.();
  }
}

/** `drawSvg` in a child process, killed after SVG_TIMEOUT_MS. */
export function rasterizeSvg(bytes: Buffer): Promise<SvgResult> {
  return turn(
    () =>
      new Promise<SvgResult>((resolve, reject) => {
        const child = spawn(process.execPath, [CHILD], {
          stdio: ['pipe', 'pipe', 'pipe'],
          timeout: SVG_TIMEOUT_MS,
          killSignal: 'SIGKILL',
          // libvips in the child: one thread, so a logo takes one core at most.
          env: { ...process.env, VIPS_CONCURRENCY: '1' },
        });
        const out: Buffer[] = [];
        const err: Buffer[] = [];
        child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
        child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
        child.stdin.on('error', () => {}); // the child may exit (killed) before reading it all
        child.on('error', reject);
        child.on('close', (code, signal) => {
          const stdout = Buffer.concat(out);
          if (code === 0) resolve({ ok: true, png: stdout });
          else if (code === SVG_REFUSED_EXIT) resolve({ ok: false, reason: stdout.toString('utf8') });
          else if (signal === 'SIGKILL') {
            resolve({ ok: false, reason: `el SVG tarda más de ${SVG_TIMEOUT_MS / 1000} s en dibujarse` });
          } else reject(new Error(`svg child exited ${code ?? signal}: ${Buffer.concat(err).toString('utf8').slice(0, 500)}`));
        });
        child.stdin.end(bytes);
      }),
  );
}
