-- How a sale's payment was made (SAT c_FormaPago), which its CFDI payment
-- complement declares (FormaDePagoP). Null: not said; the complement then
-- takes it from the account's kind (docs/invoicing.md, Payment complements).
-- Only a sale's payments carry it. A nullable column without a default is a
-- change of the catalog only. Its CHECK is added NOT VALID: it holds for every
-- row written from now on, and no existing row needs checking (all are NULL),
-- so the table is not scanned under the ACCESS EXCLUSIVE lock this takes (a
-- VALIDATE in the same transaction would scan under it all the same).
ALTER TABLE movements ADD COLUMN payment_form text;
ALTER TABLE movements ADD CONSTRAINT movements_payment_form CHECK (payment_form ~ '^[0-9]{2}$' AND payment_form <> '99') NOT VALID;
