-- Marketing forms (contract: Form, Form field, File constraints, Form
-- submission), the company file manager that stores their files, and the
-- per-action ledger that makes background post-actions run once.

CREATE TABLE forms (
  id                       text PRIMARY KEY,
  company_id               text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  name                     text NOT NULL,
  slug                     text NOT NULL,
  locales                  text[] NOT NULL,
  default_locale           text NOT NULL,
  title_translations       jsonb NOT NULL DEFAULT '{}',
  description_translations jsonb NOT NULL DEFAULT '{}',
  active                   boolean NOT NULL DEFAULT true,
  -- Field definitions (api/forms/definition.ts validates them on write); a
  -- form is read and written whole, so they live with it.
  fields                   jsonb NOT NULL DEFAULT '[]',
  post_actions             jsonb NOT NULL DEFAULT '{}',
  submissions_count        integer NOT NULL DEFAULT 0,
  created_at               timestamptz NOT NULL DEFAULT now(),
  updated_at               timestamptz NOT NULL DEFAULT now(),
  UNIQUE (company_id, slug)
);
CREATE INDEX forms_page ON forms (company_id, created_at DESC, id DESC);

CREATE TABLE form_submissions (
  id           text PRIMARY KEY,
  company_id   text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  form_id      text NOT NULL REFERENCES forms (id) ON DELETE CASCADE,
  locale       text NOT NULL,
  answers      jsonb NOT NULL DEFAULT '{}',
  email        text,
  name         text,
  phone        text,
  contact_type text NOT NULL DEFAULT 'none' CHECK (contact_type IN ('lead', 'customer', 'none')),
  contact_id   text,
  source       text NOT NULL DEFAULT 'developers_api',
  status       text NOT NULL DEFAULT 'received' CHECK (status IN ('received', 'processed', 'failed')),
  files        jsonb NOT NULL DEFAULT '[]',
  files_error  text,
  referrer     text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX form_submissions_page ON form_submissions (company_id, created_at DESC, id DESC);
CREATE INDEX form_submissions_form ON form_submissions (form_id, created_at DESC, id DESC);

-- One row per post-action of a submission. The worker marks an action done in
-- the same transaction as its database effect (lead, customer), so a retry
-- never repeats it; an email is marked right after the SMTP server accepts it.
CREATE TABLE form_submission_actions (
  submission_id text NOT NULL REFERENCES form_submissions (id) ON DELETE CASCADE,
  company_id    text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  action        text NOT NULL CHECK (action IN ('lead', 'customer', 'email', 'notify_team')),
  status        text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed')),
  attempts      integer NOT NULL DEFAULT 0,
  result        jsonb,
  error         text,
  updated_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (submission_id, action)
);

-- The company file manager: folders by absolute path, files pointing at blobs.
CREATE TABLE file_folders (
  id         text PRIMARY KEY,
  company_id text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  path       text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (company_id, path)
);

CREATE TABLE files (
  id           text PRIMARY KEY,
  company_id   text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  folder_id    text NOT NULL REFERENCES file_folders (id) ON DELETE CASCADE,
  blob_id      text NOT NULL REFERENCES blobs (id),
  name         text NOT NULL,
  content_type text NOT NULL,
  size_bytes   bigint NOT NULL,
  sha256       text NOT NULL,
  public       boolean NOT NULL DEFAULT false,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX files_company ON files (company_id);
CREATE INDEX files_folder ON files (folder_id);

CREATE TRIGGER forms_version AFTER INSERT OR UPDATE OR DELETE ON forms
  FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
CREATE TRIGGER form_submissions_version AFTER INSERT OR UPDATE OR DELETE ON form_submissions
  FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
