// Password hashing for people who sign in (sessions, OAuth): scrypt with a
// random 16-byte salt, stored as `scrypt$<salt>$<hash>` (base64). Verification
// recomputes with the stored salt and compares in constant time.
import { randomBytes, scrypt as scryptCb, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCb) as (password: string, salt: Buffer, keylen: number) => Promise<Buffer>;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32);
  return `scrypt$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/** Hashed when there is nothing to compare with, so an unknown email takes as long as a wrong password. */
const NO_SALT = Buffer.alloc(16);

/**
 * Whether `password` is the one `stored` was made from. Without a stored hash
 * (no such person, or no password set) the same scrypt work is done before
 * answering false: the time taken does not say which emails exist.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const [scheme, salt, hash] = (stored ?? '').split('$');
  if (scheme !== 'scrypt' || !salt || !hash) {
    await scrypt(password, NO_SALT, 32);
    return false;
  }
  const expected = Buffer.from(hash, 'base64');
  const actual = await scrypt(password, Buffer.from(salt, 'base64'), expected.length);
  return timingSafeEqual(actual, expected);
}
