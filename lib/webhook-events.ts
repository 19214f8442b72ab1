// The event names the service emits (contract, Events: "Event names") and how
// an endpoint's `enabled_events` selects them: a name, `*` (everything), or
// `<prefix>.*` (every event of one prefix, whole segment only).

export const EVENT_NAMES = [
  'income.created',
  'income.paid',
  'income.deleted',
  'sale.created',
  'sale.paid',
  'sale.refunded',
  'recurring.created',
  'recurring.occurrence_created',
  'recurring.ended',
  'recurring.deactivated',
  'invoice.emitted',
  'invoice.cancelled',
  'invoice.substituted',
  'invoice.payment_complement_added',
  'customer.created',
  'lead.created',
] as const;

export type EventName = (typeof EVENT_NAMES)[number];

/**
 * The events some write of the service records: what `meta.available_events`
 * and the OpenAPI `webhooks` list. Every contract name is emitted today;
 * test/webhooks.emitted.test.ts performs, for each name here, the write that
 * emits it, so the list cannot promise an event nothing sends. A contract name
 * added before the write that emits it stays out of this list until then,
 * while `enabled_events` already accepts it.
 */
export const EMITTED_EVENT_NAMES: readonly EventName[] = EVENT_NAMES;

const NAMES = new Set<string>(EVENT_NAMES);
const PREFIXES = new Set(EVENT_NAMES.map((name) => name.slice(0, name.indexOf('.'))));

export function isEventName(value: string): value is EventName {
  return NAMES.has(value);
}

/** Every value an `enabled_events` entry may take: `*`, a prefix wildcard, or an event name (the OpenAPI enum). */
export function enabledEventChoices(): string[] {
  return ['*', ...[...PREFIXES].map((p) => `${p}.*`), ...EVENT_NAMES];
}

/**
 * Why an `enabled_events` entry is unacceptable, or null. A wildcard is valid
 * only as a whole last segment (`invoice.*`, not `invoice.pa*` or `*.paid`),
 * and its prefix must be one the service emits: a pattern that can never
 * match is a typo the client would otherwise discover by never hearing back.
 */
export function enabledEventError(entry: string): string | null {
  if (entry === '*' || isEventName(entry)) return null;
  if (entry.endsWith('.*')) {
    const prefix = entry.slice(0, -2);
    if (PREFIXES.has(prefix)) return null;
    return `"${entry}": no existe ningún evento con el prefijo "${prefix}"`;
  }
  if (entry.includes('*')) return `"${entry}": el comodín solo se admite como segmento final completo ("<prefijo>.*" o "*")`;
  return `"${entry}" no es un evento conocido`;
}

/** The `enabled_events` entries that select `name`: the name itself, its prefix wildcard, and `*`. */
export function selectorsOf(name: string): string[] {
  const dot = name.indexOf('.');
  return [name, `${name.slice(0, dot)}.*`, '*'];
}
