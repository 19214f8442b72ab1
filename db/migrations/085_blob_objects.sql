-- Blobs in an S3-compatible object store (BLOB_STORE=s3, storage/blobs.ts).
-- The row in `blobs` stays the record of every blob, wherever its bytes are:
-- `object_key` set means the bytes are that object of the configured bucket,
-- NULL means they are the row's `blob_chunks` (the default store, and every
-- blob written before the deployment switched). Reads follow the row, so a
-- deployment can switch stores without moving anything.
ALTER TABLE blobs ADD COLUMN object_key text;

-- Objects whose blob row is gone, waiting for the worker to delete them from
-- the bucket (hourly, purge-expired). A trigger fills it, so every way a row
-- goes (a DELETE, a company's cascade, the orphan purge) is covered, and in
-- the deleting transaction: a rolled-back delete queues nothing.
CREATE TABLE blob_object_deletions (
  object_key text PRIMARY KEY,
  queued_at  timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION queue_blob_object_deletion() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO blob_object_deletions (object_key) VALUES (OLD.object_key) ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;

CREATE TRIGGER blobs_object_deletion AFTER DELETE ON blobs
  FOR EACH ROW WHEN (OLD.object_key IS NOT NULL) EXECUTE FUNCTION queue_blob_object_deletion();
