-- Catalog fixes after review (docs/catalog.md).

-- Until this release, `_destroy` of a variant left its rows in product_stock
-- (variant_id has no foreign key: '' means "the product itself" and is part
-- of the primary key). The handler now deletes them with the variant; this
-- removes the rows already orphaned, which the detail's `inventory` still
-- counted under a variant_id that no longer exists.
DELETE FROM product_stock s
 WHERE s.variant_id <> ''
   AND NOT EXISTS (SELECT 1 FROM product_variants v WHERE v.id = s.variant_id AND v.product_id = s.product_id);

-- `has_products` on /product-categories walks the distinct categories of the
-- company's active products one index descent at a time (a loose index scan,
-- api/routes/product-categories.ts), and the per-page category counts count
-- active products per category: both read this small index only.
CREATE INDEX products_active_category ON products (company_id, product_category_id) WHERE status = 'active';
