// Idempotency-Key on POST, PATCH and PUT (contract, Endpoints; DESIGN.md).
//
// - Keys live 24 h per company, in PostgreSQL, so every web process sees them.
//   A key is bound to the method, path, query string, body (canonical JSON)
//   and credential (API key, or person's session) that first used it:
//   anything else with the same key is 422
//   idempotency_key_reused. One company's key string never touches another
//   company's responses. A key is 1 to 255 printable ASCII characters (else
//   400 invalid_idempotency_key); a body above 100 KB cannot use one (413
//   idempotency_body_too_large).
// - The first request claims the key with an INSERT; concurrent repeats find
//   it `running` and get 409 idempotency_in_progress, so 50 identical requests
//   in flight create exactly one record.
// - What is stored (as Stripe does): the response of every request that began
//   executing and finished below 500 (2xx, and errors such as 404 not_found or
//   409 duplicate_reference), replayed with `Idempotent-Replayed: true`.
//   Not stored, so the same key can be retried (even with a corrected body):
//   request validation failures (422 validation_failed, parameter_missing,
//   invalid_metadata, 400 invalid_parameter...; the endpoint never began
//   executing), 5xx (our writes are transactional, so nothing was written and
//   a retry is safe and useful), and the answers of this middleware itself
//   (400/409/413/422 idempotency_*). Requests refused before it runs (401, 403,
//   429, malformed JSON) never touch the key.
// - Exactly once: the handler runs inside one transaction that also records
//   its answer, so a committed write always has its stored response. A process
//   that dies after that COMMIT and before answering leaves a key a retry
//   replays; one that dies before it leaves nothing written, and a claim left
//   `running` (its liveness lock held by no one) is taken over 15 s after it was
//   made by a request with the same method, path and body, which runs the write then. A failure to store the answer fails
//   the request (500) and undoes its write, so the client's retry is safe.
import { createHash } from 'node:crypto';
import type { Next } from 'koa';
import { CommitOutcomeUnknown, openTransaction, type Queryable } from '../../db/pool.ts';
import { manageUrl } from '../../lib/booking-tokens.ts';
import { singleHeader } from './authenticate.ts';
import { loggablePath } from './request.ts';
import { logError } from '../../lib/log.ts';
import { ApiError, type ErrorCode } from '../errors.ts';
import type { ApiContext, CredentialField } from '../types.ts';
import { checkJsonBody } from '../validation.ts';

export const IDEMPOTENCY_BODY_LIMIT = 100_000; // 100 KB (the contract), in bytes
const KEY_SHAPE = /^[\x20-\x7e]{1,255}$/;
/** Errors meaning the request was refused before the endpoint began executing. */
export const NOT_STORED: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'validation_failed',
  'parameter_missing',
  'invalid_metadata',
  'invalid_parameter',
  'invalid_id',
  'invalid_json',
  'unsupported_media_type',
  'request_too_large',
  // The host a body names (a calendar event's or booking link's user_id): missing, or not a member. A
  // reference in the input, refused like a product's unknown brand id (validation_failed), before any write.
  'invalid_user',
]);
const REPLAYED_HEADERS = ['content-type', 'location'];

/** Stable JSON: key order does not change the fingerprint. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Bytes of the request body: the text koa-body read (chunked bodies have no Content-Length), else Content-Length. */
function rawBodyLength(ctx: ApiContext): number {
  const raw = (ctx.request as { rawBody?: unknown }).rawBody;
  if (typeof raw === 'string') return Buffer.byteLength(raw);
  return Number(ctx.get('Content-Length')) || 0;
}

export async function idempotency(ctx: ApiContext, next: Next) {
  // Present but empty is a malformed key, not an absent one.
  if (ctx.headers['idempotency-key'] === undefined) return next();
  // The key's shape was checked before the body was read (idempotentBodyCap, first in every write's chain);
  // the length read here counts a chunked body too.
  if (rawBodyLength(ctx) > IDEMPOTENCY_BODY_LIMIT) throw new ApiError('idempotency_body_too_large');
  // The fingerprint recurses into the body: a body nested too deep, or with text no column can hold, is refused first (422, not stored).
  checkJsonBody(ctx.request.body);
  const fingerprint = createHash('sha256').update(canonicalJson(ctx.request.body ?? null)).digest('hex');
  await runIdempotent(ctx, fingerprint, () => next());
}

/**
 * 400 invalid_idempotency_key unless the header is 1-255 printable ASCII characters, sent once: two
 * keys (a proxy's beside the application's) are no key, not the one Node would join them into.
 */
export function checkKeyShape(ctx: ApiContext): void {
  const key = singleHeader(ctx, 'Idempotency-Key');
  if (key === null) throw new ApiError('invalid_idempotency_key', 'La cabecera Idempotency-Key llegó más de una vez; envía una sola clave.');
  if (!KEY_SHAPE.test(key)) throw new ApiError('invalid_idempotency_key');
}

/**
 * Claims the request's Idempotency-Key for `bodyFingerprint` (and the query
 * string), then runs `run` (which sets ctx.status and ctx.body) inside one
 * transaction that also stores its outcome; or replays the stored outcome.
 * `run` receives that transaction's client, which the route also finds as
 * `ctx.state.db`: every read and write of the request goes through it.
 * Routes that must read their body before they can fingerprint it (multipart
 * uploads, fingerprinted by file digests) call this from their handler
 * instead of using the middleware.
 */
/**
 * How long after its claim a running key whose request holds no liveness lock is taken over. The lock is
 * taken once the request's transaction has a connection (the pool waits at most 5 s for one, db/pool.ts),
 * so a claim younger than this may be a live request that has not taken it yet.
 */
export const TAKEOVER_AFTER_SECONDS = 15;
/**
 * How long a claim may go without its liveness lock while its request is alive: the request claims the key,
 * then waits for its transaction's connection (at most 5 s, db/pool.ts) before it takes the lock. A repeat
 * in that gap is told `Retry-After: 1`, as for any running request, not the seconds left before a takeover.
 */
export const LOCK_GRACE_SECONDS = 6;

export async function runIdempotent(
  ctx: ApiContext,
  bodyFingerprint: string,
  run: (db: Queryable) => Promise<unknown>,
  /**
   * Whose keys: the API key's company (default), or a company's public booking page, whose keys are each
   * visitor's own (`visitor`, the client address): with no credential to bind a key to, another visitor
   * sending the same key and body would otherwise be handed the first one's answer (its manage link).
   */
  owner: { companyId: string; scope: 'api' | 'booking_page'; visitor?: string } = { companyId: ctx.state.auth!.companyId, scope: 'api' },
): Promise<void> {
  const sent = ctx.get('Idempotency-Key');
  const key = owner.visitor === undefined ? sent : createHash('sha256').update(`${owner.visitor}\u0000${sent}`).digest('hex');
  const { pool } = ctx.deps;
  const { companyId, scope } = owner;
  // The key is bound to the query string too, whoever fingerprinted the body, and to the credential
  // that first used it: a replay hands back what only that request saw (a webhook endpoint's secret,
  // which the contract shows once), so another key of the company gets 422 idempotency_key_reused.
  const credential = ctx.state.auth?.keyId ?? null;
  // The path is stored as logs write it (a manage token is a credential, docs/bookings.md) and bound
  // whole through the fingerprint: a key repeated on another booking's manage path is a reuse, not a replay.
  const fingerprint = createHash('sha256').update(canonicalJson({ query: ctx.querystring, body: bodyFingerprint, credential, path: ctx.path })).digest('hex');
  const path = loggablePath(ctx.path);
  // The claim's liveness: the request holds this advisory lock for as long as its transaction runs,
  // and a claim is taken over only when no one holds it (its process died, or it ended without
  // releasing the claim); one merely slow (a lock wait, a slow database) is never run twice.
  const liveness = `idempotency:${companyId}:${scope}:${key}`;

  const claimed = await pool.query(
    `INSERT INTO idempotency_keys (company_id, scope, key, method, path, fingerprint, state)
     VALUES ($1, $6, $2, $3, $4, $5, 'running')
     ON CONFLICT (company_id, scope, key) DO UPDATE
        SET method = EXCLUDED.method, path = EXCLUDED.path, fingerprint = EXCLUDED.fingerprint,
            state = 'running', response_status = NULL, response_headers = NULL, response_body = NULL,
            locked_at = now(), created_at = now()
      WHERE idempotency_keys.created_at < now() - interval '24 hours'
         OR (idempotency_keys.state = 'running' AND idempotency_keys.locked_at < now() - make_interval(secs => $8)
             AND idempotency_keys.method = EXCLUDED.method AND idempotency_keys.path = EXCLUDED.path
             AND idempotency_keys.fingerprint = EXCLUDED.fingerprint
             AND pg_try_advisory_xact_lock(hashtextextended($7, 0)))
     RETURNING key`,
    [companyId, key, ctx.method, path, fingerprint, scope, liveness, TAKEOVER_AFTER_SECONDS],
  );

  if (claimed.rowCount === 0) {
    // `takeover_in`: a running claim whose request no longer holds its liveness lock (its process died)
    // is taken over TAKEOVER_AFTER_SECONDS after it was made; the wait left is the answer's Retry-After.
    // One younger than LOCK_GRACE_SECONDS may be a live request still waiting for its connection: 1 s.
    const { rows } = await pool.query(
      `SELECT method, path, fingerprint, state, response_status, response_headers, response_body,
              CASE WHEN state = 'running' AND locked_at < now() - make_interval(secs => $6)
                        AND pg_try_advisory_xact_lock(hashtextextended($4, 0))
                   THEN ceil(extract(epoch FROM locked_at + make_interval(secs => $5) - now()))::int END AS takeover_in
         FROM idempotency_keys WHERE company_id = $1 AND scope = $3 AND key = $2`,
      [companyId, key, scope, liveness, TAKEOVER_AFTER_SECONDS, LOCK_GRACE_SECONDS],
    );
    const stored = rows[0];
    if (!stored) throw inProgress(ctx); // released between our two statements
    if (stored.method !== ctx.method || stored.path !== path || stored.fingerprint !== fingerprint) {
      throw new ApiError('idempotency_key_reused');
    }
    if (stored.state === 'running') throw inProgress(ctx, stored.takeover_in);
    ctx.status = stored.response_status;
    for (const [name, value] of Object.entries(stored.response_headers ?? {})) ctx.set(name, String(value));
    ctx.set('Idempotent-Replayed', 'true');
    ctx.body = stored.response_body === null ? null : await rebuildCredentials(ctx, companyId, stored.response_body);
    return;
  }

  // Releasing the claim lets the client retry; a failure to release only
  // delays that retry by the takeover (TAKEOVER_AFTER_SECONDS), so it is logged, not raised.
  const release = () =>
    pool
      .query('DELETE FROM idempotency_keys WHERE company_id = $1 AND scope = $3 AND key = $2', [companyId, key, scope])
      .catch((error) => logError('idempotency.release_failed', error, { request_id: ctx.state.requestId }));
  const save = (db: Queryable, status: number, body: unknown) => {
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const value = ctx.response.get(name);
      if (value) headers[name] = value;
    }
    if (!headers['content-type'] && body !== undefined && body !== null) headers['content-type'] = 'application/json; charset=utf-8';
    return db.query(
      `UPDATE idempotency_keys SET state = 'done', response_status = $3, response_headers = $4, response_body = $5
        WHERE company_id = $1 AND scope = $6 AND key = $2`,
      [companyId, key, status, headers, body === undefined || body === null ? null : JSON.stringify(withheldCredentials(ctx, body)), scope],
    );
  };

  const tx = await openTransaction(pool).catch(async (error) => {
    await release();
    throw error;
  });
  ctx.state.db = tx.client;
  let outcome: { status: number; body: unknown } | null = null;
  let failure: unknown = null;
  try {
    await tx.client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [liveness]);
    await tx.client.query('SAVEPOINT handler');
    try {
      await run(tx.client);
      if (ctx.status < 500) outcome = { status: ctx.status, body: ctx.body };
    } catch (error) {
      failure = error;
      // An answer the endpoint gave after it began executing is stored, without its writes.
      if (error instanceof ApiError && error.status < 500 && !NOT_STORED.has(error.code)) {
        await tx.client.query('ROLLBACK TO SAVEPOINT handler');
        outcome = { status: error.status, body: error.toBody() };
      }
    }
    if (outcome) {
      await save(tx.client, outcome.status, outcome.body);
      await tx.commit();
    }
  } catch (error) {
    // The savepoint, the save or the COMMIT failed: nothing of the request stays.
    failure = error;
    outcome = null;
  } finally {
    ctx.state.db = undefined;
  }
  if (!outcome) {
    await tx.rollback();
    // A COMMIT whose answer never came may have stored the answer: the claim stays. If it committed, a
    // retry replays it; if not, the claim, held by no one now, is taken over after TAKEOVER_AFTER_SECONDS.
    if (!(failure instanceof CommitOutcomeUnknown)) await release();
  }
  if (failure) throw failure;
}

/** 409 idempotency_in_progress, with when to ask again: the first request is usually done within a second. */
/**
 * 409 idempotency_in_progress. Retry-After: 1 while the first request runs; for a claim its request no
 * longer holds (its process died), the seconds left before it is taken over (`takeoverIn`).
 */
function inProgress(ctx: ApiContext, takeoverIn?: number | null): ApiError {
  ctx.set('Retry-After', String(Math.max(1, takeoverIn ?? 1)));
  return new ApiError('idempotency_in_progress');
}

/**
 * Credential fields of an answer's `data`, rebuilt on replay from the record. A handler that answers
 * one names it in `ctx.state.withheld`; the stored answer then holds WITHHELD in its place, so the table
 * of stored answers keeps no credential for 24 hours. Other answers are stored as they are (a
 * customer's custom property named `manage_url` is the customer's own value).
 * - A booking's `manage_url` opens the booking to whoever holds it; the database keeps only its
 *   token's digest (docs/bookings.md, Manage links), and the token is derived from the booking's id.
 * - A webhook endpoint's `secret` (create, rotate-secret) is the endpoint's current one while it is
 *   still the secret that answer gave (same `secret_last_four`); rotated since, or the endpoint
 *   deleted, the replay answers `secret: null`: a replay never hands out a secret that no longer
 *   signs, nor one of an endpoint that is gone (contract: the secret is never readable again).
 */
const CREDENTIAL_FIELDS: Record<CredentialField, (ctx: ApiContext, companyId: string, data: Record<string, unknown>) => Promise<string | null> | string> = {
  manage_url: (ctx, _companyId, data) => manageUrl(ctx.deps.config.bookingUrl, ctx.deps.config.bookingTokenKey, data.id as string),
  secret: async (ctx, companyId, data) => {
    const { rows } = await ctx.deps.pool.query<{ secret: string }>('SELECT secret FROM webhook_endpoints WHERE id = $1 AND company_id = $2', [data.id, companyId]);
    const current = rows[0]?.secret;
    return current !== undefined && current.slice(-4) === data.secret_last_four ? current : null;
  },
};
/**
 * What a withheld credential is stored as. It holds U+0000, which no stored answer can hold otherwise
 * (PostgreSQL text refuses it, and so does every input of the API), so a client's own value (a custom
 * property named `manage_url`) is never taken for it.
 */
const WITHHELD = '\u0000(withheld: rebuilt on replay)';
/**
 * The placeholder of answers stored before it held U+0000 (kept 24 h): trusted only on the answers that
 * withhold. It can go, with WITHHOLDING_PATHS, once a deploy of this code is a day old everywhere.
 */
const LEGACY_WITHHELD = '(withheld: rebuilt on replay)';
const WITHHOLDING_PATHS = /^\/book\/|\/(?:bookings|webhook-endpoints)(?:\/|$)/;

function withheldCredentials(ctx: ApiContext, body: unknown): unknown {
  const fields = ctx.state.withheld ?? [];
  const data = (body as { data?: unknown } | null)?.data;
  if (!fields.length || !data || typeof data !== 'object') return body;
  const stored = { ...(data as Record<string, unknown>) };
  for (const field of fields) if (Object.hasOwn(stored, field)) stored[field] = WITHHELD;
  return { ...(body as object), data: stored };
}

/** The stored answer (JSON text, replayed as stored) with its withheld credentials rebuilt. */
async function rebuildCredentials(ctx: ApiContext, companyId: string, text: string): Promise<string> {
  if (!text.includes(LEGACY_WITHHELD)) return text;
  const body = JSON.parse(text) as { data?: Record<string, unknown> };
  const data = body.data;
  if (!data || typeof data !== 'object' || typeof data.id !== 'string') return text;
  const legacy = WITHHOLDING_PATHS.test(ctx.path);
  for (const [field, rebuild] of Object.entries(CREDENTIAL_FIELDS)) {
    if (data[field] === WITHHELD || (legacy && data[field] === LEGACY_WITHHELD)) data[field] = await rebuild(ctx, companyId, data);
  }
  return JSON.stringify(body);
}
