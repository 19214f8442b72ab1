// The printed representation of an invoice the development provider
// stamped (pdfkit): issuer, receiver, concepts, totals and the fiscal folio,
// with a diagonal watermark saying it is not valid for tax. Facturapi's own
// PDF is served as it comes for the invoices it stamps.
import PDFDocument from 'pdfkit';
import { cents, type CfdiDocument } from './document.ts';

export async function invoicePdf(invoice: { document: CfdiDocument; uuid: string | null; provider: string; stamped_at: Date | string | null; series: string | null; folio: string | null }): Promise<Buffer> {
  const doc = invoice.document;
  const pdf = new PDFDocument({ size: 'LETTER', margin: 48, info: { Title: `CFDI ${invoice.uuid ?? ''}`, Author: doc.issuer.legal_name } });
  const chunks: Buffer[] = [];
  pdf.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise<Buffer>((resolve) => pdf.on('end', () => resolve(Buffer.concat(chunks))));
  if (invoice.provider === 'development') {
    pdf.save().rotate(-35, { origin: [306, 396] }).fontSize(54).fillColor('#dc2626').opacity(0.18).text('SIN VALIDEZ FISCAL', 40, 360, { align: 'center', width: 532 }).restore();
    pdf.opacity(1);
  }
  pdf.fillColor('#111827').fontSize(16).text(doc.type === 'P' ? 'Complemento de pago (CFDI 4.0)' : 'Factura (CFDI 4.0)');
  pdf.moveDown(0.5).fontSize(9);
  pdf.text(`Folio fiscal (UUID): ${invoice.uuid ?? 'sin timbrar'}`);
  if (invoice.series || invoice.folio) pdf.text(`Serie y folio: ${invoice.series ?? ''} ${invoice.folio ?? ''}`);
  pdf.text(`Fecha de timbrado: ${invoice.stamped_at ? new Date(invoice.stamped_at).toISOString() : '—'}`);
  pdf.moveDown();
  pdf.fontSize(10).text(`Emisor: ${doc.issuer.legal_name} · RFC ${doc.issuer.rfc} · Régimen ${doc.issuer.tax_regime} · CP ${doc.issuer.zip}`);
  pdf.text(`Receptor: ${doc.receiver.legal_name} · RFC ${doc.receiver.rfc} · Régimen ${doc.receiver.tax_regime} · CP ${doc.receiver.zip} · Uso ${doc.cfdi_use}`);
  if (doc.payment_method) pdf.text(`Método de pago: ${doc.payment_method} · Forma de pago: ${doc.payment_form} · Moneda: ${doc.currency.toUpperCase()}`);
  pdf.moveDown();
  for (const line of doc.lines) {
    const tax = line.tax.exempt ? 'IVA exento' : line.tax.rate === null ? 'no objeto' : `IVA ${line.tax.rate} %: ${cents(line.tax.tax_cents)}`;
    pdf.text(`${line.quantity} × ${line.description} (${line.product_key}/${line.unit_key}) — ${cents(line.amount_cents)}${line.discount_cents ? ` − ${cents(line.discount_cents)}` : ''} · ${tax}`);
  }
  pdf.moveDown();
  if (doc.type === 'I') {
    pdf.text(`Subtotal: ${cents(doc.subtotal_cents)}`);
    if (doc.discount_cents) pdf.text(`Descuento: ${cents(doc.discount_cents)}`);
    pdf.text(`Total: ${cents(doc.total_cents)} ${doc.currency.toUpperCase()}`);
  } else if (doc.payment) {
    pdf.text(`Pago de ${cents(doc.payment.amount_cents)} ${doc.payment.currency.toUpperCase()} a la factura ${doc.payment.related_uuid} (parcialidad ${doc.payment.installment}; saldo ${cents(doc.payment.previous_balance_cents - doc.payment.amount_cents)})`);
  }
  if (invoice.provider === 'development') pdf.moveDown().fillColor('#991b1b').text('Documento de prueba del proveedor de desarrollo: no es un CFDI timbrado por el SAT.');
  pdf.end();
  return done;
}
