// A CFDI 4.0 as data: what the service asks a provider to stamp (an income
// invoice, type I, or a payment complement, type P), built from a sale and
// the company's tax profile. The providers turn it into their request
// (lib/cfdi/providers.ts) or into XML (lib/cfdi/xml.ts).
import type { PaymentMethod } from './catalogs.ts';

export type TaxLine = { rate: number | null; exempt: boolean; base_cents: number; tax_cents: number };

export type ConceptLine = {
  product_key: string;
  unit_key: string;
  description: string;
  quantity: number;
  unit_price_cents: number; // before tax (a fraction of a cent where VAT-included prices were split)
  /**
   * With VAT-included prices, the line's price with its VAT (its total ÷ quantity); else null. Absent from
   * documents stored before it existed (an invoice still pending across the release): read as null.
   */
  unit_price_with_tax_cents?: number | null;
  amount_cents: number; // quantity × unit price (before discount)
  discount_cents: number;
  tax: TaxLine;
};

export type Party = { rfc: string; legal_name: string; tax_regime: string; zip: string };

export type CfdiDocument = {
  /** Our invoice id: the provider's idempotency key derives from it. */
  invoice_id: string;
  type: 'I' | 'P';
  series: string | null;
  folio: string | null;
  issued_at: string;
  /**
   * The issuer's IANA zone (the company's): `Fecha` and `FechaPago` are written in its wall time, as
   * Anexo 20 asks (the local time where the invoice is issued). Documents stored before it was kept
   * read as America/Mexico_City.
   */
  zone?: string;
  currency: string;
  payment_form: string | null;
  payment_method: PaymentMethod | null;
  cfdi_use: string;
  issuer: Party;
  receiver: Party;
  /** The global-invoice data of a sale to the general public. */
  global: { periodicity: '01' | '02' | '03' | '04' | '05'; months: string; year: number } | null;
  lines: ConceptLine[];
  subtotal_cents: number;
  discount_cents: number;
  total_cents: number;
  /** Substitution (relation 04) of a previous invoice. */
  related: { relation: '04'; uuids: string[] } | null;
  /** Type P: the payment and the invoice it pays. */
  payment: { paid_at: string; payment_form: string; amount_cents: number; related_uuid: string; installment: number; previous_balance_cents: number; currency: string } | null;
};

export const cents = (n: number) => (n / 100).toFixed(2);

/**
 * Free text as a CFDI carries it: control characters (which XML 1.0 forbids outright, escaped or not,
 * and the API stores as typed) become spaces, and runs of white space one, as the SAT's own
 * normalization reads attributes. A description "Servicio\u0001" once made XML no parser reads.
 */
export function cfdiText(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f\ufffe\uffff]/g, ' ').replace(/\s+/g, ' ').trim();
}
