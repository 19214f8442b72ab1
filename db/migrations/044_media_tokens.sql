-- Media URLs carry 128 random bits instead of the blob's ObjectId. An
-- ObjectId is a timestamp and a counter: one upload let a client walk to the
-- neighbouring ids, other companies' images among them. Each media item gets
-- one token for its original and one for its thumbnail; the URLs already
-- stored on products, variants, categories and brands are rewritten, and the
-- old ObjectId URLs stop working.
CREATE EXTENSION IF NOT EXISTS pgcrypto;

ALTER TABLE media ADD COLUMN original_token text, ADD COLUMN thumbnail_token text;
UPDATE media SET original_token = encode(gen_random_bytes(16), 'hex'),
                 thumbnail_token = CASE WHEN thumbnail_blob_id IS NULL THEN NULL ELSE encode(gen_random_bytes(16), 'hex') END;
ALTER TABLE media ALTER COLUMN original_token SET NOT NULL;
CREATE UNIQUE INDEX media_original_token ON media (original_token);
CREATE UNIQUE INDEX media_thumbnail_token ON media (thumbnail_token) WHERE thumbnail_token IS NOT NULL;

UPDATE products o SET image_url = replace(o.image_url, '/media/' || m.original_blob_id || '/', '/media/' || m.original_token || '/'),
       thumbnail_url = replace(o.thumbnail_url, '/media/' || m.thumbnail_blob_id || '/', '/media/' || m.thumbnail_token || '/')
  FROM media m WHERE m.id = o.image_media_id;
UPDATE product_variants o SET image_url = replace(o.image_url, '/media/' || m.original_blob_id || '/', '/media/' || m.original_token || '/'),
       thumbnail_url = replace(o.thumbnail_url, '/media/' || m.thumbnail_blob_id || '/', '/media/' || m.thumbnail_token || '/')
  FROM media m WHERE m.id = o.image_media_id;
UPDATE product_categories o SET image_url = replace(o.image_url, '/media/' || m.original_blob_id || '/', '/media/' || m.original_token || '/'),
       thumbnail_url = replace(o.thumbnail_url, '/media/' || m.thumbnail_blob_id || '/', '/media/' || m.thumbnail_token || '/')
  FROM media m WHERE m.id = o.image_media_id;
UPDATE brands o SET logo_url = replace(o.logo_url, '/media/' || m.original_blob_id || '/', '/media/' || m.original_token || '/'),
       logo_thumbnail_url = replace(o.logo_thumbnail_url, '/media/' || m.thumbnail_blob_id || '/', '/media/' || m.thumbnail_token || '/')
  FROM media m WHERE m.id = o.logo_media_id;
