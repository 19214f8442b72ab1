// `wsctl company tax-profile <id> --rfc --legal-name --tax-regime --zip --cer
// --key --key-password` (DESIGN.md, CLI contract): the emitter data of tax
// invoices. The files are checked with @nodecfdi/credentials: the
// certificate parses, is a CSD (not an e.firma), the password opens the key,
// the key is the certificate's, the certificate belongs to the RFC and is
// valid today. The key and its password are sealed with ENCRYPTION_KEY and
// never readable back (not by the API, not by this command).
//
// With Facturapi (FACTURAPI_KEY, the account's User Key), the company is an
// issuing organization of that account: made on the first call, then given
// the legal data and the CSD on every call, and its secret key for
// FACTURAPI_MODE kept sealed (lib/cfdi/facturapi.ts). Facturapi refusing
// them answers 422 naming `cer`; Facturapi out of reach, 503; either way
// nothing is saved here but the organization's id.
import { Certificate, Credential } from '@nodecfdi/credentials/node';
import { Rfc } from '@nodecfdi/rfc';
import { withSessionLock, type Client as PoolClient, type Pool } from '../../db/pool.ts';
import { FacturapiAccount, ProviderRejected, ProviderUnavailable, type OrganizationSetup } from '../../lib/cfdi/facturapi.ts';
import { regimeMismatch, TAX_REGIMES, ZIP } from '../../lib/cfdi/catalogs.ts';
import type { Config } from '../../lib/config.ts';
import { seal } from '../../lib/secret-box.ts';
import { ApiError, validationFailed } from '../errors.ts';
import { requireCompany } from './exists.ts';

export type TaxProfileInput = { companyId: string; rfc: string; legalName: string; taxRegime: string; zip: string; cer: string; key: string; keyPassword: string };

type ProfileRow = { company_id: string; rfc: string; legal_name: string; tax_regime: string; zip: string; certificate_base64: string; certificate_number: string; valid_from: Date; valid_to: Date; key_enc: string; password_enc: string; updated_at: Date };

export function serializeTaxProfile(row: ProfileRow) {
  return {
    company_id: row.company_id,
    rfc: row.rfc,
    legal_name: row.legal_name,
    tax_regime: row.tax_regime,
    zip: row.zip,
    certificate_number: row.certificate_number,
    valid_from: row.valid_from.toISOString(),
    valid_to: row.valid_to.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

/** The certificate number as the SAT prints it: the serial's bytes read as ASCII digits. */
function certificateNumber(credential: Credential): string {
  return credential.certificate().serialNumber().bytes().replace(/[^0-9A-Za-z]/g, '') || credential.certificate().serialNumber().hexadecimal();
}

export async function setTaxProfile(pool: Pool, config: Config, input: TaxProfileInput) {
  await requireCompany(pool, input.companyId);
  // The CSD's key and password are stored sealed (lib/secret-box.ts): never without a key to seal them.
  if (!config.encryptionKey) throw validationFailed({ key: ['ENCRYPTION_KEY no está configurada: sin ella no se guardan llaves ni contraseñas'] }, 'ENCRYPTION_KEY no está configurada: define una (al menos 32 caracteres) antes de guardar un CSD.');
  const rfc = input.rfc.trim().toUpperCase();
  const errors: Record<string, string[]> = {};
  if (!Rfc.isValid(rfc)) errors.rfc = ['no es un RFC válido'];
  // As for receivers (c_RegimenFiscal's Física / Moral columns): the provider refuses every invoice of an issuer whose regime is not its kind of person's.
  const mismatch = Rfc.isValid(rfc) ? regimeMismatch(input.taxRegime, rfc) : null;
  if (!TAX_REGIMES[input.taxRegime]) errors.tax_regime = ['no está en el catálogo c_RegimenFiscal'];
  else if (mismatch) errors.tax_regime = [mismatch];
  if (!ZIP.test(input.zip)) errors.zip = ['código postal de 5 dígitos'];
  if (!input.legalName.trim()) errors.legal_name = ['es obligatorio'];
  // Emisor/@Nombre is [^|]{1,254} in the CFDI 4.0 schema (the pipe separates the cadena original's fields).
  else if (input.legalName.trim().length > 254 || input.legalName.includes('|')) errors.legal_name = ['hasta 254 caracteres y ningún | (esquema del CFDI 4.0)'];
  if (Object.keys(errors).length) throw validationFailed(errors, `Datos fiscales inválidos: ${Object.entries(errors).map(([k, v]) => `${k} ${v.join(', ')}`).join('; ')}.`);
  const cer = Buffer.from(input.cer, 'base64').toString('binary');
  const key = Buffer.from(input.key, 'base64').toString('binary');
  const refuse = (why: string) => validationFailed({ cer: [why] }, `CSD inválido: ${why}.`);
  // The certificate alone first, so a file that is no certificate is reported on `cer`, not on the key.
  try {
    new Certificate(cer);
  } catch (error) {
    throw refuse(`no es un certificado X.509 legible (${String((error as Error).message)})`);
  }
  let credential: Credential;
  try {
    credential = Credential.create(cer, key, input.keyPassword);
  } catch (error) {
    const message = String((error as Error).message);
    const why = /private key/i.test(message) ? 'la contraseña no abre la llave, o la llave no es del certificado' : `la llave no se puede leer (${message})`;
    throw validationFailed({ key: [why] }, `CSD inválido: ${why}.`);
  }
  if (!credential.isCsd()) throw refuse('es una e.firma (FIEL), no un certificado de sello digital (CSD)');
  if (credential.rfc().toUpperCase() !== rfc) throw refuse(`el certificado es del RFC ${credential.rfc()}, no de ${rfc}`);
  if (!credential.certificate().validOn()) throw refuse('el certificado no está vigente hoy');
  const certificate = credential.certificate();
  const setup: OrganizationSetup = { legalName: input.legalName.trim(), taxRegime: input.taxRegime, zip: input.zip, cer: Buffer.from(cer, 'binary'), key: Buffer.from(key, 'binary'), keyPassword: input.keyPassword };
  // One save of a company's profile at a time (a session advisory lock), from Facturapi's steps to the
  // row: two at once would make two organizations, or leave here one CSD and at Facturapi another.
  const row = await withSessionLock(pool, 'company-tax-profile', input.companyId, async (client) => {
    if (config.facturapi) await setUpFacturapiOrganization(client, config, input.companyId, setup);
    const { rows } = await client.query<ProfileRow>(
      `INSERT INTO company_tax_profiles (company_id, rfc, legal_name, tax_regime, zip, certificate_base64, certificate_number, valid_from, valid_to, key_enc, password_enc)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (company_id) DO UPDATE SET rfc = EXCLUDED.rfc, legal_name = EXCLUDED.legal_name, tax_regime = EXCLUDED.tax_regime, zip = EXCLUDED.zip,
         certificate_base64 = EXCLUDED.certificate_base64, certificate_number = EXCLUDED.certificate_number, valid_from = EXCLUDED.valid_from,
         valid_to = EXCLUDED.valid_to, key_enc = EXCLUDED.key_enc, password_enc = EXCLUDED.password_enc, updated_at = now()
       RETURNING *`,
      [
        input.companyId,
        rfc,
        input.legalName.trim(),
        input.taxRegime,
        input.zip,
        Buffer.from(cer, 'binary').toString('base64'),
        certificateNumber(credential),
        new Date(certificate.validFromDateTime().toISO()!),
        new Date(certificate.validToDateTime().toISO()!),
        seal(config.encryptionKey, input.key),
        seal(config.encryptionKey, input.keyPassword),
      ],
    );
    return rows[0];
  });
  return serializeTaxProfile(row);
}



/**
 * The company's Facturapi organization, made or brought up to date, and its key for FACTURAPI_MODE
 * kept. The caller holds the company's lock. The legal data goes first, then the CSD: a refusal of the
 * CSD leaves Facturapi with the new legal data and the old CSD, and saving again brings both in line.
 */
async function setUpFacturapiOrganization(client: PoolClient, config: Config, companyId: string, setup: OrganizationSetup): Promise<void> {
  const facturapi = config.facturapi!;
  const account = new FacturapiAccount({ baseUrl: facturapi.url, userKey: facturapi.key });
  try {
    const { rows } = await client.query<{ organization_id: string }>('SELECT organization_id FROM facturapi_organizations WHERE company_id = $1', [companyId]);
    let organizationId = rows[0]?.organization_id;
    if (!organizationId) {
      organizationId = await account.createOrganization(setup.legalName);
      // Recorded at once: a retry after a later step fails reuses it.
      await client.query('INSERT INTO facturapi_organizations (company_id, organization_id) VALUES ($1, $2)', [companyId, organizationId]);
    }
    await account.setUp(organizationId, setup);
    const key = await account.secretKey(organizationId, facturapi.mode);
    await client.query('UPDATE facturapi_organizations SET mode = $2, key_enc = $3, updated_at = now() WHERE company_id = $1', [companyId, facturapi.mode, seal(config.encryptionKey, key)]);
  } catch (error) {
    if (error instanceof ProviderRejected) throw validationFailed({ cer: [`Facturapi lo rechazó: ${error.message}`] }, `Facturapi rechazó los datos fiscales o el CSD: ${error.message}`);
    if (error instanceof ProviderUnavailable) throw new ApiError('service_unavailable', `Facturapi no respondió o no aceptó la llave de la cuenta; no se guardó nada (${error.message}).`);
    throw error;
  }
}
