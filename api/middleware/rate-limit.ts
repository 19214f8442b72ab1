// The rate limit as middleware: counts each request against its key (or, for
// refused credentials and public files, its client address) in the shared
// limiter (api/rate-limiter.ts) and sets the RateLimit-* headers; over the
// limit, 429 rate_limited with Retry-After.
import type { Next } from 'koa';
import { ApiError } from '../errors.ts';
import type { ApiContext } from '../types.ts';

/**
 * Seconds as the headers give them: 1 to 60. The window is one minute, so no
 * client should ever be told to wait longer. The 61 one-second buckets make
 * the exact wait up to 61 s when the window filled within its newest second;
 * answering 60 then means a client retrying on the dot may be early by less
 * than a second, and is told `Retry-After: 1`.
 */
export function headerSeconds(seconds: number): number {
  return Math.min(60, Math.max(1, Math.ceil(seconds)));
}

/** Counts one request against `bucket` and sets the RateLimit-* headers; a refusal throws 429 with Retry-After. */
export async function consumeLimit(ctx: ApiContext, bucket: string, limit: number): Promise<void> {
  const decision = await ctx.deps.rateLimiter.consume(bucket, limit);
  const reset = headerSeconds(decision.resetSeconds);
  ctx.set('RateLimit-Limit', String(decision.limit));
  ctx.set('RateLimit-Remaining', String(decision.remaining));
  ctx.set('RateLimit-Reset', String(reset));
  if (!decision.allowed) {
    ctx.set('Retry-After', String(reset));
    throw new ApiError('rate_limited');
  }
}

/**
 * A request whose credential is refused (401) has no key to count against,
 * so it counts against its client address, with the same limit: the answer
 * carries RateLimit-* like every other, and guessing keys from one address
 * is throttled like any other traffic.
 */
export function limitUnauthenticated(ctx: ApiContext): Promise<void> {
  return consumeLimit(ctx, `ip:${ctx.ip}`, ctx.deps.config.rateLimitPerMinute);
}

/** Counts one request against an API key: its own limit, else the default. */
export function limitKey(ctx: ApiContext, key: { keyId: string; rateLimitPerMinute?: number | null }, defaultLimit: number): Promise<void> {
  return consumeLimit(ctx, `key:${key.keyId}`, key.rateLimitPerMinute ?? defaultLimit);
}

export function rateLimit(defaultLimit: number) {
  return async function limitRequests(ctx: ApiContext, next: Next) {
    await limitKey(ctx, ctx.state.auth!, defaultLimit);
    await next();
  };
}


/**
 * The limit of a page a person's browser opens: past it, `refused` renders a page saying when to try
 * again (the 429 and Retry-After already set) instead of the API's JSON, and this answers false.
 */
export async function withinPageLimit(ctx: ApiContext, count: (ctx: ApiContext) => Promise<void>, refused: (retryAfterSeconds: number) => void): Promise<boolean> {
  try {
    await count(ctx);
    return true;
  } catch (error) {
    if (!(error instanceof ApiError) || error.code !== 'rate_limited') throw error;
    ctx.status = 429;
    refused(Number(ctx.response.get('Retry-After')));
    return false;
  }
}
