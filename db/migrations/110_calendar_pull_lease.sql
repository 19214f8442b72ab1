-- One pull of a member's calendar at a time, across worker processes (worker/jobs/calendar-pull.ts): a
-- pull holds this lease while it lists, renewing it page by page; another finds it held and waits its
-- turn in the queue. A lease, not a lock: nothing is held across Google's answers, and it works behind
-- PgBouncer in transaction mode. A worker killed mid-pull leaves a lease that runs out by itself.
SET LOCAL lock_timeout = '5s';
ALTER TABLE calendar_connections ADD COLUMN pull_lease_until timestamptz;
