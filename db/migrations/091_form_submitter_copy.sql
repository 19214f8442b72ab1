-- The copy a form sends to the address the visitor typed (`send_to_submitter`)
-- is a message and an action of its own: it went out as one message with the
-- operator's recipients, which showed the visitor those addresses, the files
-- and the file manager's paths, and let an address that bounces fail the
-- operator's email.
--
-- As in 045: NOT VALID keeps the new check a catalog change under the ACCESS
-- EXCLUSIVE lock (the rows there pass it: the set only grew), and the release
-- fails after 5 s rather than queue submissions behind a long transaction.
SET LOCAL lock_timeout = '5s';
ALTER TABLE form_submission_actions DROP CONSTRAINT form_submission_actions_action_check,
  ADD CONSTRAINT form_submission_actions_action_check
  CHECK (action IN ('lead', 'customer', 'email', 'submitter_copy', 'notify_team')) NOT VALID;

-- Submissions whose email was still to be sent when this change shipped get
-- their visitor's copy as an action of its own (their email action now goes
-- to the operator's recipients only). Not those being sent ('sending'): that
-- send, claimed by the code before this change, includes the visitor.
INSERT INTO form_submission_actions (submission_id, company_id, action)
SELECT a.submission_id, a.company_id, 'submitter_copy'
  FROM form_submission_actions a
  JOIN form_submissions s ON s.id = a.submission_id
  JOIN forms f ON f.id = s.form_id
 WHERE a.action = 'email' AND a.status = 'pending'
   AND s.email IS NOT NULL
   AND coalesce((f.post_actions -> 'email' ->> 'send_to_submitter')::boolean, false)
ON CONFLICT DO NOTHING;
