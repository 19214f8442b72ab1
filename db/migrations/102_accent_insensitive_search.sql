-- Text search ignores accents as well as case: "jose" finds "José", "pena"
-- finds "Peña", "cafe" finds "Café" (api/pagination.ts textMatch). Both the
-- searched text and the term are folded by fold_accents(): PostgreSQL's
-- `unaccent` dictionary (a trusted extension since PostgreSQL 13: the
-- database owner may create it, as pg_trgm in 001). The wrapper is
-- IMMUTABLE so it can be indexed and stored: it names its dictionary
-- explicitly, so it does not depend on the search_path, which is what makes
-- that declaration safe.
CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE FUNCTION fold_accents(text) RETURNS text
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT public.unaccent('public.unaccent'::regdictionary, $1) $$;

-- The trigram indexes are rebuilt over the folded text; each build blocks
-- writes to its table while it runs (seconds for 100,000 rows), and the
-- release fails after 5 s rather than queue behind a long transaction.
SET LOCAL lock_timeout = '5s';

DROP INDEX customers_search;
CREATE INDEX customers_search ON customers
  USING gin (fold_accents(coalesce(name, '') || ' ' || coalesce(email, '') || ' ' || coalesce(phone, '')) gin_trgm_ops);
DROP INDEX leads_search;
CREATE INDEX leads_search ON leads
  USING gin (fold_accents(coalesce(name, '') || ' ' || coalesce(email, '') || ' ' || coalesce(phone, '')) gin_trgm_ops);

-- A product's search text is stored folded (the column is only searched,
-- never shown), so a search folds the term alone. Replacing a generated
-- column's expression rewrites the table either way; drop and add works on
-- every supported PostgreSQL (SET EXPRESSION needs 17).
DROP INDEX products_search;
ALTER TABLE products DROP COLUMN search_text;
ALTER TABLE products ADD COLUMN search_text text
  GENERATED ALWAYS AS (fold_accents(name || ' ' || coalesce(sku, '') || ' ' || coalesce(brand_name, ''))) STORED;
CREATE INDEX products_search ON products USING gin (company_id, search_text gin_trgm_ops);
