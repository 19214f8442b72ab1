// HTML text and attribute values: the five characters that could end a text
// or an attribute, as entities. Every server-rendered page (the booking page,
// the OAuth sign-in and consent pages, the Google connection pages, the API
// reference) escapes what it did not write with this one function.

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `value` as HTML text or a quoted attribute value; null and undefined are empty. */
export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ENTITIES[c]);
}
