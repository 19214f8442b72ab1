// Answer checks (contract: Forms, POST body): required fields, and the types
// email, number and date; options must be among the field's options in any
// of the form's locales. `email`, `name`, `phone` come from `maps_to`.
import { EARLIEST_DAY } from '../date-fields.ts';
import { addFieldError, type FieldErrors } from '../errors.ts';
import type { FormRow, StoredField } from './definition.ts';
import type { StagedFile } from './intake.ts';
import { emailAddress, isOneLine, isWrittenText, showsNothing } from '../validation.ts';
import { withoutDirectionControls } from '../../lib/direction-controls.ts';

const MAX_TEXT = 10_000;
/** An address mail can go to (api/validation.ts emailAddress: zod's syntax and RFC 5321's sizes). */
export function isEmailAddress(value: string): boolean {
  return emailAddress.safeParse(value).success;
}
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;
/**
 * The most significant digits a number answer may have: up to 15, any decimal is kept exactly by the
 * double it is stored as; past that, digits would be lost without a word (an account number belongs
 * in a text field).
 */
export const MAX_SIGNIFICANT_DIGITS = 15;
/** Below it a double keeps fewer digits (subnormal), down to 0. */
const SMALLEST_NORMAL_DOUBLE = 2.2250738585072014e-308;
function significantDigits(decimal: string): number {
  const mantissa = decimal.replace(/^[+-]/, '').replace(/[eE].*$/, '').replace('.', '');
  return mantissa.replace(/^0+/, '').replace(/0+$/, '').length;
}

export type CheckedAnswers = {
  answers: Record<string, unknown>;
  email: string | null;
  name: string | null;
  phone: string | null;
};

/** No answer: absent, null, an empty list, or text that shows nothing (spaces, zero-width characters, direction controls). */
function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && showsNothing(withoutDirectionControls(value))) || (Array.isArray(value) && value.length === 0);
}

function isDate(value: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  if (!m) return false;
  const d = new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
  return d.getUTCFullYear() === +m[1] && d.getUTCMonth() === +m[2] - 1 && d.getUTCDate() === +m[3];
}

function allOptions(field: StoredField): Set<string> {
  return new Set(Object.values(field.options_translations).flatMap((o) => o ?? []));
}

/** Returns the normalized value, or an error message. */
function checkValue(field: StoredField, value: unknown): { value: unknown } | { error: string } {
  // A number where text is expected is its decimal text (a phone sent as a number); a boolean is not text.
  const scalar = typeof value === 'number' ? String(value) : value;
  // A list where one value goes: a JSON array, or a multipart answer sent in two parts of one name.
  if (Array.isArray(value) && field.field_type !== 'checkbox' && field.field_type !== 'file') {
    return { error: 'admite un solo valor: llegó una lista (¿la misma respuesta enviada dos veces?)' };
  }
  switch (field.field_type) {
    case 'text':
    case 'textarea':
    case 'phone': {
      if (typeof scalar !== 'string') return { error: 'debe ser texto' };
      if (scalar.length > MAX_TEXT) return { error: `admite como máximo ${MAX_TEXT} caracteres` };
      // One line, as a browser's <input> sends it: a line break in a name or phone would go on into the
      // lead and the operator's email as lines of its own. Several lines are a textarea's, unless it
      // fills a lead's or customer's column (maps_to: a name, a phone, a company), which is one line.
      // Any line break counts (U+2028, U+2029, NEL, VT and FF too), and no answer holds other control
      // characters. What pasting brings along is cleaned, not refused: the direction marks iOS puts around
      // a phone number copied from Contacts (U+202D … U+202C) and any other direction control are dropped,
      // and in one line a tab (a spreadsheet cell's) is a space.
      const cleaned = withoutDirectionControls(scalar);
      const oneLine = field.field_type !== 'textarea' || !!field.maps_to;
      const value = (oneLine ? cleaned.replaceAll('\t', ' ') : cleaned).trim();
      if (oneLine && !isOneLine(value)) return { error: 'es de una sola línea: no admite saltos de línea ni caracteres de control' };
      if (!oneLine && !isWrittenText(value)) return { error: 'no admite caracteres de control (salvo saltos de línea y tabuladores)' };
      return { value };
    }
    case 'email': {
      const typed = typeof scalar === 'string' ? withoutDirectionControls(scalar).trim() : null;
      if (typed === null || !isEmailAddress(typed)) return { error: 'no es un correo electrónico válido' };
      // Kept as submitted (contract: answers hold the submitted value; direction controls pasted around it
      // dropped, as from text); the extracted `email` is lower-cased.
      return { value: typed };
    }
    case 'number': {
      // Decimal notation only: Number() would also read "0x10", "0b101" and "0o17".
      const n = typeof value === 'number' ? value : typeof value === 'string' && DECIMAL.test(value.trim()) ? Number(value.trim()) : NaN;
      if (!Number.isFinite(n)) return { error: 'debe ser un número' };
      // Written as text, a decimal too small for a double (1e-400 reads as 0, 1e-320 with digits lost) is refused, not rounded.
      if (typeof value === 'string' && Math.abs(n) < SMALLEST_NORMAL_DOUBLE && significantDigits(value.trim()) > 0) {
        return { error: 'es demasiado pequeño para guardarse sin perder cifras' };
      }
      // A JSON number arrives already parsed: its shortest decimal form tells whether digits were lost.
      if (significantDigits(typeof value === 'number' ? String(value) : (value as string).trim()) > MAX_SIGNIFICANT_DIGITS) {
        return { error: `admite como máximo ${MAX_SIGNIFICANT_DIGITS} cifras significativas; para un número más largo usa un campo de texto` };
      }
      return { value: n };
    }
    case 'date': {
      if (typeof scalar !== 'string' || !isDate(scalar.trim())) return { error: 'debe ser una fecha AAAA-MM-DD válida' };
      // The bound of every day in a body (api/date-fields.ts).
      if (scalar.trim() < EARLIEST_DAY) return { error: `debe ser ${EARLIEST_DAY} o posterior` };
      return { value: scalar.trim() };
    }
    case 'select':
    case 'radio': {
      if (typeof scalar !== 'string' || !allOptions(field).has(scalar)) return { error: 'no es una de las opciones' };
      return { value: scalar };
    }
    case 'checkbox': {
      const options = allOptions(field);
      if (options.size === 0) {
        // A list is HTML's hidden-input pattern (`acepto=0` before the box's `acepto=1`): the last value
        // is the box's, as Rails and PHP read it.
        const one = Array.isArray(value) && value.length > 0 ? value[value.length - 1] : value;
        if (one === true || one === false) return { value: one };
        if (one === 'true' || one === 'on' || one === '1') return { value: true };
        if (one === 'false' || one === 'off' || one === '0') return { value: false };
        return { error: 'debe ser verdadero o falso' };
      }
      const list = Array.isArray(value) ? value : [value];
      if (!list.every((v) => typeof v === 'string' && options.has(v))) return { error: 'contiene valores que no son opciones' };
      return { value: [...new Set(list)] };
    }
    case 'file':
      return { error: 'debe ser un archivo' };
  }
}

/**
 * `sentFileKeys`: the file fields a file was sent for, stored or not; a
 * required one is not reported missing when its file was refused (that
 * refusal is its error).
 */
export function checkAnswers(form: FormRow, raw: Record<string, unknown>, files: StagedFile[], errors: FieldErrors, sentFileKeys: ReadonlySet<string> = new Set()): CheckedAnswers {
  const add = (key: string, message: string) => addFieldError(errors, `answers.${key}`, message);
  const fields = new Map(form.fields.map((f) => [f.key, f]));
  for (const key of Object.keys(raw)) if (!fields.has(key)) add(key, 'no es un campo del formulario');

  const answers: Record<string, unknown> = {};
  // Own keys only: an unanswered field named `constructor` or `toString` must read as unanswered.
  const sent = (key: string): unknown => (Object.hasOwn(raw, key) ? raw[key] : undefined);
  const extracted: Record<'email' | 'name' | 'phone', string | null> = { email: null, name: null, phone: null };
  for (const field of form.fields) {
    if (field.field_type === 'file') {
      const mine = files.filter((f) => f.fieldKey === field.key);
      if (sent(field.key) !== undefined && !isEmpty(sent(field.key))) add(field.key, 'debe ser un archivo');
      else if (field.required && mine.length === 0 && !sentFileKeys.has(field.key) && !errors[`answers.${field.key}`]) add(field.key, 'es obligatorio');
      if (mine.length) answers[field.key] = mine.map((f) => f.filename);
      continue;
    }
    const value = sent(field.key);
    if (isEmpty(value) || (field.field_type === 'checkbox' && value === false && field.required)) {
      // A value sent and refused before this (a NUL byte, a file in a text field) has that refusal as its error.
      if (field.required && !errors[`answers.${field.key}`]) add(field.key, 'es obligatorio');
      continue;
    }
    const checked = checkValue(field, value);
    if ('error' in checked) {
      add(field.key, checked.error);
      continue;
    }
    // Unchecked in words ("false", "off", "0"), as JSON's false above: a required box is not ticked.
    if (field.required && checked.value === false) {
      add(field.key, 'es obligatorio');
      continue;
    }
    const target = field.maps_to?.split('.')[1] as keyof typeof extracted | undefined;
    if (target === 'email' && !(typeof checked.value === 'string' && isEmailAddress(checked.value.trim()))) {
      // Whatever the field's type, the contact's email is one address: it is where the visitor's copy
      // goes, and a list or a header there would make the form a relay.
      add(field.key, 'no es un correo electrónico válido (este campo da el correo del contacto)');
      continue;
    }
    answers[field.key] = checked.value;
    if (target && target in extracted && extracted[target] === null) {
      // A number is the phone's decimal text; a checkbox's true/false is no name or phone.
      const textual = typeof checked.value === 'string' ? checked.value : typeof checked.value === 'number' ? String(checked.value) : null;
      if (textual !== null) extracted[target] = target === 'email' ? textual.trim().toLowerCase() : textual;
    }
  }
  return { answers, ...extracted };
}
