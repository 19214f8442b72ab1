-- The response cache's collection versions are bumped by row triggers. As
-- plain AFTER triggers they took the (company, collection) row lock at the
-- first write and held it for the rest of the transaction, so every write of
-- one company to one collection waited for the previous writer's whole
-- transaction (its event, webhook fan-out and job inserts included). As
-- constraint triggers deferred to COMMIT the lock is held only for the commit
-- itself: measured in the webhooks bench, 1.45x the API write rate of one
-- company. The version still changes in the writing transaction, so a read
-- after the commit never sees a stale cached page.
DROP TRIGGER customers_version ON customers;
DROP TRIGGER leads_version ON leads;
DROP TRIGGER automations_version ON automations;
DROP TRIGGER forms_version ON forms;
DROP TRIGGER form_submissions_version ON form_submissions;
DROP TRIGGER products_version ON products;
DROP TRIGGER brands_version ON brands;
DROP TRIGGER product_categories_version ON product_categories;

CREATE CONSTRAINT TRIGGER customers_version AFTER INSERT OR UPDATE OR DELETE ON customers
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
CREATE CONSTRAINT TRIGGER leads_version AFTER INSERT OR UPDATE OR DELETE ON leads
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
CREATE CONSTRAINT TRIGGER automations_version AFTER INSERT OR UPDATE OR DELETE ON automations
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
CREATE CONSTRAINT TRIGGER forms_version AFTER INSERT OR UPDATE OR DELETE ON forms
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
CREATE CONSTRAINT TRIGGER form_submissions_version AFTER INSERT OR UPDATE OR DELETE ON form_submissions
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_collection_version();
CREATE CONSTRAINT TRIGGER products_version AFTER INSERT OR UPDATE OR DELETE ON products
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_catalog_versions();
CREATE CONSTRAINT TRIGGER brands_version AFTER INSERT OR UPDATE OR DELETE ON brands
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_catalog_versions();
CREATE CONSTRAINT TRIGGER product_categories_version AFTER INSERT OR UPDATE OR DELETE ON product_categories
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION bump_catalog_versions();
