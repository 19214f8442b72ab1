// The printed representation of an invoice the development provider
// stamped (pdfkit): issuer, receiver, concepts, totals and the fiscal folio,
// with a diagonal watermark saying it is not valid for tax. Facturapi's own
// PDF is served as it comes for the invoices it stamps.
import PDFDocument from 'pdfkit';
import { cents, type CfdiDocument } from './document.ts';
import { cfdiDate } from './xml.ts';

/** WinAnsi's characters beyond Latin-1 (what pdfkit's built-in Helvetica draws besides U+0020–U+00FF). */
const WIN_ANSI_EXTRA = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');

/**
 * Text as the built-in Helvetica can draw it: a character outside WinAnsi (李, 🚀, the minus sign) is
 * written as "?" rather than as the unrelated glyphs of its code units.
 */
export function printable(text: string): string {
  let out = '';
  for (const character of text) {
    const code = character.codePointAt(0)!;
    out += (code >= 0x20 && code <= 0x7e) || (code >= 0xa0 && code <= 0xff) || WIN_ANSI_EXTRA.has(character) ? character : '?';
  }
  return out;
}

export async function invoicePdf(invoice: { document: CfdiDocument; uuid: string | null; provider: string; stamped_at: Date | string | null; series: string | null; folio: string | null }): Promise<Buffer> {
  const doc = invoice.document;
  const pdf = new PDFDocument({ size: 'LETTER', margin: 48, info: { Title: `CFDI ${invoice.uuid ?? ''}`, Author: doc.issuer.legal_name } });
  const line = (text: string) => pdf.text(printable(text));
  const chunks: Buffer[] = [];
  pdf.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<Buffer>((resolve) => pdf.on('end', () => resolve(Buffer.concat(chunks))));
  if (invoice.provider === 'development') {
    pdf.save().rotate(-35, { origin: [306, 396] }).fontSize(54).fillColor('#dc2626').opacity(0.18).text('SIN VALIDEZ FISCAL', 40, 360, { align: 'center', width: 532 }).restore();
    pdf.opacity(1);
  }
  pdf.fillColor('#111827').fontSize(16).text(doc.type === 'P' ? 'Complemento de pago (CFDI 4.0)' : 'Factura (CFDI 4.0)');
  pdf.moveDown(0.5).fontSize(9);
  line(`Folio fiscal (UUID): ${invoice.uuid ?? 'sin timbrar'}`);
  if (invoice.series || invoice.folio) line(`Serie y folio: ${invoice.series ?? ''} ${invoice.folio ?? ''}`);
  // As the XML's FechaTimbrado: the provider's wall time, central Mexico's.
  line(`Fecha de timbrado: ${invoice.stamped_at ? cfdiDate(new Date(invoice.stamped_at).toISOString()) : '—'}`);
  pdf.moveDown();
  pdf.fontSize(10);
  line(`Emisor: ${doc.issuer.legal_name} · RFC ${doc.issuer.rfc} · Régimen ${doc.issuer.tax_regime} · CP ${doc.issuer.zip}`);
  line(`Receptor: ${doc.receiver.legal_name} · RFC ${doc.receiver.rfc} · Régimen ${doc.receiver.tax_regime} · CP ${doc.receiver.zip} · Uso ${doc.cfdi_use}`);
  if (doc.payment_method) line(`Método de pago: ${doc.payment_method} · Forma de pago: ${doc.payment_form} · Moneda: ${doc.currency.toUpperCase()}`);
  pdf.moveDown();
  for (const concept of doc.lines) {
    const tax = concept.tax.exempt ? 'IVA exento' : concept.tax.rate === null ? 'no objeto' : `IVA ${concept.tax.rate} %: ${cents(concept.tax.tax_cents)}`;
    line(`${concept.quantity} × ${concept.description} (${concept.product_key}/${concept.unit_key}) — ${cents(concept.amount_cents)}${concept.discount_cents ? ` - ${cents(concept.discount_cents)}` : ''} · ${tax}`);
  }
  pdf.moveDown();
  if (doc.type === 'I') {
    line(`Subtotal: ${cents(doc.subtotal_cents)}`);
    if (doc.discount_cents) line(`Descuento: ${cents(doc.discount_cents)}`);
    // The XML's TotalImpuestosTrasladados: what makes Subtotal − Descuento + IVA the Total printed.
    line(`IVA trasladado: ${cents(doc.total_cents - doc.subtotal_cents + doc.discount_cents)}`);
    line(`Total: ${cents(doc.total_cents)} ${doc.currency.toUpperCase()}`);
  } else if (doc.payment) {
    line(`Pago de ${cents(doc.payment.amount_cents)} ${doc.payment.currency.toUpperCase()} a la factura ${doc.payment.related_uuid} (parcialidad ${doc.payment.installment}; saldo ${cents(doc.payment.previous_balance_cents - doc.payment.amount_cents)})`);
  }
  if (invoice.provider === 'development') pdf.moveDown().fillColor('#991b1b').text('Documento de prueba del proveedor de desarrollo: no es un CFDI timbrado por el SAT.');
  pdf.end();
  return done;
}
