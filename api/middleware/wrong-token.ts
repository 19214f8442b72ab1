// Throttling of wrong operator tokens (ADMIN_TOKEN on /admin, METRICS_TOKEN on /metrics): failures
// count per client address in the shared limiter (api/rate-limiter.ts, so every web process sees
// them); once an address is over, this process refuses it until the window frees, before even
// looking at the token, so guessing cannot go on through the 429s. Another process learns it at that
// address's next failure there.
import { headerSeconds } from './rate-limit.ts';
import type { ApiContext, Deps } from '../types.ts';

/** Wrong tokens per client address per minute before the address is refused (429) for the rest of the window. */
export const WRONG_TOKENS_PER_MINUTE = 10;

export class WrongTokenThrottle {
  readonly #blockedUntil = new Map<string, number>();
  readonly #name: string;

  /** `name` keeps each endpoint's count apart in the shared limiter (`<name>-fail:<address>`). */
  constructor(name: string) {
    this.#name = name;
  }

  /** Seconds the address stays refused (0: it may try a token). */
  blockedSeconds(ctx: ApiContext): number {
    const until = this.#blockedUntil.get(ctx.ip) ?? 0;
    return until > Date.now() ? headerSeconds((until - Date.now()) / 1000) : 0;
  }

  /** Counts a wrong token; the seconds the address is now refused for, or 0 while it is under the limit. */
  async failed(ctx: ApiContext, deps: Deps): Promise<number> {
    const decision = await deps.rateLimiter.consume(`${this.#name}-fail:${ctx.ip}`, WRONG_TOKENS_PER_MINUTE);
    if (decision.allowed) return 0;
    const seconds = headerSeconds(decision.resetSeconds);
    if (this.#blockedUntil.size > 10_000) this.#blockedUntil.clear();
    this.#blockedUntil.set(ctx.ip, Date.now() + seconds * 1000);
    return seconds;
  }
}
