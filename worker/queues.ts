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
