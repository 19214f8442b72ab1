-- The company logo and the members' avatars are media items like catalog
-- images: an original, a thumbnail made by the worker, public token URLs.
ALTER TABLE companies ADD COLUMN logo_thumbnail_url text, ADD COLUMN logo_media_id text;
ALTER TABLE users ADD COLUMN avatar_thumbnail_url text, ADD COLUMN avatar_media_id text;
ALTER TABLE media DROP CONSTRAINT media_owner_type_check;
ALTER TABLE media ADD CONSTRAINT media_owner_type_check CHECK (owner_type IN ('product', 'variant', 'brand', 'product_category', 'company', 'user'));
