// Every job kind the worker runs. A new kind adds its queue to db/queues.ts
// and its module here.
import { bookingEmails } from './booking-emails.ts';
import { invoices } from './invoices.ts';
import { recurringTransactions } from './recurring-transactions.ts';
import { calendarPull, calendarPullSchedule } from './calendar-pull.ts';
import { calendarPush } from './calendar-push.ts';
import { calendarRevoke } from './calendar-revoke.ts';
import { formPostActions } from './form-post-actions.ts';
import { purgeExpired } from './purge-expired.ts';
import { purgeWebhookHistoryJob } from './purge-webhook-history.ts';
import { thumbnail } from './thumbnail.ts';
import type { JobDefinition } from './types.ts';

export const jobs: JobDefinition[] = [invoices, recurringTransactions, bookingEmails, calendarPush, calendarPull, calendarPullSchedule, calendarRevoke, purgeExpired, purgeWebhookHistoryJob, thumbnail, formPostActions];
