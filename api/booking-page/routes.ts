// The public booking page under /book (DESIGN.md URL layout): no login.
//
//   GET  /book/<booking_slug>                         the host's page: their active links (HTML)
//   GET  /book/<booking_slug>/<link_slug>             the page (HTML)
//   GET  /book/<booking_slug>/<link_slug>/slots       free slots (JSON, as GET /booking-links/:id/slots)
//   POST /book/<booking_slug>/<link_slug>/bookings    book (JSON {data: {starts_at, booker, answers}}; Idempotency-Key)
//   GET  /book/manage/<token>                         the booker's manage page (HTML)
//   GET  /book/manage/<token>/slots                   slots for a reschedule (the booking's own time free)
//   POST /book/manage/<token>/cancel | /reschedule    (JSON)
//   GET  /book/assets/booking.js                      the page's script
//
// Every endpoint is rate-limited per client address; unknown and inactive
// links, and unknown tokens, answer a 404 page (JSON endpoints: 404
// not_found). Answers show the visitor their own booking only: no lead, no
// other booking, no internal ids beyond the booking's.
import { randomBytes, createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Router from '@koa/router';
import { HttpMethodEnum, koaBody } from 'koa-body';
import { z } from 'zod';
import { instant } from '../date-fields.ts';
import { findBookingLink, findPublicBookingLink, findPublicBookingLinks, type BookingLinkRow } from '../routes/booking-link-queries.ts';
import { slotList } from '../bookings/slots.ts';
import { LINK_SLUG, slotQuery } from '../routes/booking-link-schemas.ts';
import { BOOKING_SLUG } from '../routes/user-schemas.ts';
import { findBooking, findBookingByTokenDigest, type BookingRow } from '../routes/booking-queries.ts';
import { hostOf } from './queries.ts';
import { answers as answersSchema, bookingCancel, booker as bookerSchema } from '../routes/booking-schemas.ts';
import { cancelBooking, createBooking, rescheduleBooking } from '../bookings/book.ts';
import { manageUrl, MANAGE_TOKEN, tokenDigest } from '../../lib/booking-tokens.ts';
import { companyZone } from '../../db/companies.ts';
import { iso } from '../../db/timestamps.ts';
import type { Queryable } from '../../db/pool.ts';
import { ApiError } from '../errors.ts';
import { canonicalJson, checkKeyShape, IDEMPOTENCY_BODY_LIMIT, runIdempotent } from '../middleware/idempotency.ts';
import { consumeLimit, withinPageLimit } from '../middleware/rate-limit.ts';
import { jsonContentType } from '../middleware/body.ts';
import { parseData, parseQuery } from '../validation.ts';
import type { ApiContext, ApiContextExtension, ApiRouter, ApiState, Deps } from '../types.ts';
import { bookingPage, hostPage, managePage, notFoundPage, tooManyRequestsPage, type PageHost } from './html.ts';

/** Requests per minute per client address: reads (page, slots) and writes (book, cancel, reschedule). */
export const PUBLIC_READS_PER_MINUTE = 120;
export const PUBLIC_WRITES_PER_MINUTE = 10;

const SCRIPT = readFileSync(new URL('./assets/booking.js', import.meta.url));
const SCRIPT_ETAG = `"${createHash('sha256').update(SCRIPT).digest('hex').slice(0, 32)}"`;

const publicBookingCreate = z.strictObject({ starts_at: instant, booker: bookerSchema, answers: answersSchema.optional() });
const publicReschedule = z.strictObject({ starts_at: instant });

const json = koaBody({ json: true, multipart: false, urlencoded: false, text: false, jsonLimit: '32kb', includeUnparsed: true, parsedMethods: [HttpMethodEnum.POST] });

function securityHeaders(ctx: ApiContext, nonce: string): void {
  ctx.set('Content-Security-Policy', `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src 'self' https: data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`);
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Cache-Control', 'no-store');
}

function html(ctx: ApiContext, status: number, render: (nonce: string) => string): void {
  const nonce = randomBytes(16).toString('base64');
  securityHeaders(ctx, nonce);
  ctx.status = status;
  ctx.type = 'text/html; charset=utf-8';
  ctx.body = render(nonce);
}

/** The slots as the API answers them, without the link's id (a visitor sees no internal id but their booking's). */
function publicSlots<T extends { booking_link_id?: unknown }>(slots: T): Omit<T, 'booking_link_id'> {
  const { booking_link_id: _internal, ...rest } = slots;
  return rest;
}

/** The visitor's view of their booking: what they typed and when, nothing of the company's. */
function publicView(row: BookingRow, manage?: string) {
  return {
    id: row.id,
    status: row.status,
    title: row.title,
    starts_at: iso(row.starts_at)!,
    ends_at: iso(row.ends_at)!,
    booker: { name: row.booker_name, email: row.booker_email, timezone: row.booker_timezone },
    location: row.location ? { type: row.location.type, value: row.location.value ?? null } : null,
    meet_url: row.meet_url,
    ...(manage ? { manage_url: manage } : {}),
  };
}

/** The link of a public URL, or null (unknown, or inactive: a 404 either way). */
async function activeLink(db: Queryable, hostSlug: string, linkSlug: string): Promise<BookingLinkRow | null> {
  if (!BOOKING_SLUG.test(hostSlug) || !LINK_SLUG.test(linkSlug)) return null;
  const link = await findPublicBookingLink(db, hostSlug, linkSlug);
  return link && link.active ? link : null;
}

/** The booking a manage token names, followed to the newest of its reschedules. */
async function bookingOfToken(db: Queryable, token: string): Promise<{ booking: BookingRow; newest: boolean } | null> {
  if (!MANAGE_TOKEN.test(token)) return null;
  const found = await findBookingByTokenDigest(db, tokenDigest(token));
  if (!found) return null;
  let booking = found;
  for (let hops = 0; booking.rescheduled_to_id && hops < 50; hops++) {
    const next = await findBooking(db, booking.company_id, booking.rescheduled_to_id);
    if (!next) break;
    booking = next;
  }
  return { booking, newest: booking.id === found.id };
}

/**
 * A visitor's Idempotency-Key that cannot be used (its shape, or a body too large to keep) is refused
 * before the request is looked at, as the API's idempotency middleware does: called first by every
 * write that takes one.
 */
function checkIdempotencyKey(ctx: ApiContext): void {
  if (ctx.headers['idempotency-key'] === undefined) return;
  checkKeyShape(ctx);
  const raw = (ctx.request as { rawBody?: string }).rawBody;
  if (typeof raw === 'string' && Buffer.byteLength(raw) > IDEMPOTENCY_BODY_LIMIT) throw new ApiError('idempotency_body_too_large');
}

/**
 * A meeting that has taken place is history: the booker's manage link no longer cancels it (which
 * would delete the host's calendar event of it and mail both) or moves it. The host still can, by
 * the API (a no-show, a correction). As Calendly and Cal.com decide.
 */
function bookingEnded(booking: { ends_at: Date | string }): boolean {
  return new Date(booking.ends_at).getTime() <= Date.now();
}

/** The manage link's writes on a booking that has ended: 409 booking_ended (booking_cancelled if it was). */
function refuseEnded(booking: { ends_at: Date | string; status: string }): void {
  if (bookingEnded(booking)) throw new ApiError(booking.status === 'confirmed' ? 'booking_ended' : 'booking_cancelled');
}

/** Runs a public write under the visitor's Idempotency-Key (scope booking_page of the link's company, the visitor's own by their address), or directly without one. */
async function idempotent(ctx: ApiContext, companyId: string, run: (db: Queryable) => Promise<void>): Promise<void> {
  if (ctx.headers['idempotency-key'] === undefined) return run(ctx.deps.pool);
  checkIdempotencyKey(ctx);
  const fingerprint = createHash('sha256').update(canonicalJson(ctx.request.body ?? null)).digest('hex');
  await runIdempotent(ctx, fingerprint, (db) => run(db), { companyId, scope: 'booking_page', visitor: ctx.ip });
}

/**
 * BOOKING_URL on a host of its own (`https://book.example`, README): a
 * request to that host is the booking page's, `/<slug>/<link>` served as
 * `/book/<slug>/<link>`, so the links the service hands out (`public_url`,
 * `manage_url`, emails) work when that host simply points at this process.
 * The pages' own requests (`/book/assets/...`, `/book/.../slots`) pass as they are.
 * Null when BOOKING_URL is on SITE_URL's host (the default, `SITE_URL/book`).
 */
export function bookingHostMiddleware(config: Deps['config']): ((ctx: ApiContext, next: () => Promise<void>) => Promise<void>) | null {
  const booking = new URL(config.bookingUrl);
  if (booking.host === new URL(config.siteUrl).host) return null;
  const prefix = booking.pathname.replace(/\/$/, '');
  return async function bookingHost(ctx, next) {
    if (ctx.host === booking.host && !ctx.path.startsWith('/book/') && (prefix === '' || ctx.path.startsWith(`${prefix}/`))) {
      ctx.path = `/book${ctx.path.slice(prefix.length)}`;
    }
    await next();
  };
}

export function bookingPageRouter(deps: Deps): ApiRouter {
  const router: ApiRouter = new Router<ApiState, ApiContextExtension>({ prefix: '/book' });
  const reads = (ctx: ApiContext) => consumeLimit(ctx, `book-read:${ctx.ip}`, PUBLIC_READS_PER_MINUTE);
  /** The reads of a page a person opens: over the limit, a page that says so (429, Retry-After), not the API's JSON. */
  const pageReads = (ctx: ApiContext) => withinPageLimit(ctx, reads, (seconds) => html(ctx, 429, (nonce) => tooManyRequestsPage(nonce, seconds)));
  const writes = (ctx: ApiContext) => consumeLimit(ctx, `book-write:${ctx.ip}`, PUBLIC_WRITES_PER_MINUTE);
  const bookingDeps = { jobs: deps.jobs, config: deps.config };

  router.get('/assets/booking.js', async (ctx) => {
    ctx.set('ETag', SCRIPT_ETAG);
    ctx.set('Cache-Control', 'public, max-age=300');
    if (ctx.get('If-None-Match') === SCRIPT_ETAG) {
      ctx.status = 304;
      return;
    }
    ctx.type = 'text/javascript; charset=utf-8';
    ctx.body = SCRIPT;
  });

  router.get('/manage/:token', async (ctx) => {
    if (!(await pageReads(ctx))) return;
    const found = await bookingOfToken(deps.pool, ctx.params.token);
    if (!found) return html(ctx, 404, notFoundPage);
    if (!found.newest) {
      // An old link of a rescheduled booking leads to the booking as it is now.
      ctx.redirect(manageUrl(deps.config.bookingUrl, deps.config.bookingTokenKey, found.booking.id));
      return;
    }
    const b = found.booking;
    const host = await hostOf(deps.pool, b.company_id, b.user_id);
    const link = b.booking_link_id ? await findBookingLink(deps.pool, b.company_id, b.booking_link_id) : null;
    // The link's zone now, else the one kept with the booking (its link deleted), else the company's.
    const linkTimezone = link?.timezone ?? b.link_timezone ?? (await companyZone(deps.pool, b.company_id));
    html(ctx, 200, (nonce) =>
      managePage({
        nonce,
        branding: host.branding ?? {},
        host: host as PageHost,
        token: ctx.params.token,
        linkTimezone,
        canReschedule: !!link?.active,
        booking: {
          status: b.status,
          title: b.title,
          starts_at: iso(b.starts_at)!,
          ends_at: iso(b.ends_at)!,
          booker_name: b.booker_name,
          booker_timezone: b.booker_timezone,
          location: b.location ? { type: b.location.type, value: b.location.value ?? null } : null,
          meet_url: b.meet_url,
          cancelled: b.status !== 'confirmed',
          ended: bookingEnded(b),
        },
      }),
    );
  });

  router.get('/manage/:token/slots', async (ctx) => {
    await reads(ctx);
    const found = await bookingOfToken(deps.pool, ctx.params.token);
    const b = found?.booking;
    if (b) {
      // Times are offered only to a booking that can still be moved: as its reschedule would answer.
      if (b.status !== 'confirmed') throw new ApiError('booking_cancelled');
      refuseEnded(b);
    }
    const link = b?.booking_link_id ? await findBookingLink(deps.pool, b.company_id, b.booking_link_id) : null;
    if (!b || !link || !link.active) throw new ApiError('not_found');
    ctx.body = { data: publicSlots(await slotList(deps.pool, link, parseQuery(slotQuery, ctx.query, ctx.querystring), { ignoreBookingId: b.id })) };
  });

  router.post('/manage/:token/cancel', jsonContentType, json, async (ctx) => {
    await writes(ctx);
    checkIdempotencyKey(ctx);
    const found = await bookingOfToken(deps.pool, ctx.params.token);
    if (!found) throw new ApiError('not_found');
    const input = ctx.request.body && Object.keys(ctx.request.body).length ? parseData(bookingCancel, ctx.request.body) : {};
    refuseEnded(found.booking);
    // Under a key, a retry after a lost answer replays the 200 rather than meeting 409 booking_cancelled.
    await idempotent(ctx, found.booking.company_id, async (db) => {
      const row = await cancelBooking(db, bookingDeps, found.booking.company_id, found.booking.id, 'booker', input.reason ?? null);
      ctx.body = { data: publicView(row) };
    });
  });

  router.post('/manage/:token/reschedule', jsonContentType, json, async (ctx) => {
    await writes(ctx);
    checkIdempotencyKey(ctx);
    const found = await bookingOfToken(deps.pool, ctx.params.token);
    if (!found) throw new ApiError('not_found');
    const input = parseData(publicReschedule, ctx.request.body);
    refuseEnded(found.booking);
    await idempotent(ctx, found.booking.company_id, async (db) => {
      const { booking, manageUrl: url } = await rescheduleBooking(db, bookingDeps, found.booking.company_id, found.booking.id, {
        startsAt: input.starts_at,
        by: 'booker',
        reason: null,
      });
      ctx.status = 201;
      ctx.state.withheld = ['manage_url'];
      ctx.body = { data: publicView(booking, url) };
    });
  });

  router.get('/:host', async (ctx) => {
    if (!(await pageReads(ctx))) return;
    const hostSlug = ctx.params.host;
    const links = BOOKING_SLUG.test(hostSlug) ? await findPublicBookingLinks(deps.pool, hostSlug) : [];
    if (!links.length) return html(ctx, 404, notFoundPage);
    // A person in two companies lists both's links: a logo brands the page only when they are one company's.
    const companies = new Set(links.map((l) => l.company_id));
    const host = await hostOf(deps.pool, companies.size === 1 ? links[0].company_id : null, links[0].user_id);
    html(ctx, 200, (nonce) =>
      hostPage({
        nonce,
        branding: host.branding ?? {},
        host: host as PageHost,
        hostSlug,
        links: links.map((l) => ({ slug: l.slug, title: l.title, description: l.description, duration_minutes: l.duration_minutes, location: l.location ? { type: l.location.type, value: l.location.value ?? null } : null })),
      }),
    );
  });

  router.get('/:host/:link', async (ctx) => {
    if (!(await pageReads(ctx))) return;
    const link = await activeLink(deps.pool, ctx.params.host, ctx.params.link);
    if (!link) return html(ctx, 404, notFoundPage);
    const host = await hostOf(deps.pool, link.company_id, link.user_id);
    const base = `/book/${ctx.params.host}/${ctx.params.link}`;
    html(ctx, 200, (nonce) =>
      bookingPage({
        nonce,
        branding: host.branding ?? {},
        host: host as PageHost,
        link: {
          title: link.title,
          description: link.description,
          duration_minutes: link.duration_minutes,
          location: link.location ? { type: link.location.type, value: link.location.value ?? null } : null,
          questions: link.questions.map((q) => ({ key: q.key, label: q.label, type: q.type, required: q.required ?? false, options: q.options ?? null })),
          timezone: link.timezone,
        },
        slotsUrl: `${base}/slots`,
        bookUrl: `${base}/bookings`,
      }),
    );
  });

  router.get('/:host/:link/slots', async (ctx) => {
    await reads(ctx);
    const link = await activeLink(deps.pool, ctx.params.host, ctx.params.link);
    if (!link) throw new ApiError('not_found');
    ctx.body = { data: publicSlots(await slotList(deps.pool, link, parseQuery(slotQuery, ctx.query, ctx.querystring))) };
  });

  router.post('/:host/:link/bookings', jsonContentType, json, async (ctx) => {
    await writes(ctx);
    checkIdempotencyKey(ctx);
    const link = await activeLink(deps.pool, ctx.params.host, ctx.params.link);
    if (!link) throw new ApiError('not_found');
    const input = parseData(publicBookingCreate, ctx.request.body);
    await idempotent(ctx, link.company_id, async (db) => {
      const { booking, manageUrl: url } = await createBooking(db, bookingDeps, link.company_id, {
        linkId: link.id,
        startsAt: input.starts_at,
        booker: input.booker,
        answers: input.answers,
      }).catch((error) => {
        // Switched off between the lookup above and the booking's lock (its host removed meanwhile):
        // the page's answer for an inactive link, as the lookup would have given a moment later.
        if (error instanceof ApiError && error.code === 'booking_link_inactive') throw new ApiError('not_found');
        throw error;
      });
      ctx.status = 201;
      ctx.state.withheld = ['manage_url'];
      ctx.body = { data: publicView(booking, url) };
    });
  });

  return router;
}

