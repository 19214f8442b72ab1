-- Copies of form emails sent to the address a submitter typed (the form's
-- `send_to_submitter`): that address is not proven, so what reaches it is
-- capped per recipient across the service and per form (worker/forms/
-- submitter-caps.ts). One row per submission: a retried send is not counted twice.
CREATE TABLE submitter_email_log (
  submission_id text PRIMARY KEY REFERENCES form_submissions (id) ON DELETE CASCADE,
  company_id    text NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
  form_id       text NOT NULL,
  recipient     text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX submitter_email_log_recipient ON submitter_email_log (recipient, created_at);
CREATE INDEX submitter_email_log_form ON submitter_email_log (form_id, created_at);
