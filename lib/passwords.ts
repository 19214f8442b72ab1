// Password hashing for people who sign in (sessions, OAuth): scrypt with a random 16-byte salt, stored
// with its cost as `scrypt$ln=14,r=8,p=5$<salt>$<hash>` (base64), so the cost can be raised later without
// locking anyone out. N=2^14, r=8, p=5 is OWASP's equivalent of N=2^17, r=8, p=1 (Password Storage Cheat
// Sheet) at 16 MB of memory per hash instead of 128. Hashes written before the cost was stored
// (`scrypt$<salt>$<hash>`) were made with Node's default (N=2^14, r=8, p=1): they still verify, and
// `needsRehash` tells sign-in to store the password again at the current cost.
// Verification recomputes with the stored salt and cost and compares in constant time.
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { promisify } from 'node:util';

const scrypt = promisify(scryptCb) as (password: string, salt: Buffer, keylen: number, options: ScryptOptions) => Promise<Buffer>;

type Cost = { ln: number; r: number; p: number };

const COST: Cost = { ln: 14, r: 8, p: 5 };
/** What a hash without its cost was made with (Node's default). */
const LEGACY_COST: Cost = { ln: 14, r: 8, p: 1 };
/**
 * Bounds on a stored cost, so a tampered row cannot make one sign-in take the process's memory or its
 * thread pool for minutes: at most 64 MB (128 × r × 2^ln bytes) and 16 passes of it.
 */
const MAX_COST: Cost = { ln: 16, r: 8, p: 16 };

const options = ({ ln, r, p }: Cost): ScryptOptions => ({ N: 2 ** ln, r, p, maxmem: 256 * 2 ** ln * r + 2 ** 20 });

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32, options(COST));
  return `scrypt$ln=${COST.ln},r=${COST.r},p=${COST.p}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

type Parsed = { cost: Cost; salt: Buffer; hash: Buffer };

function parse(stored: string | null): Parsed | null {
  const parts = (stored ?? '').split('$');
  if (parts[0] !== 'scrypt') return null;
  if (parts.length === 3 && parts[1] && parts[2]) return { cost: LEGACY_COST, salt: Buffer.from(parts[1], 'base64'), hash: Buffer.from(parts[2], 'base64') };
  const cost = /^ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})$/.exec(parts[1] ?? '');
  if (parts.length !== 4 || !cost || !parts[2] || !parts[3]) return null;
  const [ln, r, p] = cost.slice(1).map(Number);
  if (ln < 1 || r < 1 || p < 1 || ln > MAX_COST.ln || r > MAX_COST.r || p > MAX_COST.p) return null;
  return { cost: { ln, r, p }, salt: Buffer.from(parts[2], 'base64'), hash: Buffer.from(parts[3], 'base64') };
}

/** Hashed when there is nothing to compare with, so an unknown email takes as long as a wrong password. */
const NO_SALT = Buffer.alloc(16);

/**
 * Whether `password` is the one `stored` was made from. Without a stored hash
 * (no such person, or no password set) the same scrypt work is done before
 * answering false: the time taken does not say which emails exist.
 */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parsed = parse(stored);
  if (!parsed || parsed.hash.length === 0) {
    await scrypt(password, NO_SALT, 32, options(COST));
    return false;
  }
  const actual = await scrypt(password, parsed.salt, parsed.hash.length, options(parsed.cost));
  // A hash made at a lower cost (an older one) takes the current cost's work too: its person answers no
  // faster than an unknown email, so timing does not tell that the email exists.
  if (work(parsed.cost) < work(COST)) await scrypt(password, NO_SALT, 32, options(COST));
  return timingSafeEqual(actual, parsed.hash);
}

/** scrypt's work at a cost, in blocks mixed: N × r × p. */
const work = ({ ln, r, p }: Cost) => 2 ** ln * r * p;

/** Whether a hash that verified was made at a cost other than the current one (to be stored again). */
export function needsRehash(stored: string): boolean {
  const parsed = parse(stored);
  return !parsed || parsed.cost.ln !== COST.ln || parsed.cost.r !== COST.r || parsed.cost.p !== COST.p;
}
