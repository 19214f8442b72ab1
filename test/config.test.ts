// lib/config.ts: every setting is read once, and a bad value stops start-up
// with a message naming it (README, "Configuration").
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
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

  test('PORT and other integers are decimal digits: hex, exponents and padded values stop start-up', () => {
    for (const value of ['0x1000', '1e3', ' 4633', '42.0', '-1', 'abc']) {
      assert.throws(() => loadConfig({ NODE_ENV: 'test', PORT: value }), /PORT/, value);
    }
    assert.equal(loadConfig({ NODE_ENV: 'test', PORT: '4633' }).port, 4633);
    // An empty NODE_ENV is unset (development), as every other variable's empty value is.
    assert.equal(loadConfig({ NODE_ENV: '', PORT: '4633' }).isProduction, false);
    assert.throws(() => loadConfig({ NODE_ENV: 'staging' }), /NODE_ENV/);
  });

  test('DATABASE_URL must be a PostgreSQL URL; production needs SITE_URL (its public root)', () => {
    for (const value of ['not a url', 'mysql://x@localhost/db', 'localhost:5432']) {
      assert.throws(() => loadConfig({ NODE_ENV: 'test', DATABASE_URL: value }), /DATABASE_URL/, value);
    }
    for (const value of ['postgres://u:p@db.example:5432/app', 'postgresql://localhost/app?sslmode=require']) {
      assert.equal(loadConfig({ NODE_ENV: 'test', DATABASE_URL: value }).databaseUrl, value, 'kept as given');
    }
    const production = { NODE_ENV: 'production', DATABASE_URL: 'postgres://x/y', ADMIN_TOKEN: 'x'.repeat(20), BOOKING_TOKEN_KEY: 'k'.repeat(32) };
    assert.throws(() => loadConfig(production), /SITE_URL es obligatoria en producción/);
    assert.equal(loadConfig({ ...production, SITE_URL: 'https://api.example/' }).baseUrl, 'https://api.example/api/v1');
    // Production answers plain HTTP with 426: an http root would hand out URLs (the OAuth issuer) that never work.
    assert.throws(() => loadConfig({ ...production, SITE_URL: 'http://api.example' }), /SITE_URL debe empezar con https:\/\/ en producción/);
    assert.throws(() => loadConfig({ ...production, SITE_URL: 'https://api.example', BOOKING_URL: 'http://citas.example' }), /BOOKING_URL debe empezar con https:\/\/ en producción/);
    assert.equal(loadConfig({ ...production, SITE_URL: 'https://api.example', BOOKING_URL: 'https://citas.example' }).bookingUrl, 'https://citas.example');
    assert.equal(loadConfig({ ...production, SITE_URL: 'HTTPS://api.example', BOOKING_URL: 'HTTPS://citas.example' }).bookingUrl, 'https://citas.example', 'a scheme is case-insensitive');
    // On SITE_URL's host the pages are at /book: another path there would be a dead link in every email.
    for (const booking of ['https://api.example/reservas', 'https://api.example', 'https://api.example/book/x']) {
      assert.throws(() => loadConfig({ ...production, SITE_URL: 'https://api.example', BOOKING_URL: booking }), /BOOKING_URL en el host de SITE_URL debe ser https:\/\/api\.example\/book/, booking);
    }
    assert.equal(loadConfig({ ...production, SITE_URL: 'https://api.example', BOOKING_URL: 'https://api.example/book/' }).bookingUrl, 'https://api.example/book');
    for (const booking of ['https://api.example/book?x=1', 'https://citas.example/#a']) {
      assert.throws(() => loadConfig({ ...production, SITE_URL: 'https://api.example', BOOKING_URL: booking }), /BOOKING_URL es la base de los enlaces de reservas: sin \?consulta ni #fragmento/, booking);
    }
    assert.equal(loadConfig({ ...production, SITE_URL: 'https://api.example', BOOKING_URL: 'https://citas.example/reservas' }).bookingUrl, 'https://citas.example/reservas', 'any path on a host of its own');
  });

  test('development without ADMIN_TOKEN takes DATA_DIR/admin-token, the file npm start and wsctl use', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'ws-config-'));
    try {
      await writeFile(path.join(dir, 'admin-token'), 'token-de-npm-start-0123456789\n');
      assert.equal(loadConfig({ NODE_ENV: 'development', DATA_DIR: dir }).adminToken, 'token-de-npm-start-0123456789');
      assert.equal(loadConfig({ NODE_ENV: 'development', DATA_DIR: dir, ADMIN_TOKEN: 'y'.repeat(20) }).adminToken, 'y'.repeat(20));
      assert.equal(loadConfig({ NODE_ENV: 'test', DATA_DIR: dir }).adminToken, undefined, 'tests set theirs');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('URLs of the right kind are taken: booking pages on their own host, SMTP with or without TLS', () => {
    const config = loadConfig({ NODE_ENV: 'test', BOOKING_URL: 'https://book.example/', SMTP_URL: 'smtps://user:p%40ss@mail.example:465' });
    assert.equal(config.bookingUrl, 'https://book.example');
    assert.equal(config.smtpUrl, 'smtps://user:p%40ss@mail.example:465');
    assert.equal(loadConfig({ NODE_ENV: 'test', SMTP_URL: 'smtp://127.0.0.1:2525' }).smtpUrl, 'smtp://127.0.0.1:2525');
    assert.equal(loadConfig({ NODE_ENV: 'test' }).smtpUrl, undefined);
  });

  test('a refused URL is named without its credentials (stderr goes to the platform\'s logs)', () => {
    const refused: Array<[Record<string, string>, string]> = [
      [{ DATABASE_URL: 'postgres://admin:S3cretPassw0rd@db.example.com:99999/prod' }, 'DATABASE_URL no es una URL válida (recibido "postgres://***@db.example.com:99999/prod")'],
      [{ DATABASE_URL: 'mysql://admin:S3cretPassw0rd@db.example.com/prod' }, 'DATABASE_URL debe empezar con postgres:// o postgresql:// o socket:// (recibido "mysql://***@db.example.com/prod")'],
      [{ DATABASE_URL: 'mysql://db.example.com/prod?user=admin&password=S3cretPassw0rd' }, 'recibido "mysql://db.example.com/prod?user=admin&password=***"'],
      [{ SMTP_URL: 'smtps://user:S3cretPassw0rd@smtp.example.com:99999' }, 'SMTP_URL no es una URL válida (recibido "smtps://***@smtp.example.com:99999")'],
      [{ NODE_ENV: 'production', DATABASE_URL: 'postgres://db/x', ADMIN_TOKEN: 'a'.repeat(32), SITE_URL: 'http://user:S3cretPassw0rd@x.example' }, 'recibido "http://***@x.example"'],
    ];
    for (const [env, message] of refused) {
      assert.throws(
        () => loadConfig({ NODE_ENV: 'test', ...env }),
        (error: Error) => error.message.includes(message) && !error.message.includes('S3cretPassw0rd'),
        JSON.stringify(env),
      );
    }
  });

  test('values that used to start silently wrong are refused, naming the variable', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'ws-config-'));
    try {
      const file = path.join(dir, 'a-file');
      await writeFile(file, 'x');
      const refused: Array<[Record<string, string>, RegExp]> = [
        [{ DATA_DIR: file }, /DATA_DIR no es un directorio/],
        // Below a file: it cannot be made (the secrets development keeps there), said in one line.
        [{ DATA_DIR: path.join(file, 'sub') }, /DATA_DIR no se puede crear \(ENOTDIR\)/],
        // A directory this process may not write in (root too: /proc takes no new file): one line, not a stack.
        [{ DATA_DIR: '/proc' }, /DATA_DIR no admite escritura \(\w+\): "\/proc"/],
        [{ PORT: '70000' }, /PORT debe ser un entero entre 0 y 65535 \(recibido "70000"\)/],
        [{ GOOGLE_CLIENT_ID: 'id' }, /GOOGLE_CLIENT_ID y GOOGLE_CLIENT_SECRET van juntas/],
        [{ GOOGLE_CLIENT_SECRET: 'secret' }, /GOOGLE_CLIENT_ID y GOOGLE_CLIENT_SECRET van juntas/],
        [{ RATE_LIMIT_LEASE_TIMEOUT_MS: '999999999999' }, /RATE_LIMIT_LEASE_TIMEOUT_MS debe ser un entero entre 1 y 60000/],
        [{ SITE_URL: 'https://x.example/path?q=1' }, /SITE_URL es una raíz/],
        [{ SITE_URL: 'https://x.example/#top' }, /SITE_URL es una raíz/],
        [{ METRICS_TOKEN: 'x' }, /METRICS_TOKEN debe tener al menos 16/],
        // One organization's key would issue every company's invoices under one RFC.
        [{ FACTURAPI_KEY: 'sk_live_abc' }, /FACTURAPI_KEY debe ser la User Key/],
        [{ FACTURAPI_KEY: 'sk_user_abc', FACTURAPI_MODE: 'prod' }, /FACTURAPI_MODE debe ser live o test/],
        [{ BLOB_STORE: 's3', S3_BUCKET: 'media', S3_ACCESS_KEY_ID: 'a', S3_SECRET_ACCESS_KEY: 'b', S3_REGION: 'us east/1' }, /S3_REGION/],
      ];
      for (const [env, message] of refused) assert.throws(() => loadConfig({ NODE_ENV: 'test', ...env }), message, JSON.stringify(env));
      // Empty is unset, LOG_LEVEL too.
      assert.equal(loadConfig({ NODE_ENV: 'test', LOG_LEVEL: '' }).logLevel, 'info');
      assert.equal(loadConfig({ NODE_ENV: 'test', FACTURAPI_KEY: 'sk_user_abc' }).facturapi?.mode, 'live');
      assert.equal(loadConfig({ NODE_ENV: 'test', SITE_URL: 'https://x.example:8443/' }).baseUrl, 'https://x.example:8443/api/v1');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
