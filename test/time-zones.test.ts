// isTimeZone, the check of every `timezone` a request names (slot queries,
// calendar events, booking links, bookings, the company): valid zones are
// remembered after their first check, so the answer must stay the same for
// any string however often it is asked. Only names written as the zone
// database writes them pass (Intl also reads offsets and any letter case),
// so what is remembered is bounded by the database.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isTimeZone } from '../lib/local-dates.ts';

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

  test('IANA names are written one way: letter-case variants and UTC offsets are refused, however often asked', () => {
    const base = 'America/Mexico_City';
    const letters = [...base].map((c, i) => (/[a-z]/i.test(c) ? i : -1)).filter((i) => i >= 0);
    const variant = (n: number) => [...base].map((c, i) => (letters.indexOf(i) >= 0 && (n >> letters.indexOf(i)) & 1 ? (c === c.toUpperCase() ? c.toLowerCase() : c.toUpperCase()) : c)).join('');
    for (let n = 1; n < 2_500; n++) assert.equal(isTimeZone(variant(n)), false, variant(n));
    for (const offset of ['+05:00', '-0300', '+14:00', 'utc', 'america/mexico_city']) assert.equal(isTimeZone(offset), false, offset);
    assert.equal(isTimeZone(base), true);
    // Every zone the runtime lists is accepted (the remembered set is bounded by them), and aliases too.
    for (const zone of [...Intl.supportedValuesOf('timeZone'), 'US/Eastern', 'EST5EDT', 'Etc/GMT+5']) assert.equal(isTimeZone(zone), true, zone);
  });
});
