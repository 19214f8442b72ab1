// Product queries: the nested writes (variants, option types, components,
// stock) and the read of a product with everything the detail shows. Every
// function takes the transaction client of its caller.
//
// Nested items follow accepts-nested-attributes semantics: an item with `id`
// updates that item (it must belong to this product, else 422), with
// `_destroy: true` removes it; an item without `id` is created; items not
// mentioned stay as they are.
import type { Client, Queryable } from '../../db/pool.ts';
import { iso } from '../../db/rows.ts';
import { objectId } from '../../lib/objectid.ts';
import { deleteMedia } from '../../storage/media.ts';
import { flattenCustomProperties } from '../custom-properties.ts';
import { validationFailed, type FieldErrors } from '../errors.ts';
import { PRODUCT_RESERVED, type ProductWrite } from './product-schemas.ts';

type Nested<T> = NonNullable<T>;
type VariantWrite = Nested<ProductWrite['variants']>[number];
type OptionTypeWrite = Nested<ProductWrite['option_types']>[number];
type ComponentWrite = Nested<ProductWrite['components']>[number];
type InventoryWrite = Nested<ProductWrite['inventory']>[number];

function fail(errors: FieldErrors): void {
  if (Object.keys(errors).length > 0) throw validationFailed(errors);
}

function setClause(values: Record<string, unknown>, first: number): { sql: string; params: unknown[] } {
  const entries = Object.entries(values).filter(([, v]) => v !== undefined);
  return {
    sql: entries.map(([k], i) => `${k} = $${first + i}`).join(', '),
    params: entries.map(([, v]) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : v)),
  };
}

async function updateNested(db: Queryable, table: string, id: string, values: Record<string, unknown>): Promise<void> {
  const { sql, params } = setClause(values, 2);
  if (!sql) return;
  await db.query(`UPDATE ${table} SET ${sql}, updated_at = now() WHERE id = $1`, [id, ...params]);
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
  const errors: FieldErrors = {};
  for (const [i, item] of items.entries()) {
    const at = `variants.${i}`;
    if (item.id) {
      const { rows } = await db.query(
        'SELECT id, image_media_id FROM product_variants WHERE company_id = $1 AND product_id = $2 AND id = $3 FOR UPDATE',
        [companyId, productId, item.id],
      );
      if (!rows[0]) {
        errors[`${at}.id`] = ['no es una variante de este producto'];
        continue;
      }
      if (item._destroy) {
        await deleteMedia(db, companyId, [rows[0].image_media_id]);
        // product_stock.variant_id has no foreign key ('' stands for "the
        // product itself" and is part of the primary key), so the variant's
        // stock rows go here, or the detail would count them under a
        // variant_id that no longer exists.
        await db.query('DELETE FROM product_stock WHERE product_id = $1 AND variant_id = $2', [productId, item.id]);
        await db.query('DELETE FROM product_variants WHERE id = $1', [item.id]);
        continue;
      }
      if (item.image_url !== undefined) await deleteMedia(db, companyId, [rows[0].image_media_id]);
      const update = () =>
        updateNested(db, 'product_variants', item.id!, {
          name: item.name,
          sku: item.sku,
          prices_cents: item.prices_cents,
          position: item.position,
          ...(item.image_url !== undefined ? { image_url: item.image_url, thumbnail_url: null, image_media_id: null } : {}),
        });
      if (item.sku) await withSkuCheck(db, at, errors, update);
      else await update();
    } else if (!item._destroy) {
      if (!item.name) {
        errors[`${at}.name`] = ['es obligatorio al crear una variante'];
        continue;
      }
      const insert = () =>
        db.query(
          `INSERT INTO product_variants (id, company_id, product_id, name, sku, prices_cents, position, image_url)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [objectId(), companyId, productId, item.name, item.sku ?? null, JSON.stringify(item.prices_cents ?? {}), item.position ?? i, item.image_url ?? null],
        );
      if (item.sku) await withSkuCheck(db, at, errors, insert);
      else await insert();
    }
  }
  fail(errors);
}

type StoredValue = { id: string; name: string; extra_price_cents: number; position: number };

function mergeValues(stored: StoredValue[], items: NonNullable<OptionTypeWrite['values']>, at: string, errors: FieldErrors): StoredValue[] {
  const byId = new Map(stored.map((v) => [v.id, { ...v }]));
  for (const [i, item] of items.entries()) {
    if (item.id) {
      const existing = byId.get(item.id);
      if (!existing) {
        errors[`${at}.values.${i}.id`] = ['no es un valor de este tipo de opción'];
        continue;
      }
      if (item._destroy) byId.delete(item.id);
      else {
        if (item.name !== undefined) existing.name = item.name;
        if (item.extra_price_cents !== undefined) existing.extra_price_cents = item.extra_price_cents;
        if (item.position !== undefined) existing.position = item.position;
        byId.set(item.id, existing);
      }
    } else if (!item._destroy) {
      if (!item.name) {
        errors[`${at}.values.${i}.name`] = ['es obligatorio al crear un valor'];
        continue;
      }
      const id = objectId();
      byId.set(id, { id, name: item.name, extra_price_cents: item.extra_price_cents ?? 0, position: item.position ?? byId.size });
    }
  }
  return [...byId.values()].sort((a, b) => a.position - b.position);
}

export async function writeOptionTypes(db: Queryable, companyId: string, productId: string, items: OptionTypeWrite[]): Promise<void> {
  const errors: FieldErrors = {};
  for (const [i, item] of items.entries()) {
    const at = `option_types.${i}`;
    if (item.id) {
      const { rows } = await db.query(
        'SELECT id, values FROM product_option_types WHERE company_id = $1 AND product_id = $2 AND id = $3 FOR UPDATE',
        [companyId, productId, item.id],
      );
      if (!rows[0]) {
        errors[`${at}.id`] = ['no es un tipo de opción de este producto'];
        continue;
      }
      if (item._destroy) {
        await db.query('DELETE FROM product_option_types WHERE id = $1', [item.id]);
        continue;
      }
      const values = item.values ? mergeValues(rows[0].values, item.values, at, errors) : undefined;
      await updateNested(db, 'product_option_types', item.id, { name: item.name, position: item.position, values });
    } else if (!item._destroy) {
      if (!item.name) {
        errors[`${at}.name`] = ['es obligatorio al crear un tipo de opción'];
        continue;
      }
      const values = mergeValues([], item.values ?? [], at, errors);
      await db.query(
        'INSERT INTO product_option_types (id, company_id, product_id, name, position, values) VALUES ($1, $2, $3, $4, $5, $6)',
        [objectId(), companyId, productId, item.name, item.position ?? i, JSON.stringify(values)],
      );
    }
  }
  fail(errors);
}

export async function writeComponents(db: Queryable, companyId: string, productId: string, items: ComponentWrite[]): Promise<void> {
  const errors: FieldErrors = {};
  for (const [i, item] of items.entries()) {
    const at = `components.${i}`;
    if (item.component_product_id) {
      const { rowCount } = await db.query('SELECT 1 FROM products WHERE company_id = $1 AND id = $2', [companyId, item.component_product_id]);
      if (!rowCount) errors[`${at}.component_product_id`] = ['no existe'];
      else if (item.component_product_id === productId) errors[`${at}.component_product_id`] = ['un producto no puede ser componente de sí mismo'];
      if (errors[`${at}.component_product_id`]) continue;
    }
    if (item.id) {
      const { rows } = await db.query(
        'SELECT id FROM product_components WHERE company_id = $1 AND product_id = $2 AND id = $3 FOR UPDATE',
        [companyId, productId, item.id],
      );
      if (!rows[0]) {
        errors[`${at}.id`] = ['no es un componente de este producto'];
        continue;
      }
      if (item._destroy) {
        await db.query('DELETE FROM product_components WHERE id = $1', [item.id]);
        continue;
      }
      await updateNested(db, 'product_components', item.id, {
        name: item.name,
        component_product_id: item.component_product_id,
        quantity: item.quantity,
        required: item.required,
        extra_prices_cents: item.extra_prices_cents,
        position: item.position,
      });
    } else if (!item._destroy) {
      if (!item.name) {
        errors[`${at}.name`] = ['es obligatorio al crear un componente'];
        continue;
      }
      await db.query(
        `INSERT INTO product_components (id, company_id, product_id, name, component_product_id, quantity, required, extra_prices_cents, position)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [objectId(), companyId, productId, item.name, item.component_product_id ?? null, item.quantity ?? 1, item.required ?? true,
          JSON.stringify(item.extra_prices_cents ?? {}), item.position ?? i],
      );
    }
  }
  fail(errors);
}

/** Sets absolute on-hand quantities per location; 0 removes the location. */
export async function writeInventory(db: Queryable, companyId: string, productId: string, items: InventoryWrite[]): Promise<void> {
  const errors: FieldErrors = {};
  for (const [i, item] of items.entries()) {
    const variantId = item.variant_id ?? '';
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
  fail(errors);
}

/** Select list for products: the category reference comes from its table, so a rename shows at once. */
export const PRODUCT_COLUMNS = `products.*,
  (SELECT json_build_object('id', c.id, 'name', c.name, 'slug', c.slug) FROM product_categories c
    WHERE c.company_id = products.company_id AND c.id = products.product_category_id) AS category`;

export function serializeProduct(row: Record<string, any>): Record<string, unknown> {
  const images = ((row.images ?? []) as Array<{ url: string; alt?: string | null; position?: number }>)
    .map((img, i) => ({ url: img.url, alt: img.alt ?? null, position: img.position ?? i }))
    .sort((a, b) => a.position - b.position);
  return flattenCustomProperties(
    {
      id: row.id,
      name: row.name,
      slug: row.slug,
      sku: row.sku,
      description: row.description,
      status: row.status,
      unit: row.unit,
      prices_cents: row.prices_cents,
      vat_rate: row.vat_rate,
      vat_exempt: row.vat_exempt,
      prices_include_vat: row.prices_include_vat,
      sat_product_key: row.sat_product_key,
      sat_unit_key: row.sat_unit_key,
      brand_id: row.brand_id,
      brand: row.brand_id ? { id: row.brand_id, name: row.brand_name, slug: row.brand_slug } : null,
      product_category_id: row.product_category_id,
      product_category: row.category ?? null,
      category_name: row.category?.name ?? null,
      image_url: row.image_url,
      thumbnail_url: row.thumbnail_url,
      images,
      created_at: iso(row.created_at),
      updated_at: iso(row.updated_at),
    },
    row.custom_properties,
    PRODUCT_RESERVED,
  );
}

/** The detail: the product plus variants, option types, components and stock (quantities only). */
export async function loadProductDetail(db: Queryable, companyId: string, id: string): Promise<Record<string, unknown> | null> {
  const { rows } = await db.query(`SELECT ${PRODUCT_COLUMNS} FROM products WHERE company_id = $1 AND id = $2`, [companyId, id]);
  if (!rows[0]) return null;
  // Sequential on purpose: `db` may be one transaction client, which runs one query at a time.
  const variants = await db.query('SELECT * FROM product_variants WHERE product_id = $1 ORDER BY position, id', [id]);
  const optionTypes = await db.query('SELECT * FROM product_option_types WHERE product_id = $1 ORDER BY position, id', [id]);
  const components = await db.query('SELECT * FROM product_components WHERE product_id = $1 ORDER BY position, id', [id]);
  const stock = await db.query('SELECT warehouse, rack, variant_id, quantity FROM product_stock WHERE product_id = $1 ORDER BY warehouse, rack, variant_id', [id]);
  const warehouses = new Map<string, { warehouse: string; quantity: number; racks: Array<{ rack: string | null; variant_id: string | null; quantity: number }> }>();
  let total = 0;
  for (const s of stock.rows) {
    const w = warehouses.get(s.warehouse) ?? { warehouse: s.warehouse as string, quantity: 0, racks: [] as Array<{ rack: string | null; variant_id: string | null; quantity: number }> };
    w.quantity += s.quantity;
    w.racks.push({ rack: s.rack || null, variant_id: s.variant_id || null, quantity: s.quantity });
    warehouses.set(s.warehouse, w);
    total += s.quantity;
  }
  return {
    ...serializeProduct(rows[0]),
    variants: variants.rows.map((v) => ({
      id: v.id,
      name: v.name,
      sku: v.sku,
      prices_cents: v.prices_cents,
      position: v.position,
      image_url: v.image_url,
      thumbnail_url: v.thumbnail_url,
    })),
    option_types: optionTypes.rows.map((o) => ({ id: o.id, name: o.name, position: o.position, values: o.values })),
    components: components.rows.map((c) => ({
      id: c.id,
      name: c.name,
      component_product_id: c.component_product_id,
      quantity: c.quantity,
      required: c.required,
      extra_prices_cents: c.extra_prices_cents,
      position: c.position,
    })),
    inventory: { total_quantity: total, warehouses: [...warehouses.values()] },
  };
}
