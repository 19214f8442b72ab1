// The public booking page's script (served as is: no build step). It fills the
// month grid and the slot buttons from the JSON endpoints beside the page,
// books, cancels and reschedules. Keyboard: the month is an ARIA grid (arrow
// keys move by day and week, Home/End to the week's ends, Page Up/Down by
// month, Enter or Space picks the day); slots are buttons with full labels.
(function () {
  'use strict';
  var root = document.documentElement;

  // Theme toggle: the inline head script already chose the theme before paint.
  var toggle = document.getElementById('theme-toggle');
  // A toggle button keeps its name and says its state (WAI-ARIA): "Modo oscuro", pressed while dark.
  function showTheme() {
    toggle.setAttribute('aria-pressed', root.getAttribute('data-theme') === 'dark' ? 'true' : 'false');
  }
  if (toggle) {
    showTheme();
    toggle.addEventListener('click', function () {
      var next = root.getAttribute('data-theme') === 'dark' ? 'light' : 'dark';
      root.setAttribute('data-theme', next);
      try { localStorage.setItem('booking-theme', next); } catch (e) { /* private mode: this visit only */ }
      showTheme();
    });
  }

  var dataNode = document.getElementById('booking-data');
  if (!dataNode) return;
  var data = JSON.parse(dataNode.textContent);
  var $ = function (id) { return document.getElementById(id); };

  // Time zone: detected, changeable.
  var tzSelect = $('tz');
  var detected = (function () { try { return Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { return null; } })();
  var zone = data.bookerTimezone || detected || data.linkTimezone;
  if (tzSelect) {
    var zones = [];
    try { zones = Intl.supportedValuesOf('timeZone'); } catch (e) { zones = [zone, data.linkTimezone]; }
    if (zones.indexOf(zone) < 0) zones.unshift(zone);
    zones.forEach(function (z) {
      var option = document.createElement('option');
      option.value = z; option.textContent = z.replace(/_/g, ' ');
      if (z === zone) option.selected = true;
      tzSelect.appendChild(option);
    });
    tzSelect.addEventListener('change', function () { zone = tzSelect.value; selectedDate = null; load(); });
  }

  function fmt(iso, options) { return new Intl.DateTimeFormat('es-MX', Object.assign({ timeZone: zone }, options)).format(new Date(iso)); }
  // `withOffset`: on a day whose clock repeats an hour (autumn's change), the same time twice is told apart by its UTC offset.
  function timeOf(iso, withOffset) { return fmt(iso, withOffset ? { hour: '2-digit', minute: '2-digit', hourCycle: 'h23', timeZoneName: 'shortOffset' } : { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }); }
  function longDate(iso) { return fmt(iso, { weekday: 'long', day: 'numeric', month: 'long', year: 'numeric' }); }
  function slotLabel(slot, withOffset) { return longDate(slot.starts_at) + ', de ' + timeOf(slot.starts_at, withOffset) + ' a ' + timeOf(slot.ends_at, withOffset) + ' (' + zone + ')'; }
  // A day whose clock changes in the visitor's zone (autumn repeats an hour, spring skips one) shows
  // each time with its UTC offset (`01:30 GMT-4`, `01:30 GMT-5`): two equal times, or a slot that seems
  // to end before it starts, would otherwise read alike. Decided by the zone's offsets over the whole
  // day (every quarter hour whose local date is `date`), not by the slots still listed: once the slots
  // of one offset are booked, the times left would otherwise lose theirs.
  function clockChanges(date, slots) {
    if (!date) return false;
    var offsets = {};
    var parts = new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', timeZoneName: 'shortOffset' });
    var sample = function (ms) {
      var p = {};
      parts.formatToParts(new Date(ms)).forEach(function (x) { p[x.type] = x.value; });
      if (p.year + '-' + p.month + '-' + p.day === date) offsets[p.timeZoneName] = true;
    };
    // A local day lies within 14 hours either side of the UTC day of the same date.
    var start = parse(date).getTime() - 15 * 3600e3;
    for (var t = start; t <= start + 54 * 3600e3; t += 15 * 60e3) sample(t);
    slots.forEach(function (s) { sample(Date.parse(s.starts_at)); sample(Date.parse(s.ends_at)); });
    return Object.keys(offsets).length > 1;
  }
  // The visitor's date of an instant, and whether a booked time needs its offset (the confirmation and
  // the manage page say the same time as the slot button it was picked from).
  function dateIn(iso) { var p = {}; new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(new Date(iso)).forEach(function (x) { p[x.type] = x.value; }); return p.year + '-' + p.month + '-' + p.day; }
  function offsetsFor(startsAt, endsAt) { return clockChanges(dateIn(startsAt), []) || clockChanges(dateIn(endsAt), []); }

  // Dates as YYYY-MM-DD, arithmetic in UTC (pure calendar days).
  function ymd(d) { return d.toISOString().slice(0, 10); }
  function parse(s) { return new Date(s + 'T00:00:00Z'); }
  function addDays(s, n) { var d = parse(s); d.setUTCDate(d.getUTCDate() + n); return ymd(d); }
  function todayIn(z) { var p = {}; new Intl.DateTimeFormat('en-CA', { timeZone: z, year: 'numeric', month: '2-digit', day: '2-digit' }).formatToParts(new Date()).forEach(function (x) { p[x.type] = x.value; }); return p.year + '-' + p.month + '-' + p.day; }

  var month = todayIn(zone).slice(0, 7) + '-01';
  var days = {};
  var selectedDate = null;
  var focusDate = null;
  var chosen = null;

  function monthEnd(m) { var d = parse(m); d.setUTCMonth(d.getUTCMonth() + 1); d.setUTCDate(0); return ymd(d); }
  // The same day `n` months away, or that month's last day when it has fewer (31 January + 1 is 28 February, not 3 March).
  function addMonths(date, n) {
    var d = parse(date), day = d.getUTCDate();
    d.setUTCDate(1); d.setUTCMonth(d.getUTCMonth() + n);
    var last = parse(monthEnd(ymd(d))).getUTCDate();
    d.setUTCDate(Math.min(day, last));
    return ymd(d);
  }

  // A failed load says so (and when to retry), never "no free times": a visitor would take the host for fully booked.
  var loadFailure = null;
  function failureText(status, body, retryAfter) {
    if (status === 429) return 'Se hicieron demasiadas consultas desde tu red; vuelve a intentarlo' + (retryAfter ? ' en ' + retryAfter + ' segundos.' : ' en un momento.');
    return 'No se pudieron cargar los horarios' + (body && body.message ? ' (' + body.message + ')' : '') + '; vuelve a intentarlo.';
  }
  // `refocus`: the keyboard moved into another month; the day it moved to gets focus once that month is drawn.
  // Each load is numbered: an answer that is no longer the latest (the visitor moved on to another month
  // or zone before it came) is dropped, or a slow one arriving last would draw its month under another.
  var loads = 0;
  function load(refocus) {
    if (!$('grid')) return;
    var from = month, to = monthEnd(month), mine = ++loads;
    $('slots-status').textContent = 'Buscando horarios…';
    fetch(data.slotsUrl + '?from=' + from + '&to=' + to + '&timezone=' + encodeURIComponent(zone), { headers: { Accept: 'application/json' } })
      .then(function (r) { return r.json().catch(function () { return null; }).then(function (body) { return { ok: r.ok, status: r.status, body: body, retryAfter: r.headers.get('Retry-After') }; }); })
      .then(function (res) {
        if (mine !== loads) return;
        // A day picked in another month is not this one's: its slots are gone with that month.
        if (selectedDate && selectedDate.slice(0, 7) !== month.slice(0, 7)) selectedDate = null;
        days = {};
        loadFailure = res.ok ? null : failureText(res.status, res.body, res.retryAfter);
        if (res.ok) res.body.data.days.forEach(function (d) { days[d.date] = d.slots; });
        if (!focusDate || focusDate.slice(0, 7) !== month.slice(0, 7)) {
          var open = Object.keys(days).sort()[0];
          focusDate = open || month;
        }
        renderGrid();
        renderSlots();
        if (refocus) focusDay(focusDate);
      })
      .catch(function () { if (mine !== loads) return; loadFailure = 'No hubo conexión para cargar los horarios; vuelve a intentarlo.'; $('slots-status').textContent = loadFailure; });
  }

  var WEEKDAYS = ['lun', 'mar', 'mié', 'jue', 'vie', 'sáb', 'dom'];
  var WEEKDAY_NAMES = ['lunes', 'martes', 'miércoles', 'jueves', 'viernes', 'sábado', 'domingo'];

  function renderGrid() {
    var grid = $('grid');
    $('month-label').textContent = new Intl.DateTimeFormat('es-MX', { timeZone: 'UTC', month: 'long', year: 'numeric' }).format(parse(month));
    grid.textContent = '';
    var head = document.createElement('thead');
    var hr = document.createElement('tr'); hr.setAttribute('role', 'row');
    WEEKDAYS.forEach(function (w, i) { var th = document.createElement('th'); th.setAttribute('role', 'columnheader'); th.setAttribute('abbr', WEEKDAY_NAMES[i]); th.textContent = w; hr.appendChild(th); });
    head.appendChild(hr); grid.appendChild(head);
    var body = document.createElement('tbody');
    var first = parse(month);
    var offset = (first.getUTCDay() + 6) % 7; // Monday first
    var start = addDays(month, -offset);
    var end = monthEnd(month);
    for (var day = start; day <= end || (parse(day).getUTCDay() + 6) % 7 !== 0; ) {
      var tr = document.createElement('tr'); tr.setAttribute('role', 'row');
      for (var i = 0; i < 7; i++, day = addDays(day, 1)) {
        var td = document.createElement('td'); td.setAttribute('role', 'gridcell');
        if (day.slice(0, 7) === month.slice(0, 7)) {
          var button = document.createElement('button');
          var count = (days[day] || []).length;
          button.type = 'button';
          button.textContent = String(parse(day).getUTCDate());
          button.dataset.date = day;
          button.tabIndex = day === focusDate ? 0 : -1;
          var name = new Intl.DateTimeFormat('es-MX', { timeZone: 'UTC', weekday: 'long', day: 'numeric', month: 'long' }).format(parse(day));
          button.setAttribute('aria-label', name + (count ? ': ' + count + (count === 1 ? ' horario' : ' horarios') : ': sin horarios'));
          if (count) button.className = 'open'; else button.setAttribute('aria-disabled', 'true');
          td.setAttribute('aria-selected', day === selectedDate ? 'true' : 'false');
          if (day === selectedDate) button.className += ' chosen';
          td.appendChild(button);
        }
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    grid.appendChild(body);
  }

  function focusDay(date) {
    if (date.slice(0, 7) !== month.slice(0, 7)) { month = date.slice(0, 7) + '-01'; focusDate = date; load(true); return; }
    focusDate = date;
    var buttons = $('grid').querySelectorAll('button');
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].tabIndex = buttons[i].dataset.date === date ? 0 : -1;
      if (buttons[i].dataset.date === date) buttons[i].focus();
    }
  }

  function pickDay(date) {
    // A day of the month on screen while another loads (Enter right after an arrow into the next month) is not picked.
    if (date.slice(0, 7) !== month.slice(0, 7) || !(days[date] || []).length) return;
    selectedDate = date;
    focusDate = date;
    renderGrid();
    renderSlots();
    var first = $('slots').querySelector('button');
    if (first) first.focus();
  }

  if ($('grid')) {
    $('grid').addEventListener('click', function (e) { var b = e.target.closest('button'); if (b) pickDay(b.dataset.date); });
    $('grid').addEventListener('keydown', function (e) {
      var b = e.target.closest('button'); if (!b) return;
      var d = b.dataset.date, weekday = (parse(d).getUTCDay() + 6) % 7, next = null;
      if (e.key === 'ArrowRight') next = addDays(d, 1);
      else if (e.key === 'ArrowLeft') next = addDays(d, -1);
      else if (e.key === 'ArrowDown') next = addDays(d, 7);
      else if (e.key === 'ArrowUp') next = addDays(d, -7);
      else if (e.key === 'Home') next = addDays(d, -weekday);
      else if (e.key === 'End') next = addDays(d, 6 - weekday);
      else if (e.key === 'PageDown' || e.key === 'PageUp') next = addMonths(d, e.key === 'PageDown' ? 1 : -1);
      else if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); pickDay(d); return; }
      if (next) { e.preventDefault(); focusDay(next); }
    });
    $('prev-month').addEventListener('click', function () { var m = parse(month); m.setUTCMonth(m.getUTCMonth() - 1); month = ymd(m); focusDate = null; load(); });
    $('next-month').addEventListener('click', function () { var m = parse(month); m.setUTCMonth(m.getUTCMonth() + 1); month = ymd(m); focusDate = null; load(); });
  }

  function renderSlots() {
    var list = $('slots');
    list.textContent = '';
    var slots = selectedDate ? days[selectedDate] || [] : [];
    var anyOpen = Object.keys(days).length > 0;
    var withOffset = clockChanges(selectedDate, slots);
    $('slots-status').textContent = loadFailure ? loadFailure : selectedDate
      ? slots.length + (slots.length === 1 ? ' horario el ' : ' horarios el ') + new Intl.DateTimeFormat('es-MX', { timeZone: 'UTC', weekday: 'long', day: 'numeric', month: 'long' }).format(parse(selectedDate))
      : anyOpen ? 'Elige un día con horarios.' : 'No hay horarios libres este mes.';
    slots.forEach(function (slot) {
      var li = document.createElement('li');
      var button = document.createElement('button');
      button.type = 'button';
      button.textContent = timeOf(slot.starts_at, withOffset);
      button.setAttribute('aria-label', slotLabel(slot, withOffset));
      button.addEventListener('click', function () { choose(slot); });
      li.appendChild(button); list.appendChild(li);
    });
  }

  // Field errors under the form's own labels (the API names them booker.name, answers.<key>).
  function fieldLabel(key) {
    if (key === 'booker.name') return 'Nombre';
    if (key === 'booker.email') return 'Correo';
    var label = document.querySelector('label[for="q-' + key.replace(/^answers\./, '') + '"]');
    return label ? label.textContent.replace(/\s*\*\s*$/, '').trim() : key;
  }
  function errorText(body, status) {
    if (body && body.errors) return body.message + ' ' + Object.keys(body.errors).map(function (k) { return fieldLabel(k) + ': ' + body.errors[k].join(', '); }).join('; ');
    if (body && body.message) return body.message;
    return status ? 'El servicio no pudo atender la solicitud (HTTP ' + status + '); intenta de nuevo en un momento.' : 'Algo salió mal; intenta de nuevo.';
  }
  function showFormError(text) { $('form-error').hidden = false; $('form-error').textContent = text; $('form-error').focus(); }
  // What the browser's own checks found, field by field, in the form's words.
  function invalidFields(form) {
    return Array.prototype.filter.call(form.elements, function (el) { return el.willValidate && !el.validity.valid; }).map(function (el) {
      var label = el.id ? document.querySelector('label[for="' + el.id + '"]') : null;
      // The browser's messages end in a period: dropped, so the list reads "a; b." and not "a.; b..".
      return (label ? label.textContent.replace(/\s*\*\s*$/, '').trim() : el.name) + ': ' + el.validationMessage.replace(/\.+\s*$/, '');
    }).join('; ');
  }

  function post(url, payload, key) {
    var headers = { 'Content-Type': 'application/json', Accept: 'application/json' };
    if (key) headers['Idempotency-Key'] = key;
    return fetch(url, { method: 'POST', headers: headers, body: JSON.stringify({ data: payload }) })
      .then(function (r) { return r.json().catch(function () { return null; }).then(function (body) { return { status: r.status, body: body }; }); });
  }

  // 128 random bits either way (randomUUID needs a secure context; getRandomValues does not).
  function newKey() {
    if (crypto.randomUUID) return crypto.randomUUID();
    return Array.prototype.map.call(crypto.getRandomValues(new Uint8Array(16)), function (b) { return (b + 256).toString(16).slice(1); }).join('');
  }

  // Booking mode.
  var idempotencyKey = null;
  var rescheduleKey = null;
  function showManageError(text) { $('manage-error').hidden = false; $('manage-error').textContent = text; $('manage-error').focus(); }
  function choose(slot) {
    chosen = slot;
    if (data.mode === 'manage') {
      rescheduleKey = newKey();
      $('manage-error').hidden = true;
      $('resched-chosen').textContent = 'Nueva hora: ' + slotLabel(slot, clockChanges(selectedDate, days[selectedDate] || []));
      $('resched-confirm').disabled = false;
      $('resched-confirm').focus();
      return;
    }
    idempotencyKey = newKey();
    $('chosen').textContent = slotLabel(slot, clockChanges(selectedDate, days[selectedDate] || []));
    $('booking-form').querySelector('button[type=submit]').disabled = false;
    $('form-section').hidden = false;
    $('form-error').hidden = true;
    $('name').focus();
  }

  if (data.mode === 'book') {
    $('back').addEventListener('click', function () { $('form-section').hidden = true; var b = $('slots').querySelector('button'); if (b) b.focus(); });
    $('booking-form').addEventListener('submit', function (e) {
      e.preventDefault();
      var form = e.target;
      if (!chosen) { showFormError('Elige un horario en la lista.'); return; }
      if (!form.checkValidity()) { $('form-error').hidden = false; $('form-error').textContent = 'Revisa estos campos: ' + invalidFields(form) + '.'; form.reportValidity(); return; }
      var answers = {};
      data.questions.forEach(function (q) {
        var input = $('q-' + q.key);
        if (q.type === 'checkbox') { if (input.checked) answers[q.key] = true; }
        else if (input.value.trim()) answers[q.key] = input.value.trim();
      });
      var submit = form.querySelector('button[type=submit]');
      submit.disabled = true;
      post(data.bookUrl, { starts_at: chosen.starts_at, booker: { name: $('name').value.trim(), email: $('email').value.trim(), timezone: zone }, answers: answers }, idempotencyKey)
        .then(function (res) {
          submit.disabled = false;
          if (res.status === 201 || res.status === 200) {
            $('form-section').hidden = true;
            document.querySelector('section[aria-labelledby=pick-title]').hidden = true;
            $('done-text').textContent = longDate(res.body.data.starts_at) + ', ' + timeOf(res.body.data.starts_at, offsetsFor(res.body.data.starts_at, res.body.data.ends_at)) + ' (' + zone + ').';
            $('manage-link').href = res.body.data.manage_url;
            $('done').hidden = false;
            $('done').focus();
            return;
          }
          showFormError(errorText(res.body, res.status));
          // 409 idempotency_in_progress: the same request, sent again while the first still runs (its answer
          // was lost), is not a taken slot; the message says to wait, and the key stays for the retry.
          if (res.body && res.body.error === 'slot_unavailable') {
            // The slot is gone: nothing to confirm until another is chosen from the reloaded list.
            chosen = null;
            $('chosen').textContent = 'Ese horario ya no está disponible: elige otro en la lista.';
            submit.disabled = true;
            selectedDate = null;
            load();
          }
        })
        .catch(function () { submit.disabled = false; showFormError('No hubo conexión; intenta de nuevo.'); });
    });
  }

  // Manage mode.
  if (data.mode === 'manage') {
    var when = $('when');
    function showWhen() { var withOffset = offsetsFor(data.startsAt, data.endsAt); when.textContent = longDate(data.startsAt) + ', de ' + timeOf(data.startsAt, withOffset) + ' a ' + timeOf(data.endsAt, withOffset) + ' (' + zone + ')'; }
    showWhen();
    if (tzSelect) tzSelect.addEventListener('change', showWhen);
    // Arrived from a reschedule (the new booking's page, #reprogramada): said, as a cancel is, and focused.
    if (window.location.hash === '#reprogramada') {
      $('manage-status').textContent = 'Tu reserva quedó reprogramada a esta hora. Te enviamos la confirmación por correo.';
      $('booking-title').focus();
      try { history.replaceState(null, '', window.location.pathname + window.location.search); } catch (e) { /* the hash stays: harmless */ }
    }
    var cancelForm = $('cancel-form');
    if (cancelForm) cancelForm.addEventListener('submit', function (e) {
      e.preventDefault();
      // One cancel at a time: a double click sent two, and the second one's 409 showed beside the success.
      var cancelButton = cancelForm.querySelector('button[type=submit]');
      if (cancelButton.disabled) return;
      cancelButton.disabled = true;
      post(data.cancelUrl, { reason: cancelForm.elements.reason.value.trim() || null }).then(function (res) {
        if (res.status !== 200) cancelButton.disabled = false;
        if (res.status === 200) {
          $('manage-status').textContent = 'Tu reserva quedó cancelada. Te enviamos la confirmación por correo.';
          $('booking-title').textContent = 'Reserva cancelada';
          Array.prototype.forEach.call(document.querySelectorAll('main section[aria-labelledby=cancel-title], main section[aria-labelledby=resched-title]'), function (s) { s.hidden = true; });
          $('booking-title').focus();
        } else showManageError(errorText(res.body, res.status));
      }).catch(function () { cancelButton.disabled = false; showManageError('No hubo conexión; intenta de nuevo.'); });
    });
    var confirm = $('resched-confirm');
    if (confirm) confirm.addEventListener('click', function () {
      if (!chosen) return;
      confirm.disabled = true;
      post(data.rescheduleUrl, { starts_at: chosen.starts_at }, rescheduleKey).then(function (res) {
        if (res.status === 201) { window.location.assign(res.body.data.manage_url + '#reprogramada'); return; }
        showManageError(errorText(res.body, res.status));
        if (res.body && res.body.error === 'slot_unavailable') {
          // The slot is gone: nothing to confirm until another is chosen from the reloaded list.
          chosen = null;
          $('resched-chosen').textContent = 'Ese horario ya no está disponible: elige otro en la lista.';
          selectedDate = null;
          load();
        } else confirm.disabled = false;
      }).catch(function () { confirm.disabled = false; showManageError('No hubo conexión; intenta de nuevo.'); });
    });
  }

  load();
})();
