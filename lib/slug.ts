// URL slugs derived from free text: accents folded (á → a), anything but a-z
// and 0-9 turned into single dashes, no dash at either end; and the rule that
// picks a free one among those a table has.
import { isObjectId } from './objectid.ts';

export type SlugOptions = {
  /** Longest slug returned (80 unless told): cut after folding, so a dash may end it. */
  maxLength?: number;
  /** Returned when nothing is left (a name of only symbols or another script): 'item' unless told. */
  fallback?: string;
};

export function slugify(text: string, options: SlugOptions = {}): string {
  const base = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, options.maxLength ?? 80);
  return base || (options.fallback ?? 'item');
}

/**
 * `base`, `base-2`, `base-3`… in the order a free slug is picked from them. Never one shaped like an
 * ObjectId: a path that takes an id or a slug reads 24 hex digits as an id, so a record with that slug
 * could not be reached by it (such a base starts at `-2`).
 */
export function* slugCandidates(base: string): Generator<string> {
  for (let n = isObjectId(base) ? 2 : 1; ; n++) yield n === 1 ? base : `${base}-${n}`;
}

/** The first of slugCandidates(base) not in `taken` (the slugs the table has that are `base` or start with `base-`). */
export function firstFreeSlug(base: string, taken: ReadonlySet<string>): string {
  for (const candidate of slugCandidates(base)) if (!taken.has(candidate)) return candidate;
  throw new Error('unreachable');
}
