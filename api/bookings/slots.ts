// A booking link's free slots in a window, as the REST API (GET /booking-links/:id/slots) and the public
// booking page both answer them: the window read from the query (slotWindow), the link's rules
// (lib/booking-slots.ts) against what is taken (booking-queries.ts slotContext).
import type { Queryable } from '../../db/pool.ts';
import { freeSlots, groupByLocalDate } from '../../lib/booking-slots.ts';
import { endOfLocalDate, isDateOnly, startOfLocalDate } from '../../lib/local-dates.ts';
import { validationFailed } from '../errors.ts';
import { slotRulesOf, type BookingLinkRow } from '../routes/booking-link-queries.ts';
import { MAX_SLOT_WINDOW_DAYS, type SlotQuery } from '../routes/booking-link-schemas.ts';
import { slotContext } from '../routes/booking-queries.ts';

const DAY = 86_400_000;

/** The instants a slot query covers: dates are whole local days of the visitor's zone (`to` inclusive), instants are taken as given (`to` exclusive). */
export function slotWindow(query: SlotQuery, zone: string, now = Date.now()): { from: number; to: number } {
  const from = query.from === undefined ? now : isDateOnly(query.from) ? startOfLocalDate(query.from, zone) : Date.parse(query.from);
  const to = query.to === undefined ? from + 30 * DAY : isDateOnly(query.to) ? endOfLocalDate(query.to, zone) : Date.parse(query.to);
  if (!(to > from)) throw validationFailed({ to: ['debe ser posterior a from'] });
  // Local days may add a clock change's hour (two hours of slack); instants are held to the 62 days exactly.
  const slack = (query.from !== undefined && isDateOnly(query.from)) || (query.to !== undefined && isDateOnly(query.to)) ? 2 * 3_600_000 : 0;
  if (to - from > MAX_SLOT_WINDOW_DAYS * DAY + slack) throw validationFailed({ to: [`la ventana es de ${MAX_SLOT_WINDOW_DAYS} días como máximo`] });
  return { from, to };
}

/** The free slots of a link in a window, grouped by the visitor's local date. */
export async function slotList(db: Queryable, link: BookingLinkRow, query: SlotQuery, options: { ignoreBookingId?: string } = {}) {
  const zone = query.timezone ?? link.timezone;
  const { from, to } = slotWindow(query, zone);
  const slots = link.active ? freeSlots(slotRulesOf(link), await slotContext(db, link, from, to, options), from, to) : [];
  return {
    booking_link_id: link.id,
    timezone: zone,
    duration_minutes: link.duration_minutes,
    from: new Date(from).toISOString(),
    to: new Date(to).toISOString(),
    days: groupByLocalDate(slots, zone).map((day) => ({
      date: day.date,
      slots: day.slots.map((s) => ({ starts_at: new Date(s.start).toISOString(), ends_at: new Date(s.end).toISOString() })),
    })),
  };
}
