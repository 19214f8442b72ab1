-- File storage in PostgreSQL (the default behind storage/blobs.ts): a blob is
-- written as 256 KB chunks so a 30 MB upload streams through with bounded
-- memory and is read back the same way.
CREATE TABLE blobs (
  id           text PRIMARY KEY,
  company_id   text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  content_type text NOT NULL,
  size_bytes   bigint NOT NULL DEFAULT 0,
  sha256       text,
  complete     boolean NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX blobs_company ON blobs (company_id);

CREATE TABLE blob_chunks (
  blob_id text NOT NULL REFERENCES blobs (id) ON DELETE CASCADE,
  seq     integer NOT NULL,
  data    bytea NOT NULL,
  PRIMARY KEY (blob_id, seq)
);
