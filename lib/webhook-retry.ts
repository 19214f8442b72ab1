// The webhook retry policy of the contract (Events: "Delivery and retry";
// Limits), in one place: the fan-out and the endpoint routes read how many
// attempts a delivery gets, the dispatcher when the next one is due and when
// an endpoint is switched off.

/** Attempts a delivery gets (contract: at once, then five retries). */
export const MAX_ATTEMPTS = 6;

/** Delay before attempt n+1 after attempt n failed (contract: 0, +1 min, +5 min, +30 min, +2 h, +6 h). */
export const RETRY_DELAYS_SECONDS = [60, 300, 1800, 7200, 21600] as const;

/** Consecutive failures that switch an endpoint off (contract, Limits). */
export const SHUT_OFF_AFTER = 20;
export const SHUT_OFF_REASON = `Desactivado automáticamente tras ${SHUT_OFF_AFTER} entregas fallidas consecutivas`;

/** What a delivery never attempted says while its endpoint is off (no attempt is made until it is switched on). */
export const HELD_MESSAGE = 'El endpoint está desactivado; la entrega no se intentó';
