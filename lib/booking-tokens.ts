// The booker's manage link: `/book/manage/<token>`, where the token is an
// HMAC-SHA256 of the booking id under BOOKING_TOKEN_KEY (lib/config.ts). The
// web process and the worker (which writes the link into emails) compute it
// from the id; the database keeps only its SHA-256, to find the booking.
import { createHash, createHmac } from 'node:crypto';

export const MANAGE_TOKEN = /^[A-Za-z0-9_-]{43}$/;

export function manageToken(key: string, bookingId: string): string {
  return createHmac('sha256', key).update(`booking-manage:${bookingId}`).digest('base64url');
}

export function tokenDigest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export function manageUrl(bookingUrl: string, key: string, bookingId: string): string {
  return `${bookingUrl}/manage/${manageToken(key, bookingId)}`;
}

/** A booking link's public page, `{booking_url}/<host's booking_slug>/<link slug>`; null when the host has no slug. */
export function publicUrl(bookingUrl: string, hostSlug: string | null, linkSlug: string): string | null {
  return hostSlug ? `${bookingUrl}/${hostSlug}/${linkSlug}` : null;
}
