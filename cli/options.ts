// Option parsers shared by the commands. A bad value fails in commander with
// one line naming the option (`option '--plan <plan>' argument 'foo' is
// invalid...`) before any request is made.
import { readFile } from 'node:fs/promises';
import { InvalidArgumentError } from 'commander';
import { CliError } from './output.ts';

/** Why a file could not be read, in a few words (`no such file`, `EISDIR`, `EACCES`). */
export function readFailure(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  return code === 'ENOENT' ? 'no such file' : (code ?? (error as Error).message);
}

/** The largest value the database's `integer` columns hold (quotas, limits). */
const MAX_STORED_INT = 2_147_483_647;

function integer(value: string, min: number, max = MAX_STORED_INT): number {
  const expected = `expected a whole number from ${min} to ${max}.`;
  // Number('') is 0 and Number('1e3') is 1000: accept plain digits only.
  if (!/^\d+$/.test(value.trim())) throw new InvalidArgumentError(expected);
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(expected);
  return n;
}

export const positiveInt = (value: string): number => integer(value, 1);
/** A whole number from 1 to `max`: an option whose server-side limit is lower than a column's, stated once. */
export const intUpTo = (max: number) => (value: string): number => integer(value, 1, max);
export const nonNegativeInt = (value: string): number => integer(value, 0);
/** A year the service keeps months of (the admin API's bounds: 1900 to 9999). */
export const yearOption = (value: string): number => integer(value, 1900, 9999);

/**
 * A whole number, or `none` to clear the value. `none` comes back as the
 * string 'none', never null: commander turns a parser's null into '' (its
 * "no value" for an option that takes one). The caller maps it with `noneToNull`.
 */
export function intOrNone(value: string): number | 'none' {
  return value.trim().toLowerCase() === 'none' ? 'none' : integer(value, 0);
}

/** intOrNone's result as the API takes it: 'none' → null (clear), a number as is, absent as absent. */
export function noneToNull(value: number | 'none' | undefined): number | null | undefined {
  return value === 'none' ? null : value;
}

/** `a,b, c` → ['a','b','c']; an empty string gives [] (so `--modules ''` clears the list). */
export function list(value: string): string[] {
  return value
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);
}

/** A comma-separated list whose every item is one of `choices`: an unknown one is named before any request. */
export function listOf(choices: readonly string[]) {
  return (value: string): string[] => {
    const items = list(value);
    const unknown = items.filter((item) => !choices.includes(item));
    if (unknown.length) throw new InvalidArgumentError(`unknown ${unknown.map((u) => `"${u}"`).join(', ')}: expected ${choices.join(', ')} (comma separated).`);
    return items;
  };
}

export function onOff(value: string): boolean {
  const v = value.trim().toLowerCase();
  if (v === 'on') return true;
  if (v === 'off') return false;
  throw new InvalidArgumentError('expected on or off.');
}

/** A JSON object from a file, or one clear line naming the file and the problem. */
export async function readJsonObject(file: string): Promise<Record<string, unknown>> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (error) {
    throw new CliError(`cannot read ${file}: ${readFailure(error)}`);
  }
  // UTF-8, a byte-order mark (which editors on Windows write) dropped; bytes that are no UTF-8 are refused
  // rather than stored as U+FFFD in a name or a template.
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new CliError(`${file} is not valid UTF-8 text: save it as UTF-8`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new CliError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new CliError(`${file} must hold a JSON object`);
  return value as Record<string, unknown>;
}
