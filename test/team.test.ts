// Company (singular) and team members (contract: Company, Users): editable
// and immutable fields, the logo (SVG rasterized, hostile SVG refused), the
// team limit and unique emails under concurrency, owners, removal.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { issueKey } from '../api/admin/keys.ts';
import { updateCompany } from '../api/admin/companies.ts';
import { addMembership } from '../api/admin/users.ts';
import { client, seedTenant, startTestApp, uploadFile, type TestApp } from './helpers/app.ts';

const upload = (baseUrl: string, key: string, path: string, field: string, bytes: Buffer, filename: string) => uploadFile(baseUrl, key, path, { field, bytes, filename });

const png = () => sharp({ create: { width: 64, height: 64, channels: 3, background: '#336699' } }).png().toBuffer();

describe('company and team', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  const tenant = async (options: Parameters<typeof seedTenant>[1] = {}) => {
    const t = await seedTenant(app.pool, { rateLimitPerMinute: 100_000, ...options });
    return { ...t, api: client(app.baseUrl, t.key) };
  };

  test('GET /company: the contract fields, team from live memberships; PUT edits the profile only', async () => {
    const t = await tenant();
    const read = await t.api.get('/company');
    assert.equal(read.status, 200);
    assert.deepEqual(Object.keys(read.body.data).sort(), [
      'business_context', 'business_goals', 'business_type', 'created_at', 'enabled_modules', 'id', 'legal_name', 'logo_url', 'name', 'slug', 'team', 'timezone', 'updated_at', 'website',
    ]);
    assert.deepEqual(read.body.data.team, { max_team_size: 5, current_team_size: 1, seats_available: 4 });
    const put = await t.api.put('/company', { data: { name: 'Nuevo Nombre', business_goals: ['crecer'], website: 'https://nuevo.example' } });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    assert.equal(put.body.data.name, 'Nuevo Nombre');
    assert.deepEqual(put.body.data.business_goals, ['crecer']);
    // "" clears the website as it clears every other optional text (it was 422 for the website alone).
    const cleared = await t.api.put('/company', { data: { website: '', legal_name: '' } });
    assert.deepEqual([cleared.status, cleared.body.data.website, cleared.body.data.legal_name], [200, null, null]);
    assert.equal((await t.api.put('/company', { data: { website: 'no es url' } })).body.errors.website[0], 'debe ser una URL http(s)');
    // A URL past 2,000 characters is told so, not that it is no URL.
    const long = await t.api.put('/company', { data: { website: `https://nuevo.example/${'a'.repeat(2000)}` } });
    assert.match(long.body.errors.website[0], /<=2000 caracteres/);
    const sameWebsite = await t.api.put('/company', { data: { website: 'https://nuevo.example' } });
    assert.equal(sameWebsite.status, 200);
    // The values as stored change nothing, updated_at included (docs/api.md, Records).
    for (const body of [{}, { name: 'Nuevo Nombre', website: 'https://nuevo.example', business_goals: ['crecer'] }]) {
      const same = await t.api.put('/company', { data: body });
      assert.deepEqual([same.status, same.body.data.updated_at], [200, sameWebsite.body.data.updated_at], JSON.stringify(body));
    }
    for (const field of ['slug', 'plan', 'max_team_size', 'enabled_modules', 'storage_quota_mb', 'timezone', 'id', 'created_at']) {
      const res = await t.api.put('/company', { data: { [field]: field === 'max_team_size' ? 99 : 'x' } });
      assert.equal(res.status, 422, field);
      assert.ok(res.body.errors[field], `${field}: ${JSON.stringify(res.body)}`);
    }
    assert.equal((await t.api.get('/company')).body.data.team.max_team_size, 5);
  });

  test('company logo: PNG, and SVG rasterized to PNG (a script never reaches a browser); external references and entities refused', async () => {
    const t = await tenant();
    const ok = await upload(app.baseUrl, t.key, '/company/logo', 'logo', await png(), 'logo.png');
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.match(ok.body.data.logo_url, /\/media\/[0-9a-f]{32}\/logo\.png$/);
    const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50"><script>alert(document.cookie)</script><rect width="100" height="50" fill="#c00"/></svg>');
    const raster = await upload(app.baseUrl, t.key, '/company/logo', 'logo', svg, 'marca.svg');
    assert.equal(raster.status, 200, JSON.stringify(raster.body));
    const served = await fetch(raster.body.data.logo_url.replace(app.config.siteUrl, app.url));
    assert.equal(served.headers.get('content-type'), 'image/png');
    const bytes = Buffer.from(await served.arrayBuffer());
    assert.ok(!bytes.includes(Buffer.from('<script')), 'no markup is served');
    assert.equal((await sharp(bytes).metadata()).format, 'png');
    const hostile = [
      '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><image xlink:href="file:///etc/passwd" width="10" height="10"/></svg>',
      '<svg xmlns="http://www.w3.org/2000/svg"><image href="http://169.254.169.254/latest" width="10" height="10"/></svg>',
      '<svg xmlns="http://www.w3.org/2000/svg"><rect style="fill:url(https://evil.example/x)" width="1" height="1"/></svg>',
      '<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]><svg xmlns="http://www.w3.org/2000/svg"><text>&lol2;</text></svg>',
    ];
    for (const text of hostile) {
      const res = await upload(app.baseUrl, t.key, '/company/logo', 'logo', Buffer.from(text), 'x.svg');
      assert.equal(res.status, 422, text);
      assert.ok(res.body.errors.logo, text);
    }
    const gif = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } }).gif().toBuffer();
    const refusedGif = await upload(app.baseUrl, t.key, '/company/logo', 'logo', gif, 'a.gif');
    assert.equal(refusedGif.status, 422, 'the logo takes JPG, PNG or SVG');
    // The file in another part: the error names the part the contract gives the logo.
    const wrongPart = await upload(app.baseUrl, t.key, '/company/logo', 'file', await png(), 'logo.png');
    assert.equal(wrongPart.status, 422);
    assert.deepEqual(wrongPart.body.errors, { logo: ['envía la imagen como multipart/form-data en el campo logo'] });
  });

  test('company logo: an SVG\'s references inside itself are drawn; hidden external ones, embedded bombs and documents too costly to draw are refused', async () => {
    const t = await tenant();
    const svg = (body: string, size = 'width="100" height="50"') =>
      `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" ${size}>${body}</svg>`;
    const dot = (await sharp({ create: { width: 4, height: 4, channels: 3, background: '#0a0' } }).png().toBuffer()).toString('base64');
    // A PNG whose header claims 30,000 × 30,000 (900 megapixels): a few bytes that would decode to 3.6 GB.
    const bomb = Buffer.from(await sharp({ create: { width: 1, height: 1, channels: 3, background: '#000' } }).png().toBuffer());
    bomb.writeUInt32BE(30_000, 16);
    bomb.writeUInt32BE(30_000, 20);
    bomb.writeUInt32BE(crc32(bomb.subarray(12, 29)), 29);
    const gradient = '<defs><linearGradient id="g"><stop offset="0" stop-color="#c00"/></linearGradient><rect id="r" width="10" height="10"/></defs>';
    const accepted = {
      'use href="#…"': svg(`${gradient}<use href="#r"/>`),
      'use xlink:href=\'#…\'': svg(`${gradient}<use xlink:href='#r'/>`),
      'fill="url(&quot;#…&quot;)"': svg(`${gradient}<rect width="100" height="50" fill="url(&quot;#g&quot;)" style="stroke:url('#g')"/>`),
      'an embedded PNG': svg(`<image href="data:image/png;base64,${dot}" width="100" height="50"/>`),
      'a 200,000-unit viewBox, drawn at 1024 px': svg('<rect width="200000" height="100000" fill="#c00"/>', 'viewBox="0 0 200000 100000"'),
      'an external DTD reference, as Illustrator writes it (never fetched)':
        '<?xml version="1.0" encoding="utf-8"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd">' + svg('<rect width="100" height="50" fill="#c00"/>'),
    };
    for (const [what, text] of Object.entries(accepted)) {
      const res = await upload(app.baseUrl, t.key, '/company/logo', 'logo', Buffer.from(text), 'logo.svg');
      assert.equal(res.status, 200, `${what}: ${JSON.stringify(res.body)}`);
      const served = Buffer.from(await (await fetch(res.body.data.logo_url.replace(app.config.siteUrl, app.url))).arrayBuffer());
      const meta = await sharp(served).metadata();
      assert.equal(meta.format, 'png', what);
      assert.equal(Math.max(meta.width!, meta.height!), 1024, what);
    }
    const filtered = Array.from({ length: 40 }, () => '<rect width="6000" height="6000" filter="url(#f)" opacity="0.5"/>').join('');
    const refused: Record<string, [string, RegExp]> = {
      'a CSS escape in url()': [svg('<rect style="fill:u\\72l(http://169.254.169.254/x)" width="1" height="1"/>'), /recursos externos/],
      'a character reference in url()': [svg('<rect style="fill:&#117;rl(http://evil.example/x)" width="1" height="1"/>'), /recursos externos/],
      'a quoted external href': [svg('<image href=" https://evil.example/a.png" width="1" height="1"/>'), /recursos externos/],
      'an xml-stylesheet instruction': ['<?xml version="1.0"?><?xml-stylesheet href="https://evil.example/a.css"?>' + svg(''), /instrucciones de procesamiento/],
      'an embedded SVG': [svg(`<image href="data:image/svg+xml;base64,${Buffer.from(svg('')).toString('base64')}" width="1" height="1"/>`), /PNG, JPEG, GIF o WebP/],
      'an embedded decompression bomb': [svg(`<image href="data:image/png;base64,${bomb.toString('base64')}" width="1" height="1"/>`), /megapíxeles/],
      'the bomb behind a quote in its data: URL': [svg(`<image href="data:image/png;x='1';base64,${bomb.toString('base64')}" width="1" height="1"/>`), /data:image\/png;base64/],
      'a percent-encoded SVG in a data: URL': [svg(`<image href="data:image/svg+xml,${encodeURIComponent(svg('<image href="http://evil.example/x"/>').toString())}" width="1" height="1"/>`), /data:image\/png;base64/],
      'a document too costly to draw': [
        svg(`<filter id="f" x="0" y="0" width="1" height="1"><feTurbulence baseFrequency="0.05" numOctaves="30"/><feGaussianBlur stdDeviation="500"/></filter>${filtered}`, 'width="6000" height="6000"'),
        /tarda más de 5 s/,
      ],
    };
    for (const [what, [text, reason]] of Object.entries(refused)) {
      const res = await upload(app.baseUrl, t.key, '/company/logo', 'logo', Buffer.from(text), 'x.svg');
      assert.equal(res.status, 422, what);
      assert.match(res.body.errors.logo[0], reason, what);
    }
  });

  test('company logo: SVGs waiting their turn are bounded; one more is 503 with Retry-After, the others are answered', async () => {
    const t = await tenant();
    const filtered = '<rect width="6000" height="6000" filter="url(#f)" opacity="0.5"/>'.repeat(40);
    const heavy = Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="6000" height="6000"><filter id="f" x="0" y="0" width="1" height="1"><feTurbulence baseFrequency="0.05" numOctaves="30"/><feGaussianBlur stdDeviation="500"/></filter>${filtered}</svg>`);
    // One drawn, four waiting, the sixth has no place.
    const answers = await Promise.all(Array.from({ length: 6 }, () => upload(app.baseUrl, t.key, '/company/logo', 'logo', heavy, 'x.svg')));
    const busy = answers.filter((a) => a.status === 503);
    assert.equal(busy.length, 1, JSON.stringify(answers.map((a) => a.status)));
    assert.equal(busy[0].body.error, 'service_unavailable');
    assert.ok(Number(busy[0].headers.get('retry-after')) > 0);
    assert.deepEqual(answers.filter((a) => a.status === 422).map((a) => a.body.errors.logo[0].includes('tarda más')), [true, true, true, true, true]);
  });

  test('users: create with every contract field, no credential ever accepted or shown; flat booking branding reads nested', async () => {
    const t = await tenant();
    const res = await t.api.post('/users', {
      data: {
        first_name: 'Ana',
        last_name: 'López',
        email: 'Ana.Lopez@Example.com',
        booking_slug: `ana-${randomBytes(3).toString('hex')}`,
        settings_preferences: { theme: 'schedule', block_overlapping_bookings: true, booking_branding: { bg_mode: 'linear', bg_color_from: '#112233', bg_color_to: '#445566' } },
      },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const u = res.body.data;
    assert.equal(u.full_name, 'Ana López');
    assert.equal(u.email, 'ana.lopez@example.com');
    assert.equal(u.is_owner, false);
    assert.equal(u.booking_url, `${app.config.bookingUrl}/${u.booking_slug}`);
    assert.deepEqual(u.settings_preferences.booking_branding.light, { bg_mode: 'linear', bg_color_from: '#112233', bg_color_to: '#445566', bg_angle: null });
    assert.equal(u.settings_preferences.theme, 'schedule');
    assert.ok(!JSON.stringify(u).includes('password'));
    const withPassword = await t.api.post('/users', { data: { email: 'p@example.com', password: 'secreta123' } });
    assert.equal(withPassword.status, 422);
    assert.ok(withPassword.body.errors.password);
    const bad = await t.api.post('/users', { data: { email: 'b@example.com', settings_preferences: { booking_branding: { light: { bg_angle: 400 } } } } });
    assert.equal(bad.status, 422);
    // The message is Spanish throughout: an integer is "número entero", not zod's type name "int".
    const fractional = await t.api.post('/users', { data: { email: 'b@example.com', settings_preferences: { booking_branding: { light: { bg_angle: 45.5 } } } } });
    assert.deepEqual(fractional.body.errors, { 'settings_preferences.booking_branding.light.bg_angle': ['Entrada inválida: se esperaba número entero, recibido número'] });
    // A read written back as it is (its nulls included) is accepted; null clears a preference.
    const { settings_preferences } = (await t.api.get(`/users/${u.id}`)).body.data;
    const roundTrip = await t.api.put(`/users/${u.id}`, { data: { settings_preferences } });
    assert.equal(roundTrip.status, 200, JSON.stringify(roundTrip.body));
    assert.deepEqual(roundTrip.body.data.settings_preferences, settings_preferences);
    const cleared = await t.api.put(`/users/${u.id}`, { data: { settings_preferences: { theme: null, booking_branding: { bg_mode: null, bg_color_to: null } } } });
    assert.equal(cleared.status, 200, JSON.stringify(cleared.body));
    assert.equal(cleared.body.data.settings_preferences.theme, null);
    assert.deepEqual(cleared.body.data.settings_preferences.booking_branding.light, { bg_mode: null, bg_color_from: '#112233', bg_color_to: null, bg_angle: null });
    // Both forms of the light theme at once would leave one value unused: refused.
    const both = await t.api.put(`/users/${u.id}`, { data: { settings_preferences: { booking_branding: { bg_mode: 'solid', light: { bg_mode: 'radial' } } } } });
    assert.equal(both.status, 422);
    assert.ok(both.body.errors['settings_preferences.booking_branding.light'], JSON.stringify(both.body.errors));
    const listed = await t.api.get('/users');
    assert.equal(listed.body.data.length, 2);
    // Search (q or search) over the full name and the email; the filter is never ignored.
    for (const term of ['ana lóp', 'LOPEZ@example', 'Ana', 'ANA LOPEZ']) {
      const found = await t.api.get(`/users?q=${encodeURIComponent(term)}&include_total=true&include_filtered_total=true`);
      assert.deepEqual(found.body.data.map((x: any) => x.id), [u.id], term);
      assert.equal(found.body.meta.total, 2);
      assert.equal(found.body.meta.filtered_total, 1);
    }
    assert.deepEqual((await t.api.get('/users?search=zzzz-nadie')).body.data, []);
  });

  test('users: a taken email (any case, any company) is 409 email_taken, once under 10 concurrent creates; a bad or taken booking_slug is 422', async () => {
    const a = await tenant({});
    const b = await tenant({});
    await updateCompany(app.pool, a.companyId, { maxTeamSize: 50 });
    const email = `dup-${randomBytes(4).toString('hex')}@example.com`;
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).api.post('/users', { data: { email: i % 3 ? email : email.toUpperCase() } })));
    assert.equal(results.filter((r) => r.status === 201).length, 1, JSON.stringify(results.map((r) => r.status)));
    assert.ok(results.filter((r) => r.status !== 201).every((r) => r.status === 409 && r.body.error === 'email_taken'));
    const slug = `slug-${randomBytes(3).toString('hex')}`;
    assert.equal((await a.api.post('/users', { data: { email: `s1-${slug}@example.com`, booking_slug: slug } })).status, 201);
    for (const booking_slug of [slug, 'AB', 'con espacio', 'x'.repeat(65)]) {
      const res = await b.api.post('/users', { data: { email: `s2-${randomBytes(3).toString('hex')}@example.com`, booking_slug } });
      assert.equal(res.status, 422, booking_slug);
      assert.ok(res.body.errors.booking_slug, booking_slug);
    }
  });

  test('names that head emails are one line: a member\'s first/last name and the company name with a line break or a direction override are 422 naming the field', async () => {
    const t = await tenant();
    const member = await t.api.post('/users', { data: { email: `una-linea-${Date.now()}@example.com`, first_name: 'Ana' } });
    assert.equal(member.status, 201, member.text);
    for (const bad of ['Ruiz\nLugar: https://phish.example/pay', 'Ruiz\u2028Nota', 'Ruiz\r\nBcc: x@evil.example', 'Ana\u202e', 'Ana\u0085B']) {
      for (const field of ['first_name', 'last_name']) {
        const res = await t.api.put(`/users/${member.body.data.id}`, { data: { [field]: bad } });
        assert.equal(res.status, 422, `${field} ${JSON.stringify(bad)}`);
        assert.ok(res.body.errors?.[field], `${field}: ${res.text}`);
      }
      const created = await t.api.post('/users', { data: { email: `otra-${Date.now()}@example.com`, last_name: bad } });
      assert.ok(created.status === 422 && created.body.errors?.last_name, created.text);
      const company = await t.api.put('/company', { data: { name: bad } });
      assert.ok(company.status === 422 && company.body.errors?.name, company.text);
    }
    const read = (await t.api.get(`/users/${member.body.data.id}`)).body.data;
    assert.equal(read.first_name, 'Ana', 'nothing refused was stored');
    assert.equal((await t.api.put(`/users/${member.body.data.id}`, { data: { first_name: 'Ana María', last_name: 'Ruiz-Núñez' } })).status, 200);
    assert.equal((await t.api.put('/company', { data: { name: 'Ñandú & Hijos, S.A.' } })).status, 200);
  });

  test('users: a birthdate is a day from 1900 to today (anywhere on Earth): a future one is 422 naming it', async () => {
    const t = await tenant();
    const farthestToday = new Date(Date.now() + 14 * 3_600_000).toISOString().slice(0, 10);
    const dayAfter = new Date(Date.parse(farthestToday) + 86_400_000).toISOString().slice(0, 10);
    for (const birthdate of ['2999-01-01', dayAfter, '1899-12-31']) {
      const res = await t.api.put(`/users/${t.ownerId}`, { data: { birthdate } });
      assert.deepEqual([res.status, res.body.error, Object.keys(res.body.errors ?? {})], [422, 'validation_failed', ['birthdate']], birthdate);
    }
    for (const birthdate of ['1990-05-17', farthestToday, null]) assert.equal((await t.api.put(`/users/${t.ownerId}`, { data: { birthdate } })).status, 200, String(birthdate));
  });

  test('users: the team limit holds under concurrency: 6 parallel creates for 2 free seats give exactly 2', async () => {
    const t = await tenant();
    await updateCompany(app.pool, t.companyId, { maxTeamSize: 3 });
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => t.api.post('/users', { data: { email: `seat-${i}-${randomBytes(3).toString('hex')}@example.com` } })));
    assert.equal(results.filter((r) => r.status === 201).length, 2, JSON.stringify(results.map((r) => r.status)));
    assert.ok(results.filter((r) => r.status !== 201).every((r) => r.status === 422 && r.body.error === 'team_limit_reached'));
    assert.deepEqual((await t.api.get('/company')).body.data.team, { max_team_size: 3, current_team_size: 3, seats_available: 0 });
  });

  test('users: owners, self-delete, removal revokes keys at once and frees the email', async () => {
    const t = await tenant();
    const lastOwner = await t.api.put(`/users/${t.ownerId}`, { data: { is_owner: false } });
    assert.equal(lastOwner.status, 422);
    assert.equal(lastOwner.body.error, 'last_owner');
    const self = await t.api.delete(`/users/${t.ownerId}`);
    assert.equal(self.status, 403);
    assert.equal(self.body.error, 'self_delete_forbidden');
    const email = `baja-${randomBytes(3).toString('hex')}@example.com`;
    const member = (await t.api.post('/users', { data: { email, first_name: 'Baja' } })).body.data;
    const promoted = await t.api.put(`/users/${member.id}`, { data: { is_owner: true, phone: '555' } });
    assert.equal(promoted.body.data.is_owner, true);
    assert.equal(promoted.body.data.phone, '555');
    const memberKey = await issueKey(app.pool, { companyId: t.companyId, userId: member.id, scopes: ['read-customers'] });
    assert.equal((await client(app.baseUrl, memberKey.secret).get('/customers')).status, 200);
    assert.equal((await t.api.delete(`/users/${member.id}`)).status, 204);
    assert.equal((await client(app.baseUrl, memberKey.secret).get('/customers')).status, 401, 'the removed member’s key stops at once');
    assert.equal((await t.api.get(`/users/${member.id}`)).status, 404);
    assert.equal((await t.api.post('/users', { data: { email } })).status, 201, 'a soft-deleted person’s email is free again');
  });

  test('users: only an owner gives or takes is_owner or removes an owner; a member with every users scope cannot make themselves owner', async () => {
    const t = await tenant();
    const ana = (await t.api.post('/users', { data: { email: `ana-${randomBytes(3).toString('hex')}@example.com`, first_name: 'Ana' } })).body.data;
    const bob = (await t.api.post('/users', { data: { email: `bob-${randomBytes(3).toString('hex')}@example.com`, first_name: 'Bob' } })).body.data;
    const anaKey = await issueKey(app.pool, { companyId: t.companyId, userId: ana.id, scopes: ['read-users', 'create-users', 'update-users', 'delete-users'] });
    const asAna = client(app.baseUrl, anaKey.secret);
    const refusals = [
      await asAna.put(`/users/${ana.id}`, { data: { is_owner: true } }),
      await asAna.put(`/users/${bob.id}`, { data: { is_owner: true } }),
      await asAna.put(`/users/${t.ownerId}`, { data: { is_owner: false } }),
      await asAna.post('/users', { data: { email: `eva-${randomBytes(3).toString('hex')}@example.com`, is_owner: true } }),
      await asAna.delete(`/users/${t.ownerId}`),
      // An owner's own fields too: their sign-in email (the way to lock them out), their booking address, their avatar.
      await asAna.put(`/users/${t.ownerId}`, { data: { email: `attacker-${randomBytes(3).toString('hex')}@evil.example` } }),
      await asAna.put(`/users/${t.ownerId}`, { data: { first_name: 'Pwned', booking_slug: `no-el-jefe-${randomBytes(3).toString('hex')}` } }),
      await asAna.delete(`/users/${t.ownerId}/avatar`),
    ];
    for (const res of refusals) assert.deepEqual([res.status, res.body.error], [403, 'owner_required'], res.text);
    const owner = (await t.api.get(`/users/${t.ownerId}`)).body.data;
    assert.notEqual(owner.first_name, 'Pwned');
    assert.doesNotMatch(owner.email, /evil\.example/);
    const owners = (await t.api.get('/users')).body.data.filter((u: any) => u.is_owner).map((u: any) => u.id);
    assert.deepEqual(owners, [t.ownerId], 'nothing changed');
    // What a member may do stays open: others' non-owner fields, a non-owner member's removal, is_owner sent unchanged.
    assert.equal((await asAna.put(`/users/${bob.id}`, { data: { phone: '555', is_owner: false } })).status, 200);
    assert.equal((await asAna.post('/users', { data: { email: `leo-${randomBytes(3).toString('hex')}@example.com`, is_owner: false } })).status, 201);
    assert.equal((await asAna.delete(`/users/${bob.id}`)).status, 204);
    // An owner promotes; then the new owner may demote the first.
    assert.equal((await t.api.put(`/users/${ana.id}`, { data: { is_owner: true } })).body.data.is_owner, true);
    const demoted = await asAna.put(`/users/${t.ownerId}`, { data: { is_owner: false } });
    assert.equal(demoted.status, 200, demoted.text);
    assert.equal(demoted.body.data.is_owner, false);
  });

  test('users: avatar JPEG or PNG only; another company’s member is 404', async () => {
    const t = await tenant();
    const other = await tenant();
    const member = (await t.api.post('/users', { data: { email: `av-${randomBytes(3).toString('hex')}@example.com` } })).body.data;
    const up = await upload(app.baseUrl, t.key, `/users/${member.id}/avatar`, 'avatar', await png(), 'yo.png');
    assert.equal(up.status, 200, JSON.stringify(up.body));
    assert.match(up.body.data.avatar_url, /\/media\/[0-9a-f]{32}\//);
    assert.equal(up.body.data.id, member.id);
    const webp = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#000' } }).webp().toBuffer();
    assert.equal((await upload(app.baseUrl, t.key, `/users/${member.id}/avatar`, 'avatar', webp, 'a.webp')).status, 422);
    // Content that is no image at all is told the slot's formats, not every format images take elsewhere.
    const text = await upload(app.baseUrl, t.key, `/users/${member.id}/avatar`, 'avatar', Buffer.from('hola, no soy imagen'), 'a.png');
    assert.equal(text.status, 422);
    assert.equal(text.body.errors.avatar[0], 'el contenido no es una imagen JPEG o PNG');
    assert.equal((await upload(app.baseUrl, other.key, `/users/${member.id}/avatar`, 'avatar', await png(), 'yo.png')).status, 404);
    // Removed from their last company, the person leaves the service: their photo's public URL stops answering.
    const photo = up.body.data.avatar_url.replace(app.config.siteUrl, app.url);
    assert.equal((await fetch(photo)).status, 200);
    assert.equal((await t.api.delete(`/users/${member.id}`)).status, 204);
    assert.equal((await fetch(photo)).status, 404, 'the avatar of a person gone from the service is not served');
  });

  test('users: a person in two companies: neither changes their own fields (email, name, slug, avatar), only is_owner; the person may; unchanged fields written back are taken', async () => {
    const a = await tenant();
    const b = await tenant();
    await addMembership(app.pool, b.ownerId, a.companyId, false);
    const before = (await b.api.get(`/users/${b.ownerId}`)).body.data;
    for (const data of [{ email: `evil-${randomBytes(3).toString('hex')}@example.com` }, { first_name: 'Pwned' }, { booking_slug: `x-${randomBytes(3).toString('hex')}` }]) {
      const res = await a.api.put(`/users/${b.ownerId}`, { data });
      assert.equal(res.status, 422, JSON.stringify(data));
      assert.equal(res.body.error, 'validation_failed');
      assert.deepEqual(Object.keys(res.body.errors), Object.keys(data));
    }
    assert.equal((await upload(app.baseUrl, a.key, `/users/${b.ownerId}/avatar`, 'avatar', await png(), 'a.png')).status, 422);
    assert.deepEqual((await b.api.get(`/users/${b.ownerId}`)).body.data, before, 'nothing changed');
    // What A read, written back as it was, is no change: taken (a client's read-modify-write of is_owner).
    const seen = (await a.api.get(`/users/${b.ownerId}`)).body.data;
    const back = await a.api.put(`/users/${b.ownerId}`, { data: { email: seen.email, first_name: seen.first_name, last_name: seen.last_name, booking_slug: seen.booking_slug, settings_preferences: seen.settings_preferences } });
    assert.equal(back.status, 200, JSON.stringify(back.body));
    // birthdate is never read, so an unchanged one is not taken: no way to test a guess.
    assert.equal((await b.api.put(`/users/${b.ownerId}`, { data: { birthdate: '1990-01-02' } })).status, 200);
    const guess = await a.api.put(`/users/${b.ownerId}`, { data: { birthdate: '1990-01-02' } });
    assert.equal(guess.status, 422);
    // The membership is company A's own: it may make the person an owner there.
    const seenByB = (await b.api.get(`/users/${b.ownerId}`)).body.data;
    const owner = await a.api.put(`/users/${b.ownerId}`, { data: { is_owner: true } });
    assert.equal(owner.status, 200, JSON.stringify(owner.body));
    assert.equal(owner.body.data.is_owner, true);
    // A's change is A's: its view of the person moves, B's does not (B would see a change not its own, and when A made it).
    assert.ok(owner.body.data.updated_at > seen.updated_at, `${owner.body.data.updated_at} after ${seen.updated_at}`);
    assert.deepEqual((await b.api.get(`/users/${b.ownerId}`)).body.data, seenByB);
    const listed = (await a.api.get('/users?limit=100')).body.data.find((u: { id: string }) => u.id === b.ownerId);
    assert.equal(listed.updated_at, owner.body.data.updated_at, 'the list shows what a read shows');
    // The person, with their own key, changes their own name.
    const self = await b.api.put(`/users/${b.ownerId}`, { data: { first_name: 'Yo' } });
    assert.equal(self.status, 200, JSON.stringify(self.body));
    assert.equal(self.body.data.first_name, 'Yo');
  });
});
