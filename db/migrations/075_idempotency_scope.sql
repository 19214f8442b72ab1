-- Idempotency keys of the public booking page live beside the API's, in
-- their own namespace: a visitor's key can never replay or block an
-- integrator's request of the same company, whatever the strings.
ALTER TABLE idempotency_keys ADD COLUMN scope text NOT NULL DEFAULT 'api' CHECK (scope IN ('api', 'booking_page'));
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
ALTER TABLE idempotency_keys ADD PRIMARY KEY (company_id, scope, key);
