// CFDI 4.0 XML of a document (lib/cfdi/document.ts), as the development
// provider stamps it: the structure of Anexo 20 (Comprobante, InformacionGlobal,
// CfdiRelacionados, Emisor, Receptor, Conceptos with their Traslados,
// Impuestos totals, the Pagos 2.0 complement of a type P) and a
// TimbreFiscalDigital 1.1 whose seals are NOT the SAT's: the document says so
// in a comment before the root and in an Addenda, and is not valid for tax.
import { cents, type CfdiDocument } from './document.ts';
import { PUBLIC_RFC } from './catalogs.ts';

export const DEV_WARNING = 'DOCUMENTO DE PRUEBA: timbrado por el proveedor de desarrollo; sin validez fiscal';

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
const attrs = (a: Record<string, string | number | null | undefined>) =>
  Object.entries(a)
    .filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => ` ${k}="${esc(String(v))}"`)
    .join('');
const rate = (r: number) => (r / 100).toFixed(6);
/** Local wall time without offset, as CFDI dates are written (the issue place's zone; `undefined` is central Mexico's). */
export function cfdiDate(iso: string, zone: string = 'America/Mexico_City'): string {
  const p: Record<string, string> = {};
  for (const part of new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }).formatToParts(new Date(iso))) p[part.type] = part.value;
  return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}`;
}

function taxesOf(doc: CfdiDocument) {
  const groups = new Map<string, { rate: number | null; exempt: boolean; base: number; tax: number }>();
  for (const l of doc.lines) {
    if (l.tax.base_cents <= 0) continue; // not subject to tax (01): in no summary
    const key = l.tax.exempt ? 'exento' : String(l.tax.rate);
    const g = groups.get(key) ?? { rate: l.tax.rate, exempt: l.tax.exempt, base: 0, tax: 0 };
    g.base += l.tax.base_cents;
    g.tax += l.tax.tax_cents;
    groups.set(key, g);
  }
  return [...groups.values()];
}

export type Stamp = { uuid: string; stamped_at: string; sat_certificate: string; cfd_seal: string; sat_seal: string; pac_rfc: string };

export function cfdiXml(doc: CfdiDocument, stamp: Stamp, certificate: { number: string; base64: string }): string {
  const payment = doc.type === 'P';
  const groups = taxesOf(doc);
  const transferred = groups.filter((g) => !g.exempt).reduce((n, g) => n + g.tax, 0);
  const lines = doc.lines
    .map((l) => {
      const traslado = l.tax.exempt
        ? `<cfdi:Traslado${attrs({ Base: cents(l.tax.base_cents), Impuesto: '002', TipoFactor: 'Exento' })}/>`
        : `<cfdi:Traslado${attrs({ Base: cents(l.tax.base_cents), Impuesto: '002', TipoFactor: 'Tasa', TasaOCuota: rate(l.tax.rate ?? 0), Importe: cents(l.tax.tax_cents) })}/>`;
      // A line whose tax base is 0 (free, or a fraction of a cent) is not subject to tax (01): the schema
      // wants a Traslado's Base above 0 (cfdv40.xsd, minInclusive 0.000001).
      const taxed = !payment && (l.tax.exempt || l.tax.rate !== null) && l.tax.base_cents > 0;
      return `<cfdi:Concepto${attrs({
        ClaveProdServ: l.product_key,
        Cantidad: payment ? '1' : String(l.quantity),
        ClaveUnidad: l.unit_key,
        Descripcion: l.description,
        ValorUnitario: payment ? '0' : (l.unit_price_cents / 100).toFixed(6),
        Importe: payment ? '0' : cents(l.amount_cents),
        Descuento: l.discount_cents ? cents(l.discount_cents) : null,
        ObjetoImp: taxed ? '02' : '01',
      })}>${taxed ? `<cfdi:Impuestos><cfdi:Traslados>${traslado}</cfdi:Traslados></cfdi:Impuestos>` : ''}</cfdi:Concepto>`;
    })
    .join('');
  const taxes =
    payment || !groups.some((g) => g.exempt || g.rate !== null)
      ? ''
      : `<cfdi:Impuestos${attrs({ TotalImpuestosTrasladados: groups.some((g) => !g.exempt) ? cents(transferred) : null })}><cfdi:Traslados>${groups
          .map((g) =>
            g.exempt
              ? `<cfdi:Traslado${attrs({ Base: cents(g.base), Impuesto: '002', TipoFactor: 'Exento' })}/>`
              : `<cfdi:Traslado${attrs({ Base: cents(g.base), Impuesto: '002', TipoFactor: 'Tasa', TasaOCuota: rate(g.rate ?? 0), Importe: cents(g.tax) })}/>`,
          )
          .join('')}</cfdi:Traslados></cfdi:Impuestos>`;
  const pagos = doc.payment
    ? `<pago20:Pagos Version="2.0"><pago20:Totales${attrs({ MontoTotalPagos: cents(doc.payment.amount_cents) })}/><pago20:Pago${attrs({
        FechaPago: cfdiDate(doc.payment.paid_at, doc.zone),
        FormaDePagoP: doc.payment.payment_form,
        MonedaP: doc.payment.currency.toUpperCase(),
        TipoCambioP: '1',
        Monto: cents(doc.payment.amount_cents),
      })}><pago20:DoctoRelacionado${attrs({
        IdDocumento: doc.payment.related_uuid,
        MonedaDR: doc.payment.currency.toUpperCase(),
        EquivalenciaDR: '1',
        NumParcialidad: doc.payment.installment,
        ImpSaldoAnt: cents(doc.payment.previous_balance_cents),
        ImpPagado: cents(doc.payment.amount_cents),
        ImpSaldoInsoluto: cents(doc.payment.previous_balance_cents - doc.payment.amount_cents),
        ObjetoImpDR: '01',
      })}/></pago20:Pago></pago20:Pagos>`
    : '';
  const publicReceiver = doc.receiver.rfc === PUBLIC_RFC;
  return `<?xml version="1.0" encoding="UTF-8"?>
<!-- ${DEV_WARNING} -->
<cfdi:Comprobante xmlns:cfdi="http://www.sat.gob.mx/cfd/4" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:tfd="http://www.sat.gob.mx/TimbreFiscalDigital"${payment ? ' xmlns:pago20="http://www.sat.gob.mx/Pagos20"' : ''} xmlns:dev="urn:workspace-service:desarrollo" xsi:schemaLocation="http://www.sat.gob.mx/cfd/4 http://www.sat.gob.mx/sitio_internet/cfd/4/cfdv40.xsd${payment ? ' http://www.sat.gob.mx/Pagos20 http://www.sat.gob.mx/sitio_internet/cfd/Pagos/Pagos20.xsd' : ''}"${attrs({
    Version: '4.0',
    Serie: doc.series,
    Folio: doc.folio,
    Fecha: cfdiDate(doc.issued_at, doc.zone),
    Sello: stamp.cfd_seal,
    FormaPago: payment ? null : doc.payment_form,
    NoCertificado: certificate.number,
    Certificado: certificate.base64,
    SubTotal: payment ? '0' : cents(doc.subtotal_cents),
    Descuento: !payment && doc.discount_cents ? cents(doc.discount_cents) : null,
    Moneda: payment ? 'XXX' : doc.currency.toUpperCase(),
    TipoCambio: !payment && doc.currency !== 'mxn' ? '1' : null,
    Total: payment ? '0' : cents(doc.total_cents),
    TipoDeComprobante: doc.type,
    Exportacion: '01',
    MetodoPago: payment ? null : doc.payment_method,
    LugarExpedicion: doc.issuer.zip,
  })}>${doc.global ? `<cfdi:InformacionGlobal${attrs({ Periodicidad: doc.global.periodicity, Meses: doc.global.months, 'Año': doc.global.year })}/>` : ''}${
    doc.related ? `<cfdi:CfdiRelacionados TipoRelacion="${doc.related.relation}">${doc.related.uuids.map((u) => `<cfdi:CfdiRelacionado UUID="${u}"/>`).join('')}</cfdi:CfdiRelacionados>` : ''
  }<cfdi:Emisor${attrs({ Rfc: doc.issuer.rfc, Nombre: doc.issuer.legal_name, RegimenFiscal: doc.issuer.tax_regime })}/><cfdi:Receptor${attrs({
    Rfc: doc.receiver.rfc,
    Nombre: publicReceiver ? 'PUBLICO EN GENERAL' : doc.receiver.legal_name,
    DomicilioFiscalReceptor: publicReceiver ? doc.issuer.zip : doc.receiver.zip,
    RegimenFiscalReceptor: doc.receiver.tax_regime,
    UsoCFDI: doc.cfdi_use,
  })}/><cfdi:Conceptos>${lines}</cfdi:Conceptos>${taxes}<cfdi:Complemento>${pagos}<tfd:TimbreFiscalDigital xsi:schemaLocation="http://www.sat.gob.mx/TimbreFiscalDigital http://www.sat.gob.mx/sitio_internet/cfd/TimbreFiscalDigital/TimbreFiscalDigitalv11.xsd"${attrs({
    Version: '1.1',
    UUID: stamp.uuid,
    // The stamp's time is the provider's, in central Mexico's time whatever the issuer's zone.
    FechaTimbrado: cfdiDate(stamp.stamped_at),
    RfcProvCertif: stamp.pac_rfc,
    SelloCFD: stamp.cfd_seal,
    NoCertificadoSAT: stamp.sat_certificate,
    SelloSAT: stamp.sat_seal,
  })}/></cfdi:Complemento><cfdi:Addenda><dev:Aviso>${esc(DEV_WARNING)}</dev:Aviso></cfdi:Addenda></cfdi:Comprobante>
`;
}
