// isTimeZone, the check of every `timezone` a request names (slot queries,
// calendar events, booking links, bookings, the company): valid zones are
// remembered after their first check, so the answer must stay the same for
// any string however often it is asked, and memory stays bounded.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isTimeZone } from '../api/routes/calendar-event-schemas.ts';

describe('isTimeZone', () => {
  test('IANA zones and UTC are accepted, every time they are asked', () => {
    for (let i = 0; i < 3; i++) {
      for (const zone of ['America/Mexico_City', 'Europe/Madrid', 'UTC', 'Asia/Kolkata']) assert.equal(isTimeZone(zone), true, zone);
    }
  });

  test('unknown zones, hostile strings and over-long names are refused, also after valid zones were remembered', () => {
    assert.equal(isTimeZone('America/Mexico_City'), true);
    for (let i = 0; i < 3; i++) {
      for (const bad of ['Mars/Olympus', 'Nowhere/City', '', ' ', 'America/Mexico_City ', '../etc/passwd', 'America/Mexico_City\u0000', `America/${'x'.repeat(80)}`]) {
        assert.equal(isTimeZone(bad), false, JSON.stringify(bad));
      }
    }
  });

  test('past the bound of remembered zones (Intl accepts any letter case, so the strings are many) answers stay right', () => {
    const base = 'America/Mexico_City';
    const letters = [...base].map((c, i) => (/[a-z]/i.test(c) ? i : -1)).filter((i) => i >= 0);
    const variant = (n: number) => [...base].map((c, i) => (letters.indexOf(i) >= 0 && (n >> letters.indexOf(i)) & 1 ? (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) : c)).join('');
    for (let n = 0; n < 2_500; n++) assert.equal(isTimeZone(variant(n)), true, variant(n));
    assert.equal(isTimeZone('Mars/Olympus'), false);
    assert.equal(isTimeZone(variant(2_600)), true);
  });
});
