// Queues the web process sends to, with the options both processes create
// them with (pg-boss keeps one definition per queue name).

export const FORM_POST_ACTIONS = {
  name: 'form-post-actions',
  // Transient failures (SMTP down, a lost connection) retry with exponential
  // backoff: about 15 s, 30 s, 1 min … capped at 1 h, 8 retries in all. The
  // handler itself gives up on an action after MAX_ACTION_ATTEMPTS.
  options: { retryLimit: 8, retryDelay: 15, retryBackoff: true, retryDelayMax: 3600 },
} as const;

export type FormPostActionsJob = { submissionId: string; companyId: string };

/**
 * One job per delivery attempt, grouped by endpoint (pg-boss `group`), so the
 * dispatcher can bound how many attempts one endpoint has in flight across
 * every worker (`groupConcurrency`). The retry schedule of the contract (+1 min,
 * +5 min, +30 min, +2 h, +6 h) is ours, not pg-boss's backoff: a failed attempt
 * inserts the next attempt's job with `startAfter`. pg-boss's own retries only
 * cover a worker that died mid-attempt: its job expires after
 * `expireInSeconds` (an attempt's hard deadline is 15 s) and is fetched again,
 * so the delivery is resent, never lost.
 */
export const WEBHOOK_DELIVERY = {
  name: 'webhook-delivery',
  options: { retryLimit: 10, retryDelay: 5, expireInSeconds: 40, deleteAfterSeconds: 24 * 3600 },
} as const;

export type WebhookDeliveryJob = { delivery_id: string; attempt: number };

/** Queues that are not worked through a JobDefinition (the webhook dispatcher fetches its own). */
export const QUEUES = [WEBHOOK_DELIVERY] as const;
