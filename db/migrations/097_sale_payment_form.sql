-- How a sale's payment was made (SAT c_FormaPago), which its CFDI payment
-- complement declares (FormaDePagoP). Null: not said; the complement then
-- takes it from the account's kind (docs/invoicing.md, Payment complements).
-- Only a sale's payments carry it. A nullable column without a default is a
-- change of the catalog only: no rewrite of the table.
ALTER TABLE movements ADD COLUMN payment_form text CHECK (payment_form ~ '^[0-9]{2}$' AND payment_form <> '99');
