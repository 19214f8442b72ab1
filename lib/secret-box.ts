// Secrets at rest (Google refresh tokens; later, tax certificates' keys):
// AES-256-GCM under ENCRYPTION_KEY (lib/config.ts), a random 96-bit nonce per
// value, stored as `v1.<nonce>.<ciphertext>.<tag>` in base64url. The key is
// derived from the configured string with SHA-256, so any long random string
// works; changing it makes stored secrets unreadable (operators reconnect).
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

function keyOf(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}

export function seal(secret: string, plaintext: string): string {
  // No key configured (production without ENCRYPTION_KEY): nothing is stored under an empty one.
  if (!secret) throw new Error('ENCRYPTION_KEY is not set: refusing to seal a secret');
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', keyOf(secret), nonce);
  const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', nonce.toString('base64url'), data.toString('base64url'), cipher.getAuthTag().toString('base64url')].join('.');
}

/** The plaintext, or null when the value was sealed under another key or tampered with. */
export function open(secret: string, sealed: string): string | null {
  const [version, nonce, data, tag] = sealed.split('.');
  if (version !== 'v1' || !nonce || data === undefined || !tag) return null;
  try {
    const decipher = createDecipheriv('aes-256-gcm', keyOf(secret), Buffer.from(nonce, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}
