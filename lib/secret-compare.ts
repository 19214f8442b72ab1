// Comparing a presented secret (an operator's bearer token: ADMIN_TOKEN,
// METRICS_TOKEN) with the configured one in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';

/** Whether `given` is `expected`. Both are hashed first, so the comparison takes the same time whatever their lengths. */
export function secretMatches(given: string | null | undefined, expected: string | null | undefined): boolean {
  if (!given || !expected) return false;
  return timingSafeEqual(createHash('sha256').update(given).digest(), createHash('sha256').update(expected).digest());
}
