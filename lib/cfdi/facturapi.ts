// Facturapi's REST API v2 (https://www.facturapi.io/v2) on undici: the one
// request function every call goes through, and the issuing organizations.
//
// One organization per company. Facturapi issues each invoice under the
// organization that owns the secret key it was sent with ("the secret key you
// use to authenticate determines the organization to use as the issuer"), so
// a service stamping for many companies holds the account's User Key
// (`sk_user_…`, FACTURAPI_KEY) and, per company, an organization made with it:
// its legal data and CSD uploaded, and a secret key of its own that the
// invoices of that company are sent with (FACTURAPI_MODE: `live` keys stamp
// for the SAT, `test` keys only in Facturapi's test environment).
// `wsctl company tax-profile` sets all of it (api/admin/tax-profile.ts).
//
// Errors: ProviderUnavailable (5xx, 429, network, a refused key: retried, or
// answered 503) and ProviderRejected (any other 4xx: Facturapi refused what
// was sent, with its message).
import { request } from 'undici';

export class ProviderUnavailable extends Error {}
export class ProviderRejected extends Error {}

export type FacturapiMode = 'live' | 'test';

type Body = { json: unknown } | { form: FormData } | undefined;

/** A body's bytes and Content-Type (a form as multipart/form-data, encoded by the platform's Response). */
async function encode(body: Body): Promise<{ bytes?: string | Buffer; type?: string }> {
  if (!body) return {};
  if ('json' in body) return { bytes: JSON.stringify(body.json), type: 'application/json' };
  const encoded = new Response(body.form);
  return { bytes: Buffer.from(await encoded.arrayBuffer()), type: encoded.headers.get('content-type')! };
}

export async function facturapiRequest<T>(baseUrl: string, key: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: Body, raw = false): Promise<T> {
  const { bytes, type } = await encode(body);
  let res;
  try {
    res = await request(`${baseUrl.replace(/\/$/, '')}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, accept: raw ? '*/*' : 'application/json', ...(type ? { 'content-type': type } : {}) },
      body: bytes,
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
  } catch (error) {
    throw new ProviderUnavailable(`Facturapi no respondió: ${(error as Error).message}`);
  }
  const buffer = Buffer.from(await res.body.arrayBuffer());
  if (res.statusCode >= 500 || res.statusCode === 429) throw new ProviderUnavailable(`Facturapi ${res.statusCode}`);
  if (res.statusCode >= 400) {
    let message = `HTTP ${res.statusCode}`;
    try {
      message = JSON.parse(buffer.toString('utf8')).message ?? message;
    } catch {}
    if (res.statusCode === 401 || res.statusCode === 403) throw new ProviderUnavailable(`Facturapi rechazó la llave (${res.statusCode}): ${message}`);
    throw new ProviderRejected(message);
  }
  return (raw ? buffer : JSON.parse(buffer.toString('utf8'))) as T;
}

export type OrganizationSetup = { legalName: string; taxRegime: string; zip: string; cer: Buffer; key: Buffer; keyPassword: string };

/**
 * The account's side (User Key): makes an organization, or brings an existing one up to date with
 * the company's legal data and CSD, and returns a secret key of the organization for `mode`.
 * Each step is idempotent but the first: the caller records the organization's id as soon as
 * `create` answers, so a retry after a later failure reuses it.
 */
export class FacturapiAccount {
  private readonly options: { baseUrl: string; userKey: string };

  constructor(options: { baseUrl: string; userKey: string }) {
    this.options = options;
  }

  private call<T>(method: 'GET' | 'POST' | 'PUT', path: string, body?: Body): Promise<T> {
    return facturapiRequest<T>(this.options.baseUrl, this.options.userKey, method, path, body);
  }

  async createOrganization(name: string): Promise<string> {
    return (await this.call<{ id: string }>('POST', '/organizations', { json: { name } })).id;
  }

  /** Legal data, then the CSD (Facturapi reads the RFC, `legal.tax_id`, from the certificate). */
  async setUp(organizationId: string, setup: OrganizationSetup): Promise<void> {
    const org = `/organizations/${encodeURIComponent(organizationId)}`;
    await this.call('PUT', `${org}/legal`, { json: { name: setup.legalName, legal_name: setup.legalName, tax_system: setup.taxRegime, address: { zip: setup.zip } } });
    const form = new FormData();
    form.append('cer', new Blob([new Uint8Array(setup.cer)]), 'csd.cer');
    form.append('key', new Blob([new Uint8Array(setup.key)]), 'csd.key');
    form.append('password', setup.keyPassword);
    await this.call('PUT', `${org}/certificate`, { form });
  }

  /** A live key is made anew on each call (Facturapi's "Create Live API Key"); the test key is read. */
  async secretKey(organizationId: string, mode: FacturapiMode): Promise<string> {
    const path = `/organizations/${encodeURIComponent(organizationId)}/apikeys/${mode}`;
    const key = await this.call<unknown>(mode === 'live' ? 'PUT' : 'GET', path);
    if (typeof key !== 'string' || !key.startsWith(`sk_${mode}_`)) throw new ProviderUnavailable(`Facturapi no devolvió una llave ${mode} de la organización`);
    return key;
  }
}
