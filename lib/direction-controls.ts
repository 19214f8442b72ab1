// Unicode's direction overrides, embeddings and isolates (U+202A–U+202E, U+2066–U+2069): invisible, and
// able to make text read in another order than it is stored (Trojan Source). Form answers drop them
// (api/forms/answers.ts), and so does text quoted in our emails (worker/mail/quoted.ts).
const DIRECTION_CONTROLS = /[\u202a-\u202e\u2066-\u2069]/g;

/** `text` without direction overrides, embeddings or isolates. */
export function withoutDirectionControls(text: string): string {
  return text.replace(DIRECTION_CONTROLS, '');
}
