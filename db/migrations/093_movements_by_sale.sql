-- A sale's payments are incomes with its `sale_id`, read by sale: its detail
-- (payments, first payment), the complements its invoice owes at the stamp.
-- Without an index each read walked every movement of the company.
-- The build blocks writes to movements while it runs (seconds for millions of
-- rows); the release fails after 5 s rather than queue behind a long transaction.
SET LOCAL lock_timeout = '5s';
CREATE INDEX movements_sale ON movements (company_id, sale_id) WHERE sale_id IS NOT NULL;
