-- Lists are ordered by created_at descending, ties broken by id descending (the contract), and every
-- record shows its created_at to the millisecond. Stored to the microsecond, two records of one
-- shown millisecond were ordered by digits no client sees, so a client could read them out of id
-- order (two transactions begun in the same millisecond, the later id in the earlier one). created_at
-- is now stored as shown: new rows take the time to the millisecond (the default below; rows given
-- a created_at are given a JavaScript Date, already whole milliseconds), and the rows of the listed
-- tables that share a millisecond with another are cut to it. A row alone in its millisecond keeps
-- its microseconds: it orders the same either way, and the release rewrites no more than it must.
SET LOCAL lock_timeout = '5s';

DO $$
DECLARE
  t text;
BEGIN
  FOR t IN
    SELECT table_name FROM information_schema.columns
     WHERE table_schema = current_schema() AND column_name = 'created_at' AND column_default = 'now()'
  LOOP
    EXECUTE format($f$ALTER TABLE %I ALTER COLUMN created_at SET DEFAULT date_trunc('milliseconds', now())$f$, t);
  END LOOP;

  FOREACH t IN ARRAY ARRAY['accounts', 'automations', 'booking_links', 'bookings', 'brands', 'calendar_events', 'customers',
                           'form_submissions', 'forms', 'invoices', 'leads', 'movements', 'oauth_grants', 'product_categories',
                           'products', 'recurring_transactions', 'sales', 'users', 'webhook_deliveries', 'webhook_endpoints']
  LOOP
    EXECUTE format($f$
      UPDATE %1$I SET created_at = date_trunc('milliseconds', created_at)
       WHERE created_at <> date_trunc('milliseconds', created_at)
         AND date_trunc('milliseconds', created_at) IN (
               SELECT date_trunc('milliseconds', created_at) FROM %1$I GROUP BY 1 HAVING count(*) > 1)$f$, t);
  END LOOP;
END $$;
