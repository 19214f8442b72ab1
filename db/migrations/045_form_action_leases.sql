-- Email post-actions (email, notify_team) are no longer sent while a
-- transaction holds their row: a short transaction claims the action
-- (status 'sending', attempts + 1, lease_until), the message is sent with no
-- transaction open, and another short one marks it 'done'. A run that died
-- mid-send leaves 'sending' behind; once lease_until passes, a retry claims
-- it again (worker/jobs/form-post-actions.ts).
--
-- The ALTER takes an ACCESS EXCLUSIVE lock, which the intake (inserting a
-- submission's actions) waits behind, until the migration commits. NOT VALID
-- keeps it a catalog change instead of a scan of every row under that lock:
-- the new check is still enforced on every insert and update, and the rows
-- already there pass it (the set of statuses only grew). Fail the release
-- after 5 s rather than queue submissions behind a long transaction.
SET LOCAL lock_timeout = '5s';
ALTER TABLE form_submission_actions DROP CONSTRAINT form_submission_actions_status_check,
  ADD CONSTRAINT form_submission_actions_status_check CHECK (status IN ('pending', 'sending', 'done', 'failed')) NOT VALID,
  ADD COLUMN lease_until timestamptz;
