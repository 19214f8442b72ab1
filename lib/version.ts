// The published API version (contract, Versioning). 1.0.05's release date is
// not in the contract; we publish it as 2026-07-01, after 1.0.04 (2026-06-22).
export const API_VERSION = '1.0.05';
export const API_RELEASED_AT = '2026-07-01';
/** Date-shaped version carried in webhook bodies as `api_version`. */
export const WEBHOOK_API_VERSION = API_RELEASED_AT;
