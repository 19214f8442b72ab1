// A short-lived signed value for OAuth `state` parameters (the Google
// consent of `wsctl calendar connect`): the payload and its expiry in
// base64url, then an HMAC-SHA256 of both under a server key. Unforgeable and
// self-contained, so the callback needs no table to know whom it is for.
import { createHmac, timingSafeEqual } from 'node:crypto';

export function signState(key: string, payload: Record<string, unknown>, ttlSeconds: number, now = Date.now()): string {
  const body = Buffer.from(JSON.stringify({ ...payload, exp: Math.floor(now / 1000) + ttlSeconds })).toString('base64url');
  return `${body}.${createHmac('sha256', key).update(`state:${body}`).digest('base64url')}`;
}

/** The payload, or null when forged, altered or expired. */
export function verifyState(key: string, state: string, now = Date.now()): Record<string, unknown> | null {
  const [body, mac] = state.split('.');
  if (!body || !mac) return null;
  const expected = Buffer.from(createHmac('sha256', key).update(`state:${body}`).digest('base64url'));
  const given = Buffer.from(mac);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    return typeof payload.exp === 'number' && payload.exp * 1000 > now ? payload : null;
  } catch {
    return null;
  }
}
