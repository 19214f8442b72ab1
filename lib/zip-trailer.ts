// A zip archive at the end of a file. Zip readers find an archive from its end, so an archive appended
// to an image or a PDF makes the file both (a polyglot): the forms' file checks (api/forms/file-rules.ts)
// and the catalog's image checks (storage/images.ts) refuse it.

/** How much of a file's end can hold a zip's end-of-central-directory record (22 bytes and a comment of up to 65,535). */
export const ZIP_TRAILER_WINDOW = 22 + 0xffff;

const END_OF_DIRECTORY = 0x06054b50;
const DIRECTORY_ENTRY = 0x02014b50;

/**
 * Whether `tail` (a file's last ZIP_TRAILER_WINDOW bytes or all of it) holds the end of a zip archive
 * with entries that zip readers find. They search this window from the end for an end-of-central-directory
 * record and find the directory just before it (Info-ZIP's unzip and Python's zipfile also take one
 * followed by more bytes than its comment declares: "extra bytes … attempting to process anyway"). So:
 * - a record whose directory, inside the window, starts with its own signature: an archive wherever the
 *   record sits (two 4-byte signatures at the right distance do not happen by chance in image data);
 * - a record whose comment ends exactly where the file does: an archive even when its directory is too
 *   long to lie inside the window (thousands of entries), as the record alone says.
 */
export function hasZipTrailer(tail: Buffer): boolean {
  for (let at = tail.length - 22; at >= 0; at--) {
    if (tail.readUInt32LE(at) !== END_OF_DIRECTORY) continue;
    const entries = tail.readUInt16LE(at + 10);
    if (entries === 0) continue;
    const directory = at - tail.readUInt32LE(at + 12);
    if (directory >= 0 && tail.readUInt32LE(directory) === DIRECTORY_ENTRY) return true;
    if (directory < 0 && at + 22 + tail.readUInt16LE(at + 20) === tail.length) return true;
  }
  return false;
}
