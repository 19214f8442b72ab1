// lib/config.ts: every setting is read once, and a bad value stops start-up
// with a message naming it (README, "Configuration").
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../lib/config.ts';

describe('configuration', () => {
  test('URLs: a value that is not one, or of another scheme, stops start-up naming the setting', () => {
    for (const [name, value] of [
      ['SITE_URL', 'notaurl'],
      ['BOOKING_URL', 'ftp://book.example'],
      ['BOOKING_URL', 'javascript:alert(1)'],
      ['SMTP_URL', 'notaurl'],
      ['SMTP_URL', 'http://mail.example'],
    ]) {
      assert.throws(() => loadConfig({ NODE_ENV: 'test', [name]: value }), new RegExp(name), `${name}=${value}`);
    }
  });

  test('URLs of the right kind are taken: booking pages on their own host, SMTP with or without TLS', () => {
    const config = loadConfig({ NODE_ENV: 'test', BOOKING_URL: 'https://book.example/', SMTP_URL: 'smtps://user:p%40ss@mail.example:465' });
    assert.equal(config.bookingUrl, 'https://book.example');
    assert.equal(config.smtpUrl, 'smtps://user:p%40ss@mail.example:465');
    assert.equal(loadConfig({ NODE_ENV: 'test', SMTP_URL: 'smtp://127.0.0.1:2525' }).smtpUrl, 'smtp://127.0.0.1:2525');
    assert.equal(loadConfig({ NODE_ENV: 'test' }).smtpUrl, undefined);
  });
});
