// The queue registry: every pg-boss queue of the service, its options and
// the type of its payload. The web process sends to these queues and the
// worker works them, so the registry sits below both (api/ and worker/ import
// it; it imports neither). A new job kind adds its queue here and its handler
// under worker/jobs/<name>.ts.
import type { Queue as QueueOptions } from 'pg-boss';

type Options = Omit<QueueOptions, 'name'>;

/** A queue and the payload its jobs carry (`Data` exists only for the type checker). */
export type Queue<Data extends object = object> = { readonly name: string; readonly options: Options; readonly __data?: Data };

function queue<Data extends object>(name: string, options: Options): Queue<Data> {
  return { name, options };
}

export type FormPostActionsJob = { submissionId: string; companyId: string };
export type ThumbnailJob = { media_id: string };
export type HousekeepingJob = Record<string, never>;
export type CalendarPushJob = { company_id: string; event_id: string; user_id: string; action: 'upsert' | 'delete'; google_event_id: string | null };
export type CalendarPullJob = { user_id: string };
/** A refresh token to revoke at Google, sealed with ENCRYPTION_KEY as the connection kept it. */
export type CalendarRevokeJob = { user_id: string; refresh_token_enc: string };
export type RecurringJob = { recurring_id?: string };
export type InvoiceJob =
  | { action: 'stamp'; invoice_id: string }
  /** `poll`: the cancellation was asked for and came back pending; see how it stands, do not ask again. */
  | { action: 'cancel'; invoice_id: string; poll?: boolean }
  | { action: 'complement'; complement_id: string };
export type BookingEmailJob = { booking_id: string; kind: 'confirmed' | 'rescheduled' | 'cancelled' };

// Transient failures (SMTP down, a lost connection) retry with exponential
// backoff: about 15 s, 30 s, 1 min … capped at 1 h, so a mail relay's
// maintenance window of a few hours is ridden out (MAX_ACTION_ATTEMPTS, 12
// attempts, is 4 to 7 hours); two retries spare for runs that found an action
// leased by another. The handler itself gives up on an action after
// MAX_ACTION_ATTEMPTS.
export const FORM_POST_ACTIONS = queue<FormPostActionsJob>('form-post-actions', {
  retryLimit: 13,
  retryDelay: 15,
  retryBackoff: true,
  retryDelayMax: 3600,
});

/** Thumbnails of uploaded images. Retries: about 5 s, 10 s, 20 s… capped at 15 min, 8 in all. */
export const THUMBNAIL = queue<ThumbnailJob>('thumbnail', {
  retryLimit: 8,
  retryDelay: 5,
  retryBackoff: true,
  retryDelayMax: 900,
  expireInSeconds: 300,
});

/**
 * Emails of a booking (worker/jobs/booking-emails.ts): the booker's
 * confirmation, reschedule or cancellation with its .ics, and the host's
 * notice. Enqueued in the booking's transaction; SMTP outages retry with
 * backoff (about 15 s, 30 s, 1 min … capped at 1 h, 8 retries).
 */
export const BOOKING_EMAILS = queue<BookingEmailJob>('booking-emails', {
  retryLimit: 8,
  retryDelay: 15,
  retryBackoff: true,
  retryDelayMax: 3600,
});

/**
 * Outbound Google Calendar sync of one event (worker/jobs/calendar-push.ts),
 * enqueued in the event's transaction. Google's rate limits and outages
 * retry with backoff: about 10 s, 20 s, 40 s… capped at 30 min, for about 25
 * hours in all (56 retries): longer than Google's daily quota
 * (`dailyLimitExceeded`), which lifts at midnight Pacific time.
 */
export const CALENDAR_PUSH = queue<CalendarPushJob>('calendar-push', {
  retryLimit: 56,
  retryDelay: 10,
  retryBackoff: true,
  retryDelayMax: 1800,
  expireInSeconds: 120,
});

/** Inbound import of one member's Google Calendar (worker/jobs/calendar-pull.ts); one at a time per member. */
export const CALENDAR_PULL = queue<CalendarPullJob>('calendar-pull', {
  retryLimit: 3,
  retryDelay: 30,
  retryBackoff: true,
  expireInSeconds: 300,
});

/**
 * A refresh token revoked at Google (worker/jobs/calendar-revoke.ts): that of a person who left the
 * service (removed from their last company), whose connection was deleted in the same transaction.
 * Google out of reach retries with backoff for about a day.
 */
export const CALENDAR_REVOKE = queue<CalendarRevokeJob>('calendar-revoke', {
  // The job carries the sealed token: once ended (revoked, or given up), it is deleted within a minute
  // rather than kept for pg-boss's default week.
  deleteAfterSeconds: 60,
  retryLimit: 50,
  retryDelay: 30,
  retryBackoff: true,
  retryDelayMax: 1800,
  expireInSeconds: 120,
});

/** Every 5 minutes: a calendar-pull job per active connection (worker/jobs/calendar-pull.ts, calendarPullSchedule). */
export const CALENDAR_PULL_SCHEDULE = queue<HousekeepingJob>('calendar-pull-schedule', { retryLimit: 1, retryDelay: 60 });

/**
 * Occurrences of recurring transactions (worker/jobs/recurring-transactions.ts):
 * every 15 minutes all due ones, and at once for one just created.
 */
export const RECURRING = queue<RecurringJob>('recurring-transactions', { retryLimit: 5, retryDelay: 30, retryBackoff: true });

/**
 * Tax invoices (worker/jobs/invoices.ts): stamping, cancelling and payment
 * complements through the provider. Provider outages retry with backoff:
 * about 10 s, 20 s, 40 s… capped at 1 h, 14 retries.
 */
export const INVOICES = queue<InvoiceJob>('invoices', { retryLimit: 14, retryDelay: 10, retryBackoff: true, retryDelayMax: 3600, expireInSeconds: 300 });

/** Hourly housekeeping (worker/jobs/purge-expired.ts). */
export const PURGE_EXPIRED = queue<HousekeepingJob>('purge-expired', { retryLimit: 3, retryDelay: 60, retryBackoff: true });

/** Hourly purge of webhook history past 30 days (worker/jobs/purge-webhook-history.ts). */
export const PURGE_WEBHOOK_HISTORY = queue<HousekeepingJob>('purge-webhook-history', { retryLimit: 3, retryDelay: 60, retryBackoff: true });

/** Every queue, created by both processes at start (pg-boss keeps one definition per name). */
export const ALL_QUEUES: readonly Queue[] = [INVOICES, RECURRING, BOOKING_EMAILS, CALENDAR_PUSH, CALENDAR_PULL, CALENDAR_PULL_SCHEDULE, CALENDAR_REVOKE, FORM_POST_ACTIONS, THUMBNAIL, PURGE_EXPIRED, PURGE_WEBHOOK_HISTORY];

/**
 * Queues no longer used, deleted at start (createQueues). `webhook-delivery`
 * held one job per webhook delivery attempt until the deliveries became their
 * own queue (migration 101, worker/webhooks/dispatcher.ts): its jobs need no
 * moving, each delivery's `next_attempt_at` already says when it is due.
 */
export const RETIRED_QUEUES: readonly string[] = ['webhook-delivery'];
