// Structure rules of CFDI 4.0 (Anexo 20 of the RMF, and the Pagos 2.0
// complement) that the XML we would send must follow, checked without a
// provider: the tests run every document the development provider makes
// through these, so what we would send to a real PAC is right even when none
// is reachable. Each rule has a name (the id in the error) and is one of the
// SAT's validations; the XSD itself is not shipped by any npm package.
import { DOMParser, type Element } from '@xmldom/xmldom';
import { CFDI_USES, INCOME_CFDI_USES, PAYMENT_FORMS, PUBLIC_RFC, regimeFitsRfc, TAX_OBJECTS, TAX_REGIMES, useFitsRegime, ZIP } from './catalogs.ts';
import { Rfc } from '@nodecfdi/rfc';

const CFDI = 'http://www.sat.gob.mx/cfd/4';
const TFD = 'http://www.sat.gob.mx/TimbreFiscalDigital';
const PAGO = 'http://www.sat.gob.mx/Pagos20';
const MONEY = /^\d+(\.\d{1,6})?$/;
const DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;
const UUID = /^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/i;
const RATES = new Set(['0.160000', '0.080000', '0.000000']);

export type Violation = { rule: string; message: string };

const children = (el: Element, ns: string, name: string): Element[] =>
  Array.from(el.childNodes as unknown as ArrayLike<Element>).filter((n) => n.nodeType === 1 && n.namespaceURI === ns && n.localName === name);
const all = (el: Element, ns: string, name: string): Element[] => Array.from(el.getElementsByTagNameNS(ns, name) as unknown as ArrayLike<Element>);
const num = (v: string | null) => Math.round(Number(v ?? 0) * 100);

export function validateCfdi(xml: string): Violation[] {
  const out: Violation[] = [];
  const fail = (rule: string, message: string) => out.push({ rule, message });
  const doc = new DOMParser({ onError: (level, msg) => (level !== 'warning' ? fail('XML', msg) : undefined) }).parseFromString(xml, 'text/xml');
  const root = doc.documentElement as unknown as Element | null;
  if (!root || root.namespaceURI !== CFDI || root.localName !== 'Comprobante') {
    fail('CFDI40-ROOT', 'el elemento raíz debe ser cfdi:Comprobante del espacio http://www.sat.gob.mx/cfd/4');
    return out;
  }
  const a = (el: Element, name: string) => el.getAttribute(name);
  const type = a(root, 'TipoDeComprobante');
  if (a(root, 'Version') !== '4.0') fail('CFDI40-VERSION', 'Version debe ser 4.0');
  for (const name of ['Fecha', 'Sello', 'NoCertificado', 'Certificado', 'SubTotal', 'Moneda', 'Total', 'TipoDeComprobante', 'Exportacion', 'LugarExpedicion']) {
    if (!a(root, name)) fail('CFDI40-REQUIRED', `Comprobante sin ${name}`);
  }
  if (!DATE.test(a(root, 'Fecha') ?? '')) fail('CFDI40-FECHA', 'Fecha debe ser AAAA-MM-DDThh:mm:ss');
  if (!ZIP.test(a(root, 'LugarExpedicion') ?? '')) fail('CFDI40-LUGAR', 'LugarExpedicion es un código postal de 5 dígitos');
  if (!['I', 'E', 'T', 'N', 'P'].includes(type ?? '')) fail('CFDI40-TIPO', 'TipoDeComprobante fuera de c_TipoDeComprobante');
  // Serie: [^|]{1,25} once the schema collapses its white space.
  const serie = a(root, 'Serie');
  if (serie !== null && root.hasAttribute('Serie') && !/^[^|]{1,25}$/.test(serie.replace(/\s+/g, ' ').trim())) fail('CFDI40-SERIE', 'Serie: de 1 a 25 caracteres visibles, sin |');
  for (const name of ['SubTotal', 'Total', 'Descuento']) if (a(root, name) && !MONEY.test(a(root, name)!)) fail('CFDI40-IMPORTE', `${name} no es un importe válido`);

  const [emisor] = children(root, CFDI, 'Emisor');
  const [receptor] = children(root, CFDI, 'Receptor');
  if (!emisor) fail('CFDI40-EMISOR', 'falta Emisor');
  if (!receptor) fail('CFDI40-RECEPTOR', 'falta Receptor');
  if (emisor) {
    if (!Rfc.isValid(a(emisor, 'Rfc') ?? '')) fail('CFDI40-EMISOR-RFC', 'Rfc del emisor no es válido');
    if (!TAX_REGIMES[a(emisor, 'RegimenFiscal') ?? '']) fail('CFDI40-EMISOR-REGIMEN', 'RegimenFiscal fuera de c_RegimenFiscal');
    else if (Rfc.isValid(a(emisor, 'Rfc') ?? '') && !regimeFitsRfc(a(emisor, 'RegimenFiscal')!, a(emisor, 'Rfc')!)) {
      fail('CFDI40-EMISOR-REGIMEN-TIPO', `el régimen ${a(emisor, 'RegimenFiscal')} no corresponde al tipo de persona del RFC ${a(emisor, 'Rfc')}`);
    }
    if (!a(emisor, 'Nombre')) fail('CFDI40-EMISOR-NOMBRE', 'falta Nombre del emisor');
    else if (!/^[^|]{1,254}$/.test(a(emisor, 'Nombre')!)) fail('CFDI40-EMISOR-NOMBRE', 'Nombre del emisor: hasta 254 caracteres y ningún |');
  }
  if (receptor) {
    const rfc = a(receptor, 'Rfc') ?? '';
    if (!Rfc.isValid(rfc)) fail('CFDI40-RECEPTOR-RFC', 'Rfc del receptor no es válido');
    if (!TAX_REGIMES[a(receptor, 'RegimenFiscalReceptor') ?? '']) fail('CFDI40-RECEPTOR-REGIMEN', 'RegimenFiscalReceptor fuera de c_RegimenFiscal');
    if (!(CFDI_USES as readonly string[]).includes(a(receptor, 'UsoCFDI') ?? '')) fail('CFDI40-USO', 'UsoCFDI fuera de c_UsoCFDI');
    else if (type === 'I' && !(INCOME_CFDI_USES as readonly string[]).includes(a(receptor, 'UsoCFDI')!)) fail('CFDI40-USO-TIPO', `UsoCFDI ${a(receptor, 'UsoCFDI')} no es de un CFDI de ingreso (CP01: pagos; CN01: nómina)`);
    const regime = a(receptor, 'RegimenFiscalReceptor') ?? '';
    if (TAX_REGIMES[regime] && Rfc.isValid(rfc) && !regimeFitsRfc(regime, rfc)) fail('CFDI40-RECEPTOR-REGIMEN-TIPO', `el régimen ${regime} no corresponde al tipo de persona del RFC ${rfc}`);
    if (TAX_REGIMES[regime] && !useFitsRegime(a(receptor, 'UsoCFDI') ?? '', regime)) fail('CFDI40-USO-REGIMEN', `UsoCFDI ${a(receptor, 'UsoCFDI')} no admite el régimen ${regime}`);
    if (!ZIP.test(a(receptor, 'DomicilioFiscalReceptor') ?? '')) fail('CFDI40-RECEPTOR-CP', 'DomicilioFiscalReceptor es un código postal');
    if (rfc === PUBLIC_RFC) {
      // Global invoice to the general public (CFDI40 rules for XAXX010101000).
      if (a(receptor, 'Nombre') !== 'PUBLICO EN GENERAL') fail('CFDI40-PUBLICO-NOMBRE', 'con XAXX010101000 el Nombre es PUBLICO EN GENERAL');
      if (a(receptor, 'RegimenFiscalReceptor') !== '616') fail('CFDI40-PUBLICO-REGIMEN', 'con XAXX010101000 el régimen es 616');
      if (type === 'I' && a(receptor, 'UsoCFDI') !== 'S01') fail('CFDI40-PUBLICO-USO', 'con XAXX010101000 el UsoCFDI es S01');
      if (a(receptor, 'DomicilioFiscalReceptor') !== a(root, 'LugarExpedicion')) fail('CFDI40-PUBLICO-CP', 'con XAXX010101000 el domicilio es el LugarExpedicion');
      if (type === 'I' && children(root, CFDI, 'InformacionGlobal').length !== 1) fail('CFDI40-GLOBAL', 'una factura al público en general lleva InformacionGlobal');
    }
  }

  const conceptos = all(root, CFDI, 'Concepto');
  if (!conceptos.length) fail('CFDI40-CONCEPTOS', 'al menos un Concepto');
  let subtotal = 0;
  let discount = 0;
  const concept = new Map<string, { base: number; tax: number }>();
  for (const c of conceptos) {
    for (const name of ['ClaveProdServ', 'Cantidad', 'ClaveUnidad', 'Descripcion', 'ValorUnitario', 'Importe', 'ObjetoImp']) if (!a(c, name)) fail('CFDI40-CONCEPTO', `Concepto sin ${name}`);
    if (!/^\d{8}$/.test(a(c, 'ClaveProdServ') ?? '')) fail('CFDI40-CLAVEPROD', 'ClaveProdServ de 8 dígitos');
    if (!(TAX_OBJECTS as readonly string[]).includes(a(c, 'ObjetoImp') ?? '')) fail('CFDI40-OBJETOIMP', 'ObjetoImp fuera de c_ObjetoImp');
    const importe = num(a(c, 'Importe'));
    const expected = Number(a(c, 'Cantidad')) * Number(a(c, 'ValorUnitario')) * 100;
    if (Math.abs(importe - expected) > 1) fail('CFDI40-IMPORTE-CONCEPTO', `Importe ${a(c, 'Importe')} ≠ Cantidad × ValorUnitario`);
    subtotal += importe;
    discount += num(a(c, 'Descuento'));
    const traslados = all(c, CFDI, 'Traslado');
    if (a(c, 'ObjetoImp') === '02' && !traslados.length) fail('CFDI40-OBJETOIMP-02', 'un concepto objeto de impuesto (02) declara sus traslados');
    if (a(c, 'ObjetoImp') === '01' && traslados.length) fail('CFDI40-OBJETOIMP-01', 'un concepto no objeto de impuesto (01) no declara traslados');
    for (const t of traslados) {
      const factor = a(t, 'TipoFactor');
      // cfdv40.xsd: a Traslado's Base is at least 0.000001 (a line of amount 0 is not subject to tax, 01).
      if (!(Number(a(t, 'Base')) > 0)) fail('CFDI40-BASE', 'la Base de un traslado es mayor que 0');
      if (a(t, 'Impuesto') !== '002') fail('CFDI40-IMPUESTO', 'Impuesto 002 (IVA)');
      if (factor === 'Exento') {
        if (a(t, 'TasaOCuota') || a(t, 'Importe')) fail('CFDI40-EXENTO', 'un traslado exento no lleva TasaOCuota ni Importe');
      } else if (factor === 'Tasa') {
        if (!RATES.has(a(t, 'TasaOCuota') ?? '')) fail('CFDI40-TASA', 'TasaOCuota de IVA 0.160000, 0.080000 o 0.000000');
        const base = num(a(t, 'Base'));
        const tax = num(a(t, 'Importe'));
        if (Math.abs(Math.round((base * Number(a(t, 'TasaOCuota'))) / 1) - tax) > 1) fail('CFDI40-TRASLADO-IMPORTE', 'Importe del traslado ≠ Base × TasaOCuota (redondeado)');
        const key = a(t, 'TasaOCuota')!;
        const g = concept.get(key) ?? { base: 0, tax: 0 };
        concept.set(key, { base: g.base + base, tax: g.tax + tax });
      } else fail('CFDI40-TIPOFACTOR', 'TipoFactor Tasa o Exento');
    }
  }

  if (type === 'I') {
    const total = num(a(root, 'Total'));
    if (num(a(root, 'SubTotal')) !== subtotal) fail('CFDI40-SUBTOTAL', `SubTotal ${a(root, 'SubTotal')} ≠ suma de los importes (${(subtotal / 100).toFixed(2)})`);
    if (num(a(root, 'Descuento')) !== discount) fail('CFDI40-DESCUENTO', 'Descuento ≠ suma de los descuentos');
    const [impuestos] = children(root, CFDI, 'Impuestos');
    const trasladados = impuestos ? num(a(impuestos, 'TotalImpuestosTrasladados')) : 0;
    if (impuestos) {
      for (const t of all(impuestos, CFDI, 'Traslado').filter((x) => a(x, 'TipoFactor') === 'Tasa')) {
        const g = concept.get(a(t, 'TasaOCuota')!);
        if (!g || g.base !== num(a(t, 'Base')) || g.tax !== num(a(t, 'Importe'))) fail('CFDI40-IMPUESTOS-TOTALES', `el resumen de la tasa ${a(t, 'TasaOCuota')} no suma los conceptos`);
      }
      const sum = [...concept.values()].reduce((n, g) => n + g.tax, 0);
      if (sum !== trasladados) fail('CFDI40-TOTAL-TRASLADOS', 'TotalImpuestosTrasladados ≠ suma de los traslados');
    }
    if (total !== subtotal - discount + trasladados) fail('CFDI40-TOTAL', `Total ${a(root, 'Total')} ≠ SubTotal − Descuento + impuestos`);
    if (!['PUE', 'PPD'].includes(a(root, 'MetodoPago') ?? '')) fail('CFDI40-METODOPAGO', 'MetodoPago PUE o PPD');
    if (!(PAYMENT_FORMS as readonly string[]).includes(a(root, 'FormaPago') ?? '')) fail('CFDI40-FORMAPAGO', 'FormaPago fuera de c_FormaPago');
    if (a(root, 'MetodoPago') === 'PPD' && a(root, 'FormaPago') !== '99') fail('CFDI40-PPD', 'con PPD la FormaPago es 99 (por definir)');
    if (a(root, 'MetodoPago') === 'PUE' && a(root, 'FormaPago') === '99') fail('CFDI40-PUE', 'con PUE la FormaPago no es 99 (por definir)');
  }
  if (type === 'P') {
    if (a(root, 'SubTotal') !== '0' || a(root, 'Total') !== '0' || a(root, 'Moneda') !== 'XXX') fail('CFDI40-P-IMPORTES', 'un complemento de pago lleva SubTotal 0, Total 0 y Moneda XXX');
    if (a(root, 'FormaPago') || a(root, 'MetodoPago')) fail('CFDI40-P-FORMA', 'un complemento de pago no lleva FormaPago ni MetodoPago');
    if (receptor && a(receptor, 'UsoCFDI') !== 'CP01') fail('CFDI40-P-USO', 'un complemento de pago usa CP01');
    const pagos = all(root, PAGO, 'Pagos');
    if (pagos.length !== 1 || a(pagos[0], 'Version') !== '2.0') fail('PAGOS20', 'un complemento Pagos 2.0');
    for (const pago of all(root, PAGO, 'Pago')) {
      const docs = all(pago, PAGO, 'DoctoRelacionado');
      const paid = docs.reduce((n, d) => n + num(a(d, 'ImpPagado')), 0);
      if (num(a(pago, 'Monto')) !== paid) fail('PAGOS20-MONTO', 'Monto ≠ suma de ImpPagado');
      for (const d of docs) {
        if (!UUID.test(a(d, 'IdDocumento') ?? '')) fail('PAGOS20-ID', 'IdDocumento es el UUID de la factura pagada');
        if (num(a(d, 'ImpSaldoInsoluto')) !== num(a(d, 'ImpSaldoAnt')) - num(a(d, 'ImpPagado'))) fail('PAGOS20-SALDO', 'ImpSaldoInsoluto = ImpSaldoAnt − ImpPagado');
        if (num(a(d, 'ImpSaldoInsoluto')) < 0) fail('PAGOS20-SALDO-NEG', 'el saldo insoluto no puede ser negativo');
      }
    }
  }
  const timbres = all(root, TFD, 'TimbreFiscalDigital');
  if (timbres.length !== 1) fail('TFD11', 'un TimbreFiscalDigital en el Complemento');
  else if (!UUID.test(a(timbres[0], 'UUID') ?? '') || a(timbres[0], 'Version') !== '1.1') fail('TFD11-UUID', 'TimbreFiscalDigital 1.1 con un UUID');
  for (const r of all(root, CFDI, 'CfdiRelacionado')) if (!UUID.test(a(r, 'UUID') ?? '')) fail('CFDI40-RELACIONADO', 'CfdiRelacionado con un UUID');
  return out;
}
