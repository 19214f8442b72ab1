// Idempotency-Key on POST, PATCH and PUT (contract, Endpoints; DESIGN.md).
//
// - Keys live 24 h per company, in PostgreSQL, so every web process sees them.
//   A key is bound to the method, path and body that first used it: anything
//   else with the same key is 422 idempotency_key_reused. One company's key
//   string never touches another company's responses.
// - The first request claims the key with an INSERT; concurrent repeats find
//   it `running` and get 409 idempotency_in_progress, so 50 identical requests
//   in flight create exactly one record.
// - What is stored (as Stripe does): the response of every request that began
//   executing and finished below 500, replayed with `Idempotent-Replayed: true`.
//   Not stored, so the same key can be retried: payload validation failures
//   (422 validation_failed, parameter_missing, invalid_metadata; the endpoint
//   never began executing) and 5xx (our writes are transactional, so nothing
//   was written and a retry is safe and useful).
// - A claim left `running` by a crashed process is taken over after 60 s.
import { createHash } from 'node:crypto';
import type { Next } from 'koa';
import { ApiError } from '../errors.ts';
import type { ApiContext } from '../types.ts';

export const IDEMPOTENCY_BODY_LIMIT = 100 * 1024;
const KEY_SHAPE = /^[\x20-\x7e]{1,255}$/;
const NOT_STORED: ReadonlySet<string> = new Set(['validation_failed', 'parameter_missing', 'invalid_metadata']);
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

function rawBodyLength(ctx: ApiContext): number {
  const body = ctx.request.body as Record<symbol, unknown> | undefined;
  const raw = body?.[Symbol.for('unparsedBody')];
  if (typeof raw === 'string') return Buffer.byteLength(raw);
  return Number(ctx.get('Content-Length')) || 0;
}

export async function idempotency(ctx: ApiContext, next: Next) {
  if (!ctx.headers['idempotency-key']) return next();
  checkKeyShape(ctx);
  if (rawBodyLength(ctx) > IDEMPOTENCY_BODY_LIMIT) throw new ApiError('idempotency_body_too_large');
  const fingerprint = createHash('sha256').update(canonicalJson(ctx.request.body ?? null)).digest('hex');
  await runIdempotent(ctx, fingerprint, next);
}

/** 400 invalid_idempotency_key unless the header is 1-255 printable ASCII characters. */
export function checkKeyShape(ctx: ApiContext): void {
  if (!KEY_SHAPE.test(ctx.get('Idempotency-Key'))) throw new ApiError('invalid_idempotency_key');
}

/**
 * Claims the request's Idempotency-Key for `fingerprint`, then runs `run`
 * (which sets ctx.status and ctx.body) and stores its outcome; or replays
 * the stored outcome. Routes that must read their body before they can
 * fingerprint it (multipart uploads, fingerprinted by file digests) call
 * this from their handler instead of using the middleware.
 */
export async function runIdempotent(ctx: ApiContext, fingerprint: string, run: () => Promise<unknown>): Promise<void> {
  const key = ctx.get('Idempotency-Key');
  const { pool } = ctx.deps;
  const companyId = ctx.state.auth!.companyId;
  const path = ctx.path;

  const claimed = await pool.query(
    `INSERT INTO idempotency_keys (company_id, key, method, path, fingerprint, state)
     VALUES ($1, $2, $3, $4, $5, 'running')
     ON CONFLICT (company_id, key) DO UPDATE
        SET method = EXCLUDED.method, path = EXCLUDED.path, fingerprint = EXCLUDED.fingerprint,
            state = 'running', response_status = NULL, response_headers = NULL, response_body = NULL,
            locked_at = now(), created_at = now()
      WHERE idempotency_keys.created_at < now() - interval '24 hours'
         OR (idempotency_keys.state = 'running' AND idempotency_keys.locked_at < now() - interval '60 seconds'
             AND idempotency_keys.method = EXCLUDED.method AND idempotency_keys.path = EXCLUDED.path
             AND idempotency_keys.fingerprint = EXCLUDED.fingerprint)
     RETURNING key`,
    [companyId, key, ctx.method, path, fingerprint],
  );

  if (claimed.rowCount === 0) {
    const { rows } = await pool.query(
      `SELECT method, path, fingerprint, state, response_status, response_headers, response_body
         FROM idempotency_keys WHERE company_id = $1 AND key = $2`,
      [companyId, key],
    );
    const stored = rows[0];
    if (!stored) throw new ApiError('idempotency_in_progress'); // released between our two statements
    if (stored.method !== ctx.method || stored.path !== path || stored.fingerprint !== fingerprint) {
      throw new ApiError('idempotency_key_reused');
    }
    if (stored.state === 'running') throw new ApiError('idempotency_in_progress');
    ctx.status = stored.response_status;
    for (const [name, value] of Object.entries(stored.response_headers ?? {})) ctx.set(name, String(value));
    ctx.set('Idempotent-Replayed', 'true');
    ctx.body = stored.response_body ?? '';
    if (stored.response_body === null) ctx.body = null;
    return;
  }

  const release = () => pool.query('DELETE FROM idempotency_keys WHERE company_id = $1 AND key = $2', [companyId, key]);
  const save = (status: number, body: unknown) => {
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const value = ctx.response.get(name);
      if (value) headers[name] = value;
    }
    if (!headers['content-type'] && body !== undefined && body !== null) headers['content-type'] = 'application/json; charset=utf-8';
    return pool.query(
      `UPDATE idempotency_keys SET state = 'done', response_status = $3, response_headers = $4, response_body = $5
        WHERE company_id = $1 AND key = $2`,
      [companyId, key, status, headers, body === undefined || body === null ? null : JSON.stringify(body)],
    );
  };

  try {
    await run();
  } catch (error) {
    if (error instanceof ApiError && error.status < 500 && !NOT_STORED.has(error.code)) {
      await save(error.status, error.toBody());
    } else {
      await release();
    }
    throw error;
  }
  if (ctx.status >= 500) await release();
  else await save(ctx.status, ctx.body);
}
