// The public booking page in a real browser (headless Chromium from Debian's
// `chromium` package, driven by playwright-core): a visitor books with the
// keyboard only; the theme follows the visitor's clock (18:59 light, 19:00
// dark, 06:59 dark, 07:00 light) and the toggle is remembered; axe-core finds
// no WCAG 2.2 AA violation in either theme; the booker cancels and
// reschedules through the manage link. Skipped, saying why, when no Chromium
// is installed (.ci/run installs it).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import AxeBuilder from '@axe-core/playwright';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { PUBLIC_READS_PER_MINUTE } from '../api/booking-page/routes.ts';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { browserProblems } from './helpers/browser.ts';
import { newYorkFallBack } from './helpers/dates.ts';
import { waitFor } from './helpers/wait.ts';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM} (apt-get install chromium)`;
const ZONE = 'America/Mexico_City';
const WCAG = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

/** Today's date at -06:00 (the server's slots start from the real now). */
const TODAY = new Date(Date.now() - 6 * 3_600_000).toISOString().slice(0, 10);

/**
 * The browsers' month: next month. A browser's clock is set mid-month in it (PAGE_TODAY, noon) unless a test
 * sets its own, so the grid opens on a month whose every day is free from its 1st (tomorrow at the earliest;
 * the shared link books 730 days ahead), and what a test picks never depends on how much of today, or of
 * this month, is left when it runs (late on a month's last day, the real month has no free day at all).
 */
const PAGE_MONTH = (() => {
  const d = new Date(`${TODAY.slice(0, 7)}-01T12:00:00Z`);
  d.setUTCMonth(d.getUTCMonth() + 1);
  return d.toISOString().slice(0, 7);
})();
const PAGE_TODAY = `${PAGE_MONTH}-15`;
/** Day `n` of the browsers' month. */
const pageDay = (n: number) => `${PAGE_MONTH}-${String(n).padStart(2, '0')}`;

/** The API slot a slot button's label names (its day and start time, in the page's zone). */
function slotNamed(slots: Array<{ starts_at: string }>, label: string): { starts_at: string } {
  const format = (iso: string, options: Intl.DateTimeFormatOptions) => new Intl.DateTimeFormat('es-MX', { timeZone: ZONE, ...options }).format(new Date(iso));
  const slot = slots.find((s) => label.includes(`de ${format(s.starts_at, { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })} a`) && label.includes(format(s.starts_at, { day: 'numeric', month: 'long' })));
  assert.ok(slot, label);
  return slot;
}

describe('public booking page in a browser', { skip }, () => {
  let app: TestApp;
  let tenant: Tenant;
  let browser: Browser;
  let pageUrl: string;
  let linkId: string;
  let n = 0;

  const newContext = (options: { time?: Date; zone?: string } = {}) =>
    browser.newContext({ timezoneId: options.zone ?? ZONE, locale: 'es-MX', extraHTTPHeaders: { 'x-forwarded-for': `203.0.113.${++n}` } }).then(async (context) => {
      await context.clock.setFixedTime(options.time ?? new Date(`${PAGE_TODAY}T12:00:00-06:00`));
      return context;
    });
  const themeOf = (page: Page) => page.evaluate(() => (globalThis as any).document.documentElement.getAttribute('data-theme'));
  const openDays = (page: Page) => page.waitForSelector('#grid button.open');
  /** Day `n` of the browsers' month and the shared link's free slots on it (at least three). */
  const freeDay = async (n: number) => {
    const date = pageDay(n);
    const days = (await client(app.baseUrl, tenant.key).get(`/booking-links/${linkId}/slots?from=${date}&to=${date}&timezone=${ZONE}`)).body.data.days as Array<{ date: string; slots: Array<{ starts_at: string }> }>;
    assert.ok(days.length === 1 && days[0].date === date && days[0].slots.length >= 3, JSON.stringify(days));
    return days[0];
  };
  /** Picks `date` in the page's grid, going to the next month first when it is there. */
  const pickOnPage = async (page: Page, date: string) => {
    await page.waitForSelector('#grid button');
    const shown = await page.$eval('#grid button', (b) => (b as any).dataset.date as string);
    if (shown.slice(0, 7) !== date.slice(0, 7)) await page.click('#next-month');
    await page.locator(`#grid button.open[data-date="${date}"]`).click();
  };
  /** A new page on `publicUrl`, its first open slot chosen and the booker's name and email typed. */
  async function formOf(publicUrl: string, name: string, email: string) {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(publicUrl.replace(/^https?:\/\/[^/]+/, app.url));
    await openDays(page);
    await page.locator('#grid button.open').first().click();
    await page.locator('#slots button').first().click();
    await page.fill('#name', name);
    await page.fill('#email', email);
    return { context, page };
  }

  before(async () => {
    app = await startTestApp({ TRUST_PROXY_HOPS: '1' });
    tenant = await seedTenant(app.pool, { rateLimitPerMinute: 100_000 });
    const hostSlug = `navegador-${Date.now().toString(36)}`;
    await app.pool.query(
      `UPDATE users SET booking_slug = $2, first_name = 'Ana', last_name = 'López',
              settings_preferences = settings_preferences || '{"booking_branding": {"light": {"bg_mode": "linear", "bg_color_from": "#fde68a", "bg_color_to": "#f472b6", "bg_angle": 45}, "dark": {"bg_mode": "radial", "bg_color_from": "#1e1b4b", "bg_color_to": "#000000"}}}'
        WHERE id = $1`,
      [tenant.ownerId, hostSlug],
    );
    const res = await client(app.baseUrl, tenant.key).post('/booking-links', {
      data: {
        user_id: tenant.ownerId,
        slug: 'asesoria',
        title: 'Asesoría',
        duration_minutes: 30,
        timezone: ZONE,
        minimum_notice_minutes: 0,
        booking_window: { type: 'rolling', days: 730 },
        weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' }],
        questions: [{ key: 'motivo', label: 'Motivo de la cita', type: 'text', required: true }],
      },
    });
    assert.equal(res.status, 201, res.text);
    linkId = res.body.data.id;
    pageUrl = `${app.url}/book/${hostSlug}/asesoria`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
  });
  after(async () => {
    await browser?.close();
    await app?.close();
  });

  test('book a slot with the keyboard only; the browser meets no error on the way (no console error, no failed request)', async () => {
    const context = await newContext();
    const page = await context.newPage();
    const problems = browserProblems(page);
    await page.goto(pageUrl);
    await openDays(page);
    // Tab until a day of the grid has focus.
    for (let i = 0; i < 30 && !(await page.evaluate(() => !!(globalThis as any).document.activeElement?.closest('#grid'))); i++) await page.keyboard.press('Tab');
    assert.ok(await page.evaluate(() => !!(globalThis as any).document.activeElement?.closest('#grid')), 'a day of the grid is reachable with Tab');
    // Arrow keys move within the grid; come back and pick the first open day.
    const first = await page.evaluate(() => (globalThis as any).document.activeElement.dataset.date);
    await page.keyboard.press('ArrowRight');
    assert.notEqual(await page.evaluate(() => (globalThis as any).document.activeElement.dataset.date), first);
    await page.keyboard.press('ArrowLeft');
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement.dataset.date), first);
    await page.keyboard.press('Enter');
    // Focus is on the first slot, a button labelled with the whole date and time.
    await page.waitForFunction(() => !!(globalThis as any).document.activeElement?.closest('#slots'));
    const label = await page.evaluate(() => (globalThis as any).document.activeElement!.getAttribute('aria-label'));
    assert.match(label!, /de \d{2}:\d{2} a \d{2}:\d{2} \(America\/Mexico_City\)/);
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => (globalThis as any).document.activeElement?.id === 'name');
    await page.keyboard.type('Visitante Teclado');
    await page.keyboard.press('Tab');
    await page.keyboard.type('teclado@visita.example');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Conocer el servicio');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#done:not([hidden])');
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.id), 'done');
    const { rows } = await app.pool.query(`SELECT booker_name, booker_timezone, answers FROM bookings WHERE booking_link_id = $1 AND booker_email = 'teclado@visita.example'`, [linkId]);
    assert.deepEqual(rows, [{ booker_name: 'Visitante Teclado', booker_timezone: ZONE, answers: { motivo: 'Conocer el servicio' } }]);
    // A favicon asked for and answered 404 was the one before: the page declares an empty icon.
    assert.deepEqual(problems, []);
    await context.close();
  });

  test('the keyboard moves into the next month and keeps the focus on a day', async () => {
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(pageUrl);
    await openDays(page);
    await page.locator('#grid button[tabindex="0"]').focus();
    const focused = () => page.evaluate(() => (globalThis as any).document.activeElement?.dataset?.date ?? (globalThis as any).document.activeElement?.tagName);
    const start = await focused();
    await page.keyboard.press('PageDown');
    await page.waitForFunction((from) => ((globalThis as any).document.activeElement?.dataset?.date ?? '').slice(0, 7) > from.slice(0, 7), start);
    const moved = await focused();
    await page.keyboard.press('ArrowRight');
    await page.waitForFunction((from) => (globalThis as any).document.activeElement?.dataset?.date > from, moved);
    await context.close();
  });

  test('Page Down from the 31st lands on the next month\'s last day, and Page Up from the 31st on the previous month\'s (no month skipped)', async () => {
    // The page opens on the browser's month: January of next year.
    const year = new Date().getUTCFullYear() + 1;
    const february = `${year}-02-${new Date(Date.UTC(year, 2, 0)).getUTCDate()}`;
    const context = await newContext({ time: new Date(`${year}-01-15T18:00:00Z`) });
    const page = await context.newPage();
    await page.goto(pageUrl);
    await page.waitForSelector(`#grid button[data-date="${year}-01-31"]`);
    const focused = () => page.evaluate(() => (globalThis as any).document.activeElement?.dataset?.date);
    const label = () => page.locator('#month-label').textContent();
    await page.locator(`#grid button[data-date="${year}-01-31"]`).focus();
    await page.keyboard.press('PageDown');
    await page.waitForFunction((month) => (globalThis as any).document.activeElement?.dataset?.date?.startsWith(month), `${year}-02`);
    assert.equal(await focused(), february);
    assert.equal(await label(), `febrero de ${year}`);
    await page.click('#next-month');
    await page.waitForSelector(`#grid button[data-date="${year}-03-31"]`);
    await page.locator(`#grid button[data-date="${year}-03-31"]`).focus();
    await page.keyboard.press('PageUp');
    await page.waitForFunction((month) => (globalThis as any).document.activeElement?.dataset?.date?.startsWith(month), `${year}-02`);
    assert.equal(await focused(), february);
    assert.equal(await label(), `febrero de ${year}`);
    await context.close();
  });

  test('a question keyed like a property of the form (length, item) is answered and booked', async () => {
    const made = await client(app.baseUrl, tenant.key).post('/booking-links', {
      data: {
        user_id: tenant.ownerId, slug: `claves-${++n}`, title: 'Claves', duration_minutes: 30, timezone: ZONE, minimum_notice_minutes: 0,
        weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' }],
        questions: [{ key: 'length', label: 'Duración deseada', type: 'text', required: true }, { key: 'item', label: 'Artículo', type: 'text' }],
      },
    });
    assert.equal(made.status, 201, made.text);
    const { context, page } = await formOf(made.body.data.public_url, 'Claves', 'claves@visita.example');
    await page.fill('#q-length', 'Una hora');
    await page.fill('#q-item', 'Silla');
    await page.click('#booking-form button[type=submit]');
    await page.waitForSelector('#done:not([hidden])');
    const { rows } = await app.pool.query(`SELECT answers FROM bookings WHERE booking_link_id = $1`, [made.body.data.id]);
    assert.deepEqual(rows, [{ answers: { length: 'Una hora', item: 'Silla' } }]);
    await context.close();
  });

  test('a required checkbox left unticked is named by its label in the form\'s error, not by its key', async () => {
    const made = await client(app.baseUrl, tenant.key).post('/booking-links', {
      data: {
        user_id: tenant.ownerId, slug: `casilla-${++n}`, title: 'Casilla', duration_minutes: 30, timezone: ZONE, minimum_notice_minutes: 0,
        weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '00:00', end: '24:00' }],
        questions: [{ key: 'acepto', label: 'Acepto las condiciones', type: 'checkbox', required: true }],
      },
    });
    assert.equal(made.status, 201, made.text);
    const { context, page } = await formOf(made.body.data.public_url, 'Casilla', 'casilla@visita.example');
    await page.click('#booking-form button[type=submit]');
    await page.waitForFunction(() => !(globalThis as any).document.getElementById('form-error')?.hidden);
    const text = (await page.textContent('#form-error'))!;
    assert.match(text, /Acepto las condiciones: /);
    assert.doesNotMatch(text, /acepto: /);
    assert.match(text, /[^.]\.$/, `one period at its end, none doubled: ${text}`);
    assert.doesNotMatch(text, /\.;/, text);
    await context.close();
  });

  test('slots that cannot be loaded (the address is over its read limit) are said so, not shown as a fully booked month', async () => {
    const address = `198.51.100.${++n}`;
    // The page's reads are limited per address: all but one spent first, as on a busy shared network;
    // the page takes the last one and its slots request is refused.
    for (let i = 0; i < PUBLIC_READS_PER_MINUTE - 1; i++) {
      const res = await fetch(`${pageUrl}/slots?from=${TODAY}&to=${TODAY}`, { headers: { 'x-forwarded-for': address } });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    }
    const context = await browser.newContext({ timezoneId: ZONE, locale: 'es-MX', extraHTTPHeaders: { 'x-forwarded-for': address } });
    const page = await context.newPage();
    assert.equal((await page.goto(pageUrl))?.status(), 200);
    await page.waitForFunction(() => !/Buscando/.test((globalThis as any).document.getElementById('slots-status')?.textContent ?? ''));
    const status = (await page.textContent('#slots-status'))!;
    assert.doesNotMatch(status, /No hay horarios libres/);
    assert.match(status, /^Se hicieron demasiadas consultas desde tu red; vuelve a intentarlo en \d+ segundos\.$/);
    await context.close();
  });

  test('a day picked in one month is not shown as a day without times once another month loads (Enter while it loads, or the month buttons)', async () => {
    const year = new Date().getUTCFullYear() + 1;
    const context = await newContext({ time: new Date(`${year}-01-15T18:00:00Z`) });
    const page = await context.newPage();
    // February's slots are held until Enter has been pressed on the month still on screen (a slow phone).
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route(`**/slots?from=${year}-02-01*`, async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(pageUrl);
    await page.waitForSelector(`#grid button.open[data-date="${year}-01-31"]`);
    const status = () => page.evaluate(() => (globalThis as any).document.getElementById('slots-status')?.textContent ?? '');
    await page.locator(`#grid button[data-date="${year}-01-31"]`).focus();
    const february = page.waitForResponse((res) => res.url().includes(`from=${year}-02-01`));
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('Enter');
    release();
    await february;
    await page.waitForFunction((day) => (globalThis as any).document.activeElement?.dataset?.date === day, `${year}-02-01`);
    await page.waitForFunction(() => !/Buscando/.test((globalThis as any).document.getElementById('slots-status')?.textContent ?? ''));
    assert.equal(await status(), 'Elige un día con horarios.');
    assert.equal(await page.$$eval('#slots button', (b) => b.length), 0);
    // A day picked, then the next month's button: that month asks for a day again.
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => !!(globalThis as any).document.activeElement?.closest('#slots'));
    assert.match(await status(), /^\d+ horarios el \S+, 1 de febrero$/);
    await page.click('#next-month');
    await page.waitForSelector(`#grid button[data-date="${year}-03-01"]`);
    await page.waitForFunction(() => !/Buscando/.test((globalThis as any).document.getElementById('slots-status')?.textContent ?? ''));
    assert.equal(await status(), 'Elige un día con horarios.');
    await context.close();
  });

  test('a month whose slots come back after the next one was asked for is not drawn over it', async () => {
    const context = await newContext();
    const page = await context.newPage();
    const first = (offset: number) => {
      const d = new Date(`${PAGE_MONTH}-01T00:00:00Z`);
      d.setUTCMonth(d.getUTCMonth() + offset);
      return d.toISOString().slice(0, 10);
    };
    // Next month's answer is held until the month after's has come: it arrives last, whatever the load.
    let releaseLate!: () => void;
    const held = new Promise<void>((resolve) => (releaseLate = resolve));
    await page.route(`**/slots?from=${first(1)}*`, async (route) => {
      await held;
      await route.continue();
    });
    await page.goto(pageUrl);
    await openDays(page);
    const late = page.waitForResponse((res) => res.url().includes(`from=${first(1)}`));
    const later = page.waitForResponse((res) => res.url().includes(`from=${first(2)}`));
    await page.click('#next-month');
    await page.click('#next-month');
    await later;
    releaseLate();
    await late;
    await page.waitForFunction(() => !/Buscando/.test((globalThis as any).document.getElementById('slots-status')?.textContent ?? ''));
    const label = (await page.textContent('#month-label'))!;
    const expected = new Intl.DateTimeFormat('es-MX', { timeZone: 'UTC', month: 'long', year: 'numeric' }).format(new Date(`${first(2)}T00:00:00Z`));
    assert.equal(label, expected);
    assert.ok((await page.$$('#grid button.open')).length > 0, 'the month on screen shows its own open days');
    await context.close();
  });

  test("the theme follows the visitor's clock: 18:59 light, 19:00 dark, 06:59 dark, 07:00 light", async () => {
    for (const [time, theme] of [['18:59', 'light'], ['19:00', 'dark'], ['06:59', 'dark'], ['07:00', 'light']] as const) {
      const context = await newContext({ time: new Date(`${PAGE_TODAY}T${time}:00-06:00`) });
      const page = await context.newPage();
      await page.goto(pageUrl);
      assert.equal(await themeOf(page), theme, time);
      await context.close();
    }
  });

  test('the toggle switches the theme and the choice survives a reload', async () => {
    const context = await newContext({ time: new Date(`${PAGE_TODAY}T12:00:00-06:00`) });
    const page = await context.newPage();
    await page.goto(pageUrl);
    assert.equal(await themeOf(page), 'light');
    await page.click('#theme-toggle');
    assert.equal(await themeOf(page), 'dark');
    assert.equal(await page.getAttribute('#theme-toggle', 'aria-pressed'), 'true');
    assert.equal(await page.textContent('#theme-toggle'), 'Modo oscuro', 'a toggle keeps its name; its pressed state says which theme is on');
    await page.reload();
    assert.equal(await themeOf(page), 'dark');
    await context.close();
  });

  // One test per theme: four axe runs in one test took past the suite's 2-minute bound on a loaded machine.
  for (const [theme, time] of [['light', '12:00'], ['dark', '21:00']]) {
    test(`axe-core: no WCAG 2.2 AA violation in the ${theme} theme, with the days and slots shown`, async () => {
      const context: BrowserContext = await newContext({ time: new Date(`${PAGE_TODAY}T${time}:00-06:00`) });
      const page = await context.newPage();
      await page.goto(pageUrl);
      await openDays(page);
      await page.click('#grid button.open');
      await page.waitForSelector('#slots button');
      assert.equal(await themeOf(page), theme);
      const result = await new AxeBuilder({ page }).withTags(WCAG).analyze();
      assert.ok(result.passes.some((rule) => rule.id === 'color-contrast'), 'axe checked the contrast');
      assert.deepEqual(result.violations.map((v) => `${v.id}: ${v.nodes.map((node) => node.target.join(' ')).join(', ')}`), [], `theme ${theme}`);
      await page.locator('#slots button').first().click();
      const withForm = await new AxeBuilder({ page }).withTags(WCAG).analyze();
      assert.deepEqual(withForm.violations.map((v) => v.id), [], 'with the form open');
      if (process.env.BOOKING_SCREENSHOTS) await page.screenshot({ path: `${process.env.BOOKING_SCREENSHOTS}/booking-${time.slice(0, 2)}.png`, fullPage: true });
      await context.close();
    });
  }

  /** The slot buttons' texts (white space as one space) of a link's day, seen from New York at `now`. */
  async function slotTimesInNewYork(slug: string, date: string, now: Date): Promise<string[]> {
    const context = await newContext({ zone: 'America/New_York', time: now });
    const page = await context.newPage();
    await page.goto(pageUrl.replace(/asesoria$/, slug));
    await page.click(`#grid button[data-date="${date}"]`);
    await page.waitForSelector('#slots button');
    const times = (await page.locator('#slots button').allTextContents()).map((t) => t.replace(/\s+/g, ' '));
    await context.close();
    return times;
  }

  /** A New York link open on Sundays from `start` to `end`, its window the autumn change `yearsAhead` years on (each test its own year: their bookings share this host's agenda). */
  async function autumnLink(slug: string, yearsAhead: number, start: string, end: string) {
    const change = newYorkFallBack(yearsAhead);
    const link = await client(app.baseUrl, tenant.key).post('/booking-links', {
      data: { user_id: tenant.ownerId, slug, title: slug, duration_minutes: 30, timezone: 'America/New_York', minimum_notice_minutes: 0,
        weekly_hours: [{ days: [7], start, end }], booking_window: change.window },
    });
    assert.equal(link.status, 201, link.text);
    return { change, id: link.body.data.id as string };
  }

  test('autumn\'s repeated hour: each time carries its UTC offset, also once one of the repeated slots is booked', async () => {
    const api = client(app.baseUrl, tenant.key);
    // New York sets its clocks back at 02:00 on the first Sunday of November: 01:00–02:00 happens twice.
    const { change, id } = await autumnLink('otono', 1, '00:00', '03:00');
    // The first 01:00 (EDT, 05:00Z) is taken: the times left no longer repeat in pairs.
    const made = await api.post('/bookings', { data: { booking_link_id: id, starts_at: change.at('05:00'), booker: { name: 'Otro', email: 'otro@visita.example' } } });
    assert.equal(made.status, 201, made.text);
    const times = await slotTimesInNewYork('otono', change.date, change.monthStart);
    const repeated = times.filter((t) => t.startsWith('01:30'));
    assert.equal(repeated.length, 2, times.join(' | '));
    assert.deepEqual(repeated.sort(), ['01:30 GMT-4', '01:30 GMT-5'], times.join(' | '));
  });

  test('autumn\'s repeated hour: the offsets stay once every slot of the first pass of that hour is booked', async () => {
    const api = client(app.baseUrl, tenant.key);
    // A year after the test above (its booking holds this host's night of that year).
    const { change, id } = await autumnLink('otono-lleno', 2, '01:00', '04:00');
    // 01:00 and 01:30 EDT (05:00Z, 05:30Z) and 01:30 EST (06:30Z) taken: every time left is EST, the first one 01:00 EST.
    for (const starts_at of [change.at('05:00'), change.at('05:30'), change.at('06:30')]) {
      const made = await api.post('/bookings', { data: { booking_link_id: id, starts_at, booker: { name: 'Otro', email: 'otro@visita.example' } } });
      assert.equal(made.status, 201, made.text);
    }
    const times = await slotTimesInNewYork('otono-lleno', change.date, change.monthStart);
    assert.equal(times[0], '01:00 GMT-5', times.join(' | '));
    assert.ok(times.every((t) => / GMT-5$/.test(t)), times.join(' | '));
  });

  test('autumn\'s repeated hour: the confirmation and the manage page give the booked time with its offset, as its button did', async () => {
    // New York's repeated hour in a year the tests above leave free on this host's agenda.
    const { change, id } = await autumnLink('otono-confirmado', 3, '00:00', '03:00');
    const context = await newContext({ zone: 'America/New_York', time: change.monthStart });
    const page = await context.newPage();
    await page.goto(pageUrl.replace(/asesoria$/, 'otono-confirmado'));
    await page.click(`#grid button[data-date="${change.date}"]`);
    await page.locator('#slots button', { hasText: '01:30 GMT-5' }).click();
    await page.fill('#name', 'Segunda Pasada');
    await page.fill('#email', 'segunda@visita.example');
    await page.click('#booking-form button[type=submit]');
    await page.waitForSelector('#done:not([hidden])');
    assert.match((await page.textContent('#done-text'))!.replace(/\s+/g, ' '), /01:30 GMT-5 \(America\/New_York\)/);
    const { rows } = await app.pool.query(`SELECT starts_at FROM bookings WHERE booking_link_id = $1`, [id]);
    assert.deepEqual(rows.map((r) => r.starts_at.toISOString()), [change.at('06:30').replace('Z', '.000Z')], 'the second 01:30 (EST) was booked');
    await page.goto((await page.getAttribute('#manage-link', 'href'))!);
    await page.waitForSelector('#when');
    assert.match((await page.textContent('#when'))!.replace(/\s+/g, ' '), /de 01:30 GMT-5 a 02:00 GMT-5 \(America\/New_York\)/);
    await context.close();
  });

  test('a slot taken while the form was open: the 409 is said, focused, and nothing is confirmed until another slot is chosen', async () => {
    const api = client(app.baseUrl, tenant.key);
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(pageUrl);
    const day = await freeDay(2);
    await pickOnPage(page, day.date);
    const slot = page.locator('#slots button').nth(3);
    const label = (await slot.getAttribute('aria-label'))!;
    await slot.click();
    await page.fill('#name', 'Tarde');
    await page.fill('#email', 'tarde@visita.example');
    await page.fill('#q-motivo', 'x');
    // Someone else takes it meanwhile.
    const taken = slotNamed(day.slots, label);
    assert.equal((await api.post('/bookings', { data: { booking_link_id: linkId, starts_at: taken.starts_at, booker: { name: 'Rápido', email: 'rapido@visita.example' }, answers: { motivo: 'x' } } })).status, 201);
    await page.click('#booking-form button[type=submit]');
    await page.waitForFunction(() => /ya no está disponible/.test((globalThis as any).document.getElementById('form-error')?.textContent ?? ''));
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.id), 'form-error');
    assert.match((await page.textContent('#chosen'))!, /elige otro/);
    assert.equal(await page.locator('#booking-form button[type=submit]').isDisabled(), true);
    await context.close();
  });

  test('the manage link: a new time taken meanwhile is said in an alert that takes the focus, and cannot be confirmed again', async () => {
    const api = client(app.baseUrl, tenant.key);
    // Booked at a day's first free time; the page offers that time too (a booking's own counts as free), so
    // the third time it lists is another.
    const day = await freeDay(3);
    const slots = day.slots;
    const made = await api.post('/bookings', { data: { booking_link_id: linkId, starts_at: slots[0].starts_at, booker: { name: 'Mover', email: 'mover@visita.example', timezone: ZONE }, answers: { motivo: 'x' } } });
    assert.equal(made.status, 201, made.text);
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(made.body.data.manage_url);
    await pickOnPage(page, day.date);
    const slot = page.locator('#slots button').nth(2);
    const label = (await slot.getAttribute('aria-label'))!;
    await slot.click();
    const taken = slotNamed(slots, label);
    assert.equal((await api.post('/bookings', { data: { booking_link_id: linkId, starts_at: taken.starts_at, booker: { name: 'Antes', email: 'antes@visita.example' }, answers: { motivo: 'x' } } })).status, 201);
    await page.click('#resched-confirm');
    await page.waitForFunction(() => (globalThis as any).document.activeElement?.id === 'manage-error');
    assert.match((await page.textContent('#manage-error'))!, /ya no está disponible/);
    assert.match((await page.textContent('#resched-chosen'))!, /elige otro/);
    assert.equal(await page.locator('#resched-confirm').isDisabled(), true);
    await context.close();
  });

  test('a long word in a title or a description wraps on a phone\'s width instead of widening the page', async () => {
    const long = await client(app.baseUrl, tenant.key).post('/booking-links', {
      data: { user_id: tenant.ownerId, slug: 'larga', title: 'W'.repeat(200), description: 'x'.repeat(400), duration_minutes: 30, timezone: ZONE, minimum_notice_minutes: 0, weekly_hours: [{ days: [1, 2, 3, 4, 5, 6, 7], start: '09:00', end: '17:00' }] },
    });
    assert.equal(long.status, 201, long.text);
    const context = await newContext();
    const page = await context.newPage();
    await page.setViewportSize({ width: 360, height: 740 });
    for (const url of [pageUrl.replace(/\/asesoria$/, '/larga'), pageUrl.replace(/\/asesoria$/, '')]) {
      await page.goto(url);
      const [scroll, client] = await page.evaluate(() => [(globalThis as any).document.documentElement.scrollWidth, (globalThis as any).document.documentElement.clientWidth]);
      assert.ok(scroll <= client, `${url}: ${scroll} px of content in ${client} px`);
    }
    await context.close();
  });

  test('the manage link: reschedule to another slot, then cancel with a reason', async () => {
    const api = client(app.baseUrl, tenant.key);
    // Booked at a day's first free time; the third time the page lists that day is another.
    const day = await freeDay(4);
    const made = await api.post('/bookings', { data: { booking_link_id: linkId, starts_at: day.slots[0].starts_at, booker: { name: 'Gestor', email: 'gestor@visita.example', timezone: ZONE }, answers: { motivo: 'x' } } });
    assert.equal(made.status, 201, made.text);
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(made.body.data.manage_url);
    await page.waitForSelector('#when');
    assert.match((await page.textContent('#when'))!, /America\/Mexico_City/);
    await pickOnPage(page, day.date);
    const target = page.locator('#slots button').nth(2);
    await target.click();
    await page.click('#resched-confirm');
    await page.waitForURL((url) => url.toString() !== made.body.data.manage_url);
    const moved = await waitFor(async () => {
      const { rows } = await app.pool.query(`SELECT id, status FROM bookings WHERE rescheduled_from_id = $1`, [made.body.data.id]);
      return rows[0];
    }, 10_000, 'the new booking');
    assert.equal(moved.status, 'confirmed');
    // The new booking's page says what happened, as a cancel does, with focus on its heading; the hash that told it is gone.
    await page.waitForFunction(() => /reprogramada/.test((globalThis as any).document.getElementById('manage-status')?.textContent ?? ''));
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.id), 'booking-title');
    assert.equal(new URL(page.url()).hash, '');
    await page.fill('#reason', 'Cambio de planes');
    // A double click sends one cancel: the second had answered 409 and its error showed beside the success.
    const cancels: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith('/cancel')) cancels.push(request.url());
    });
    await page.dblclick('#cancel-form button[type=submit]');
    await page.waitForFunction(() => /cancelada/.test((globalThis as any).document.getElementById('manage-status')?.textContent ?? ''));
    assert.equal(cancels.length, 1, cancels.join(' '));
    assert.equal(await page.isHidden('#manage-error'), true, 'no error beside the success');
    assert.equal(await page.evaluate(() => (globalThis as any).document.activeElement?.id), 'booking-title', 'focus on the heading that now says so');
    const { rows } = await app.pool.query('SELECT status, cancelled_by, cancellation_reason FROM bookings WHERE id = $1', [moved.id]);
    assert.deepEqual(rows[0], { status: 'cancelled', cancelled_by: 'booker', cancellation_reason: 'Cambio de planes' });
    await context.close();
  });
});
