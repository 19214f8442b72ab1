-- A member's `updated_at`, as a company reads it, is the later of the person's (their own fields, shared
-- by every company they belong to) and their membership's in that company (`is_owner`, which is each
-- company's). Before this, making a person an owner in one company moved the person's `updated_at`, so
-- every other company saw a change that was not theirs and learnt when it happened.
--
-- Null until the membership itself changes: no row is rewritten (a column without a default is a change
-- of the catalog only), and a member's `updated_at` stays what it was.
SET LOCAL lock_timeout = '5s';
ALTER TABLE memberships ADD COLUMN updated_at timestamptz;
