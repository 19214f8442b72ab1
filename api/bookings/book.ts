// Booking, cancelling and rescheduling: the writes behind POST /bookings, the
// public booking page and the booker's manage page alike.
//
// A booking is one transaction: the host's calendar event (source
// `booking`), the lead (matched by email or created, with `lead.created`),
// the booking row and its emails' job. Double bookings are prevented twice:
// a per-host advisory lock serialises every booking write of one person, and
// under it the slot is judged by the same function that lists slots
// (lib/booking-slots.ts), so a racer sees the winner's booking and gets 409
// slot_unavailable; the exclusion constraint on the host's blocked ranges
// (db/migrations/055_bookings.sql) is the backstop should any path skip the
// lock.
import { transaction, type Client, type Queryable } from '../../db/pool.ts';
import type { JobSender } from '../../db/job-sender.ts';
import { enqueueCalendarPush } from '../../db/calendar-sync.ts';
import { matchOrCreateLead } from '../../db/leads.ts';
import { BOOKING_EMAILS, type BookingEmailJob } from '../../db/queues.ts';
import { isBookable } from '../../lib/booking-slots.ts';
import { manageToken, manageUrl, tokenDigest } from '../../lib/booking-tokens.ts';
import type { Config } from '../../lib/config.ts';
import { objectId } from '../../lib/objectid.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { isOneLine, isWrittenText } from '../validation.ts';
import { findBookingLink, slotRulesOf, type BookingLinkRow, type Question } from '../routes/booking-link-queries.ts';
import { findBooking, slotContext, type BookingRow } from '../routes/booking-queries.ts';

export type Booker = { name: string; email: string; phone?: string | null; timezone?: string | null };
export type BookingDeps = { jobs: JobSender; config: Pick<Config, 'bookingTokenKey' | 'bookingUrl' | 'siteUrl'> };

const MINUTE = 60_000;

/** Serialises the booking writes of one host (every company the person works for). */
async function lockHost(db: Client, userId: string): Promise<void> {
  await db.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`booking-host:${userId}`]);
}

/** Answers checked against the link's questions: known keys, required ones present, select values among the options. */
export function checkBookingAnswers(questions: Question[], answers: Record<string, string | boolean>): Record<string, string | boolean> {
  const errors: Record<string, string[]> = {};
  const byKey = new Map(questions.map((q) => [q.key, q]));
  for (const key of Object.keys(answers)) if (!byKey.has(key)) errors[`answers.${key}`] = ['el enlace no tiene esa pregunta'];
  for (const q of questions) {
    // Own keys only: an unanswered question named `constructor` must read as unanswered, not as Object's.
    const value = Object.hasOwn(answers, q.key) ? answers[q.key] : undefined;
    const empty = value === undefined || value === '' || (q.type === 'checkbox' && value === false);
    if (empty) {
      if (q.required) errors[`answers.${q.key}`] = ['es obligatoria'];
      continue;
    }
    if (q.type === 'checkbox' && typeof value !== 'boolean') errors[`answers.${q.key}`] = ['debe ser true o false'];
    if (q.type !== 'checkbox' && typeof value !== 'string') errors[`answers.${q.key}`] = ['debe ser texto'];
    if (q.type === 'select' && !q.options?.includes(value as string)) errors[`answers.${q.key}`] = ['no es una de las opciones'];
    if (q.type !== 'long_text' && typeof value === 'string' && value.length > 500) errors[`answers.${q.key}`] = ['500 caracteres como máximo'];
    // Answers are quoted in the host's email: one line (a long_text's excepted), no control characters.
    if (typeof value === 'string' && !Object.hasOwn(errors, `answers.${q.key}`)) {
      if (q.type === 'long_text' ? !isWrittenText(value) : !isOneLine(value)) {
        errors[`answers.${q.key}`] = [q.type === 'long_text' ? 'sin caracteres de control (salvo saltos de línea y tabuladores)' : 'debe ser una sola línea, sin caracteres de control'];
      }
    }
  }
  if (Object.keys(errors).length) throw validationFailed(errors);
  return answers;
}

/** Longest title an event takes (POST and PATCH /calendar/events): a booking's event keeps to it too. */
export const EVENT_TITLE_MAX = 300;

/** "<link title>: <booker>", cut to the events' limit with an ellipsis (a 200-character title and name make 402). */
export function eventTitle(linkTitle: string, bookerName: string): string {
  const full = `${linkTitle}: ${bookerName}`;
  if (full.length <= EVENT_TITLE_MAX) return full; // UTF-16 units, as the schema counts
  let cut = '';
  for (const character of full) {
    if (cut.length + character.length > EVENT_TITLE_MAX - 1) break; // never half a surrogate pair
    cut += character;
  }
  return `${cut}…`;
}

function locationText(link: BookingLinkRow): string | null {
  if (!link.location) return null;
  return link.location.type === 'google_meet' ? 'Google Meet' : (link.location.value ?? null);
}

/** The exclusion constraint's verdict is the same answer as the slot check's. */
function slotTaken(error: unknown): never {
  if ((error as { code?: string }).code === '23P01') throw new ApiError('slot_unavailable');
  throw error;
}

async function judgeSlot(db: Client, link: BookingLinkRow, start: number, ignoreBookingId?: string): Promise<void> {
  const context = await slotContext(db, link, start, start + 1, { ignoreBookingId });
  if (!isBookable(slotRulesOf(link), context, start)) throw new ApiError('slot_unavailable');
}

async function enqueueEmail(db: Client, jobs: JobSender, job: BookingEmailJob): Promise<void> {
  await jobs.send(db, BOOKING_EMAILS, job);
}

async function insertBookingRow(
  db: Client,
  deps: BookingDeps,
  link: BookingLinkRow,
  fields: {
    id: string;
    start: number;
    booker: Booker;
    answers: Record<string, string | boolean>;
    leadId: string;
    calendarEventId: string;
    icalUid: string;
    icalSequence: number;
    rescheduledFromId: string | null;
    /** The Meet link of the calendar event it takes over (a reschedule moves the event, conference and all). */
    meetUrl?: string | null;
  },
): Promise<BookingRow> {
  const end = fields.start + link.duration_minutes * MINUTE;
  const { rows } = await db
    .query<BookingRow>(
      `INSERT INTO bookings (id, company_id, booking_link_id, user_id, calendar_event_id, lead_id, status, starts_at, ends_at, blocked,
                             title, location, booker_name, booker_email, booker_phone, booker_timezone, answers,
                             manage_token_digest, ical_uid, ical_sequence, rescheduled_from_id, link_timezone, meet_url)
       VALUES ($1, $2, $3, $4, $5, $6, 'confirmed', $7, $8, tstzrange($9, $10), $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)
       RETURNING *`,
      [
        fields.id,
        link.company_id,
        link.id,
        link.user_id,
        fields.calendarEventId,
        fields.leadId,
        new Date(fields.start),
        new Date(end),
        new Date(fields.start - link.buffer_before_minutes * MINUTE),
        new Date(end + link.buffer_after_minutes * MINUTE),
        link.title,
        link.location ? JSON.stringify(link.location) : null,
        fields.booker.name,
        fields.booker.email.toLowerCase(),
        fields.booker.phone ?? null,
        fields.booker.timezone ?? null,
        JSON.stringify(fields.answers),
        tokenDigest(manageToken(deps.config.bookingTokenKey, fields.id)),
        fields.icalUid,
        fields.icalSequence,
        fields.rescheduledFromId,
        link.timezone,
        fields.meetUrl ?? null,
      ],
    )
    .catch(slotTaken);
  return rows[0];
}

/** Books `startsAt` on `linkId` for `booker`: the booking with its manage URL (shown once). */
export async function createBooking(
  db: Queryable,
  deps: BookingDeps,
  companyId: string,
  input: { linkId: string; startsAt: string; booker: Booker; answers?: Record<string, string | boolean> },
): Promise<{ booking: BookingRow; manageUrl: string }> {
  return transaction(db, async (client) => {
    // Locked: a member removal switching the link off (removeMember) is seen, or waits for this booking.
    const link = await findBookingLink(client, companyId, input.linkId, true);
    if (!link) throw validationFailed({ booking_link_id: ['no existe en la empresa'] });
    if (!link.active) throw new ApiError('booking_link_inactive');
    const answers = checkBookingAnswers(link.questions, input.answers ?? {});
    const start = new Date(input.startsAt).getTime();
    await lockHost(client, link.user_id);
    await judgeSlot(client, link, start);
    const lead = await matchOrCreateLead(client, companyId, { ...input.booker, source: 'reserva' });
    const id = objectId();
    const eventId = objectId();
    const end = start + link.duration_minutes * MINUTE;
    await client.query(
      `INSERT INTO calendar_events (id, company_id, user_id, title, description, location, starts_at, ends_at, timezone, kind, source,
                                    create_meet, attendees, booking_link_id, booking_id, booker_lead_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'meeting', 'booking', $10, $11, $12, $13, $14)`,
      [
        eventId,
        companyId,
        link.user_id,
        eventTitle(link.title, input.booker.name),
        link.description,
        locationText(link),
        new Date(start),
        new Date(end),
        link.timezone,
        link.location?.type === 'google_meet',
        JSON.stringify([{ name: input.booker.name, email: input.booker.email.toLowerCase() }]),
        link.id,
        id,
        lead.id,
      ],
    );
    const booking = await insertBookingRow(client, deps, link, {
      id,
      start,
      booker: input.booker,
      answers,
      leadId: lead.id,
      calendarEventId: eventId,
      icalUid: `${id}@${new URL(deps.config.siteUrl).hostname}`,
      icalSequence: 0,
      rescheduledFromId: null,
    });
    await enqueueEmail(client, deps.jobs, { booking_id: id, kind: 'confirmed' });
    const event = { company_id: companyId, id: eventId, user_id: link.user_id, source: 'booking', sync_to_google: null, google_event_id: null };
    await enqueueCalendarPush(client, deps.jobs, event, 'upsert');
    return { booking, manageUrl: manageUrl(deps.config.bookingUrl, deps.config.bookingTokenKey, id) };
  });
}

/** The locked booking, which must still be confirmed (409 booking_cancelled otherwise). */
async function lockConfirmed(db: Client, companyId: string, bookingId: string): Promise<BookingRow> {
  const booking = await findBooking(db, companyId, bookingId, true);
  if (!booking) throw new ApiError('not_found');
  if (booking.status !== 'confirmed') throw new ApiError('booking_cancelled');
  return booking;
}

/** Cancels a confirmed booking: its calendar event is deleted (the booking keeps the record) and the booker is told. */
export async function cancelBooking(
  db: Queryable,
  deps: BookingDeps,
  companyId: string,
  bookingId: string,
  by: 'host' | 'booker',
  reason: string | null,
): Promise<BookingRow> {
  return transaction(db, async (client) => {
    const booking = await lockConfirmed(client, companyId, bookingId);
    if (booking.calendar_event_id) {
      const { rows: removed } = await client.query<{ company_id: string; id: string; user_id: string; source: string; sync_to_google: boolean | null; google_event_id: string | null }>(
        'DELETE FROM calendar_events WHERE company_id = $1 AND id = $2 RETURNING company_id, id, user_id, source, sync_to_google, google_event_id',
        [companyId, booking.calendar_event_id],
      );
      if (removed[0]) await enqueueCalendarPush(client, deps.jobs, removed[0], 'delete');
    }
    const { rows } = await client.query<BookingRow>(
      `UPDATE bookings SET status = 'cancelled', cancelled_at = now(), cancelled_by = $3, cancellation_reason = $4,
              calendar_event_id = NULL, updated_at = now()
        WHERE company_id = $1 AND id = $2 RETURNING *`,
      [companyId, bookingId, by, reason],
    );
    // A meeting that has taken place, cancelled by the host (a no-show, a correction), is history: nobody
    // is mailed, as the manage link may not cancel it at all (docs/bookings.md).
    if (new Date(booking.ends_at).getTime() > Date.now()) await enqueueEmail(client, deps.jobs, { booking_id: bookingId, kind: 'cancelled' });
    return rows[0];
  });
}

/**
 * Moves a confirmed booking to `startsAt`: a new booking (same booker,
 * answers, lead and .ics UID, SEQUENCE + 1) linked both ways to the old one,
 * which is cancelled; the host's calendar event moves with it. The old
 * booking's own time counts as free, so a booking can move by a few minutes
 * within itself.
 */
export async function rescheduleBooking(
  db: Queryable,
  deps: BookingDeps,
  companyId: string,
  bookingId: string,
  input: { startsAt: string; by: 'host' | 'booker'; reason: string | null },
): Promise<{ booking: BookingRow; manageUrl: string }> {
  return transaction(db, async (client) => {
    const old = await lockConfirmed(client, companyId, bookingId);
    // Its link deleted: no link takes bookings for it, as an inactive one takes none (not a bad starts_at: any time fails).
    if (!old.booking_link_id) throw new ApiError('booking_link_inactive', 'El enlace de la reserva ya no existe: la reserva solo puede cancelarse; para otra hora, crea una reserva nueva.');
    const link = (await findBookingLink(client, companyId, old.booking_link_id, true))!;
    if (!link.active) throw new ApiError('booking_link_inactive');
    const start = new Date(input.startsAt).getTime();
    // A move of nothing (the same start and, the link's duration unchanged, the same end) is no reschedule:
    // it would cancel the booking for an identical one and mail both sides about it.
    if (start === new Date(old.starts_at).getTime() && start + link.duration_minutes * 60_000 === new Date(old.ends_at).getTime()) {
      throw validationFailed({ starts_at: ['es el horario que la reserva ya tiene'] });
    }
    await lockHost(client, link.user_id);
    await judgeSlot(client, link, start, old.id);
    const id = objectId();
    await client.query(
      `UPDATE bookings SET status = 'cancelled', cancelled_at = now(), cancelled_by = $3, cancellation_reason = $4,
              calendar_event_id = NULL, updated_at = now()
        WHERE company_id = $1 AND id = $2`,
      [companyId, old.id, input.by, input.reason],
    );
    const booking = await insertBookingRow(client, deps, link, {
      id,
      start,
      booker: { name: old.booker_name, email: old.booker_email, phone: old.booker_phone, timezone: old.booker_timezone },
      answers: old.answers,
      leadId: old.lead_id!,
      calendarEventId: old.calendar_event_id!,
      icalUid: old.ical_uid,
      icalSequence: old.ical_sequence + 1,
      rescheduledFromId: old.id,
      meetUrl: old.meet_url,
    });
    await client.query('UPDATE bookings SET rescheduled_to_id = $3 WHERE company_id = $1 AND id = $2', [companyId, old.id, id]);
    if (old.calendar_event_id) {
      const { rows: moved } = await client.query<{ company_id: string; id: string; user_id: string; source: string; sync_to_google: boolean | null; google_event_id: string | null }>(
        `UPDATE calendar_events SET starts_at = $3, ends_at = $4, booking_id = $5, updated_at = now() WHERE company_id = $1 AND id = $2
         RETURNING company_id, id, user_id, source, sync_to_google, google_event_id`,
        [companyId, old.calendar_event_id, booking.starts_at, booking.ends_at, id],
      );
      if (moved[0]) await enqueueCalendarPush(client, deps.jobs, moved[0], 'upsert');
    }
    await enqueueEmail(client, deps.jobs, { booking_id: id, kind: 'rescheduled' });
    return { booking, manageUrl: manageUrl(deps.config.bookingUrl, deps.config.bookingTokenKey, id) };
  });
}
