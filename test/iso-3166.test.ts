// The country codes an address takes (lib/iso-3166.ts): the 249 assigned ISO 3166-1 alpha-2 codes, each
// one ICU names as a region, and none of the two-letter codes that name no country.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ISO_COUNTRY_CODES, isCountryCode } from '../lib/iso-3166.ts';

test('249 assigned codes, each a region ICU names; user-assigned and reserved codes are not countries', () => {
  assert.equal(ISO_COUNTRY_CODES.size, 249);
  const names = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });
  assert.deepEqual([...ISO_COUNTRY_CODES].filter((code) => !/^[A-Z]{2}$/.test(code) || !names.of(code)), []);
  for (const code of ['MX', 'US', 'ES', 'AX', 'SS', 'BQ']) assert.equal(isCountryCode(code), true, code);
  for (const code of ['ZZ', 'EU', 'XK', 'UN', 'QO', 'AA', 'mx']) assert.equal(isCountryCode(code), false, code);
});
