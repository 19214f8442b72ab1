-- Catalog: brands, product categories, products with variants, option types,
-- components and stock per warehouse/rack, and the uploaded images (media)
-- whose bytes live in `blobs` (003). See docs/catalog.md for the decisions.
--
-- Tenant safety at the database level: every reference between catalog rows
-- is a composite foreign key (company_id, <ref>) → (company_id, id), so a row
-- can never point at another company's brand, category or product even if a
-- handler forgot to check. `ON DELETE SET NULL (<col>)` (PostgreSQL 15+) nulls
-- only the reference, never company_id.

-- (company_id, search_text) in one GIN index: the company filter and the
-- trigram match are answered by the same index scan.
CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE TABLE brands (
  id                 text PRIMARY KEY,
  company_id         text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  name               text NOT NULL,
  slug               text NOT NULL,
  description        text,
  website            text,
  logo_url           text,
  logo_thumbnail_url text,
  logo_media_id      text,
  custom_properties  jsonb NOT NULL DEFAULT '{}',
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now(),
  UNIQUE (company_id, id),
  UNIQUE (company_id, slug)
);
CREATE INDEX brands_page ON brands (company_id, created_at DESC, id DESC);

CREATE TABLE product_categories (
  id             text PRIMARY KEY,
  company_id     text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  name           text NOT NULL,
  slug           text NOT NULL,
  description    text,
  parent_id      text,
  icon           text,
  position       integer NOT NULL DEFAULT 0,
  image_url      text,
  thumbnail_url  text,
  image_media_id text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (company_id, id),
  UNIQUE (company_id, slug),
  CHECK (parent_id IS DISTINCT FROM id),
  FOREIGN KEY (company_id, parent_id) REFERENCES product_categories (company_id, id) ON DELETE SET NULL (parent_id)
);
CREATE INDEX product_categories_page ON product_categories (company_id, created_at DESC, id DESC);
CREATE INDEX product_categories_parent ON product_categories (company_id, parent_id);

CREATE TABLE products (
  id                  text PRIMARY KEY,
  company_id          text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  name                text NOT NULL,
  slug                text NOT NULL,
  sku                 text,
  description         text,
  status              text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
  unit                text,
  prices_cents        jsonb NOT NULL CHECK (jsonb_typeof(prices_cents) = 'object'),
  vat_rate            integer NOT NULL DEFAULT 16 CHECK (vat_rate IN (0, 8, 16)),
  vat_exempt          boolean NOT NULL DEFAULT false,
  prices_include_vat  boolean NOT NULL DEFAULT true,
  sat_product_key     text,
  sat_unit_key        text,
  brand_id            text,
  -- Brand snapshot (contract: "denormalized brand data on the product,
  -- matched by brand slug filters"); rewritten when the brand changes.
  brand_name          text,
  brand_slug          text,
  product_category_id text,
  image_url           text,
  thumbnail_url       text,
  image_media_id      text,
  images              jsonb NOT NULL DEFAULT '[]',
  custom_properties   jsonb NOT NULL DEFAULT '{}',
  search_text         text GENERATED ALWAYS AS (name || ' ' || coalesce(sku, '') || ' ' || coalesce(brand_name, '')) STORED,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  UNIQUE (company_id, id),
  UNIQUE (company_id, slug),
  FOREIGN KEY (company_id, brand_id) REFERENCES brands (company_id, id) ON DELETE SET NULL (brand_id),
  FOREIGN KEY (company_id, product_category_id) REFERENCES product_categories (company_id, id) ON DELETE SET NULL (product_category_id)
);
CREATE UNIQUE INDEX products_sku ON products (company_id, sku) WHERE sku IS NOT NULL;
CREATE INDEX products_page ON products (company_id, created_at DESC, id DESC);
-- Filters walk these in page order, so a filtered page is an index range scan.
CREATE INDEX products_brand ON products (company_id, brand_id, created_at DESC, id DESC);
CREATE INDEX products_brand_slug ON products (company_id, brand_slug, created_at DESC, id DESC);
CREATE INDEX products_category ON products (company_id, product_category_id, created_at DESC, id DESC);
CREATE INDEX products_search ON products USING gin (company_id, search_text gin_trgm_ops);

CREATE TABLE product_variants (
  id             text PRIMARY KEY,
  company_id     text NOT NULL,
  product_id     text NOT NULL,
  name           text NOT NULL,
  sku            text,
  -- Empty object: the variant inherits the product's prices.
  prices_cents   jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(prices_cents) = 'object'),
  position       integer NOT NULL DEFAULT 0,
  image_url      text,
  thumbnail_url  text,
  image_media_id text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  updated_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (company_id, id),
  FOREIGN KEY (company_id, product_id) REFERENCES products (company_id, id) ON DELETE CASCADE
);
CREATE INDEX product_variants_product ON product_variants (product_id, position, id);
CREATE UNIQUE INDEX product_variants_sku ON product_variants (company_id, sku) WHERE sku IS NOT NULL;

-- Values live in `values` as [{id, name, extra_price_cents, position}]: they
-- are always read and written with their option type.
CREATE TABLE product_option_types (
  id         text PRIMARY KEY,
  company_id text NOT NULL,
  product_id text NOT NULL,
  name       text NOT NULL,
  position   integer NOT NULL DEFAULT 0,
  values     jsonb NOT NULL DEFAULT '[]',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (company_id, product_id) REFERENCES products (company_id, id) ON DELETE CASCADE
);
CREATE INDEX product_option_types_product ON product_option_types (product_id, position, id);

CREATE TABLE product_components (
  id                   text PRIMARY KEY,
  company_id           text NOT NULL,
  product_id           text NOT NULL,
  name                 text NOT NULL,
  component_product_id text,
  quantity             integer NOT NULL DEFAULT 1 CHECK (quantity >= 1),
  required             boolean NOT NULL DEFAULT true,
  extra_prices_cents   jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(extra_prices_cents) = 'object'),
  position             integer NOT NULL DEFAULT 0,
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (company_id, product_id) REFERENCES products (company_id, id) ON DELETE CASCADE,
  FOREIGN KEY (company_id, component_product_id) REFERENCES products (company_id, id) ON DELETE SET NULL (component_product_id)
);
CREATE INDEX product_components_product ON product_components (product_id, position, id);

-- On-hand quantity per product (or variant) and location. Quantities only:
-- costs belong to the money module, never to the catalog.
CREATE TABLE product_stock (
  company_id text NOT NULL,
  product_id text NOT NULL,
  variant_id text NOT NULL DEFAULT '',
  warehouse  text NOT NULL,
  rack       text NOT NULL DEFAULT '',
  quantity   integer NOT NULL CHECK (quantity >= 0),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (product_id, variant_id, warehouse, rack),
  FOREIGN KEY (company_id, product_id) REFERENCES products (company_id, id) ON DELETE CASCADE
);

-- One uploaded image: its original and (once the worker made it) its
-- thumbnail. Deleting the original blob deletes the media row; the public
-- /media route serves only blobs that a media row names, never other blobs
-- (form files are private).
CREATE TABLE media (
  id                text PRIMARY KEY,
  company_id        text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  owner_type        text NOT NULL CHECK (owner_type IN ('product', 'variant', 'brand', 'product_category')),
  owner_id          text NOT NULL,
  original_blob_id  text NOT NULL REFERENCES blobs (id) ON DELETE CASCADE,
  thumbnail_blob_id text REFERENCES blobs (id) ON DELETE SET NULL,
  filename          text NOT NULL,
  content_type      text NOT NULL,
  width             integer NOT NULL,
  height            integer NOT NULL,
  frames            integer NOT NULL DEFAULT 1,
  size_bytes        integer NOT NULL,
  status            text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'ready', 'failed')),
  error             text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX media_original ON media (original_blob_id);
CREATE INDEX media_thumbnail ON media (thumbnail_blob_id) WHERE thumbnail_blob_id IS NOT NULL;
CREATE INDEX media_owner ON media (company_id, owner_type, owner_id);

-- Response cache: the three catalog lists depend on each other (brand
-- product_count, category counts, the brand snapshot and category name on
-- products), so a write to any of them bumps all three versions.
CREATE FUNCTION bump_catalog_versions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant text;
BEGIN
  IF TG_OP = 'DELETE' THEN tenant := OLD.company_id; ELSE tenant := NEW.company_id; END IF;
  INSERT INTO collection_versions (company_id, collection, version)
  VALUES (tenant, 'products', 1), (tenant, 'brands', 1), (tenant, 'product_categories', 1)
  ON CONFLICT (company_id, collection) DO UPDATE SET version = collection_versions.version + 1;
  RETURN NULL;
END $$;

CREATE TRIGGER products_version AFTER INSERT OR UPDATE OR DELETE ON products
  FOR EACH ROW EXECUTE FUNCTION bump_catalog_versions();
CREATE TRIGGER brands_version AFTER INSERT OR UPDATE OR DELETE ON brands
  FOR EACH ROW EXECUTE FUNCTION bump_catalog_versions();
CREATE TRIGGER product_categories_version AFTER INSERT OR UPDATE OR DELETE ON product_categories
  FOR EACH ROW EXECUTE FUNCTION bump_catalog_versions();
