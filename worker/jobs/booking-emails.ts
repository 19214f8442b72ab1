// Emails of a booking (queue booking-emails, enqueued in the booking's
// transaction): to the booker, the confirmation, reschedule or cancellation
// with an .ics (METHOD:REQUEST, or CANCEL; the UID is shared by a booking and
// its reschedules and SEQUENCE grows, so calendar apps update one entry) and
// the manage link; to the host, a notice. Times are written in the booker's
// zone (the host's notice: the link's zone).
import ical, { ICalCalendarMethod, ICalEventStatus } from 'ical-generator';
import type { Job } from 'pg-boss';
import { BOOKING_EMAILS, type BookingEmailJob } from '../../db/queues.ts';
import { manageUrl, publicUrl } from '../../lib/booking-tokens.ts';
import { log } from '../../lib/log.ts';
import { isTransientMailError, mailerFor, noReplyFrom } from '../mail/mailer.ts';
import { quoted } from '../mail/quoted.ts';
import type { JobDefinition, WorkerDeps } from './types.ts';

type BookingMail = {
  id: string;
  status: 'confirmed' | 'cancelled';
  title: string;
  starts_at: Date;
  ends_at: Date;
  booker_name: string;
  booker_email: string;
  booker_timezone: string | null;
  booker_phone: string | null;
  answers: Record<string, string | boolean>;
  /** The link's questions (their labels head the answers), while the link exists. */
  questions: Array<{ key: string; label: string }> | null;
  /** For a reschedule: the time it moved from, and the reason given (kept on the booking it replaced). */
  previous_starts_at: Date | null;
  reschedule_reason: string | null;
  location: { type: string; value?: string | null } | null;
  meet_url: string | null;
  /** Whether the host's Google Calendar is connected (a Meet link can only come from it). */
  host_connected: boolean;
  cancellation_reason: string | null;
  ical_uid: string;
  ical_sequence: number;
  link_timezone: string | null;
  host_name: string;
  host_email: string;
  company_name: string;
  /** The link's page while it can still be booked (active, its host with a slug and still in a company): where to book again. */
  rebook_slug: string | null;
  link_slug: string | null;
};

/** The zone's UTC offset at an instant, as `GMT-5`. */
function offsetAt(ms: number, zone: string): string {
  return new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'shortOffset' }).formatToParts(ms).find((p) => p.type === 'timeZoneName')?.value ?? '';
}

/**
 * The time as the reader's clock shows it. Within two hours of a clock change it carries the UTC offset
 * (`1:30 a.m. GMT-4`, `1:30 a.m. GMT-5`): autumn's repeated hour would otherwise give two bookings one time.
 */
function when(date: Date, zone: string): string {
  const text = new Intl.DateTimeFormat('es-MX', { dateStyle: 'full', timeStyle: 'short', timeZone: zone }).format(date);
  const nearChange = offsetAt(date.getTime() - 2 * 3_600_000, zone) !== offsetAt(date.getTime() + 2 * 3_600_000, zone);
  return `${text}${nearChange ? ` ${offsetAt(date.getTime(), zone)}` : ''} (${zone})`;
}

function where(b: BookingMail, reader: Recipient = 'booker'): string {
  if (b.meet_url) return b.meet_url;
  if (!b.location) return '';
  if (b.location.type !== 'google_meet') return b.location.value ?? '';
  // Without the host's Google Calendar no Meet link will come: nobody is told to wait for one.
  if (!b.host_connected) {
    return reader === 'booker'
      ? 'Google Meet (el anfitrión te enviará la liga)'
      : 'Google Meet: tu Google Calendar no está conectado, así que la reserva no tendrá liga; envíasela al invitado respondiendo a este correo';
  }
  return reader === 'booker'
    ? 'Google Meet (la liga estará en la página de tu reserva, en el enlace para cancelar o reprogramar)'
    : 'Google Meet (la liga estará en el evento de tu Google Calendar)';
}

/**
 * What the booker answered, in the order of the link's questions under their labels (then any other, by
 * key: a question removed since, or the link deleted), blank answers left out; a checkbox as Sí / No.
 */
function answerLines(b: BookingMail): string[] {
  const answers = b.answers ?? {};
  const questions = (b.questions ?? []).filter((q) => Object.hasOwn(answers, q.key));
  const asked = new Set(questions.map((q) => q.key));
  const others = Object.keys(answers).filter((key) => !asked.has(key)).sort().map((key) => ({ key, label: key }));
  return [...questions, ...others].flatMap(({ key, label }) => {
    const value = answers[key];
    const text = typeof value === 'boolean' ? (value ? 'Sí' : 'No') : quoted(String(value ?? '')).trim();
    return text ? [`${quoted(label)}: ${text}`] : [];
  });
}

/**
 * A TEXT value of an .ics (RFC 5545 §3.3.11), for what ical-generator writes as given: the calendar's
 * NAME and X-WR-CALNAME. A title stored before titles were one line must not end the calendar early.
 */
function icsText(value: string): string {
  return value.replace(/[\\;,]/g, (c) => `\\${c}`).replace(/\r\n|[\r\n\u0085\u2028\u2029]/g, '\\n').replace(/[\u0000-\u001f\u007f]/g, ' ');
}

/** A title or a name on one line, as a calendar shows an event's: one stored before they had to be one line has its breaks as spaces. */
function oneLine(text: string): string {
  return quoted(text).replaceAll('\n  ', ' ');
}

/** The .ics of a booking: one VEVENT whose UID survives reschedules. */
export function bookingCalendar(b: BookingMail, kind: BookingEmailJob['kind'], manage: string): string {
  const cancel = kind === 'cancelled';
  const calendar = ical({ name: icsText(b.title), prodId: { company: 'workspace-service', product: 'bookings', language: 'ES' }, method: cancel ? ICalCalendarMethod.CANCEL : ICalCalendarMethod.REQUEST });
  calendar.createEvent({
    id: b.ical_uid,
    sequence: b.ical_sequence + (cancel ? 1 : 0),
    start: b.starts_at,
    end: b.ends_at,
    stamp: new Date(),
    summary: `${oneLine(b.title)} con ${oneLine(b.host_name)}`,
    description: `Gestiona tu reserva: ${manage}`,
    location: where(b) || null,
    url: manage,
    status: cancel ? ICalEventStatus.CANCELLED : ICalEventStatus.CONFIRMED,
    organizer: { name: oneLine(b.host_name), email: b.host_email },
    attendees: [{ name: b.booker_name, email: b.booker_email, rsvp: false }],
  });
  return calendar.toString();
}

async function load(deps: WorkerDeps, bookingId: string): Promise<BookingMail | null> {
  const { rows } = await deps.pool.query<BookingMail>(
    `SELECT b.id, b.status, b.title, b.starts_at, b.ends_at, b.booker_name, b.booker_email, b.booker_timezone, b.booker_phone, b.answers,
            l.questions, p.starts_at AS previous_starts_at, p.cancellation_reason AS reschedule_reason, b.location, b.meet_url,
            EXISTS (SELECT 1 FROM calendar_connections cc WHERE cc.user_id = b.user_id AND cc.status = 'active') AS host_connected,
            b.cancellation_reason, b.ical_uid, b.ical_sequence, coalesce(b.link_timezone, l.timezone, c.timezone) AS link_timezone,
            coalesce(nullif(trim(concat_ws(' ', u.first_name, u.last_name)), ''), u.email) AS host_name, u.email AS host_email,
            c.name AS company_name, l.slug AS link_slug,
            CASE WHEN l.active AND u.deleted_at IS NULL THEN u.booking_slug END AS rebook_slug
       FROM bookings b JOIN users u ON u.id = b.user_id JOIN companies c ON c.id = b.company_id
       LEFT JOIN booking_links l ON l.id = b.booking_link_id
       LEFT JOIN bookings p ON p.id = b.rescheduled_from_id
      WHERE b.id = $1`,
    [bookingId],
  );
  return rows[0] ?? null;
}

/** The cancellation's last line: where to book another time, when the link still takes bookings. */
function rebookLine(bookingUrl: string, b: BookingMail): string {
  const page = b.link_slug ? publicUrl(bookingUrl, b.rebook_slug, b.link_slug) : null;
  return page ? `Puedes reservar otro horario en ${page}` : 'Para otro horario, escribe al anfitrión respondiendo a este correo.';
}

const SUBJECTS: Record<BookingEmailJob['kind'], { booker: string; host: string }> = {
  confirmed: { booker: 'Reserva confirmada', host: 'Nueva reserva' },
  rescheduled: { booker: 'Reserva reprogramada', host: 'Reserva reprogramada' },
  cancelled: { booker: 'Reserva cancelada', host: 'Reserva cancelada' },
};

async function send(deps: WorkerDeps, job: BookingEmailJob): Promise<void> {
  const b = await load(deps, job.booking_id);
  if (!b) return; // the company was deleted since: nothing to tell
  const { config } = deps;
  const manage = manageUrl(config.bookingUrl, config.bookingTokenKey, b.id);
  // Without the booker's zone, the link's when the booking was made (kept with it), else the company's.
  const bookerZone = b.booker_timezone ?? b.link_timezone ?? 'America/Mexico_City';
  const hostZone = b.link_timezone ?? bookerZone;
  const subject = SUBJECTS[job.kind];
  const from = noReplyFrom(b.company_name, config);
  const place = where(b);
  const hostPlace = where(b, 'host');
  const givenReason = job.kind === 'cancelled' ? b.cancellation_reason : job.kind === 'rescheduled' ? b.reschedule_reason : null;
  const reason = givenReason ? [`Motivo: ${quoted(givenReason)}`] : [];
  // A reschedule says which appointment moved: the time it had.
  const before = (zone: string) => (job.kind === 'rescheduled' && b.previous_starts_at ? [`Antes: ${when(b.previous_starts_at, zone)}`] : []);
  const lines = [
    // Quoted: a title or a member's name stored before they had to be one line must not add lines of its own.
    `${quoted(b.title)} con ${quoted(b.host_name)}`,
    when(b.starts_at, bookerZone),
    ...before(bookerZone),
    ...(place ? [`Lugar: ${place}`] : []),
    ...reason,
    '',
    job.kind === 'cancelled' ? rebookLine(config.bookingUrl, b) : `Para cancelar o reprogramar: ${manage}`,
  ];
  const mailer = mailerFor(config);
  const method = job.kind === 'cancelled' ? 'CANCEL' : 'REQUEST';
  const host = new URL(config.siteUrl).hostname;
  const messages: Array<[Recipient, Parameters<typeof mailer.send>[0]]> = [
    ['booker', {
      from,
      to: { name: b.booker_name, address: b.booker_email },
      replyTo: b.host_email,
      subject: `${subject.booker}: ${b.title}`.replace(/[\r\n]+/g, ' '),
      text: lines.join('\n'),
      messageId: `<booking-${b.id}-${job.kind}-booker@${host}>`,
      icalEvent: { method, filename: 'invitacion.ics', content: bookingCalendar(b, job.kind, manage) },
    }],
    ['host', {
      from,
      to: b.host_email,
      replyTo: { name: b.booker_name, address: b.booker_email },
      subject: `${subject.host}: ${b.title} con ${b.booker_name}`.replace(/[\r\n]+/g, ' '),
      // Who booked, how to reach them, when, and what they answered (the link's questions).
      text: [
        `${b.booker_name} <${b.booker_email}>`,
        ...(b.booker_phone ? [`Teléfono: ${quoted(b.booker_phone)}`] : []),
        when(b.starts_at, hostZone),
        ...before(hostZone),
        ...(hostPlace ? [`Lugar: ${hostPlace}`] : []),
        ...reason,
        ...(job.kind === 'cancelled' ? [] : answerLines(b)),
      ].join('\n'),
      messageId: `<booking-${b.id}-${job.kind}-host@${host}>`,
    }],
  ];
  // Each recipient on its own: a booker's address refused for good (a typo) still lets the host know,
  // and a retry (one server refusing for now) sends only what did not go out.
  const { rows } = await deps.pool.query<{ recipient: Recipient }>('SELECT recipient FROM booking_emails_sent WHERE booking_id = $1 AND kind = $2', [b.id, job.kind]);
  const sent = new Set(rows.map((r) => r.recipient));
  let retry: unknown = null;
  for (const [recipient, message] of messages) {
    if (sent.has(recipient)) continue;
    try {
      await mailer.send(message);
    } catch (error) {
      if (isTransientMailError(error)) {
        retry ??= error;
        continue;
      }
      // Refused for good: not retried, and said so (the booking stands).
      log('booking.email_refused', { booking_id: b.id, kind: job.kind, recipient, error: (error as Error).message });
    }
    await deps.pool.query('INSERT INTO booking_emails_sent (booking_id, kind, recipient) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [b.id, job.kind, recipient]);
  }
  if (retry) throw retry;
}

type Recipient = 'booker' | 'host';

export const bookingEmails: JobDefinition<BookingEmailJob> = {
  queue: BOOKING_EMAILS,
  // One booking per fetch: a retry resends only that booking's emails.
  work: { batchSize: 1, pollingIntervalSeconds: 0.5 },
  async handler(deps, jobs: Job<BookingEmailJob>[]) {
    for (const job of jobs) {
      try {
        await send(deps, job.data);
      } catch (error) {
        // A server that refused the message for good is not retried.
        if (!isTransientMailError(error)) continue;
        throw error;
      }
    }
  },
};
