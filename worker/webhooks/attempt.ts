// One HTTP attempt of a webhook delivery (contract, Events: "Delivery and
// retry"). Expected outcomes, a 4xx, a timeout, a refused connection, are
// returned as values; only a bug throws.
//
// - 2xx is success; any other status, a redirect included (never followed:
//   a 3xx to an internal address must not become a way in), is a failure.
// - 10 s for the answer's headers and 10 s between body chunks (the
//   contract's read timeout), and a hard deadline of 15 s for the whole
//   attempt, so a receiver trickling one byte every few seconds cannot hold a
//   worker slot indefinitely. An answer whose body is cut off (a timeout, the
//   deadline, the peer closing) is a failure whatever its status: the
//   receiver never finished answering. Its status and what arrived are kept.
// - At most 64 KB of the answer is read; the connection is then dropped and
//   the status decides.
//
// Why `dispatcher.dispatch` with a handler rather than `undici.request`: the
// worker sends thousands of these a second, and request()'s response stream
// (a Readable, its async iterator, an AbortSignal timer per attempt) cost
// more CPU than the POST itself: with 192 attempts in flight to local
// receivers, about 100 µs of CPU an attempt through request() against 60 µs
// through dispatch() (`npm run bench -- webhooks`: the attemptDelivery floor
// beside the plain request() one). dispatch() is undici's documented
// low-level API; its handler shape (onRequestStart … onResponseError) is the
// one of undici 7 and later.
import { isIP } from 'node:net';
import type { Dispatcher } from 'undici';
import { signatureHeader } from '../../lib/webhook-signature.ts';
import { API_VERSION } from '../../lib/version.ts';
import { toStorableTextOrNull } from '../../lib/storable-text.ts';
import { logProblem } from '../../lib/log.ts';
import { NOT_A_PUBLIC_HOST } from '../../lib/ssrf.ts';

export const READ_TIMEOUT_MS = 10_000;
export const ATTEMPT_DEADLINE_MS = 15_000;
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** What is kept of the answer on the delivery (`response_body`). */
export const STORED_RESPONSE_BYTES = 8 * 1024;

const USER_AGENT = `WorkspaceService-Webhooks/${API_VERSION}`;

/**
 * `X-Service-Delivery`, "Id of this attempt" (contract, Request headers):
 * the delivery's id and the attempt number, `<delivery_id>-<attempt>`, so
 * each attempt has its own and the delivery stays findable
 * (GET /webhook-endpoints/:id/deliveries/:delivery_id).
 */
export function attemptId(deliveryId: string, attempt: number): string {
  return `${deliveryId}-${attempt}`;
}

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

/** The attempt's time limits; tests shorten them, production uses the contract's. */
export type AttemptLimits = { readTimeoutMs: number; deadlineMs: number };
export const CONTRACT_LIMITS: AttemptLimits = { readTimeoutMs: READ_TIMEOUT_MS, deadlineMs: ATTEMPT_DEADLINE_MS };

/** Why the worker itself ended an attempt (passed to the controller's abort). */
class AttemptEnded extends Error {}

export function attemptDelivery(dispatcher: Dispatcher, req: AttemptRequest, limits: AttemptLimits = CONTRACT_LIMITS): Promise<AttemptOutcome> {
  return new Promise((resolve) => {
    let status: number | null = null;
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    let controller: Dispatcher.DispatchController | null = null;

    const settle = (outcome: AttemptOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      // Decoding as UTF-8 turns invalid bytes into U+FFFD but keeps U+0000, which no text column holds:
      // one receiver answering `ok\0` (or any binary or UTF-16 body) failed the batch write of every
      // finished attempt, of every company, on every retry.
      resolve({ ...outcome, body: toStorableTextOrNull(outcome.body), error: toStorableTextOrNull(outcome.error) });
    };
    const received = () => (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).subarray(0, STORED_RESPONSE_BYTES).toString('utf8');
    /** The answer is in (complete, or the 64 KB we read of it): its status decides. */
    const answered = () => {
      const ok = status! >= 200 && status! < 300;
      settle({ ok, status, body: received(), error: ok ? null : `El receptor respondió ${status}` });
    };
    /** The answer never finished: a failure, with what arrived of it. */
    const cutOff = (error: string) => settle({ ok: false, status, body: status === null ? null : received(), error });

    const deadline = setTimeout(() => {
      cutOff(`Tiempo agotado: sin respuesta completa en ${limits.deadlineMs / 1000} s`);
      controller?.abort(new AttemptEnded('deadline'));
    }, limits.deadlineMs);
    // Like AbortSignal.timeout(): an attempt in flight does not by itself keep the process up.
    deadline.unref();

    let origin: string;
    let path: string;
    try {
      const url = new URL(req.url);
      origin = url.origin;
      path = url.pathname + url.search;
    } catch {
      cutOff(`URL no válida: ${req.url}`);
      return;
    }
    try {
      dispatcher.dispatch(
        {
          origin,
          path,
          method: 'POST',
          body: req.payload,
          headersTimeout: limits.readTimeoutMs,
          bodyTimeout: limits.readTimeoutMs,
          headers: {
            'content-type': 'application/json; charset=utf-8',
            'user-agent': USER_AGENT,
            'x-service-signature': signatureHeader(req.secret, req.payload),
            'x-service-event': req.event,
            'x-service-event-id': req.eventId,
            'x-service-delivery': attemptId(req.deliveryId, req.attempt),
            'x-service-attempt': String(req.attempt),
          },
        },
        {
          onRequestStart(c) {
            controller = c;
            // Still queued for a connection when the deadline passed: the
            // attempt is already recorded as failed, so it must not be sent.
            if (settled) c.abort(new AttemptEnded('deadline'));
          },
          onResponseStart(_c, statusCode) {
            // Informational answers undici passes on (103 Early Hints) come
            // before the real one. An unrequested 100 Continue makes undici
            // drop the connection: a connection error, as with request().
            if (statusCode >= 200) status = statusCode;
          },
          onResponseData(c, chunk) {
            if (settled) return;
            const part = chunk.length > MAX_RESPONSE_BYTES - size ? chunk.subarray(0, MAX_RESPONSE_BYTES - size) : chunk;
            chunks.push(part);
            size += part.length;
            if (size >= MAX_RESPONSE_BYTES) {
              answered();
              // After this chunk has been handled: an answer of exactly
              // 64 KB is complete by then, the abort is a no-op and its
              // keep-alive connection is reused; a longer one is dropped.
              queueMicrotask(() => c.abort(new AttemptEnded('64 KB read')));
            }
          },
          onResponseEnd() {
            if (status === null) cutOff('Error de conexión: respuesta sin estado');
            else answered();
          },
          onResponseError(_c, error) {
            cutOff(describe(error, limits));
          },
        },
      );
    } catch (error) {
      // Invalid request options (undici validates them synchronously).
      cutOff(describe(error, limits));
    }
  });
}

/** An answer that is not HTTP: llhttp's parse errors (any HPE_* code), or undici's HTTPParserError without one. */
const NOT_HTTP = 'la respuesta no es HTTP/1.1 válido';

/** What went wrong, in the language of every other message, with the code a developer searches for. */
const CONNECTION_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'el receptor rechazó la conexión',
  ECONNRESET: 'el receptor cerró la conexión',
  EPIPE: 'el receptor cerró la conexión',
  UND_ERR_SOCKET: 'el receptor cerró la conexión',
  UND_ERR_CLOSED: 'la conexión se cerró',
  UND_ERR_DESTROYED: 'la conexión se cerró',
  UND_ERR_CONNECT_TIMEOUT: 'el receptor no aceptó la conexión a tiempo',
  EHOSTUNREACH: 'el receptor no es alcanzable',
  ENETUNREACH: 'el receptor no es alcanzable',
  UND_ERR_HEADERS_OVERFLOW: 'las cabeceras de la respuesta son demasiado grandes',
  UND_ERR_RES_CONTENT_LENGTH_MISMATCH: 'el cuerpo de la respuesta no coincide con su Content-Length',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'certificado TLS no válido (autofirmado)',
  SELF_SIGNED_CERT_IN_CHAIN: 'certificado TLS no válido (autofirmado)',
  CERT_HAS_EXPIRED: 'certificado TLS vencido',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'certificado TLS no verificable',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'certificado TLS no verificable',
  ERR_TLS_CERT_ALTNAME_INVALID: 'el certificado TLS no es de este host',
};

function describe(error: unknown, limits: AttemptLimits): string {
  const e = error as { code?: string; name?: string; message?: string; cause?: { code?: string; name?: string; message?: string } };
  const code = e?.code ?? e?.cause?.code;
  if (!code && (e?.name === 'HTTPParserError' || e?.cause?.name === 'HTTPParserError')) return `Error de conexión: ${NOT_HTTP}`;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return `Tiempo de lectura agotado (${limits.readTimeoutMs / 1000} s)`;
  // A host name that does not resolve and one that resolves inside read alike, as at registration
  // (lib/ssrf.ts NOT_A_PUBLIC_HOST): a tenant whose name points at a guessed internal one would otherwise
  // learn whether it exists. The operator's log has the address and its range.
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `Error de conexión: ${NOT_A_PUBLIC_HOST}`;
  if (code === 'ERR_SSRF_BLOCKED') {
    const blocked = (e.code ? e : e.cause) as { message?: string; hostname?: string; address?: string; reason?: string };
    logProblem('webhook.ssrf_blocked', { host: blocked.hostname, address: blocked.address, reason: blocked.reason });
    // An address the URL names: its range, which the tenant wrote.
    return blocked.hostname && isIP(blocked.hostname) ? `Conexión rechazada: ${blocked.message}` : `Error de conexión: ${NOT_A_PUBLIC_HOST}`;
  }
  const known = code && (CONNECTION_ERRORS[code] ?? (code.startsWith('HPE_') ? NOT_HTTP : undefined));
  if (known) return `Error de conexión: ${known} (${code})`;
  if (code) return `Error de conexión: ${code}`;
  return `Error de conexión: ${e?.message ?? String(error)}`;
}
