// PNG bytes built by hand, for tests of what the image and file checks make of a PNG's structure:
// a chunk with its CRC, and an animated PNG (APNG) made of a still one's pixels.
import { crc32 } from 'node:zlib';

/** One PNG chunk: length, type, data and the CRC of type and data. */
export function pngChunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** An animated PNG of `frames` frames made of `still`'s pixels (acTL declaring `declared`, then each frame's fcTL and its data). */
export function animatedPng(still: Buffer, frames: number, declared = frames): Buffer {
  const chunks: Array<[string, Buffer]> = [];
  for (let at = 8; at < still.length; ) {
    const length = still.readUInt32BE(at);
    chunks.push([still.toString('latin1', at + 4, at + 8), still.subarray(at + 8, at + 8 + length)]);
    at += 12 + length;
  }
  const ihdr = chunks.find(([t]) => t === 'IHDR')![1];
  const idat = Buffer.concat(chunks.filter(([t]) => t === 'IDAT').map(([, d]) => d));
  const u32 = (...values: number[]) => Buffer.concat(values.map((v) => { const b = Buffer.alloc(4); b.writeUInt32BE(v); return b; }));
  const fctl = (sequence: number) => Buffer.concat([u32(sequence, ihdr.readUInt32BE(0), ihdr.readUInt32BE(4), 0, 0), Buffer.from([0, 1, 0, 100, 0, 0])]);
  const out = [Buffer.from('89504e470d0a1a0a', 'hex'), pngChunk('IHDR', ihdr), pngChunk('acTL', u32(declared, 0)), pngChunk('fcTL', fctl(0)), pngChunk('IDAT', idat)];
  let sequence = 1;
  for (let f = 1; f < frames; f++) {
    out.push(pngChunk('fcTL', fctl(sequence++)), pngChunk('fdAT', Buffer.concat([u32(sequence++), idat])));
  }
  out.push(pngChunk('IEND', Buffer.alloc(0)));
  return Buffer.concat(out);
}
