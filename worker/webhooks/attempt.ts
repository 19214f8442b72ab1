// One HTTP attempt of a webhook delivery (contract, Events: "Delivery and
// retry"). Expected outcomes, a 4xx, a timeout, a refused connection, are
// returned as values; only a bug throws.
//
// - 2xx is success; any other status, a redirect included (never followed:
//   a 3xx to an internal address must not become a way in), is a failure.
// - 10 s for the answer's headers and 10 s between body chunks (the
//   contract's read timeout), and a hard deadline of 15 s for the whole
//   attempt, so a receiver trickling one byte every few seconds cannot hold a
//   worker slot indefinitely.
// - At most 64 KB of the answer is read; the connection is then dropped.
import { request, type Dispatcher } from 'undici';
import { signatureHeader } from '../../lib/webhook-signature.ts';
import { API_VERSION } from '../../lib/version.ts';

export const READ_TIMEOUT_MS = 10_000;
export const ATTEMPT_DEADLINE_MS = 15_000;
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** What is kept of the answer on the delivery (`response_body`). */
export const STORED_RESPONSE_BYTES = 8 * 1024;

export type AttemptRequest = {
  url: string;
  secret: string;
  payload: string;
  event: string;
  eventId: string;
  deliveryId: string;
  attempt: number;
};

export type AttemptOutcome = {
  ok: boolean;
  /** The receiver's status; null when no answer came (timeout, connection error, refused by the SSRF guard). */
  status: number | null;
  body: string | null;
  error: string | null;
};

export async function attemptDelivery(dispatcher: Dispatcher, req: AttemptRequest): Promise<AttemptOutcome> {
  const deadline = AbortSignal.timeout(ATTEMPT_DEADLINE_MS);
  try {
    const res = await request(req.url, {
      method: 'POST',
      dispatcher,
      signal: deadline,
      headersTimeout: READ_TIMEOUT_MS,
      bodyTimeout: READ_TIMEOUT_MS,
      body: req.payload,
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'user-agent': `WorkspaceService-Webhooks/${API_VERSION}`,
        'x-service-signature': signatureHeader(req.secret, req.payload),
        'x-service-event': req.event,
        'x-service-event-id': req.eventId,
        'x-service-delivery': req.deliveryId,
        'x-service-attempt': String(req.attempt),
      },
    });
    const body = await readBounded(res.body);
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    return { ok, status: res.statusCode, body, error: ok ? null : `El receptor respondió ${res.statusCode}` };
  } catch (error) {
    return { ok: false, status: null, body: null, error: describe(error, deadline.aborted) };
  }
}

/** The first 64 KB of the answer at most; a body still arriving at the deadline ends where it is. */
async function readBounded(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const buf = chunk as Buffer;
      chunks.push(buf.subarray(0, MAX_RESPONSE_BYTES - size));
      size += Math.min(buf.length, MAX_RESPONSE_BYTES - size);
      if (size >= MAX_RESPONSE_BYTES) break;
    }
  } catch {
    // A body cut off by the deadline or the peer: what arrived is kept.
  } finally {
    body.destroy();
  }
  return Buffer.concat(chunks).subarray(0, STORED_RESPONSE_BYTES).toString('utf8');
}

function describe(error: unknown, deadlineHit: boolean): string {
  const e = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e?.code ?? e?.cause?.code;
  if (deadlineHit) return `Tiempo agotado: sin respuesta completa en ${ATTEMPT_DEADLINE_MS / 1000} s`;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return `Tiempo de lectura agotado (${READ_TIMEOUT_MS / 1000} s)`;
  if (code === 'ERR_SSRF_BLOCKED') return `Conexión rechazada: ${e.message ?? e.cause?.message}`;
  if (code) return `Error de conexión: ${code}`;
  return `Error de conexión: ${e?.message ?? String(error)}`;
}
