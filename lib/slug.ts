// URL slugs derived from free text: accents folded (á → a), anything but a-z
// and 0-9 turned into single dashes, no dash at either end.

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
