-- The response cache's version bumps deadlocked at COMMIT. The deferred
-- triggers (041) lock each (company, collection) row of collection_versions
-- in the order the transaction wrote its tables: a booking made writes
-- calendar_events then bookings, a reschedule bookings then calendar_events,
-- so two of them committing together, for different hosts and rows, could
-- each hold the row the other needed (40P01, a 500). A bump now first takes
-- one transaction-level advisory lock per company, so the writers of a
-- company take its version rows one transaction after another, whatever
-- their order; the lock is held from the first bump (at COMMIT, for the
-- deferred triggers) to the end of the transaction.
CREATE OR REPLACE FUNCTION lock_company_versions(tenant text) RETURNS void LANGUAGE sql AS $$
  SELECT pg_advisory_xact_lock(hashtextextended('collection_versions:' || tenant, 0));
$$;

CREATE OR REPLACE FUNCTION bump_collection_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant text;
BEGIN
  IF TG_OP = 'DELETE' THEN tenant := OLD.company_id; ELSE tenant := NEW.company_id; END IF;
  PERFORM lock_company_versions(tenant);
  INSERT INTO collection_versions (company_id, collection, version)
  VALUES (tenant, TG_TABLE_NAME, 1)
  ON CONFLICT (company_id, collection) DO UPDATE SET version = collection_versions.version + 1;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION bump_catalog_versions() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  tenant text;
BEGIN
  IF TG_OP = 'DELETE' THEN tenant := OLD.company_id; ELSE tenant := NEW.company_id; END IF;
  PERFORM lock_company_versions(tenant);
  INSERT INTO collection_versions (company_id, collection, version)
  VALUES (tenant, 'products', 1), (tenant, 'brands', 1), (tenant, 'product_categories', 1)
  ON CONFLICT (company_id, collection) DO UPDATE SET version = collection_versions.version + 1;
  RETURN NULL;
END $$;

-- A host's slug change bumps the links of every company the host belongs to:
-- their locks in company order, so two such changes cannot cross either.
CREATE OR REPLACE FUNCTION bump_host_booking_links() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM lock_company_versions(m.company_id) FROM (SELECT company_id FROM memberships WHERE user_id = NEW.id ORDER BY company_id) m;
  INSERT INTO collection_versions (company_id, collection, version)
  SELECT m.company_id, 'booking_links', 1 FROM memberships m WHERE m.user_id = NEW.id
  ON CONFLICT (company_id, collection) DO UPDATE SET version = collection_versions.version + 1;
  RETURN NULL;
END $$;
