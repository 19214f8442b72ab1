// The public booking page and the booker's manage page: server-rendered HTML
// in Spanish that works without a build step. The server renders the header,
// the link's facts and the form; assets/booking.js (plain JavaScript) fills in
// the month grid and the slot buttons from the JSON endpoints beside the page.
//
// Theme: the host's `booking_branding` paints the backdrop (solid, linear or
// radial); every text sits on a solid card whose colours are fixed per theme,
// so contrast is at least 4.5:1 whatever colours the host picks. Dark mode is
// chosen before first paint by a small inline script from the visitor's local
// time (19:00 to 07:00) unless the visitor chose a theme with the toggle
// (remembered in localStorage).
import { escapeHtml as esc } from '../../lib/html.ts';
import type { Background } from '../routes/user-schemas.ts';


/** JSON inside a <script type="application/json">: `<` escaped so no `</script>` can close it. */
const scriptJson = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

const HEX = /^#[0-9a-fA-F]{6}$/;
const DEFAULTS: Record<'light' | 'dark', Required<Background>> = {
  light: { bg_mode: 'solid', bg_color_from: '#eef2ff', bg_color_to: '#e0e7ff', bg_angle: 135 },
  dark: { bg_mode: 'solid', bg_color_from: '#0f172a', bg_color_to: '#1e293b', bg_angle: 135 },
};

/** A CSS background from a branding background, colours re-checked (they are stored validated, but this is HTML). */
export function backdrop(background: Background | undefined, theme: 'light' | 'dark'): string {
  const b = { ...DEFAULTS[theme], ...(background ?? {}) };
  const from = HEX.test(b.bg_color_from ?? '') ? b.bg_color_from! : DEFAULTS[theme].bg_color_from!;
  const to = HEX.test(b.bg_color_to ?? '') ? b.bg_color_to! : from;
  const angle = Number.isInteger(b.bg_angle) ? b.bg_angle : 135;
  if (b.bg_mode === 'linear') return `linear-gradient(${angle}deg, ${from}, ${to})`;
  if (b.bg_mode === 'radial') return `radial-gradient(circle at center, ${from}, ${to})`;
  return from;
}

export type PageBranding = { light?: Background; dark?: Background };

function styles(branding: PageBranding): string {
  // Card colours chosen for contrast: #111827 on #ffffff is 17.7:1, #f9fafb on
  // #111827 is 16.9:1; the muted text and the accent buttons stay above 4.5:1
  // on their card (#4b5563 on white 7.6:1; #d1d5db on #111827 12:1; white on
  // #1d4ed8 6.7:1; #111827 on #93c5fd 9.9:1).
  return `
:root{color-scheme:light;--bg:${backdrop(branding.light, 'light')};--card:#ffffff;--text:#111827;--muted:#4b5563;--line:#d1d5db;--accent:#1d4ed8;--accent-text:#ffffff;--slot:#eff6ff;--focus:#b45309;--error:#991b1b}
:root[data-theme=dark]{color-scheme:dark;--bg:${backdrop(branding.dark, 'dark')};--card:#111827;--text:#f9fafb;--muted:#d1d5db;--line:#4b5563;--accent:#93c5fd;--accent-text:#111827;--slot:#1f2937;--focus:#fbbf24;--error:#fca5a5}
*{box-sizing:border-box}body{margin:0;min-height:100vh;background:var(--bg);font:16px/1.5 system-ui,sans-serif;color:var(--text);overflow-wrap:anywhere}
.card{background:var(--card);max-width:56rem;margin:2rem auto;padding:1.5rem;border-radius:.75rem;box-shadow:0 1px 4px rgba(0,0,0,.25)}
header{display:flex;gap:1rem;align-items:center;border-bottom:1px solid var(--line);padding-bottom:1rem}header img{width:64px;height:64px;border-radius:50%;object-fit:cover}
h1{font-size:1.5rem;margin:.25rem 0}h2{font-size:1.15rem}.muted{color:var(--muted)}.desc{white-space:pre-line}.facts{list-style:none;padding:0;margin:.25rem 0}.links{list-style:none;padding:0;margin:1rem 0}.links>li{margin:0 0 1.25rem}
button,select,input,textarea{font:inherit;color:inherit}button{cursor:pointer}
.primary{background:var(--accent);color:var(--accent-text);border:0;border-radius:.375rem;padding:.6rem 1.2rem}
.ghost{background:transparent;border:1px solid var(--line);border-radius:.375rem;padding:.4rem .8rem;color:var(--text)}
:focus-visible{outline:3px solid var(--focus);outline-offset:2px}
.layout{display:grid;gap:1.5rem;grid-template-columns:minmax(0,1fr) minmax(0,1fr)}@media(max-width:48rem){.layout{grid-template-columns:1fr}}
.month{display:flex;justify-content:space-between;align-items:center}
table.grid{width:100%;border-collapse:collapse;table-layout:fixed}table.grid th{font-weight:600;font-size:.85rem;color:var(--muted);padding:.25rem}
table.grid td{padding:2px;text-align:center}table.grid td button{width:100%;aspect-ratio:1;border:1px solid transparent;border-radius:.375rem;background:transparent;color:var(--muted)}
table.grid td button.open{background:var(--slot);color:var(--text);font-weight:700;border-color:var(--line)}
table.grid td button.chosen{background:var(--accent);color:var(--accent-text)}a{color:var(--accent)}
.slots{display:grid;grid-template-columns:repeat(auto-fill,minmax(6.5rem,1fr));gap:.5rem;list-style:none;padding:0}
.slots button{width:100%;padding:.5rem;border:1px solid var(--accent);border-radius:.375rem;background:var(--card);color:var(--text)}
label{display:block;margin:.75rem 0 .25rem;font-weight:600}input,textarea,select{width:100%;padding:.5rem;border:1px solid var(--muted);border-radius:.25rem;background:var(--card)}
input[type=checkbox]{width:auto}.check{display:flex;gap:.5rem;align-items:center;font-weight:400}
.error{color:var(--error);font-weight:600}.toolbar{display:flex;gap:.75rem;align-items:center;justify-content:flex-end;flex-wrap:wrap}
.toolbar label{display:inline;margin:0 .25rem 0 0}.toolbar select{width:auto}[hidden]{display:none!important}`;
}

/** Runs in <head> before the body paints: the visitor's choice, else 19:00–07:00 local is dark. */
const THEME_SCRIPT = `(function(){var t=null;try{t=localStorage.getItem('booking-theme')}catch(e){}if(t!=='dark'&&t!=='light'){var h=new Date().getHours();t=(h>=19||h<7)?'dark':'light'}document.documentElement.setAttribute('data-theme',t)})();`;

/** The interactive pages (book, manage) list and send times with the page's script; without it, they say so. */
const NO_SCRIPT = '<noscript><p class="error" role="alert">Esta página necesita JavaScript para mostrar los horarios y reservar, cambiar o cancelar. Actívalo en tu navegador o abre la liga en otro.</p></noscript>\n';

function shell(options: { title: string; nonce: string; branding: PageBranding; body: string; data?: unknown }): string {
  return `<!doctype html><html lang="es"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<title>${esc(options.title)}</title><script nonce="${options.nonce}">${THEME_SCRIPT}</script>
<style nonce="${options.nonce}">${styles(options.branding)}</style></head>
<body><div class="card">
<div class="toolbar"><button type="button" class="ghost" id="theme-toggle" aria-pressed="false">Modo oscuro</button></div>
${options.data === undefined ? '' : NO_SCRIPT}${options.body}</div>
${options.data === undefined ? '' : `<script type="application/json" id="booking-data">${scriptJson(options.data)}</script>`}
<script nonce="${options.nonce}" src="/book/assets/booking.js" defer></script></body></html>`;
}

export type PageHost = { name: string; avatar: string | null; logo: string | null };
export type PageLink = {
  title: string;
  description: string | null;
  duration_minutes: number;
  location: { type: string; value: string | null } | null;
  questions: Array<{ key: string; label: string; type: string; required: boolean; options: string[] | null }>;
  timezone: string;
};

export function locationLabel(location: PageLink['location']): string | null {
  if (!location) return null;
  if (location.type === 'google_meet') return 'Videollamada de Google Meet';
  if (location.type === 'phone') return `Por teléfono: ${location.value}`;
  if (location.type === 'url') return `En línea: ${location.value}`;
  return location.value;
}

function header(host: PageHost, link: PageLink): string {
  const image = host.logo ?? host.avatar;
  const alt = host.logo ? 'Logotipo' : `Foto de ${host.name}`;
  const where = locationLabel(link.location);
  return `<header>${image ? `<img src="${esc(image)}" alt="${esc(alt)}" width="64" height="64">` : ''}
<div><p class="muted">${esc(host.name)}</p><h1>${esc(link.title)}</h1>
<ul class="facts"><li>${link.duration_minutes} minutos</li>${where ? `<li>${esc(where)}</li>` : ''}</ul></div></header>
${link.description ? `<p class="desc">${esc(link.description)}</p>` : ''}`;
}

function questionField(q: PageLink['questions'][number]): string {
  const id = `q-${q.key}`;
  const req = q.required ? ' required aria-required="true"' : '';
  const label = `${esc(q.label)}${q.required ? ' <span aria-hidden="true">*</span>' : ''}`;
  // `for` as well as wrapping: the page's script names a field's errors by label[for] (booking.js).
  if (q.type === 'checkbox') return `<label class="check" for="${id}"><input type="checkbox" id="${id}" name="${esc(q.key)}"${req}> ${label}</label>`;
  if (q.type === 'long_text') return `<label for="${id}">${label}</label><textarea id="${id}" name="${esc(q.key)}" rows="3"${req}></textarea>`;
  if (q.type === 'select') {
    const options = (q.options ?? []).map((o) => `<option value="${esc(o)}">${esc(o)}</option>`).join('');
    return `<label for="${id}">${label}</label><select id="${id}" name="${esc(q.key)}"${req}><option value="">Elige una opción</option>${options}</select>`;
  }
  return `<label for="${id}">${label}</label><input id="${id}" name="${esc(q.key)}" type="${q.type === 'phone' ? 'tel' : 'text'}"${req}>`;
}

/** The picker: time zone, month grid (ARIA grid), slot buttons. Filled by booking.js. */
const PICKER = `<section aria-labelledby="pick-title"><h2 id="pick-title">Elige día y hora</h2>
<div class="toolbar"><label for="tz">Zona horaria</label><select id="tz"></select></div>
<div class="layout"><div>
<div class="month"><button type="button" class="ghost" id="prev-month" aria-label="Mes anterior">‹</button>
<h3 id="month-label" aria-live="polite"></h3><button type="button" class="ghost" id="next-month" aria-label="Mes siguiente">›</button></div>
<table class="grid" role="grid" aria-labelledby="month-label" id="grid"></table>
<p class="muted" id="grid-help">Usa las flechas para moverte entre días; Entrar elige el día.</p></div>
<div><h3 id="slots-title">Horarios disponibles</h3><p id="slots-status" class="muted" role="status"></p><ul class="slots" id="slots" aria-labelledby="slots-title"></ul></div></div></section>`;

export function bookingPage(options: { nonce: string; branding: PageBranding; host: PageHost; link: PageLink; slotsUrl: string; bookUrl: string }): string {
  const { host, link } = options;
  const questions = link.questions.map(questionField).join('\n');
  return shell({
    title: `${link.title} · ${host.name}`,
    nonce: options.nonce,
    branding: options.branding,
    data: { mode: 'book', slotsUrl: options.slotsUrl, bookUrl: options.bookUrl, linkTimezone: link.timezone, questions: link.questions.map((q) => ({ key: q.key, type: q.type })) },
    body: `${header(host, link)}
<main>${PICKER}
<section id="form-section" hidden aria-labelledby="form-title"><h2 id="form-title">Tus datos</h2>
<p id="chosen" class="muted"></p>
<form id="booking-form" novalidate>
<p id="form-error" class="error" role="alert" tabindex="-1" hidden></p>
<label for="name">Nombre <span aria-hidden="true">*</span></label><input id="name" name="name" autocomplete="name" maxlength="200" required aria-required="true">
<label for="email">Correo <span aria-hidden="true">*</span></label><input id="email" name="email" type="email" autocomplete="email" maxlength="254" required aria-required="true">
${questions}
<p><button type="submit" class="primary">Confirmar reserva</button> <button type="button" class="ghost" id="back">Elegir otro horario</button></p>
</form></section>
<section id="done" hidden tabindex="-1" aria-labelledby="done-title"><h2 id="done-title">¡Reserva confirmada!</h2><p id="done-text"></p>
<p>Te enviamos un correo con la invitación. Para cancelar o cambiar la hora: <a id="manage-link" href="#">gestiona tu reserva</a>.</p></section>
</main>`,
  });
}

export type ManageBooking = {
  status: string;
  title: string;
  starts_at: string;
  ends_at: string;
  booker_name: string;
  booker_timezone: string | null;
  location: PageLink['location'];
  meet_url: string | null;
  cancelled: boolean;
  /** Its end has passed: the manage link no longer cancels or moves it. */
  ended: boolean;
};

export function managePage(options: { nonce: string; branding: PageBranding; host: PageHost; booking: ManageBooking; token: string; linkTimezone: string; canReschedule: boolean }): string {
  const { booking, host } = options;
  const where = booking.meet_url ?? locationLabel(booking.location);
  const base = `/book/manage/${options.token}`;
  return shell({
    title: `Tu reserva · ${booking.title}`,
    nonce: options.nonce,
    branding: options.branding,
    data: {
      mode: 'manage',
      slotsUrl: `${base}/slots`,
      cancelUrl: `${base}/cancel`,
      rescheduleUrl: `${base}/reschedule`,
      startsAt: booking.starts_at,
      endsAt: booking.ends_at,
      linkTimezone: options.linkTimezone,
      bookerTimezone: booking.booker_timezone,
    },
    body: `<header>${host.logo ?? host.avatar ? `<img src="${esc((host.logo ?? host.avatar)!)}" alt="${esc(host.logo ? 'Logotipo' : `Foto de ${host.name}`)}" width="64" height="64">` : ''}
<div><p class="muted">${esc(host.name)}</p><h1>${esc(booking.title)}</h1></div></header>
<main><section aria-labelledby="booking-title"><h2 id="booking-title" tabindex="-1">${booking.cancelled ? 'Reserva cancelada' : 'Tu reserva'}</h2>
<p>A nombre de ${esc(booking.booker_name)}: <strong id="when" data-starts="${esc(booking.starts_at)}"></strong></p>
${where ? `<p>${esc(where)}</p>` : ''}
<p id="manage-status" role="status"></p><p id="manage-error" class="error" role="alert" tabindex="-1" hidden></p></section>
${booking.cancelled ? '' : booking.ended ? '<p class="muted">Esta reserva ya terminó: no se puede cancelar ni cambiar de hora.</p>' : `<section aria-labelledby="cancel-title"><h2 id="cancel-title">Cancelar</h2>
<form id="cancel-form"><label for="reason">Motivo (opcional)</label><textarea id="reason" name="reason" rows="2"></textarea>
<p><button type="submit" class="primary">Cancelar la reserva</button></p></form></section>
${options.canReschedule ? `<section aria-labelledby="resched-title"><h2 id="resched-title">Cambiar la hora</h2>${PICKER}
<p id="resched-chosen" class="muted"></p><p><button type="button" class="primary" id="resched-confirm" disabled>Confirmar la nueva hora</button></p></section>` : `<p class="muted">Esta reserva ya no se puede cambiar de hora: el enlace con el que se hizo ya no acepta reservas. Puedes cancelarla y escribir a ${esc(host.name)} para acordar otra.</p>`}`}
</main>`,
  });
}

/** `/book/<booking_slug>`: the host's active booking links, each to its page. */
export function hostPage(options: { nonce: string; branding: PageBranding; host: PageHost; hostSlug: string; links: Array<{ slug: string; title: string; description: string | null; duration_minutes: number; location: PageLink['location'] }> }): string {
  const { host } = options;
  const image = host.logo ?? host.avatar;
  const alt = host.logo ? 'Logotipo' : `Foto de ${host.name}`;
  const items = options.links
    .map((link) => {
      const where = locationLabel(link.location);
      return `<li><h2><a href="/book/${encodeURIComponent(options.hostSlug)}/${encodeURIComponent(link.slug)}">${esc(link.title)}</a></h2>
<ul class="facts"><li>${link.duration_minutes} minutos</li>${where ? `<li>${esc(where)}</li>` : ''}</ul>${link.description ? `<p class="muted desc">${esc(link.description)}</p>` : ''}</li>`;
    })
    .join('\n');
  return shell({
    title: `Reservar con ${host.name}`,
    nonce: options.nonce,
    branding: options.branding,
    body: `<main><header>${image ? `<img src="${esc(image)}" alt="${esc(alt)}" width="64" height="64">` : ''}
<div><p class="muted">Reservar con</p><h1>${esc(host.name)}</h1></div></header>
<ul class="links">${items}</ul></main>`,
  });
}

export function notFoundPage(nonce: string): string {
  return shell({
    title: 'Página no encontrada',
    nonce,
    branding: {},
    body: `<main><h1>Esta página de reservas no existe</h1><p>Revisa la dirección o pide a quien te la compartió una liga nueva.</p></main>`,
  });
}

/** Over the per-address read limit (docs/bookings.md): the page says when to try again. */
export function tooManyRequestsPage(nonce: string, retryAfterSeconds: number): string {
  const wait = Number.isFinite(retryAfterSeconds) && retryAfterSeconds > 0 ? `en ${retryAfterSeconds} segundos` : 'en un momento';
  return shell({
    title: 'Demasiadas consultas',
    nonce,
    branding: {},
    body: `<main><h1>Se hicieron demasiadas consultas desde tu red</h1><p>Vuelve a intentarlo ${esc(wait)}.</p></main>`,
  });
}
