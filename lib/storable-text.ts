// Text from outside (a webhook receiver's answer, a Google Calendar event) as
// PostgreSQL can store it. No text or JSON value may hold U+0000, and a lone
// UTF-16 surrogate is not text (a JSON column refuses it; cutting a string at a
// length can make one). What the API is sent is refused instead
// (api/validation.ts, isStorableText); what the worker reads from others it
// cannot refuse, so it keeps it with U+FFFD in place of what cannot be kept.

export function toStorableText(text: string): string {
  return !text.includes('\0') && text.isWellFormed() ? text : text.toWellFormed().replaceAll('\0', '\uFFFD');
}

/** `toStorableText` of a nullable value. */
export function toStorableTextOrNull(text: string | null | undefined): string | null {
  return text === null || text === undefined ? null : toStorableText(text);
}
