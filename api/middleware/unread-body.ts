// An answer given before the request's body was read in full: a body refused
// for its size, by the upload bound or for its form, or a 401 in front of an
// upload. The rest of the body is read and thrown away rather than the
// connection closed at once. A socket closed with unread bytes is reset by the
// kernel, and a client still sending then fails with EPIPE without ever seeing
// the answer: Node's fetch (undici) did, for every upload over the 32 MiB cap.
// Clients stop sending once they read the answer; one still sending
// UNREAD_BODY_LINGER_MS after it is cut off (nginx's lingering_time).
import type { IncomingMessage, ServerResponse } from 'node:http';

export const UNREAD_BODY_LINGER_MS = 30_000;

export function discardUnreadBody(req: IncomingMessage, res: ServerResponse): void {
  if (req.complete || req.destroyed) return;
  // Whatever still reads it (a parser left piped, a part being drained) gets nothing more.
  req.unpipe();
  req.resume();
  res.once('finish', () => {
    if (req.complete) return;
    const cut = setTimeout(() => req.socket?.destroy(), UNREAD_BODY_LINGER_MS);
    cut.unref();
    const settled = () => clearTimeout(cut);
    req.once('end', settled);
    req.once('close', settled);
  });
}
