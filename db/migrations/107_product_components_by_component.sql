-- A product's delete finds the products that use it as a component: the
-- foreign key's ON DELETE SET NULL, and the update that moves their updated_at
-- (api/routes/product-queries.ts, deleteProduct). Without this index each
-- delete read every component row of the database.
SET LOCAL lock_timeout = '5s';
CREATE INDEX product_components_component ON product_components (company_id, component_product_id) WHERE component_product_id IS NOT NULL;
