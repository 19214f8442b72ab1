// The SAT catalogs (Anexo 20, CFDI 4.0) for the values this service writes,
// and the checks of the ones clients send. Subsets: the full catalogs have
// thousands of product keys; ours are the codes a small business uses, and
// any 8-digit product key or SAT unit code is accepted in its format.

/** c_RegimenFiscal: tax regimes (persona moral and física). */
export const TAX_REGIMES: Record<string, string> = {
  '601': 'General de Ley Personas Morales',
  '603': 'Personas Morales con Fines no Lucrativos',
  '605': 'Sueldos y Salarios e Ingresos Asimilados a Salarios',
  '606': 'Arrendamiento',
  '607': 'Régimen de Enajenación o Adquisición de Bienes',
  '608': 'Demás ingresos',
  '610': 'Residentes en el Extranjero sin Establecimiento Permanente en México',
  '611': 'Ingresos por Dividendos (socios y accionistas)',
  '612': 'Personas Físicas con Actividades Empresariales y Profesionales',
  '614': 'Ingresos por intereses',
  '615': 'Régimen de los ingresos por obtención de premios',
  '616': 'Sin obligaciones fiscales',
  '620': 'Sociedades Cooperativas de Producción que optan por diferir sus ingresos',
  '621': 'Incorporación Fiscal',
  '622': 'Actividades Agrícolas, Ganaderas, Silvícolas y Pesqueras',
  '623': 'Opcional para Grupos de Sociedades',
  '624': 'Coordinados',
  '625': 'Régimen de las Actividades Empresariales con ingresos a través de Plataformas Tecnológicas',
  '626': 'Régimen Simplificado de Confianza',
};

/**
 * c_RegimenFiscal's Física / Moral columns: who may be in each regime. An
 * RFC of 13 characters is a persona física's, of 12 a persona moral's.
 */
const FISICA_ONLY = ['605', '606', '607', '608', '611', '612', '614', '615', '616', '621', '625'];
const MORAL_ONLY = ['601', '603', '620', '622', '623', '624'];
export function regimeFitsRfc(regime: string, rfc: string): boolean {
  const moral = rfc.length === 12;
  return moral ? !FISICA_ONLY.includes(regime) : !MORAL_ONLY.includes(regime);
}

/** Why `regime` does not fit the kind of person `rfc` is, in the API's words; null when it fits. */
export function regimeMismatch(regime: string, rfc: string): string | null {
  if (regimeFitsRfc(regime, rfc)) return null;
  return `el régimen ${regime} no aplica a una persona ${rfc.length === 12 ? 'moral (RFC de 12 caracteres)' : 'física (RFC de 13 caracteres)'}`;
}

/** c_UsoCFDI's "Régimen Fiscal Receptor" column, for the uses of CFDI_USES: the receiver regimes each use admits. */
const BUSINESS_REGIMES = ['601', '603', '606', '612', '620', '621', '622', '623', '624', '625', '626'];
/** G02 (devoluciones, descuentos o bonificaciones) admits these too. */
const RETURNS_ALSO = ['605', '608', '610', '611', '614', '616'];
const PERSONAL_DEDUCTION_REGIMES = ['605', '606', '607', '608', '611', '612', '614', '615', '625'];
export function useFitsRegime(use: string, regime: string): boolean {
  if (use === 'S01' || use === 'CP01') return !!TAX_REGIMES[regime];
  if (use === 'CN01') return regime === '605'; // nómina: salaried people
  if (use.startsWith('D')) return PERSONAL_DEDUCTION_REGIMES.includes(regime);
  if (use === 'G02') return [...BUSINESS_REGIMES, ...RETURNS_ALSO].includes(regime);
  return BUSINESS_REGIMES.includes(regime); // G01, G03, I01–I08
}

/** c_UsoCFDI, CFDI 4.0: every use (S01 for the general public, CP01 for payment complements, CN01 for payroll). */
export const CFDI_USES = [
  'G01', 'G02', 'G03',
  'I01', 'I02', 'I03', 'I04', 'I05', 'I06', 'I07', 'I08',
  'D01', 'D02', 'D03', 'D04', 'D05', 'D06', 'D07', 'D08', 'D09', 'D10',
  'S01', 'CP01', 'CN01',
] as const;

/** The uses an income invoice (type I) may carry: CP01 is the payment complement's (type P), CN01 payroll's (type N). */
export const INCOME_CFDI_USES = CFDI_USES.filter((use) => use !== 'CP01' && use !== 'CN01');

/** c_FormaPago. 99 (por definir) is the only one allowed with PPD. */
export const PAYMENT_FORMS = ['01', '02', '03', '04', '05', '06', '08', '12', '13', '14', '15', '17', '23', '24', '25', '26', '27', '28', '29', '30', '31', '99'] as const;

/** c_MetodoPago. */
export const PAYMENT_METHODS = ['PUE', 'PPD'] as const;
export type PaymentMethod = (typeof PAYMENT_METHODS)[number];

/** c_Motivo of a cancellation: 01 with a substitute, 02 errors without relation, 03 not carried out, 04 global invoice nominative operation. */
/** c_FormaPago a payment can have been made in: every form but 99 (por definir). */
export const PAID_FORMS = PAYMENT_FORMS.filter((form): form is Exclude<(typeof PAYMENT_FORMS)[number], '99'> => form !== '99');
export const CANCEL_MOTIVES = ['01', '02', '03', '04'] as const;

/** c_ObjetoImp: 01 not subject to tax, 02 subject to tax. */
export const TAX_OBJECTS = ['01', '02', '03', '04'] as const;

export const PUBLIC_RFC = 'XAXX010101000';
/** The generic RFC of foreign residents (XEXX010101000): its invoice names their tax residence and id. */
export const FOREIGN_RFC = 'XEXX010101000';
export const DEFAULT_PRODUCT_KEY = '01010101'; // No existe en el catálogo
export const DEFAULT_UNIT_KEY = 'H87'; // Pieza

export const PRODUCT_KEY = /^\d{8}$/;
export const UNIT_KEY = /^[A-Z0-9]{2,3}$/;
export const ZIP = /^\d{5}$/;
