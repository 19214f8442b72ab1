// The nested items of a product, written in the product's transaction:
// variants, option types (with their values), components (matched by id,
// removed by `_destroy`, created without id: nested-items.ts) and stock
// (absolute quantities per location). Each list's field errors are thrown
// together as one 422 once the list is written.
import type { Client, Queryable } from '../../db/pool.ts';
import { objectId } from '../../lib/objectid.ts';
import { deleteMedia, imageUrlColumns, ownThumbnail } from '../../storage/media-items.ts';
import { validationFailed, type FieldErrors } from '../errors.ts';
import { collectNestedItems, writeNestedItems } from './nested-items.ts';
import type { OptionValue } from './product-queries.ts';
import { ITEM_LIMITS, type ProductWrite } from './product-schemas.ts';
import { setList } from '../../db/tables.ts';

type VariantWrite = NonNullable<ProductWrite['variants']>[number];
type OptionTypeWrite = NonNullable<ProductWrite['option_types']>[number];
type OptionValueWrite = NonNullable<OptionTypeWrite['values']>[number];
type ComponentWrite = NonNullable<ProductWrite['components']>[number];
type InventoryWrite = NonNullable<ProductWrite['inventory']>[number];

/** Tables of a product's items; identifiers from code only. */
type ItemTable = 'product_variants' | 'product_option_types' | 'product_components';

/** Writes every nested list the payload carries, in this order. */
export async function writeProductItems(client: Client, companyId: string, productId: string, data: ProductWrite): Promise<void> {
  const lists = (['variants', 'option_types', 'components', 'inventory'] as const).filter((list) => data[list]);
  const before = await countItems(client, productId, lists);
  if (data.variants) await writeVariants(client, companyId, productId, data.variants);
  if (data.option_types) await writeOptionTypes(client, companyId, productId, data.option_types);
  if (data.components) await writeComponents(client, companyId, productId, data.components);
  if (data.inventory) await writeInventory(client, companyId, productId, data.inventory);
  // Each list the write grew, counted after it: a product's lists stay within ITEM_LIMITS however many
  // PATCHes add to them. A write that does not grow a list is taken, so a product over a limit (made
  // before it held) can still be edited and brought under it.
  const after = await countItems(client, productId, lists);
  const errors: FieldErrors = {};
  for (const list of lists) {
    if (after[list] > ITEM_LIMITS[list] && after[list] > before[list]) {
      errors[list] = [`un producto tiene como máximo ${ITEM_LIMITS[list]}; con esta escritura tendría ${after[list]}`];
    }
  }
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
}

type ItemList = 'variants' | 'option_types' | 'components' | 'inventory';
const ITEM_TABLES = { variants: 'product_variants', option_types: 'product_option_types', components: 'product_components', inventory: 'product_stock' } as const;

/** How many items the product holds in each of `lists` (one statement; none when the write touches no list). */
async function countItems(db: Queryable, productId: string, lists: readonly ItemList[]): Promise<Record<ItemList, number>> {
  if (lists.length === 0) return { variants: 0, option_types: 0, components: 0, inventory: 0 };
  const { rows } = await db.query<Record<ItemList, number>>(
    `SELECT ${lists.map((list) => `(SELECT count(*)::int FROM ${ITEM_TABLES[list]} WHERE product_id = $1) AS ${list}`).join(', ')}`,
    [productId],
  );
  return rows[0];
}

/** Where an item created without a position goes: after the list's stored items, in the payload's order. */
async function nextPosition(db: Queryable, table: ItemTable, productId: string): Promise<number> {
  const { rows } = await db.query<{ next: number }>(`SELECT coalesce(max(position) + 1, 0)::int AS next FROM ${table} WHERE product_id = $1`, [productId]);
  return rows[0].next;
}

/** The product's item with that id, locked for the rest of the transaction. */
async function lockItem<Row>(db: Queryable, table: ItemTable, columns: string, companyId: string, productId: string, id: string): Promise<Row | undefined> {
  const { rows } = await db.query(`SELECT ${columns} FROM ${table} WHERE company_id = $1 AND product_id = $2 AND id = $3 FOR UPDATE`, [
    companyId,
    productId,
    id,
  ]);
  return rows[0] as Row | undefined;
}

async function deleteItem(db: Queryable, table: ItemTable, id: string): Promise<void> {
  await db.query(`DELETE FROM ${table} WHERE id = $1`, [id]);
}

/** Sets the given fields (undefined ones are left alone); jsonb values go as JSON text. */
async function updateItem(db: Queryable, table: ItemTable, id: string, values: Record<string, unknown>): Promise<void> {
  const entries = Object.entries(values).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return;
  const sets = setList(entries.map(([k]) => k), 2);
  const params = entries.map(([, v]) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : v));
  await db.query(`UPDATE ${table} SET ${sets}, updated_at = now() WHERE id = $1`, [id, ...params]);
}

/**
 * Runs one variant write that sets a sku under a savepoint. The unique index
 * product_variants_sku (company_id, sku) is the judge, so a sku taken by
 * another variant, by an earlier item of the same payload or by a concurrent
 * request all end the same way: a field error for that item (422), not an
 * aborted transaction and a 500. The caller's transaction still rolls back
 * the whole write once the errors are collected.
 */
async function withSkuCheck(db: Client, at: string, errors: FieldErrors, write: () => Promise<unknown>): Promise<void> {
  await db.query('SAVEPOINT variant_sku');
  try {
    await write();
    await db.query('RELEASE SAVEPOINT variant_sku');
  } catch (error) {
    const pgError = error as { code?: string; constraint?: string };
    if (pgError?.code !== '23505' || pgError.constraint !== 'product_variants_sku') throw error;
    await db.query('ROLLBACK TO SAVEPOINT variant_sku');
    errors[`${at}.sku`] = ['ya la usa otra variante de la empresa'];
  }
}

export async function writeVariants(db: Client, companyId: string, productId: string, items: VariantWrite[]): Promise<void> {
  const skuChecked = (item: VariantWrite, at: string, errors: FieldErrors, write: () => Promise<unknown>) =>
    item.sku ? withSkuCheck(db, at, errors, write) : write().then(() => {});
  const after = await nextPosition(db, 'product_variants', productId);
  await writeNestedItems(items, {
    list: 'variants',
    notFound: 'no es una variante de este producto',
    nameRequired: 'es obligatorio al crear una variante',
    find: (id) =>
      lockItem<{ id: string; image_media_id: string | null; image_url: string | null; thumbnail_url: string | null }>(
        db, 'product_variants', 'id, image_media_id, image_url, thumbnail_url', companyId, productId, id,
      ),
    destroy: async (stored) => {
      await deleteMedia(db, companyId, [stored.image_media_id]);
      // product_stock.variant_id has no foreign key ('' stands for "the
      // product itself" and is part of the primary key), so the variant's
      // stock rows go here, or the detail would count them under a
      // variant_id that no longer exists.
      await db.query('DELETE FROM product_stock WHERE product_id = $1 AND variant_id = $2', [productId, stored.id]);
      await deleteItem(db, 'product_variants', stored.id);
    },
    update: async (stored, item, at, errors) => {
      // The stored URL sent back (a variant written back as read), or the upload's under another name, is
      // no change: the uploaded image stays (imageUrlColumns).
      const image = item.image_url === undefined ? {} : await imageUrlColumns(db, companyId, item.image_url, stored);
      if (image === 'own_thumbnail') {
        errors[`${at}.image_url`] = [ownThumbnail('image_url')];
        return;
      }
      await skuChecked(item, at, errors, () =>
        updateItem(db, 'product_variants', stored.id, {
          name: item.name,
          sku: item.sku,
          prices_cents: item.prices_cents,
          position: item.position,
          ...image,
        }),
      );
    },
    create: (item, i, at, errors) =>
      skuChecked(item, at, errors, () =>
        db.query(
          `INSERT INTO product_variants (id, company_id, product_id, name, sku, prices_cents, position, image_url)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [objectId(), companyId, productId, item.name, item.sku ?? null, JSON.stringify(item.prices_cents ?? {}), item.position ?? after + i, item.image_url ?? null],
        ),
      ),
  });
}

/** Option values live in their option type's `values` jsonb: merged in memory, written with it. */
async function mergeValues(stored: OptionValue[], items: OptionValueWrite[], at: string, errors: FieldErrors): Promise<OptionValue[]> {
  const byId = new Map(stored.map((v) => [v.id, { ...v }]));
  await collectNestedItems(
    items,
    {
      list: `${at}.values`,
      notFound: 'no es un valor de este tipo de opción',
      nameRequired: 'es obligatorio al crear un valor',
      find: async (id) => byId.get(id),
      destroy: async (value) => {
        byId.delete(value.id);
      },
      update: async (value, item) => {
        if (item.name !== undefined) value.name = item.name;
        if (item.extra_price_cents !== undefined) value.extra_price_cents = item.extra_price_cents;
        if (item.position !== undefined) value.position = item.position;
      },
      create: async (item) => {
        const id = objectId();
        // After the stored values (and those created before it in this payload), as every nested list's new items go.
        const last = Math.max(-1, ...[...byId.values()].map((v) => v.position));
        byId.set(id, { id, name: item.name, extra_price_cents: item.extra_price_cents ?? 0, position: item.position ?? last + 1 });
      },
    },
    errors,
  );
  if (byId.size > ITEM_LIMITS.values && byId.size > stored.length) errors[`${at}.values`] = [`un tipo de opción tiene como máximo ${ITEM_LIMITS.values} valores; con esta escritura tendría ${byId.size}`];
  return [...byId.values()].sort((a, b) => a.position - b.position);
}

export async function writeOptionTypes(db: Queryable, companyId: string, productId: string, items: OptionTypeWrite[]): Promise<void> {
  const after = await nextPosition(db, 'product_option_types', productId);
  await writeNestedItems(items, {
    list: 'option_types',
    notFound: 'no es un tipo de opción de este producto',
    nameRequired: 'es obligatorio al crear un tipo de opción',
    find: (id) => lockItem<{ id: string; values: OptionValue[] }>(db, 'product_option_types', 'id, values', companyId, productId, id),
    destroy: (stored) => deleteItem(db, 'product_option_types', stored.id),
    update: async (stored, item, at, errors) => {
      const values = item.values ? await mergeValues(stored.values, item.values, at, errors) : undefined;
      await updateItem(db, 'product_option_types', stored.id, { name: item.name, position: item.position, values });
    },
    create: async (item, i, at, errors) => {
      const values = await mergeValues([], item.values ?? [], at, errors);
      await db.query('INSERT INTO product_option_types (id, company_id, product_id, name, position, values) VALUES ($1, $2, $3, $4, $5, $6)', [
        objectId(),
        companyId,
        productId,
        item.name,
        item.position ?? after + i,
        JSON.stringify(values),
      ]);
    },
  });
}

export async function writeComponents(db: Queryable, companyId: string, productId: string, items: ComponentWrite[]): Promise<void> {
  const after = await nextPosition(db, 'product_components', productId);
  await writeNestedItems(items, {
    list: 'components',
    notFound: 'no es un componente de este producto',
    nameRequired: 'es obligatorio al crear un componente',
    // The referenced product is checked first, whatever the item does.
    check: async (item, at, errors) => {
      if (!item.component_product_id) return true;
      const { rowCount } = await db.query('SELECT 1 FROM products WHERE company_id = $1 AND id = $2', [companyId, item.component_product_id]);
      if (!rowCount) errors[`${at}.component_product_id`] = ['no existe'];
      else if (item.component_product_id === productId) errors[`${at}.component_product_id`] = ['un producto no puede ser componente de sí mismo'];
      return !errors[`${at}.component_product_id`];
    },
    find: (id) => lockItem<{ id: string }>(db, 'product_components', 'id', companyId, productId, id),
    destroy: (stored) => deleteItem(db, 'product_components', stored.id),
    update: (stored, item) =>
      updateItem(db, 'product_components', stored.id, {
        name: item.name,
        component_product_id: item.component_product_id,
        quantity: item.quantity,
        required: item.required,
        extra_prices_cents: item.extra_prices_cents,
        position: item.position,
      }),
    create: async (item, i) => {
      await db.query(
        `INSERT INTO product_components (id, company_id, product_id, name, component_product_id, quantity, required, extra_prices_cents, position)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [objectId(), companyId, productId, item.name, item.component_product_id ?? null, item.quantity ?? 1, item.required ?? true,
          JSON.stringify(item.extra_prices_cents ?? {}), item.position ?? after + i],
      );
    },
  });
}

/** Sets absolute on-hand quantities per location; 0 removes the location. */
export async function writeInventory(db: Queryable, companyId: string, productId: string, items: InventoryWrite[]): Promise<void> {
  const errors: FieldErrors = {};
  // Each item sets a location's quantity: a location set twice in one write would leave whichever came last.
  const located = new Map<string, number>();
  for (const [i, item] of items.entries()) {
    const variantId = item.variant_id ?? '';
    const location = JSON.stringify([variantId, item.warehouse, item.rack ?? '']);
    const first = located.get(location);
    if (first !== undefined) {
      errors[`inventory.${i}.warehouse`] = [`ubicación repetida: inventory.${first} ya fija la existencia de este almacén, rack y variante`];
      continue;
    }
    located.set(location, i);
    if (variantId) {
      const { rowCount } = await db.query(
        'SELECT 1 FROM product_variants WHERE company_id = $1 AND product_id = $2 AND id = $3',
        [companyId, productId, variantId],
      );
      if (!rowCount) {
        errors[`inventory.${i}.variant_id`] = ['no es una variante de este producto'];
        continue;
      }
    }
    const key = [productId, variantId, item.warehouse, item.rack ?? ''];
    if (item.quantity === 0) {
      await db.query('DELETE FROM product_stock WHERE product_id = $1 AND variant_id = $2 AND warehouse = $3 AND rack = $4', key);
    } else {
      await db.query(
        `INSERT INTO product_stock (product_id, variant_id, warehouse, rack, quantity, company_id) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (product_id, variant_id, warehouse, rack) DO UPDATE SET quantity = EXCLUDED.quantity, updated_at = now()`,
        [...key, item.quantity, companyId],
      );
    }
  }
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
}
