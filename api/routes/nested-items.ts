// Nested items written with their parent (a product's variants, option types
// and their values, components), with accepts-nested-attributes semantics: an
// item with `id` updates that item (it must belong to the parent, else a
// field error), with `_destroy: true` removes it; an item without `id` is
// created and needs a `name`; items not mentioned stay as they are; an id
// named twice in one list is a field error on the second. Errors
// are collected per item (`<list>.<i>.<field>`) instead of stopping at the
// first, so one 422 names every bad item, thrown once the list is written
// (the caller's transaction then rolls everything back).
import { validationFailed, type FieldErrors } from '../errors.ts';

export type NestedItem = { id?: string; _destroy?: boolean; name?: string };

export type NestedItemsWriter<Item extends NestedItem, Stored> = {
  /** Error path of the list: `variants`, `option_types.0.values`. */
  list: string;
  /** Field error for an `id` that is not one of the parent's items. */
  notFound: string;
  /** Field error for a new item without a name. */
  nameRequired: string;
  /** Checks run on every item first; false skips it (the check recorded its errors). */
  check?: (item: Item, at: string, errors: FieldErrors) => Promise<boolean>;
  /** The parent's item with that id (locked when it is a row), or undefined. */
  find: (id: string) => Promise<Stored | undefined>;
  destroy: (stored: Stored, item: Item) => Promise<void>;
  /** `at` is the item's error path; `errors` takes the field errors the write finds (a taken sku, a nested list's). */
  update: (stored: Stored, item: Item, at: string, errors: FieldErrors) => Promise<void>;
  create: (item: Item & { name: string }, index: number, at: string, errors: FieldErrors) => Promise<void>;
};

/** Writes the list; throws 422 validation_failed with every item's field errors at the end. */
export async function writeNestedItems<Item extends NestedItem, Stored>(items: readonly Item[], writer: NestedItemsWriter<Item, Stored>): Promise<void> {
  const errors: FieldErrors = {};
  await collectNestedItems(items, writer, errors);
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
}

/** Writes a list nested in an item of another (option values): its field errors join the outer list's. */
export async function collectNestedItems<Item extends NestedItem, Stored>(
  items: readonly Item[],
  writer: NestedItemsWriter<Item, Stored>,
  errors: FieldErrors,
): Promise<void> {
  // An item named twice in one list (updated and destroyed, or two updates merged) contradicts itself:
  // refused, rather than the list's order deciding which of the two the client meant.
  const named = new Map<string, number>();
  for (const [i, item] of items.entries()) {
    const at = `${writer.list}.${i}`;
    if (writer.check && !(await writer.check(item, at, errors))) continue;
    if (item.id) {
      const first = named.get(item.id);
      if (first !== undefined) {
        errors[`${at}.id`] = [`repetido: ${writer.list}.${first} ya nombra este elemento; nómbralo una sola vez`];
        continue;
      }
      named.set(item.id, i);
      const stored = await writer.find(item.id);
      if (!stored) errors[`${at}.id`] = [writer.notFound];
      else if (item._destroy) await writer.destroy(stored, item);
      else await writer.update(stored, item, at, errors);
    } else if (item._destroy) {
      // Nothing to remove: a client that meant an item forgot its id; silently ignoring it would look like success.
      errors[`${at}.id`] = ['obligatorio con _destroy: indica qué elemento eliminar'];
    } else if (!item.name) errors[`${at}.name`] = [writer.nameRequired];
    else await writer.create({ ...item, name: item.name }, i, at, errors);
  }
}
