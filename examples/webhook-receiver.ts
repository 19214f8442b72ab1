// A reference webhook receiver with no dependencies (node:http, node:crypto, node:fs).
// Copy it, then replace the log line in `processEvent` with your own work.
//
//   WEBHOOK_SECRET=whsec_... PORT=4000 npx node examples/webhook-receiver.ts   (Node 24, the project's; any Node from 22.18 runs .ts)
//
// What it checks, in the contract's order (Events → Signature):
//   1. `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`, present and well formed;
//   2. |now - t| <= 300 s, so a captured request cannot be replayed later;
//   3. HMAC-SHA256 of `<t>.<raw body bytes>`, keyed with the WHOLE secret (`whsec_` included),
//      compared in constant time. Any failure answers 400 and nothing is processed.
// Then it drops repeats: the same event `id` arrives again on retries, so seen ids are kept
// in an append-only file (SEEN_FILE) that survives restarts. A real app would rather
// `INSERT ... ON CONFLICT (event_id) DO NOTHING` in its own database.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const TOLERANCE_SECONDS = 300;
/** Bodies are small facts, not resources; anything bigger is refused before buffering it all. */
const MAX_BODY_BYTES = 1024 * 1024;

export type WebhookEvent = {
  id: string;
  event: string;
  created_at: string;
  api_version: string;
  data: { object: string; id: string; metadata: Record<string, unknown>; [field: string]: unknown };
};

export type ReceiverOptions = {
  secret: string;
  seenFile: string;
  /** Your work. Its synchronous part runs before the 200; return a promise for slow work, it is not awaited. */
  onEvent?: (event: WebhookEvent) => void | Promise<void>;
  /** Clock in milliseconds (tests move it). */
  now?: () => number;
};

/** `t` and every `v1` of the header; other schemes (v0, v2, ...) are ignored. null when malformed. */
export function parseSignatureHeader(header: string | string[] | undefined): { t: string; v1: string[] } | null {
  if (typeof header !== 'string') return null;
  let t: string | undefined;
  const v1: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    const key = part.slice(0, Math.max(eq, 0)).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') {
      if (t !== undefined || !/^\d{1,12}$/.test(value)) return null; // two t's or a non-number: refuse
      t = value;
    } else if (key === 'v1' && /^[0-9a-f]{64}$/i.test(value)) v1.push(value); // one today; several are accepted should a future version sign with two secrets
  }
  return t !== undefined && v1.length > 0 ? { t, v1 } : null;
}

/** True when one of the v1 digests is the HMAC of `<t>.<raw body>`. Both sides are 32 bytes, as timingSafeEqual requires. */
export function signatureMatches(secret: string, t: string, rawBody: Buffer, candidates: string[]): boolean {
  const expected = createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest();
  return candidates.some((hex) => timingSafeEqual(expected, Buffer.from(hex, 'hex')));
}

function reply(res: http.ServerResponse, status: number, body: object): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

export function createReceiver({ secret, seenFile, onEvent, now = Date.now }: ReceiverOptions): http.Server {
  // Load the ids already handled. A crash mid-append can leave a last line without its
  // newline; end it now, or the next id would be glued onto it and never match.
  mkdirSync(path.dirname(seenFile), { recursive: true });
  const text = existsSync(seenFile) ? readFileSync(seenFile, 'utf8') : '';
  if (text && !text.endsWith('\n')) appendFileSync(seenFile, '\n');
  const seen = new Set(text.split('\n').filter(Boolean));

  function processEvent(event: WebhookEvent): void {
    console.log(JSON.stringify({ id: event.id, event: event.event, object: event.data?.object, object_id: event.data?.id }));
    const pending = onEvent?.(event);
    pending?.catch((err: unknown) => console.error('webhook processing failed', event.id, err));
  }

  return http.createServer((req, res) => {
    if (req.method !== 'POST') return reply(res, 405, { error: 'POST only' });
    // Keep the raw bytes: the signature covers them exactly; JSON.stringify(JSON.parse(body)) would not match.
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk); // past the cap, drain without keeping
    });
    req.on('end', () => {
      if (size > MAX_BODY_BYTES) return reply(res, 413, { error: 'body too large' });
      const raw = Buffer.concat(chunks);
      const sig = parseSignatureHeader(req.headers['x-service-signature']);
      if (!sig) return reply(res, 400, { error: 'missing or malformed X-Service-Signature' });
      if (Math.abs(Math.floor(now() / 1000) - Number(sig.t)) > TOLERANCE_SECONDS) return reply(res, 400, { error: 'timestamp outside tolerance' });
      if (!signatureMatches(secret, sig.t, raw, sig.v1)) return reply(res, 400, { error: 'bad signature' });

      let event: WebhookEvent;
      try {
        event = JSON.parse(raw.toString('utf8'));
      } catch {
        return reply(res, 400, { error: 'body is not JSON' });
      }
      // The id comes from the signed body, not from the unsigned X-Service-Event-Id header.
      if (typeof event?.id !== 'string' || !/^evt_\w+$/.test(event.id)) return reply(res, 400, { error: 'no event id' });
      if (seen.has(event.id)) return reply(res, 200, { received: true, duplicate: true });

      // Claim the id before anything else, so a retry arriving concurrently is a duplicate.
      seen.add(event.id);
      try {
        processEvent(event);
        appendFileSync(seenFile, `${event.id}\n`);
      } catch (err) {
        // Not acknowledged: release the id so the sender's retry processes it again (at least once).
        seen.delete(event.id);
        console.error('webhook not accepted', event.id, err);
        return reply(res, 500, { error: 'processing failed' });
      }
      // 2xx now: the sender times out at 10 s and counts anything else as a failure.
      reply(res, 200, { received: true });
    });
  });
}

if (import.meta.main) {
  const secret = process.env.WEBHOOK_SECRET;
  if (!secret?.startsWith('whsec_')) {
    console.error('Set WEBHOOK_SECRET to the endpoint secret, whsec_ prefix included.');
    process.exit(1);
  }
  const port = Number(process.env.PORT ?? 4000);
  const seenFile = process.env.SEEN_FILE ?? './.data/webhook-events-seen.log';
  createReceiver({ secret, seenFile }).listen(port, () => console.log(`webhook receiver on :${port}, seen ids in ${seenFile}`));
}
