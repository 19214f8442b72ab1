// The webhook retry policy of the contract (Events: "Delivery and retry";
// Limits), in one place: the delivery rows store how many attempts they get
// (db/events.ts), a switch-on reschedules those with attempts left
// (rescheduleAttempts), the dispatcher reads when the next one is due and
// when an endpoint is switched off, and the OpenAPI document says the delays
// (api/openapi/webhooks.ts). Restated, on purpose, in docs/webhooks.md and
// test/webhooks.delivery.test.ts (the contract's schedule, checked against this).

/** Delay before attempt n+1 after attempt n failed (contract: 0, +1 min, +5 min, +30 min, +2 h, +6 h). */
export const RETRY_DELAYS_SECONDS = [60, 300, 1800, 7200, 21600] as const;

/** Attempts a delivery gets: the first, then one per delay (contract: at once, then five retries). */
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;

/** The delays as people read them: `+1 min, +5 min, +30 min, +2 h y +6 h`. */
export function retryDelaysText(): string {
  const text = RETRY_DELAYS_SECONDS.map((s) => (s % 3600 === 0 ? `+${s / 3600} h` : `+${s / 60} min`));
  return `${text.slice(0, -1).join(', ')} y ${text.at(-1)}`;
}

/** Consecutive failures that switch an endpoint off (contract, Limits). */
export const SHUT_OFF_AFTER = 20;
export const SHUT_OFF_REASON = `Desactivado automáticamente tras ${SHUT_OFF_AFTER} entregas fallidas consecutivas`;

/** What a delivery never attempted says while its endpoint is off (no attempt is made until it is switched on). */
export const HELD_MESSAGE = 'El endpoint está desactivado; la entrega no se intentó';
