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

/**
 * `Expect: 100-continue`: the 100 goes out when the app first reads the body, not as soon as the
 * headers arrive (Node's default), so a request refused before its body is read (401, a declared
 * Content-Length over the cap, an inactive form, no upload slot) is answered without the client sending
 * it (RFC 9110 §10.1.1). A final answer given without the 100 says `Connection: close`: the client will
 * not send the body, and the connection cannot be reused with it owed. A request whose body had arrived
 * whole before it was read (sent without waiting, or none) gets its 100 just before the answer, as Node
 * would have sent it: Node closes a connection whose Expect was never answered 100, and a request
 * pipelined behind it would run with its answer lost.
 */
export function continueOnFirstRead(req: IncomingMessage, res: ServerResponse): void {
  let continued = false;
  const read = req._read;
  req._read = function (size: number) {
    req._read = read;
    if (!res.headersSent) {
      continued = true;
      res.writeContinue();
    }
    return read.call(this, size);
  };
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: Parameters<ServerResponse['writeHead']>) {
    if (!continued && req.complete) {
      continued = true;
      this.writeContinue();
    } else if (!continued) {
      this.setHeader('Connection', 'close');
    }
    return writeHead.apply(this, args);
  } as ServerResponse['writeHead'];
}
