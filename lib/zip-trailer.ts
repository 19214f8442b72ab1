// A zip archive at the end of a file. Zip readers find an archive from its end, so an archive appended
// to an image or a PDF makes the file both (a polyglot): the forms' file checks (api/forms/file-rules.ts)
// and the catalog's image checks (storage/images.ts) refuse it.

/**
 * How much of a file's end is searched for a zip's end-of-central-directory record. A record with its
 * longest comment takes 22 + 65,535 bytes, but readers search further back with bytes after the record:
 * Info-ZIP's unzip 6 searches the last 66,000 bytes in whole 8 KB reads, so up to 74,194 bytes from the
 * end (a zip followed by 73,900 bytes of padding still opens). 80 KB covers that with room.
 */
export const ZIP_TRAILER_WINDOW = 80 * 1024;

const END_OF_DIRECTORY = 0x06054b50;
const ZIP64_END_OF_DIRECTORY = 0x06064b50;
const ZIP64_LOCATOR = 0x07064b50;
const DIRECTORY_ENTRY = 0x02014b50;

/**
 * Whether `tail` (a file's last ZIP_TRAILER_WINDOW bytes or all of it) holds the end of a zip archive
 * that zip readers open. They search this window from the end for an end-of-central-directory record,
 * wherever it sits (Info-ZIP's unzip and Python's zipfile take one followed by more bytes than its
 * comment declares: "extra bytes … attempting to process anyway"), and find the central directory just
 * before it by its size (before the zip64 end record, when a zip64 locator precedes the record), whatever
 * the entry counts say (Python reads the directory by its size). So a record is an archive when:
 * - its directory, inside the window, starts with its own signature (two 4-byte signatures at the right
 *   distance do not happen by chance in image data), or
 * - its directory is too long to start inside the window (thousands of entries), and the record says
 *   what an archive written in one piece says (disk numbers 0, this disk's entries all the entries): a
 *   chance match of its 4-byte signature in compressed data does not also have those 8 bytes.
 */
export function hasZipTrailer(tail: Buffer): boolean {
  for (let at = tail.length - 22; at >= 0; at--) {
    if (tail.readUInt32LE(at) !== END_OF_DIRECTORY) continue;
    const zip64 = zip64RecordBefore(tail, at);
    const directoryEnd = zip64 ?? at;
    const size = zip64 === null ? tail.readUInt32LE(at + 12) : Number(tail.readBigUInt64LE(zip64 + 40));
    const directory = directoryEnd - size;
    if (directory >= 0) {
      if (directory + 4 <= tail.length && tail.readUInt32LE(directory) === DIRECTORY_ENTRY) return true;
    } else if (zip64 !== null || (tail.readUInt32LE(at + 4) === 0 && tail.readUInt16LE(at + 8) === tail.readUInt16LE(at + 10))) {
      return true;
    }
  }
  return false;
}

/** Where the zip64 end record sits when a zip64 locator precedes the record at `at`: right before the locator (its declared size says where it ends). */
function zip64RecordBefore(tail: Buffer, at: number): number | null {
  const locator = at - 20;
  if (locator < 56 || tail.readUInt32LE(locator) !== ZIP64_LOCATOR) return null;
  // 56 bytes, or more with an extensible data sector: searched back a little, checked by its size field.
  for (let record = locator - 56; record >= Math.max(0, locator - 56 - 4096); record--) {
    if (tail.readUInt32LE(record) === ZIP64_END_OF_DIRECTORY && Number(tail.readBigUInt64LE(record + 4)) + 12 === locator - record) return record;
  }
  return null;
}
