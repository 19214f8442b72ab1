// Dates for tests that need a particular kind of day (a clock change) in the future, whatever day the
// suite runs: the server computes slots from the real clock and refuses a start in the past.

/**
 * New York's autumn clock change `yearsAhead` years after this one (at least 1, so it is always ahead):
 * the first Sunday of November, when 01:00–02:00 happens twice (01:00 EDT is 05:00Z, 01:00 EST 06:00Z).
 * `at('05:30')` is that day's instant at 05:30 UTC; `window` a booking window of the first ten days of
 * that November; `monthStart` noon UTC of its 1 November, for a browser clock (the page opens on that month).
 */
export function newYorkFallBack(yearsAhead: number) {
  if (yearsAhead < 1) throw new Error('yearsAhead: at least 1, or the day may be past');
  const year = new Date().getUTCFullYear() + yearsAhead;
  const first = new Date(Date.UTC(year, 10, 1));
  const date = new Date(Date.UTC(year, 10, 1 + ((7 - first.getUTCDay()) % 7))).toISOString().slice(0, 10);
  return {
    year,
    date,
    at: (utcTime: string) => `${date}T${utcTime}:00Z`,
    window: { type: 'range' as const, start_on: `${year}-11-01`, end_on: `${year}-11-10` },
    monthStart: new Date(`${year}-11-01T12:00:00Z`),
  };
}
