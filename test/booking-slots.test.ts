// The slot function (lib/booking-slots.ts) on its own: weekly hours and
// overrides turned into instants day by day in the link's zone (DST in both
// directions, a +05:30 zone), the interval, buffers, minimum notice, the
// booking window and the per-day cap. test/bookings.test.ts runs the same
// rules end to end through the API.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { freeSlots, groupByLocalDate, isBookable, type SlotContext, type SlotRules } from '../lib/booking-slots.ts';

const rules = (over: Partial<SlotRules> = {}): SlotRules => ({
  timezone: 'America/Mexico_City',
  duration_minutes: 30,
  slot_interval_minutes: null,
  buffer_before_minutes: 0,
  buffer_after_minutes: 0,
  minimum_notice_minutes: 0,
  booking_window: { type: 'rolling', days: 3650 },
  weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '09:00', end: '11:00' }],
  date_overrides: [],
  max_bookings_per_day: null,
  ...over,
});
const context = (over: Partial<SlotContext> = {}): SlotContext => ({ now: Date.parse('2026-01-01T00:00:00Z'), busy: [], bookingsPerDay: new Map(), ...over });
const starts = (r: SlotRules, c: SlotContext, from: string, to: string) =>
  freeSlots(r, c, Date.parse(from), Date.parse(to)).map((s) => new Date(s.start).toISOString().slice(0, 16));
const at = (iso: string) => Date.parse(iso);

describe('slot function', () => {
  test('weekly hours in the link zone, stepping by the duration', () => {
    // Mexico City is UTC-6 all year (no DST since 2022): 09:00 local = 15:00Z.
    assert.deepEqual(starts(rules(), context(), '2026-03-02T00:00:00Z', '2026-03-03T00:00:00Z'), [
      '2026-03-02T15:00', '2026-03-02T15:30', '2026-03-02T16:00', '2026-03-02T16:30',
    ]);
  });

  test('slot_interval_minutes: slots start every 15 minutes, each as long as the duration, all inside the range', () => {
    const got = starts(rules({ slot_interval_minutes: 15, duration_minutes: 60 }), context(), '2026-03-02T00:00:00Z', '2026-03-03T00:00:00Z');
    assert.deepEqual(got, ['2026-03-02T15:00', '2026-03-02T15:15', '2026-03-02T15:30', '2026-03-02T15:45', '2026-03-02T16:00']);
  });

  test('spring forward (New York, 2026-03-08): 09:00 is 13:00Z after the change, 14:00Z the day before; a range across 02:00 loses the hour that does not exist', () => {
    const r = rules({ timezone: 'America/New_York', duration_minutes: 60, weekly_hours: [{ days: [6, 7], start: '09:00', end: '10:00' }] });
    assert.deepEqual(starts(r, context(), '2026-03-07T00:00:00Z', '2026-03-09T00:00:00Z'), ['2026-03-07T14:00', '2026-03-08T13:00']);
    const night = rules({ timezone: 'America/New_York', duration_minutes: 60, weekly_hours: [{ days: [7], start: '00:00', end: '04:00' }] });
    // 00:00 EST (05:00Z) to 04:00 EDT (08:00Z): three real hours, three slots.
    assert.deepEqual(starts(night, context(), '2026-03-08T00:00:00Z', '2026-03-09T00:00:00Z'), ['2026-03-08T05:00', '2026-03-08T06:00', '2026-03-08T07:00']);
  });

  test('fall back (New York, 2026-11-01): a range across 02:00 has one hour more; 09:00 moves from 13:00Z to 14:00Z', () => {
    const night = rules({ timezone: 'America/New_York', duration_minutes: 60, weekly_hours: [{ days: [7], start: '00:00', end: '03:00' }] });
    // 00:00 EDT (04:00Z) to 03:00 EST (08:00Z): four real hours.
    assert.deepEqual(starts(night, context(), '2026-11-01T00:00:00Z', '2026-11-02T00:00:00Z'), [
      '2026-11-01T04:00', '2026-11-01T05:00', '2026-11-01T06:00', '2026-11-01T07:00',
    ]);
    const morning = rules({ timezone: 'America/New_York', duration_minutes: 60, weekly_hours: [{ days: [6, 7], start: '09:00', end: '10:00' }] });
    assert.deepEqual(starts(morning, context(), '2026-10-31T00:00:00Z', '2026-11-02T00:00:00Z'), ['2026-10-31T13:00', '2026-11-01T14:00']);
  });

  test('a wall time the zone skips is moved forward by the gap (RFC 5545): 02:30 is 03:30 EDT, as a start and as an end', () => {
    const r = rules({ timezone: 'America/New_York', duration_minutes: 30, weekly_hours: [{ days: [7], start: '02:30', end: '04:00' }] });
    // 02:30 does not exist on 2026-03-08: the range runs 03:30 EDT (07:30Z) to 04:00 EDT (08:00Z).
    assert.deepEqual(starts(r, context(), '2026-03-08T00:00:00Z', '2026-03-09T00:00:00Z'), ['2026-03-08T07:30']);
    // Ending at 02:30: it ends at 03:30 EDT (07:30Z), so 01:00 EST (06:00Z) to then holds three slots.
    const ending = rules({ timezone: 'America/New_York', duration_minutes: 30, weekly_hours: [{ days: [7], start: '01:00', end: '02:30' }] });
    assert.deepEqual(starts(ending, context(), '2026-03-08T00:00:00Z', '2026-03-09T00:00:00Z'), ['2026-03-08T06:00', '2026-03-08T06:30', '2026-03-08T07:00']);
  });

  test('a +05:30 zone (Asia/Kolkata): 09:00 local is 03:30Z; grouped by the visitor date in another zone', () => {
    const r = rules({ timezone: 'Asia/Kolkata', weekly_hours: [{ days: [1], start: '09:00', end: '10:00' }] });
    assert.deepEqual(starts(r, context(), '2026-03-01T00:00:00Z', '2026-03-03T00:00:00Z'), ['2026-03-02T03:30', '2026-03-02T04:00']);
    // For a visitor in Mexico City, 03:30Z on March 2 is still March 1 (21:30).
    const days = groupByLocalDate(freeSlots(r, context(), at('2026-03-01T00:00:00Z'), at('2026-03-03T00:00:00Z')), 'America/Mexico_City');
    assert.deepEqual(days.map((d) => [d.date, d.slots.length]), [['2026-03-01', 2]]);
  });

  test('a range ending at 24:00 runs to the next midnight', () => {
    const r = rules({ timezone: 'UTC', duration_minutes: 60, weekly_hours: [{ days: [1], start: '22:00', end: '24:00' }] });
    assert.deepEqual(starts(r, context(), '2026-03-02T00:00:00Z', '2026-03-04T00:00:00Z'), ['2026-03-02T22:00', '2026-03-02T23:00']);
  });

  test('buffers on both sides keep a slot away from busy time', () => {
    const busy = [{ start: at('2026-03-02T16:00:00Z'), end: at('2026-03-02T16:30:00Z') }];
    // No buffers: only 16:00 is taken.
    assert.deepEqual(starts(rules(), context({ busy }), '2026-03-02T00:00:00Z', '2026-03-03T00:00:00Z'), ['2026-03-02T15:00', '2026-03-02T15:30', '2026-03-02T16:30']);
    // 15 minutes after each slot: 15:30 would run into 16:00.
    assert.deepEqual(starts(rules({ buffer_after_minutes: 15 }), context({ busy }), '2026-03-02T00:00:00Z', '2026-03-03T00:00:00Z'), ['2026-03-02T15:00', '2026-03-02T16:30']);
    // 15 minutes before each slot: 16:30 would start right after 16:30.
    assert.deepEqual(starts(rules({ buffer_before_minutes: 15 }), context({ busy }), '2026-03-02T00:00:00Z', '2026-03-03T00:00:00Z'), ['2026-03-02T15:00', '2026-03-02T15:30']);
  });

  test('minimum notice hides slots starting too soon', () => {
    const c = context({ now: at('2026-03-02T14:50:00Z') });
    assert.deepEqual(starts(rules({ minimum_notice_minutes: 60 }), c, '2026-03-02T00:00:00Z', '2026-03-03T00:00:00Z'), ['2026-03-02T16:00', '2026-03-02T16:30']);
  });

  test('booking window: rolling days from today in the link zone, or a fixed range of dates', () => {
    // Now is 2026-03-02 23:00 in Mexico City (05:00Z on the 3rd): "today" is the 2nd there.
    const c = context({ now: at('2026-03-03T05:00:00Z') });
    const rolling = rules({ booking_window: { type: 'rolling', days: 2 }, weekly_hours: [{ days: [1, 2, 3, 4, 5], start: '09:00', end: '09:30' }] });
    assert.deepEqual(starts(rolling, c, '2026-03-01T00:00:00Z', '2026-03-10T00:00:00Z'), ['2026-03-03T15:00']);
    const range = rules({ booking_window: { type: 'range', start_on: '2026-03-05', end_on: '2026-03-06' }, weekly_hours: [{ days: [1, 2, 3, 4, 5], start: '09:00', end: '09:30' }] });
    assert.deepEqual(starts(range, c, '2026-03-01T00:00:00Z', '2026-03-10T00:00:00Z'), ['2026-03-05T15:00', '2026-03-06T15:00']);
  });

  test('max_bookings_per_day closes a day that reached the cap, counted by local date', () => {
    const r = rules({ max_bookings_per_day: 2 });
    const c = context({ bookingsPerDay: new Map([['2026-03-02', 2], ['2026-03-03', 1]]) });
    assert.deepEqual(
      starts(r, c, '2026-03-02T00:00:00Z', '2026-03-04T00:00:00Z').map((s) => s.slice(0, 10)),
      ['2026-03-03', '2026-03-03', '2026-03-03', '2026-03-03'],
    );
  });

  test('date overrides replace the weekly hours that day; an empty list is a day off', () => {
    const r = rules({
      date_overrides: [
        { date: '2026-03-02', ranges: [] },
        { date: '2026-03-03', ranges: [{ start: '12:00', end: '12:30' }, { start: '08:00', end: '08:30' }] },
        // A Sunday outside the weekly hours can be opened.
        { date: '2026-03-08', ranges: [{ start: '10:00', end: '10:30' }] },
      ],
      weekly_hours: [{ days: [1, 2, 3, 4, 5], start: '09:00', end: '09:30' }],
    });
    assert.deepEqual(starts(r, context(), '2026-03-02T00:00:00Z', '2026-03-09T00:00:00Z'), [
      '2026-03-03T14:00', '2026-03-03T18:00', '2026-03-04T15:00', '2026-03-05T15:00', '2026-03-06T15:00', '2026-03-08T16:00',
    ]);
  });

  test('isBookable agrees with the list: every listed start is bookable, nothing between them is', () => {
    const r = rules({ slot_interval_minutes: 20, buffer_after_minutes: 10 });
    const c = context({ busy: [{ start: at('2026-03-02T15:40:00Z'), end: at('2026-03-02T16:00:00Z') }] });
    const from = at('2026-03-02T14:00:00Z');
    const listed = new Set(freeSlots(r, c, from, at('2026-03-02T18:00:00Z')).map((s) => s.start));
    assert.ok(listed.size > 0);
    for (let t = from; t < at('2026-03-02T18:00:00Z'); t += 5 * 60_000) assert.equal(isBookable(r, c, t), listed.has(t), new Date(t).toISOString());
  });
});
