-- The copy a form sends to the address the visitor typed (`send_to_submitter`)
-- is a message and an action of its own: it went out as one message with the
-- operator's recipients, which showed the visitor those addresses, the files
-- and the file manager's paths, and let an address that bounces fail the
-- operator's email.
ALTER TABLE form_submission_actions DROP CONSTRAINT form_submission_actions_action_check;
ALTER TABLE form_submission_actions ADD CONSTRAINT form_submission_actions_action_check
  CHECK (action IN ('lead', 'customer', 'email', 'submitter_copy', 'notify_team'));
