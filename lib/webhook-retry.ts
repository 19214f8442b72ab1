// The webhook retry policy of the contract (Events: "Delivery and retry";
// Limits), in one place: the delivery rows store how many attempts they get
// (db/events.ts), a switch-on reschedules those with attempts left
// (rescheduleAttempts), the dispatcher reads when the next one is due and
// when an endpoint is switched off, and the OpenAPI document says the delays
// (api/openapi/webhooks.ts). Restated, on purpose, in docs/webhooks.md and
// test/webhooks.delivery.test.ts (the contract's schedule, checked against this).

/** When attempts 2 to 6 are due, counted from the first (contract, Limits: "offsets 0, 1 min, 5 min, 30 min, 2 h, 6 h"). */
export const RETRY_OFFSETS_SECONDS = [60, 300, 1800, 7200, 21600] as const;

/** Attempts a delivery gets: the first, then one per offset (contract: at once, then five retries). */
export const MAX_ATTEMPTS = RETRY_OFFSETS_SECONDS.length + 1;

/**
 * The wait after attempt `attempts` was sent before the next: the difference of their offsets (1 min,
 * 4 min, 25 min, 90 min, 4 h). Attempts made on time land on the contract's offsets from the first (the
 * sixth 6 h after it); one made late (a backlog, an endpoint switched on again after days) keeps the
 * spacing, rather than find its remaining offsets already past and be retried back to back.
 */
export function retryDelaySeconds(attempts: number): number {
  return RETRY_OFFSETS_SECONDS[attempts - 1] - (RETRY_OFFSETS_SECONDS[attempts - 2] ?? 0);
}

/** The offsets as people read them: `+1 min, +5 min, +30 min, +2 h y +6 h` (from the first attempt). */
export function retryDelaysText(): string {
  const text = RETRY_OFFSETS_SECONDS.map((s) => (s % 3600 === 0 ? `+${s / 3600} h` : `+${s / 60} min`));
  return `${text.slice(0, -1).join(', ')} y ${text.at(-1)}`;
}

/** Consecutive failures that switch an endpoint off (contract, Limits). */
export const SHUT_OFF_AFTER = 20;
export const SHUT_OFF_REASON = `Desactivado automáticamente tras ${SHUT_OFF_AFTER} entregas fallidas consecutivas`;

/** What a delivery never attempted says while its endpoint is off (no attempt is made until it is switched on). */
export const HELD_MESSAGE = 'El endpoint está desactivado; la entrega no se intentó';
