-- A sale is `refunded` only when it was paid in full and all of it returned (db/money/sales.ts,
-- saleStatus). One paid in part and that part returned (paid 50, refunded 50 of 100) read `refunded`
-- before this release, though it still owes and keeps income in the books: it is partly refunded.
SET LOCAL lock_timeout = '5s';
UPDATE sales SET status = 'partially_refunded', updated_at = now()
 WHERE status = 'refunded' AND paid_cents < total_cents;
