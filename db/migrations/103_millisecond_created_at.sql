-- Lists are ordered by created_at descending, ties broken by id descending (the contract), and every
-- record shows its created_at to the millisecond. Stored to the microsecond, two records of one shown
-- millisecond were ordered by digits no client sees, so a client could read them out of id order (two
-- transactions begun in the same millisecond, the later id in the earlier one). New rows of the
-- tables that are listed in created_at order now take the time to the millisecond (rows given a
-- created_at are given a JavaScript Date, already whole milliseconds).
--
-- Only the defaults change: a change of the catalog, no row rewritten, each table's lock held for the
-- moment the migration's transaction takes to commit. Rows stored before keep their microseconds, so two
-- of them created in one millisecond by concurrent transactions may still list out of id order, as
-- they did; rewriting them would lock and rewrite whole tables during a release (docs/operations.md).
SET LOCAL lock_timeout = '5s';

DO $$
DECLARE
  t text;
BEGIN
  FOREACH t IN ARRAY ARRAY['accounts', 'api_keys', 'automations', 'booking_links', 'bookings', 'brands', 'calendar_events',
                           'companies', 'customers', 'events', 'form_submissions', 'forms', 'invoices', 'leads', 'movements',
                           'oauth_grants', 'product_categories', 'products', 'recurring_transactions', 'sales', 'users',
                           'webhook_deliveries', 'webhook_endpoints']
  LOOP
    EXECUTE format($f$ALTER TABLE %I ALTER COLUMN created_at SET DEFAULT date_trunc('milliseconds', now())$f$, t);
  END LOOP;
END $$;
