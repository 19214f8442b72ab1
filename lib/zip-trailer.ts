// A zip archive at the end of a file. Zip readers find an archive from its end, so an archive appended
// to an image or a PDF makes the file both (a polyglot): the forms' file checks (api/forms/file-rules.ts)
// and the catalog's image checks (storage/images.ts) refuse it.

/** How much of a file's end can hold a zip's end-of-central-directory record (22 bytes and a comment of up to 65,535). */
export const ZIP_TRAILER_WINDOW = 22 + 0xffff;

/**
 * Whether `tail` (a file's last ZIP_TRAILER_WINDOW bytes or all of it) ends a zip archive with entries:
 * an end-of-central-directory record whose comment ends exactly where the file does (what zip readers
 * check when they look for the archive from the end) and whose central directory starts with its own
 * signature. A chance match of the 4-byte signature inside compressed data fails the first test all
 * but always, and the second when its directory is inside the window.
 */
export function hasZipTrailer(tail: Buffer): boolean {
  for (let at = tail.length - 22; at >= 0; at--) {
    if (tail.readUInt32LE(at) !== 0x06054b50) continue;
    if (at + 22 + tail.readUInt16LE(at + 20) !== tail.length) continue;
    const entries = tail.readUInt16LE(at + 10);
    const directoryBytes = tail.readUInt32LE(at + 12);
    if (entries === 0) continue;
    const directory = at - directoryBytes;
    // A directory longer than the window (thousands of entries) starts before it: the record alone says archive.
    if (directory < 0 || tail.readUInt32LE(directory) === 0x02014b50) return true;
  }
  return false;
}
