// Tax invoices (CFDI 4.0, module invoicing) end to end: the emitter's tax
// profile checked by wsctl, every error code, the development provider's
// XML checked against the CFDI 4.0 structure rules (lib/cfdi/anexo20.ts),
// states and events (emitted, cancelled, substituted, payment complement),
// two concurrent emits; and the Facturapi provider against a local stand-in
// that speaks its API (outages retried, rejections, a lost answer that must
// not stamp twice, downloads).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { inflateSync } from 'node:zlib';
import { setTaxProfile, type TaxProfileInput } from '../api/admin/tax-profile.ts';
import { seal } from '../lib/secret-box.ts';
import { useFitsRegime } from '../lib/cfdi/catalogs.ts';
import { after, before, describe, test } from 'node:test';
import { validateCfdi } from '../lib/cfdi/anexo20.ts';
import { ProviderRejected } from '../lib/cfdi/facturapi.ts';
import { FacturapiProvider } from '../lib/cfdi/providers.ts';
import { DevelopmentProvider } from '../lib/cfdi/providers.ts';
import { loadEmitter } from '../db/invoicing.ts';
import { startWorker, type Worker } from '../worker/worker.ts';
import { reconcile } from '../worker/jobs/invoices.ts';
import { INVOICES } from '../db/queues.ts';
import { client, seedTenant, startTestApp, type TestApp, type Tenant } from './helpers/app.ts';
import { json, wsctl } from './helpers/cli.ts';
import { testCsd } from './helpers/csd.ts';
import { startFacturapiStandIn } from './helpers/facturapi-stand-in.ts';
import { waitFor } from './helpers/wait.ts';

type Api = ReturnType<typeof client>;

/** The text a PDF made by pdfkit shows: its content streams inflated, each TJ's strings decoded (WinAnsi as Latin-1). */
function pdfText(pdf: Buffer): string {
  const raw = pdf.toString('latin1');
  const lines: string[] = [];
  for (const match of raw.matchAll(/stream\r?\n/g)) {
    const start = match.index + match[0].length;
    let content: string;
    try {
      content = inflateSync(pdf.subarray(start, raw.indexOf('endstream', start))).toString('latin1');
    } catch {
      continue; // not a deflated stream (an image, a font)
    }
    for (const shown of content.matchAll(/\[([^\]]*)\] TJ/g)) {
      lines.push([...shown[1].matchAll(/<([0-9a-f]*)>/g)].map((hex) => Buffer.from(hex[1], 'hex').toString('latin1')).join(''));
    }
  }
  return lines.join('\n');
}

async function setUpCompany(app: TestApp, api: Api, t: Tenant) {
  const csd = testCsd();
  await json(app, ['company', 'tax-profile', t.companyId, '--rfc', csd.rfc, '--legal-name', 'ESCUELA KEMPER URGATE', '--tax-regime', '601', '--zip', '42501', '--cer', csd.cerPath, '--key', csd.keyPath, '--key-password', csd.password]);
  const account = (await api.post('/accounts', { data: { name: 'Banco', kind: 'bank', currency: 'mxn' } })).body.data;
  const customer = (await api.post('/customers', { data: { name: 'Cliente Fiscal', tax_id: 'URE180429TM6', legal_name: 'UNIVERSIDAD ROBOTICA ESPAÑOLA', address: { line1: 'Calle 1', city: 'Monterrey', state: 'NL', postal_code: '86991', country: 'MX' } } })).body.data;
  return { account, customer };
}

const sale = async (api: Api, over: Record<string, unknown> = {}) => {
  const res = await api.post('/sales', {
    data: { currency: 'mxn', occurred_at: new Date().toISOString(), line_items: [{ description: 'Consultoría', quantity: 2, unit_price_cents: 150000, vat_rate: 16 }, { description: 'Libro', quantity: 1, unit_price_cents: 30000, vat_exempt: true }], ...over },
  });
  assert.equal(res.status, 201, res.text);
  return res.body.data;
};
const events = async (app: TestApp, companyId: string, name: string) => (await app.pool.query(`SELECT data FROM events WHERE company_id = $1 AND name = $2 ORDER BY created_at, id`, [companyId, name])).rows.map((r) => r.data);

describe('tax invoices with the development provider', () => {
  let app: TestApp;
  let worker: Worker;
  let tenant: Tenant;
  let api: Api;
  let setup: Awaited<ReturnType<typeof setUpCompany>>;
  const valid = (id: string) => waitFor(async () => {
    const inv = (await api.get(`/invoices/${id}`)).body.data;
    return inv.status !== 'pending' && inv;
  }, 20_000, `invoice ${id} stamped`);

  before(async () => {
    app = await startTestApp();
    tenant = await seedTenant(app.pool, { modules: ['invoicing'], rateLimitPerMinute: 100_000 });
    api = client(app.baseUrl, tenant.key);
    worker = await startWorker(app.config, app.pool, app.databaseUrl, { boss: { supervise: false, schedule: false } });
    setup = await setUpCompany(app, api, tenant);
  });
  after(async () => {
    await worker.stop();
    await app.close();
  });

  test('an invoice stamped through Facturapi, cancelled once FACTURAPI_KEY is gone: back to valid with the reason, not pending for hours', async () => {
    const s = await sale(api, { customer_id: setup.customer.id });
    const inv = await valid((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    // As if stamped through Facturapi before the operator removed the key (this app has none).
    await app.pool.query(`UPDATE invoices SET provider = 'facturapi', provider_id = 'inv_gone' WHERE id = $1`, [inv.id]);
    assert.equal((await api.post(`/invoices/${inv.id}/cancel`, { data: { motive: '02' } })).status, 200);
    const back = await waitFor(async () => {
      const i = (await api.get(`/invoices/${inv.id}`)).body.data;
      return i.status !== 'cancellation_pending' && i;
    }, 20_000, 'the cancellation refused');
    assert.equal(back.status, 'valid');
    assert.match(back.failure_reason, /^cancelación rechazada: .*FACTURAPI_KEY ya no está configurada/);
  });

  test('module off: 403 module_not_enabled on every invoice route', async () => {
    const off = await seedTenant(app.pool);
    const api2 = client(app.baseUrl, off.key);
    const id = '665f1c2a9b1e8a0012345678';
    for (const [method, path] of [['POST', `/sales/${id}/invoice`], ['GET', '/invoices'], ['GET', `/invoices/${id}`], ['POST', `/invoices/${id}/cancel`], ['GET', `/invoices/${id}/xml`], ['GET', `/invoices/${id}/pdf`]] as const) {
      const res = method === 'GET' ? await api2.get(path) : await api2.post(path, { data: { motive: '02' } });
      assert.equal(res.status, 403, `${method} ${path}`);
      assert.equal(res.body.error, 'module_not_enabled');
    }
  });

  test('the tax profile: files checked (password, RFC), secrets sealed and never printed; without one, 422 no_emitter', async () => {
    const t = await seedTenant(app.pool, { modules: ['invoicing'] });
    const a = client(app.baseUrl, t.key);
    const s = await sale(a);
    const res = await a.post(`/sales/${s.id}/invoice`, { data: {} });
    assert.equal(res.status, 422);
    assert.equal(res.body.error, 'no_emitter');
    const csd = testCsd();
    const args = ['company', 'tax-profile', t.companyId, '--legal-name', 'X', '--tax-regime', '601', '--zip', '42501', '--cer', csd.cerPath, '--key', csd.keyPath, '--json'];
    const wrongPassword = await wsctl(app, [...args, '--rfc', csd.rfc, '--key-password', 'otra']);
    assert.notEqual(wrongPassword.code, 0);
    assert.match(wrongPassword.stderr, /contraseña/);
    // A file that is no certificate (here the key given as --cer) is reported on cer, not on the key.
    const notACertificate = await wsctl(app, [...args.map((v) => (v === csd.cerPath ? csd.keyPath : v)), '--rfc', csd.rfc, '--key-password', csd.password]);
    assert.notEqual(notACertificate.code, 0);
    assert.match(notACertificate.stderr, /cer: no es un certificado X\.509 legible/);
    assert.doesNotMatch(notACertificate.stderr, /key:/);
    // 605 (salaries) is a persona física's regime; this RFC of 12 characters is a company's.
    const wrongRegime = await wsctl(app, [...args.map((v) => (v === '601' ? '605' : v)), '--rfc', csd.rfc, '--key-password', csd.password]);
    assert.notEqual(wrongRegime.code, 0);
    assert.match(wrongRegime.stderr, /invalid input: tax_regime: el régimen 605 no aplica a una persona moral/);
    const wrongRfc = await wsctl(app, [...args, '--rfc', 'URE180429TM6', '--key-password', csd.password]);
    assert.notEqual(wrongRfc.code, 0);
    assert.match(wrongRfc.stderr, /EKU9003173C9/);
    const ok = await wsctl(app, [...args, '--rfc', csd.rfc, '--key-password', csd.password]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.ok(!ok.stdout.includes(csd.password) && !ok.stdout.includes(csd.key.toString('base64').slice(0, 40)));
    const { rows } = await app.pool.query('SELECT key_enc, password_enc FROM company_tax_profiles WHERE company_id = $1', [t.companyId]);
    assert.ok(!rows[0].password_enc.includes(csd.password));
    assert.ok(!rows[0].key_enc.includes(csd.key.toString('base64').slice(0, 40)));
    // A process without ENCRYPTION_KEY (production may start without one) refuses to store a CSD,
    // rather than sealing it under an empty key anyone can open; the stored one is left as it was.
    const input = { companyId: t.companyId, rfc: csd.rfc, legalName: 'X', taxRegime: '601', zip: '42501', cer: readFileSync(csd.cerPath).toString('base64'), key: readFileSync(csd.keyPath).toString('base64'), keyPassword: csd.password };
    await assert.rejects(setTaxProfile(app.pool, { ...app.config, encryptionKey: '' }, input as TaxProfileInput), (error: any) => error.code === 'validation_failed' && /ENCRYPTION_KEY/.test(error.message));
    const after = await app.pool.query('SELECT key_enc, password_enc FROM company_tax_profiles WHERE company_id = $1', [t.companyId]);
    assert.deepEqual(after.rows[0], rows[0]);
    assert.throws(() => seal('', 'secreto'), /ENCRYPTION_KEY/);
  });

  test('422s: customer_no_rfc, sale_without_tax; already_invoiced; two concurrent emits make one invoice', async () => {
    const plain = (await api.post('/customers', { data: { name: 'Sin RFC' } })).body.data;
    const noRfc = await sale(api, { customer_id: plain.id });
    const r1 = await api.post(`/sales/${noRfc.id}/invoice`, { data: {} });
    assert.deepEqual([r1.status, r1.body.error], [422, 'customer_no_rfc']);
    // A customer deleted since the sale: the same code, saying so rather than "has no RFC".
    const gone = (await api.post('/customers', { data: { name: 'Se fue', tax_id: 'URE180429TM6' } })).body.data;
    const orphan = await sale(api, { customer_id: gone.id });
    assert.equal((await api.delete(`/customers/${gone.id}`)).status, 204);
    const r0 = await api.post(`/sales/${orphan.id}/invoice`, { data: {} });
    assert.deepEqual([r0.status, r0.body.error], [422, 'customer_no_rfc']);
    assert.match(r0.body.message, /fue eliminado/);
    const untaxed = await sale(api, { line_items: [{ description: 'Sin IVA definido', quantity: 1, unit_price_cents: 100 }] });
    const r2 = await api.post(`/sales/${untaxed.id}/invoice`);
    assert.deepEqual([r2.status, r2.body.error], [422, 'sale_without_tax']);
    // The SAT's receiver rules, refused before anything is sent: a persona física's regime for a company's RFC
    // (12 characters), and a use the regime does not admit (G03 is for business regimes).
    const mismatched = await sale(api, { customer_id: setup.customer.id });
    const r3 = await api.post(`/sales/${mismatched.id}/invoice`, { data: { cfdi_use: 'G03', receiver: { tax_regime: '605' } } });
    assert.deepEqual([r3.status, r3.body.error, Object.keys(r3.body.details ?? r3.body.errors ?? {})], [422, 'validation_failed', ['receiver.tax_regime']], JSON.stringify(r3.body));
    const r4 = await api.post(`/sales/${mismatched.id}/invoice`, { data: { cfdi_use: 'D01', receiver: { tax_regime: '601' } } });
    assert.deepEqual([r4.status, r4.body.error], [422, 'validation_failed'], JSON.stringify(r4.body));
    assert.match(JSON.stringify(r4.body), /cfdi_use/);
    // The receiver's fiscal postal code: missing is "obligatorio", one not of 5 digits says so.
    for (const [postal_code, message] of [[null, /obligatorio/], ['1000', /\(1000\) debe ser de 5 dígitos/]] as const) {
      const c = (await api.post('/customers', { data: { name: 'CP', tax_id: 'URE180429TM6', legal_name: 'UNIVERSIDAD ROBOTICA ESPAÑOLA', address: postal_code ? { postal_code } : null } })).body.data;
      const r = await api.post(`/sales/${(await sale(api, { customer_id: c.id })).id}/invoice`, { data: { receiver: { tax_regime: '601' } } });
      assert.deepEqual([r.status, Object.keys(r.body.errors ?? {})], [422, ['receiver.zip']], r.text);
      assert.match(r.body.errors['receiver.zip'][0], message);
    }
    // c_UsoCFDI: G02 (returns, discounts) also admits salaried and other personal regimes; G03 does not.
    assert.deepEqual([useFitsRegime('G02', '605'), useFitsRegime('G02', '616'), useFitsRegime('G03', '605'), useFitsRegime('D01', '601')], [true, true, false, false]);
    const s = await sale(api, { customer_id: setup.customer.id });
    const both = await Promise.all([1, 2].map(() => api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })));
    assert.deepEqual(both.map((r) => r.status).sort(), [201, 422]);
    assert.equal(both.find((r) => r.status === 422)!.body.error, 'already_invoiced');
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM invoices WHERE sale_id = $1', [s.id]);
    assert.equal(rows[0].n, 1);
  });

  test('a regime stored as a number is the same key (its SAT rules apply); CP01 and CN01 are no income invoice\'s use; a sale refunded whole is not invoiced', async () => {
    const numeric = async (regime: number) =>
      (await api.post('/customers', { data: { name: 'Régimen numérico', tax_id: 'URE180429TM6', legal_name: 'UNIVERSIDAD ROBOTICA ESPAÑOLA', address: { postal_code: '86991' }, custom_properties: [{ key: 'tax_regime', value: regime }] } })).body.data;
    // 605 (salaries) is a person's regime: refused for a company's RFC, as "605" is, not stamped.
    const salaried = await sale(api, { customer_id: (await numeric(605)).id });
    const r1 = await api.post(`/sales/${salaried.id}/invoice`, { data: { cfdi_use: 'S01' } });
    assert.deepEqual([r1.status, Object.keys(r1.body.errors ?? {})], [422, ['receiver.tax_regime']], r1.text);
    const business = await sale(api, { customer_id: (await numeric(601)).id });
    const r2 = await api.post(`/sales/${business.id}/invoice`);
    assert.equal(r2.status, 201, r2.text);
    assert.equal(r2.body.data.receiver.tax_regime, '601');
    assert.equal((await valid(r2.body.data.id)).status, 'valid');

    for (const use of ['CP01', 'CN01']) {
      const r = await api.post(`/sales/${(await sale(api, { customer_id: setup.customer.id })).id}/invoice`, { data: { cfdi_use: use, receiver: { tax_regime: '601' } } });
      assert.deepEqual([r.status, Object.keys(r.body.errors ?? {})], [422, ['cfdi_use']], `${use}: ${r.text}`);
    }

    const refunded = await sale(api, { customer_id: setup.customer.id });
    assert.equal((await api.post(`/sales/${refunded.id}/payments`, { data: { account_id: setup.account.id, amount_cents: refunded.total_cents } })).status, 201);
    assert.equal((await api.post(`/sales/${refunded.id}/refunds`, { data: { account_id: setup.account.id, amount_cents: refunded.total_cents } })).status, 201);
    const r3 = await api.post(`/sales/${refunded.id}/invoice`, { data: { receiver: { tax_regime: '601' } } });
    assert.deepEqual([r3.status, Object.keys(r3.body.errors ?? {})], [422, ['status']], r3.text);
    const { rows } = await app.pool.query('SELECT count(*)::int AS n FROM invoices WHERE sale_id = $1', [refunded.id]);
    assert.equal(rows[0].n, 0);
    // Refunded in part: invoiced for its total (no credit note is issued for the refund).
    const partly = await sale(api, { customer_id: setup.customer.id });
    await api.post(`/sales/${partly.id}/payments`, { data: { account_id: setup.account.id, amount_cents: partly.total_cents } });
    await api.post(`/sales/${partly.id}/refunds`, { data: { account_id: setup.account.id, amount_cents: 100 } });
    const r4 = await api.post(`/sales/${partly.id}/invoice`, { data: { receiver: { tax_regime: '601' } } });
    assert.deepEqual([r4.status, r4.body.data?.total_cents], [201, partly.total_cents], r4.text);
  });

  test('emit: pending, then valid with uuid; the XML passes the CFDI 4.0 rules and says it is not valid for tax; PDF; invoice.emitted', async () => {
    const s = await sale(api, { customer_id: setup.customer.id, metadata: { pedido: 'P-9' } });
    const res = await api.post(`/sales/${s.id}/invoice`, { data: { cfdi_use: 'G03', payment_form: '04', receiver: { tax_regime: '601' }, series: 'A' } });
    assert.equal(res.status, 201, res.text);
    assert.equal(res.body.data.status, 'pending');
    assert.equal(res.body.data.provider, 'development');
    assert.match(res.body.data.warning, /sin validez fiscal/);
    const inv = await valid(res.body.data.id);
    assert.equal(inv.status, 'valid', inv.failure_reason);
    assert.match(inv.uuid, /^[0-9A-F-]{36}$/);
    assert.equal(inv.payment_method, 'PUE');
    assert.deepEqual(inv.receiver, { rfc: 'URE180429TM6', legal_name: 'UNIVERSIDAD ROBOTICA ESPAÑOLA', tax_regime: '601', zip: '86991' });
    assert.match(inv.verification_url, /verificacfdi/);
    const xml = await fetch(`${app.baseUrl}/invoices/${inv.id}/xml`, { headers: { authorization: `Bearer ${tenant.key}` } });
    assert.equal(xml.status, 200);
    assert.match(xml.headers.get('content-disposition')!, /attachment/);
    const text = await xml.text();
    assert.deepEqual(validateCfdi(text), []);
    assert.match(text, /sin validez fiscal/);
    assert.match(text, /Total="3780.00"/); // 3000 + 480 VAT + 300 exempt
    assert.match(text, /TipoFactor="Exento"/);
    const pdf = await fetch(`${app.baseUrl}/invoices/${inv.id}/pdf`, { headers: { authorization: `Bearer ${tenant.key}` } });
    assert.equal(pdf.headers.get('content-type'), 'application/pdf');
    assert.equal(Buffer.from(await pdf.arrayBuffer()).subarray(0, 4).toString(), '%PDF');
    const emitted = await events(app, tenant.companyId, 'invoice.emitted');
    const event = emitted.find((e) => e.id === inv.id);
    assert.deepEqual(event, { object: 'invoice', id: inv.id, sale_id: s.id, status: 'valid', uuid: inv.uuid, amount_cents: 378_000, currency: 'mxn', metadata: { pedido: 'P-9' } });
    const again = await api.post(`/sales/${s.id}/invoice`);
    assert.deepEqual([again.status, again.body.error], [422, 'already_invoiced']);
    // The validator is not a rubber stamp: a tampered total breaks a named rule.
    assert.ok(validateCfdi(text.replace('Total="3780.00"', 'Total="3781.00"')).some((v) => v.rule === 'CFDI40-TOTAL'));
  });

  test('Fecha is the wall time of the company\'s zone (Anexo 20: local time where it is issued), not central Mexico\'s', async () => {
    const tijuana = await seedTenant(app.pool, { modules: ['invoicing'], rateLimitPerMinute: 100_000 });
    await json(app, ['company', 'update', tijuana.companyId, '--timezone', 'America/Tijuana']);
    const a = client(app.baseUrl, tijuana.key);
    await setUpCompany(app, a, tijuana);
    const s = await sale(a);
    const wall = (ms: number, timeZone: string) => {
      const p = Object.fromEntries(new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }).formatToParts(ms).map((x) => [x.type, x.value]));
      return `${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}`;
    };
    const before = Math.floor(Date.now() / 1000) * 1000;
    const res = await a.post(`/sales/${s.id}/invoice`);
    assert.equal(res.status, 201, res.text);
    const inv = await waitFor(async () => {
      const got = (await a.get(`/invoices/${res.body.data.id}`)).body.data;
      return got.status !== 'pending' && got;
    }, 20_000, 'stamped');
    const after = Date.now() + 1000;
    assert.equal(inv.status, 'valid', inv.failure_reason);
    const text = await (await fetch(`${app.baseUrl}/invoices/${inv.id}/xml`, { headers: { authorization: `Bearer ${tijuana.key}` } })).text();
    const fecha = / Fecha="([^"]+)"/.exec(text)![1];
    assert.ok(wall(before, 'America/Tijuana') <= fecha && fecha <= wall(after, 'America/Tijuana'), `${fecha} between ${wall(before, 'America/Tijuana')} and ${wall(after, 'America/Tijuana')}`);
    assert.ok(fecha < wall(before, 'America/Mexico_City'), 'an hour or two behind central Mexico');
  });

  test('the XML states each line\'s own unit price; a line of amount 0 is not subject to tax (01); 99 is refused on a sale paid at once', async () => {
    const s = await sale(api, {
      customer_id: setup.customer.id,
      line_items: [
        // Control characters the API stores as typed, which XML 1.0 forbids: the CFDI carries spaces.
        { description: 'Por\u0001 metro\u000c', quantity: 1.5, unit_price_cents: 999, vat_rate: 16 },
        { description: 'Regalo', quantity: 1, unit_price_cents: 0, vat_rate: 16 },
        { description: 'Fracción', quantity: 0.001, unit_price_cents: 499, vat_rate: 16 },
      ],
    });
    const extraKeys = await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' }, line_keys: [{}, {}, {}, { product_key: '84111506' }] } });
    assert.deepEqual([extraKeys.status, extraKeys.body.error, Object.keys(extraKeys.body.errors ?? {})], [422, 'validation_failed', ['line_keys']], 'keys for a line the sale lacks');
    const cash = await api.post(`/sales/${s.id}/invoice`, { data: { payment_form: '99', receiver: { tax_regime: '601' } } });
    assert.deepEqual([cash.status, cash.body.error], [422, 'validation_failed']);
    assert.ok(cash.body.errors.payment_form, JSON.stringify(cash.body));
    // The first line's keys given (read as a product's are: trimmed, the unit upper-cased), the others the defaults.
    const res = await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' }, line_keys: [{ product_key: ' 30181505', unit_key: 'mtr ' }] } });
    assert.equal(res.status, 201, res.text);
    const inv = await valid(res.body.data.id);
    assert.equal(inv.status, 'valid', inv.failure_reason);
    const text = await (await fetch(`${app.baseUrl}/invoices/${inv.id}/xml`, { headers: { authorization: `Bearer ${tenant.key}` } })).text();
    assert.deepEqual(validateCfdi(text), []);
    assert.doesNotMatch(text, /[\u0000-\u0008\u000b\u000c\u000e-\u001f]/, 'no character XML forbids');
    const concept = (description: string) => text.match(new RegExp(`<cfdi:Concepto [^>]*Descripcion="${description}"[^>]*>`))![0];
    assert.match(concept('Por metro'), /ValorUnitario="9\.990000"/, 'the sale\'s unit price, not Importe ÷ Cantidad');
    assert.match(concept('Por metro'), /ClaveProdServ="30181505" [^>]*ClaveUnidad="MTR"/, 'the keys given for the line');
    assert.match(concept('Regalo'), /ClaveProdServ="01010101" [^>]*ClaveUnidad="H87"/, 'the defaults');
    assert.match(concept('Fracción'), /ValorUnitario="4\.990000"/);
    assert.match(concept('Regalo'), /ObjetoImp="01"/);
    assert.match(concept('Fracción'), /ObjetoImp="01"/, 'its amount rounds to 0');
    assert.doesNotMatch(text, /Base="0\.00"/, 'no traslado on a base of 0');
    // The validator knows both rules.
    assert.ok(validateCfdi(text.replace('MetodoPago="PUE"', 'MetodoPago="PUE"').replace(/FormaPago="\d\d"/, 'FormaPago="99"')).some((v) => v.rule === 'CFDI40-PUE'));
  });

  test('PUE without payment_form says how the sale was paid: the form of the largest amount paid; 03 before any payment', async () => {
    const paid = await sale(api, { customer_id: setup.customer.id });
    assert.equal(paid.total_cents, 378_000);
    for (const [amount_cents, payment_form] of [[78_000, '04'], [300_000, '01']] as const) {
      const res = await api.post(`/sales/${paid.id}/payments`, { data: { account_id: setup.account.id, amount_cents, payment_form } });
      assert.equal(res.status, 201, res.text);
    }
    const inv = await valid((await api.post(`/sales/${paid.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    assert.deepEqual([inv.status, inv.payment_method, inv.payment_form], ['valid', 'PUE', '01']);
    assert.match(await (await fetch(`${app.baseUrl}/invoices/${inv.id}/xml`, { headers: { authorization: `Bearer ${tenant.key}` } })).text(), /FormaPago="01"/);
    const unpaid = await sale(api, { customer_id: setup.customer.id });
    const plain = await valid((await api.post(`/sales/${unpaid.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    assert.equal(plain.payment_form, '03');
  });

  test('a sale to the general public is a global invoice (XAXX010101000, 616, S01, InformacionGlobal)', async () => {
    const s = await sale(api);
    const inv = await valid((await api.post(`/sales/${s.id}/invoice`)).body.data.id);
    assert.equal(inv.receiver.rfc, 'XAXX010101000');
    assert.equal(inv.cfdi_use, 'S01');
    const text = await (await fetch(`${app.baseUrl}/invoices/${inv.id}/xml`, { headers: { authorization: `Bearer ${tenant.key}` } })).text();
    assert.deepEqual(validateCfdi(text), []);
    assert.match(text, /InformacionGlobal Periodicidad="04"/);
    assert.match(text, /Nombre="PUBLICO EN GENERAL"/);
  });

  test('what the CFDI 4.0 schema refuses is answered first: a global invoice on credit, a receiver name over 254 or with a pipe; a pipe in a description is a slash', async () => {
    const onCredit = await sale(api, { payment_terms: 'deferred' });
    const global = await api.post(`/sales/${onCredit.id}/invoice`);
    assert.deepEqual([global.status, global.body.error, Object.keys(global.body.errors)], [422, 'validation_failed', ['customer_id']]);
    for (const legal_name of ['ACME | SA DE CV', 'B'.repeat(255)]) {
      const customer = (await api.post('/customers', { data: { name: 'Nombre', tax_id: 'URE180429TM6', legal_name, address: { postal_code: '86991' } } })).body.data;
      const s = await sale(api, { customer_id: customer.id });
      const res = await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } });
      assert.deepEqual([res.status, res.body.error, Object.keys(res.body.errors ?? {})], [422, 'validation_failed', ['customer.legal_name']], legal_name.slice(0, 20));
    }
    const s = await sale(api, { customer_id: setup.customer.id, line_items: [{ description: 'Caja | 12 piezas', quantity: 1, unit_price_cents: 10_000, vat_rate: 16 }] });
    const inv = await valid((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    const text = await (await fetch(`${app.baseUrl}/invoices/${inv.id}/xml`, { headers: { authorization: `Bearer ${tenant.key}` } })).text();
    assert.match(text, /Descripcion="Caja \/ 12 piezas"/);
    assert.deepEqual(validateCfdi(text), []);
  });

  test('what a PAC would refuse is refused when asked, never stamped: a blank description, a foreign generic RFC, another currency, receiver data on a global invoice; nothing stored', async () => {
    const invoicesOf = async (saleId: string) => (await app.pool.query('SELECT count(*)::int AS n FROM invoices WHERE sale_id = $1', [saleId])).rows[0].n;
    const blank = await sale(api, { customer_id: setup.customer.id, line_items: [{ description: '\u0001\u0002 ', quantity: 1, unit_price_cents: 100, vat_rate: 16 }] });
    const noDescription = await api.post(`/sales/${blank.id}/invoice`, { data: { receiver: { tax_regime: '601' } } });
    assert.deepEqual([noDescription.status, Object.keys(noDescription.body.errors ?? {})], [422, ['line_items.0.description']]);
    const foreign = (await api.post('/customers', { data: { name: 'Extranjero', tax_id: 'XEXX010101000', address: { postal_code: '42501' } } })).body.data;
    const abroad = await sale(api, { customer_id: foreign.id });
    const refusedForeign = await api.post(`/sales/${abroad.id}/invoice`, { data: { receiver: { tax_regime: '616' } } });
    assert.deepEqual([refusedForeign.status, refusedForeign.body.error], [422, 'customer_no_rfc']);
    const dollars = await sale(api, { customer_id: setup.customer.id, currency: 'usd' });
    const refusedCurrency = await api.post(`/sales/${dollars.id}/invoice`, { data: { receiver: { tax_regime: '601' } } });
    assert.deepEqual([refusedCurrency.status, Object.keys(refusedCurrency.body.errors ?? {})], [422, ['currency']]);
    const toPublic = await sale(api);
    const withReceiver = await api.post(`/sales/${toPublic.id}/invoice`, { data: { cfdi_use: 'G03', receiver: { tax_regime: '601', zip: '01000' } } });
    assert.deepEqual([withReceiver.status, Object.keys(withReceiver.body.errors ?? {}).sort()], [422, ['cfdi_use', 'receiver']]);
    for (const id of [blank.id, abroad.id, dollars.id, toPublic.id]) assert.equal(await invoicesOf(id), 0);
    // S01, the public's use, may be said.
    assert.equal((await api.post(`/sales/${toPublic.id}/invoice`, { data: { cfdi_use: 'S01' } })).status, 201);
  });

  test('a customer whose RFC is the generic XAXX010101000 (a walk-in buyer) gets the public\'s global invoice, and it passes the CFDI 4.0 rules', async () => {
    const walkIn = (await api.post('/customers', { data: { name: 'Mostrador', tax_id: 'XAXX010101000', address: { postal_code: '42501' } } })).body.data;
    const s = await sale(api, { customer_id: walkIn.id });
    const inv = await valid((await api.post(`/sales/${s.id}/invoice`)).body.data.id);
    assert.equal(inv.status, 'valid', inv.failure_reason);
    assert.deepEqual([inv.receiver.rfc, inv.receiver.legal_name, inv.cfdi_use], ['XAXX010101000', 'PUBLICO EN GENERAL', 'S01']);
    const text = await (await fetch(`${app.baseUrl}/invoices/${inv.id}/xml`, { headers: { authorization: `Bearer ${tenant.key}` } })).text();
    assert.match(text, /InformacionGlobal Periodicidad="04"/);
    assert.deepEqual(validateCfdi(text), []);
  });

  test('the development provider refuses, as a PAC, a document that breaks a rule of Anexo 20 (a stamp failed with the rule), and stamps it as it is', async () => {
    const s = await sale(api, { customer_id: setup.customer.id });
    const inv = await valid((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    const { rows } = await app.pool.query('SELECT document FROM invoices WHERE id = $1', [inv.id]);
    const emitter = (await loadEmitter(app.pool, app.config, tenant.companyId))!;
    const signer = { number: emitter.certificate_number, certificateBase64: emitter.certificate_base64, sign: (data: string) => emitter.credential.sign(data) };
    const provider = new DevelopmentProvider();
    assert.deepEqual(validateCfdi((await provider.emit(rows[0].document, signer)).xml!), []);
    // A document built by older code, without a concept's Descripcion.
    const broken = structuredClone(rows[0].document);
    broken.lines[0].description = '';
    await assert.rejects(provider.emit(broken, signer), (error: Error) => error instanceof ProviderRejected && /CFDI40-CONCEPTO/.test(error.message));
  });

  test('the development PDF: its figures add up (Subtotal − Descuento + IVA = Total), the stamp time as the XML\'s, characters it cannot draw as "?"', async () => {
    const customer = (await api.post('/customers', { data: { name: 'Jürgen', tax_id: 'URE180429TM6', legal_name: 'Jürgen 李 Müller', address: { postal_code: '86991' } } })).body.data;
    const s = await sale(api, { customer_id: customer.id, line_items: [{ description: 'Libro', quantity: 2, unit_price_cents: 1499, discount_cents: 7, vat_rate: 16 }] });
    const inv = await valid((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    const pdf = Buffer.from(await (await fetch(`${app.baseUrl}/invoices/${inv.id}/pdf`, { headers: { authorization: `Bearer ${tenant.key}` } })).arrayBuffer());
    const text = pdfText(pdf);
    assert.match(text, /Receptor: JÜRGEN \? MÜLLER /);
    const amount = (label: string) => Number(new RegExp(`${label}: ([0-9.]+)`).exec(text)?.[1]);
    assert.equal(Math.round((amount('Subtotal') - amount('Descuento') + amount('IVA trasladado')) * 100), Math.round(amount('Total') * 100), text);
    assert.equal(Math.round(amount('Total') * 100), s.total_cents);
    const xml = await (await fetch(`${app.baseUrl}/invoices/${inv.id}/xml`, { headers: { authorization: `Bearer ${tenant.key}` } })).text();
    assert.ok(text.includes(`Fecha de timbrado: ${/FechaTimbrado="([^"]+)"/.exec(xml)![1]}`), text);
    assert.ok(text.includes('29.98 - 0.07'), 'a discount written with a hyphen, which the font has');
  });

  test('the series takes what the CFDI 4.0 schema takes (F-A), and the emitter\'s name is checked as the receiver\'s is', async () => {
    const s = await sale(api, { customer_id: setup.customer.id });
    const created = await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' }, series: 'F-A' } });
    assert.deepEqual([created.status, created.body.data.status, created.body.data.series], [201, 'pending', 'F-A'], 'the series asked for is in the answer at once');
    const inv = await valid(created.body.data.id);
    assert.deepEqual([inv.status, inv.series], ['valid', 'F-A']);
    for (const series of ['A|B', 'A\u2028B', '   ', 'A\nB', 'X'.repeat(26)]) {
      assert.equal((await api.post(`/sales/${(await sale(api)).id}/invoice`, { data: { series } })).status, 422, JSON.stringify(series));
    }
    // Any series the schema takes downloads under a header clients read back as it is (RFC 6266); a
    // slash or backslash, which a client saving the file would read as a folder, is written _.
    for (const [series, named] of [['F€', 'F€'], ['ÑA', 'ÑA'], ['a"; b', 'a"; b'], ['F/A', 'F_A'], ['c\\d/../é', 'c_d_.._é']]) {
      const stamped = await valid((await api.post(`/sales/${(await sale(api)).id}/invoice`, { data: { series } })).body.data.id);
      assert.equal(stamped.status, 'valid', `${series}: ${stamped.failure_reason}`);
      for (const format of ['xml', 'pdf']) {
        const res = await fetch(`${app.baseUrl}/invoices/${stamped.id}/${format}`, { headers: { authorization: `Bearer ${tenant.key}` } });
        assert.equal(res.status, 200, `${series} ${format}`);
        // As a client reads it (RFC 6266): filename* (UTF-8) when present, else the quoted filename.
        const header = res.headers.get('content-disposition')!;
        assert.match(header, /^attachment; /);
        const extended = /filename\*=UTF-8''([^;]+)/.exec(header);
        const quoted = /filename="((?:[^"\\]|\\.)*)"/.exec(header)!;
        assert.match(quoted[1], /^[\x20-\x7e]*$/, 'the plain filename is ASCII');
        assert.equal(extended ? decodeURIComponent(extended[1]) : quoted[1].replace(/\\(.)/g, '$1'), `${named}-${stamped.uuid}.${format}`, header);
      }
    }
    const csd = testCsd();
    const refused = await wsctl(app, ['company', 'tax-profile', tenant.companyId, '--rfc', csd.rfc, '--legal-name', 'ESCUELA | KEMPER', '--tax-regime', '601', '--zip', '42501', '--cer', csd.cerPath, '--key', csd.keyPath, '--key-password', csd.password]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /legal_name: hasta 254 caracteres y ningún \|/);
    // A profile saved before that check: no invoice is built on it.
    await app.pool.query(`UPDATE company_tax_profiles SET legal_name = 'ESCUELA | KEMPER' WHERE company_id = $1`, [tenant.companyId]);
    try {
      const res = await api.post(`/sales/${(await sale(api)).id}/invoice`);
      assert.deepEqual([res.status, res.body.error], [422, 'no_emitter']);
      assert.match(res.body.message, /razón social del emisor/);
    } finally {
      await app.pool.query(`UPDATE company_tax_profiles SET legal_name = 'ESCUELA KEMPER URGATE' WHERE company_id = $1`, [tenant.companyId]);
    }
  });

  test('cancel (motive 02), and substitution: the new one names the old (04) and the old is cancelled with 01; events', async () => {
    const s1 = await sale(api, { customer_id: setup.customer.id });
    const first = await valid((await api.post(`/sales/${s1.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    // The motive is required: absent, it is the contract's parameter_missing (an enum zod reports otherwise).
    const noMotive = await api.post(`/invoices/${first.id}/cancel`, { data: {} });
    assert.deepEqual([noMotive.status, noMotive.body.error], [422, 'parameter_missing']);
    assert.match(noMotive.body.message, /data\.motive/);
    const bad = await api.post(`/invoices/${first.id}/cancel`, { data: { motive: '01' } });
    assert.equal(bad.status, 422);
    const itself = await api.post(`/invoices/${first.id}/cancel`, { data: { motive: '01', substitute_uuid: first.uuid } });
    assert.equal(itself.status, 422, 'an invoice is not its own substitute');
    assert.ok(itself.body.errors.substitute_uuid);
    const c = await api.post(`/invoices/${first.id}/cancel`, { data: { motive: '02' } });
    assert.equal(c.status, 200, c.text);
    assert.equal(c.body.data.status, 'cancellation_pending');
    await waitFor(async () => (await api.get(`/invoices/${first.id}`)).body.data.status === 'cancelled', 20_000, 'cancelled');
    assert.ok((await events(app, tenant.companyId, 'invoice.cancelled')).some((e) => e.id === first.id));
    // The sale can be invoiced again once its invoice is cancelled.
    const s2 = await sale(api, { customer_id: setup.customer.id });
    const old = await valid((await api.post(`/sales/${s2.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    const sub = await api.post(`/sales/${s2.id}/invoice`, { data: { receiver: { tax_regime: '601' }, cfdi_use: 'G01', substitutes_id: old.id } });
    assert.equal(sub.status, 201, sub.text);
    const fresh = await valid(sub.body.data.id);
    const text = await (await fetch(`${app.baseUrl}/invoices/${fresh.id}/xml`, { headers: { authorization: `Bearer ${tenant.key}` } })).text();
    assert.match(text, new RegExp(`CfdiRelacionados TipoRelacion="04"><cfdi:CfdiRelacionado UUID="${old.uuid}"`));
    const oldNow = await waitFor(async () => {
      const o = (await api.get(`/invoices/${old.id}`)).body.data;
      return o.status === 'cancelled' && o;
    }, 20_000, 'the substituted one cancelled');
    assert.deepEqual([oldNow.cancellation.motive, oldNow.cancellation.substitute_uuid, oldNow.substituted_by_id], ['01', fresh.uuid, fresh.id]);
    const substituted = (await events(app, tenant.companyId, 'invoice.substituted')).find((e) => e.id === fresh.id);
    assert.equal(substituted.substituted_uuid, old.uuid);
  });

  test('a deferred (PPD) sale: FormaPago 99, and each payment stamps a payment complement (type P) with invoice.payment_complement_added', async () => {
    const s = await sale(api, { customer_id: setup.customer.id, payment_terms: 'deferred' });
    // A form of payment is the complements' business: sent for a credit sale, it is refused, not replaced.
    const withForm = await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' }, payment_form: '03' } });
    assert.deepEqual([withForm.status, Object.keys(withForm.body.errors ?? {})], [422, ['payment_form']]);
    const inv = await valid((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' }, payment_form: '99' } })).body.data.id);
    assert.deepEqual([inv.payment_method, inv.payment_form], ['PPD', '99']);
    await api.post(`/sales/${s.id}/payments`, { data: { account_id: setup.account.id, amount_cents: 100_000 } });
    await api.post(`/sales/${s.id}/payments`, { data: { account_id: setup.account.id, amount_cents: 278_000 } });
    const done = await waitFor(async () => {
      const i = (await api.get(`/invoices/${inv.id}`)).body.data;
      return i.payment_complements.length === 2 && i.payment_complements.every((c: any) => c.status === 'valid') && i;
    }, 20_000, 'two complements');
    assert.deepEqual(done.payment_complements.map((c: any) => [c.installment, c.amount_cents]), [[1, 100_000], [2, 278_000]]);
    // Each complement's CFDI downloads, for the issuer to hand to the customer.
    const rows: Array<{ xml: string }> = [];
    for (const c of done.payment_complements) {
      const res = await fetch(`${app.baseUrl}/invoices/${inv.id}/payment-complements/${c.id}/xml`, { headers: { authorization: `Bearer ${tenant.key}` } });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'application/xml; charset=utf-8');
      assert.equal(res.headers.get('content-disposition'), `attachment; filename="pago-${c.uuid}.xml"`);
      rows.push({ xml: await res.text() });
    }
    for (const r of rows) assert.deepEqual(validateCfdi(r.xml), []);
    assert.match(rows[0].xml, /TipoDeComprobante="P"/);
    assert.match(rows[1].xml, /ImpSaldoAnt="2780.00" ImpPagado="2780.00" ImpSaldoInsoluto="0.00"/);
    // Another invoice's path, an unknown id, another company: 404; a malformed id: 400.
    const other = await seedTenant(app.pool, { modules: ['invoicing'] });
    const complementPath = `/invoices/${inv.id}/payment-complements/${done.payment_complements[0].id}/xml`;
    assert.equal((await client(app.baseUrl, other.key).get(complementPath)).status, 404);
    assert.equal((await api.get(`/invoices/${setup.customer.id}/payment-complements/${done.payment_complements[0].id}/xml`)).status, 404);
    assert.equal((await api.get(`/invoices/${inv.id}/payment-complements/nope/xml`)).body.error, 'invalid_id');
    await app.pool.query(`UPDATE invoice_payment_complements SET status = 'failed', uuid = NULL, xml = NULL WHERE id = $1`, [done.payment_complements[0].id]);
    const unstamped = await api.get(complementPath);
    assert.deepEqual([unstamped.status, unstamped.body.error], [409, 'invoice_not_stamped']);
    await app.pool.query(`UPDATE invoice_payment_complements SET status = 'valid', uuid = $2, xml = $3 WHERE id = $1`, [done.payment_complements[0].id, done.payment_complements[0].uuid, rows[0].xml]);
    assert.equal((await events(app, tenant.companyId, 'invoice.payment_complement_added')).filter((e) => e.id === inv.id).length, 2);
    // A payment with its complement stamped is not deleted (the complements would outlive it, and add up to more
    // than the invoice once paid again): 409, and the sale keeps it.
    const refused = await api.delete(`/incomes/${done.payment_complements[0].income_id}`);
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.error, 'payment_complement_issued');
    assert.equal((await api.get(`/sales/${s.id}`)).body.data.status, 'paid');
  });

  test('tenant isolation: another company with the module sees 404', async () => {
    const s = await sale(api, { customer_id: setup.customer.id, line_items: [{ description: 'X', quantity: 1, unit_price_cents: 100, vat_rate: 0 }] });
    const inv = await valid((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    const other = client(app.baseUrl, (await seedTenant(app.pool, { modules: ['invoicing'] })).key);
    assert.equal((await other.get(`/invoices/${inv.id}`)).status, 404);
    assert.equal((await other.get(`/invoices/${inv.id}/xml`)).status, 404);
    assert.equal((await other.post(`/sales/${s.id}/invoice`)).status, 404);
  });
});

describe('tax invoices through Facturapi (a local stand-in of its API)', () => {
  let app: TestApp;
  let worker: Worker;
  let tenant: Tenant;
  let api: Api;
  let setup: Awaited<ReturnType<typeof setUpCompany>>;
  let facturapi: Awaited<ReturnType<typeof startFacturapiStandIn>>;

  before(async () => {
    facturapi = await startFacturapiStandIn();
    app = await startTestApp(facturapi.env);
    tenant = await seedTenant(app.pool, { modules: ['invoicing'], rateLimitPerMinute: 100_000 });
    api = client(app.baseUrl, tenant.key);
    worker = await startWorker(app.config, app.pool, app.databaseUrl, { boss: { supervise: false, schedule: false } });
    setup = await setUpCompany(app, api, tenant);
  });
  after(async () => {
    await worker.stop();
    await app.close();
    await facturapi.close();
  });

  /**
   * Every invoice job waiting out its backoff (10 s, 20 s, 40 s …) made due now: the tests see each retry run,
   * the worker's own polling round apart, rather than wait the minutes an outage of a few tries would take.
   */
  const retriesDue = () => app.pool.query(`UPDATE pgboss.job SET start_after = now() WHERE name = $1 AND state = 'retry' AND start_after > now()`, [INVOICES.name]);
  const settled = (id: string) => waitFor(async () => {
    await retriesDue();
    const inv = (await api.get(`/invoices/${id}`)).body.data;
    return inv.status !== 'pending' && inv;
  }, 90_000, `invoice ${id} settled`);

  test('emit with VAT-included prices: each item is its price with VAT and tax_included, so the total Facturapi stamps is the sale\'s to the cent', async () => {
    // 3 × 1.00 less 0.50, VAT included: the sale is 2.50 (2.16 + 0.34). Sent before VAT (0.72 each) Facturapi
    // added 16 % to 2.16 and stamped 2.51.
    const s = await sale(api, { customer_id: setup.customer.id, prices_include_vat: true, line_items: [{ description: 'Tres piezas', quantity: 3, unit_price_cents: 100, discount_cents: 50, vat_rate: 16 }, { description: 'Libro', quantity: 1.5, unit_price_cents: 999, vat_exempt: true }] });
    const res = await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } });
    assert.equal(res.status, 201, res.text);
    const inv = await settled(res.body.data.id);
    assert.equal(inv.status, 'valid');
    assert.equal(inv.total_cents, s.total_cents);
    const sent = facturapi.requests.find((r) => r.method === 'POST' && r.body?.external_id === inv.id)!;
    const stored = [...facturapi.invoices.values()].find((i) => i.external_id === inv.id)!;
    const stamped = (await (await fetch(`${facturapi.env.FACTURAPI_URL}/invoices/${stored.id}`, { headers: { authorization: `Bearer ${sent.headers.authorization!.slice(7)}` } })).json()) as { total: number };
    assert.equal(Math.round(stamped.total * 100), s.total_cents, `stamped ${stamped.total}, the sale ${s.total_cents / 100}`);
    assert.deepEqual(sent.body.items.map((i: any) => [i.quantity, i.product.price, i.product.tax_included, i.discount]), [[3, 0.833333, true, 0], [1.5, 9.993333, true, 0]]);
    // A document stored before the price with VAT was kept (an invoice pending across the release): its
    // lines' totals give the same prices with VAT (never a price of null), since before VAT it would not
    // stamp the sale's total.
    const { rows } = await app.pool.query('SELECT document FROM invoices WHERE id = $1', [inv.id]);
    const older = structuredClone(rows[0].document);
    for (const line of older.lines) delete line.unit_price_with_tax_cents;
    const items = (FacturapiProvider.body(older) as any).items;
    assert.deepEqual(items.map((i: any) => [i.product.price, i.product.tax_included]), [[0.833333, true], [9.993333, true]]);
  });

  test('emit with prices before VAT: sent before VAT when Facturapi\'s sum gives the sale\'s total, else every line with its VAT, so the stamp is the sale\'s total either way', async () => {
    const stampedTotal = async (invoiceId: string) => {
      const sent = facturapi.requests.find((r) => r.method === 'POST' && r.body?.external_id === invoiceId)!;
      const stored = [...facturapi.invoices.values()].find((i) => i.external_id === invoiceId)!;
      const read = (await (await fetch(`${facturapi.env.FACTURAPI_URL}/invoices/${stored.id}`, { headers: { authorization: `Bearer ${sent.headers.authorization!.slice(7)}` } })).json()) as { total: number };
      return { sent: sent.body, cents: Math.round(read.total * 100) };
    };
    // One line of 3 × 0.72: 2.16 + 0.3456 of VAT is 2.51 rounded once or per line: its clean price before VAT.
    const one = await sale(api, { customer_id: setup.customer.id, line_items: [{ description: 'Pieza', quantity: 3, unit_price_cents: 72, vat_rate: 16 }] });
    const a = await settled((await api.post(`/sales/${one.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    const first = await stampedTotal(a.id);
    assert.deepEqual(first.sent.items.map((i: any) => [i.product.price, i.product.tax_included, i.discount]), [[0.72, false, 0]]);
    assert.equal(first.cents, one.total_cents);
    // Nine such lines and a discounted one: the sale rounds each line's VAT (9 × 0.35 + 1.44 = 4.59, 33.03 in
    // all); added unrounded first Facturapi would stamp 32.99. Each line goes with its VAT and its discount in.
    const many = await sale(api, {
      customer_id: setup.customer.id,
      line_items: [
        ...Array.from({ length: 9 }, (_, i) => ({ description: `Pieza ${i}`, quantity: 3, unit_price_cents: 72, vat_rate: 16 })),
        { description: 'Con descuento', quantity: 2, unit_price_cents: 500, discount_cents: 100, vat_rate: 16 },
      ],
    });
    assert.equal(many.total_cents, 3303);
    const b = await settled((await api.post(`/sales/${many.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    assert.equal(b.status, 'valid');
    const second = await stampedTotal(b.id);
    assert.deepEqual(second.sent.items.at(0).product.price, 0.836667);
    assert.deepEqual(second.sent.items.at(-1).product.price, 5.22);
    assert.ok(second.sent.items.every((i: any) => i.product.tax_included === true && i.discount === 0));
    assert.equal(second.cents, 3303, 'the sale\'s total stamped');
    assert.equal(b.total_cents, 3303);
    // A fractional quantity: 347.85 × 11.76 at 16 % is 4745.24; its price before VAT (11.760011, the amount ÷
    // quantity to 6 decimals) stamped 4745.23. Sent with VAT, the line's total is what Facturapi sums.
    const cheese = await sale(api, { customer_id: setup.customer.id, line_items: [{ description: 'Queso', quantity: 347.85, unit_price_cents: 1176, vat_rate: 16 }] });
    assert.equal(cheese.total_cents, 474524);
    const c = await settled((await api.post(`/sales/${cheese.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    const third = await stampedTotal(c.id);
    assert.equal(third.sent.items[0].product.tax_included, true);
    assert.equal(third.cents, 474524, 'the sale\'s total stamped');
  });

  test('a stamp whose total is not the sale\'s is said on stderr (invoice.stamped_total_differs) with both amounts; the stamp is kept', async () => {
    // A document whose total was made a cent off the lines it carries: what a rounding case no rule covers would give.
    const s = await sale(api, { customer_id: setup.customer.id, line_items: [{ description: 'Pieza', quantity: 1, unit_price_cents: 1000, vat_rate: 16 }] });
    const inv = await settled((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    const sent = facturapi.requests.find((r) => r.method === 'POST' && r.body?.external_id === inv.id)!;
    const { rows } = await app.pool.query('SELECT document FROM invoices WHERE id = $1', [inv.id]);
    const doc = { ...rows[0].document, invoice_id: `${inv.id.slice(0, 20)}beef`, total_cents: s.total_cents + 1 };
    const provider = new FacturapiProvider({ baseUrl: facturapi.env.FACTURAPI_URL, key: sent.headers.authorization!.slice(7) });
    const lines: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: any[]) => {
      lines.push(String(chunk));
      return (write as any).call(process.stderr, chunk, ...rest);
    }) as typeof process.stderr.write;
    let stamped;
    try {
      stamped = await provider.emit(doc);
    } finally {
      process.stderr.write = write;
    }
    assert.ok(stamped.uuid, 'stamped all the same');
    const said = lines.map((l) => { try { return JSON.parse(l); } catch { return null; } }).find((l) => l?.event === 'invoice.stamped_total_differs');
    assert.deepEqual([said?.invoice_id, said?.stamped_cents, said?.sale_cents], [doc.invoice_id, s.total_cents, s.total_cents + 1]);
  });

  test('emit: Facturapi’s body (customer, items with SAT keys and taxes, PUE, external_id, idempotency_key), its uuid and folio; downloads proxied', async () => {
    const s = await sale(api, { customer_id: setup.customer.id });
    const res = await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } });
    assert.equal(res.body.data.provider, 'facturapi');
    assert.equal(res.body.data.warning, null);
    const inv = await settled(res.body.data.id);
    assert.equal(inv.status, 'valid');
    const sent = facturapi.requests.find((r) => r.method === 'POST' && r.body?.external_id === inv.id)!;
    assert.equal(sent.body.idempotency_key, `ws-${inv.id}`);
    assert.deepEqual(sent.body.customer, { legal_name: 'UNIVERSIDAD ROBOTICA ESPAÑOLA', tax_id: 'URE180429TM6', tax_system: '601', address: { zip: '86991' } });
    assert.equal(sent.body.payment_method, 'PUE');
    assert.deepEqual(sent.body.items[0].product.taxes, [{ type: 'IVA', rate: 0.16 }]);
    assert.deepEqual(sent.body.items[1].product.taxes, [{ type: 'IVA', factor: 'Exento' }]);
    assert.equal(inv.uuid, [...facturapi.invoices.values()].find((i) => i.external_id === inv.id)!.uuid);
    assert.ok(inv.folio);
    const stamped = (await (await fetch(`${facturapi.env.FACTURAPI_URL}/invoices/${[...facturapi.invoices.values()].find((i) => i.external_id === inv.id)!.id}`, { headers: { authorization: `Bearer ${sent.headers.authorization!.slice(7)}` } })).json()) as { total: number };
    assert.equal(Math.round(stamped.total * 100), s.total_cents, 'Facturapi stamps the sale\'s total');
    const pdf = await fetch(`${app.baseUrl}/invoices/${inv.id}/pdf`, { headers: { authorization: `Bearer ${tenant.key}` } });
    assert.match(Buffer.from(await pdf.arrayBuffer()).toString(), new RegExp(inv.uuid));
    // The stamped XML was kept at the stamp: it downloads while Facturapi is down; the PDF, asked of
    // Facturapi on every download, is a 503 the client may retry.
    facturapi.fault({ method: 'GET', status: 503, times: 2 });
    const xml = await fetch(`${app.baseUrl}/invoices/${inv.id}/xml`, { headers: { authorization: `Bearer ${tenant.key}` } });
    assert.equal(xml.status, 200);
    assert.match(xml.headers.get('content-type')!, /^application\/xml/);
    assert.match(await xml.text(), new RegExp(`<cfdi:Comprobante[^]*${inv.uuid}`));
    const down = await fetch(`${app.baseUrl}/invoices/${inv.id}/pdf`, { headers: { authorization: `Bearer ${tenant.key}` } });
    assert.equal(down.status, 503);
    assert.equal(((await down.json()) as { error: string }).error, 'service_unavailable');
    assert.ok(down.headers.get('retry-after'));
    // A refusal is no outage: the same request gets the same answer, so no 503 and no Retry-After.
    await waitFor(async () => (await fetch(`${app.baseUrl}/invoices/${inv.id}/pdf`, { headers: { authorization: `Bearer ${tenant.key}` } })).status === 200, 10_000, 'the PDF again once Facturapi answers');
    facturapi.fault({ method: 'GET', status: 404, message: 'Invoice not found', times: 1 });
    const refused = await fetch(`${app.baseUrl}/invoices/${inv.id}/pdf`, { headers: { authorization: `Bearer ${tenant.key}` } });
    const body = (await refused.json()) as { error: string; message: string };
    assert.deepEqual([refused.status, body.error, refused.headers.get('retry-after')], [502, 'provider_error', null]);
    assert.match(body.message, /Invoice not found/);
  });

  test('an outage is retried until stamped; a lost answer does not stamp twice; a rejection fails with the provider’s reason', async () => {
    facturapi.fault({ method: 'POST', status: 503 });
    const s1 = await sale(api, { customer_id: setup.customer.id });
    const a = await settled((await api.post(`/sales/${s1.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    assert.equal(a.status, 'valid');
    facturapi.fault({ method: 'POST', status: 500, afterCreate: true });
    const s2 = await sale(api, { customer_id: setup.customer.id });
    const b = await settled((await api.post(`/sales/${s2.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    assert.equal(b.status, 'valid');
    assert.equal([...facturapi.invoices.values()].filter((i) => i.external_id === b.id).length, 1, 'stamped once');
    const refused = (await api.post('/customers', { data: { name: 'Rechazado', tax_id: 'XIA190128J61', legal_name: 'X', address: { postal_code: '01000' } } })).body.data;
    const s3 = await sale(api, { customer_id: refused.id });
    const c = await settled((await api.post(`/sales/${s3.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    assert.equal(c.status, 'failed');
    assert.match(c.failure_reason, /lista de RFC inscritos/);
    assert.equal(c.uuid, null);
    // It has no document, and never will: the 409 says so rather than to wait.
    const noXml = await api.get(`/invoices/${c.id}/xml`);
    assert.deepEqual([noXml.status, noXml.body.error], [409, 'invoice_not_stamped']);
    assert.match(noXml.body.message, /rechazó/);
    // A failed invoice does not block another attempt.
    assert.equal((await api.post(`/sales/${s3.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).status, 201);
  });

  test('cancel through Facturapi: motive and substitution sent, cancelled when accepted', async () => {
    const s = await sale(api, { customer_id: setup.customer.id });
    const inv = await settled((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    await api.post(`/invoices/${inv.id}/cancel`, { data: { motive: '03' } });
    await waitFor(async () => (await api.get(`/invoices/${inv.id}`)).body.data.status === 'cancelled', 20_000, 'cancelled at Facturapi');
    const stored = [...facturapi.invoices.values()].find((i) => i.uuid === inv.uuid)!;
    assert.deepEqual([stored.status, stored.cancel_motive], ['canceled', '03']);
  });

  test('a cancellation the receiver must answer (or the SAT is verifying): asked once, then polled until the answer; refused leaves the invoice valid, accepted cancels it', async () => {
    /** The poll queued after a pending answer, made due now rather than in a minute. */
    const pollNow = async (id: string) => {
      const poll = `name = $1 AND data->>'invoice_id' = $2 AND (data->>'poll')::boolean AND state = 'created'`;
      await waitFor(async () => (await app.pool.query(`SELECT 1 FROM pgboss.job WHERE ${poll}`, [INVOICES.name, id])).rowCount, 20_000, 'the poll queued');
      await app.pool.query(`UPDATE pgboss.job SET start_after = now() WHERE ${poll}`, [INVOICES.name, id]);
    };
    const asked = (providerId: string) => facturapi.requests.filter((r) => r.method === 'DELETE' && r.path.startsWith(`/v2/invoices/${providerId}?`)).length;
    try {
      // `verifying`: the SAT received the request and is validating it; a poll asks nothing again either.
      for (const [asking, answer] of [['pending', 'rejected'], ['pending', 'accepted'], ['verifying', 'accepted']] as const) {
        facturapi.receiverMustAnswer(asking);
        const s = await sale(api, { customer_id: setup.customer.id });
        const inv = await settled((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
        const providerId = [...facturapi.invoices.values()].find((i) => i.uuid === inv.uuid)!.id;
        assert.equal((await api.post(`/invoices/${inv.id}/cancel`, { data: { motive: '02' } })).status, 200);
        await pollNow(inv.id);
        // Polled while the receiver has not answered: still pending, and not asked again.
        await waitFor(async () => facturapi.requests.filter((r) => r.method === 'GET' && r.path === `/v2/invoices/${providerId}`).length >= 2, 20_000, 'polled once');
        assert.equal((await api.get(`/invoices/${inv.id}`)).body.data.status, 'cancellation_pending');
        facturapi.answerForReceiver(providerId, answer);
        await pollNow(inv.id);
        const settledNow = await waitFor(async () => {
          const i = (await api.get(`/invoices/${inv.id}`)).body.data;
          return i.status !== 'cancellation_pending' && i;
        }, 30_000, `the receiver's answer (${answer}) seen`);
        assert.equal(asked(providerId), 1, `one cancellation request, however many polls (${asking})`);
        if (answer === 'rejected') {
          assert.equal(settledNow.status, 'valid');
          assert.match(settledNow.failure_reason, /^cancelación rechazada: el receptor rechazó la cancelación$/);
        } else {
          assert.equal(settledNow.status, 'cancelled');
          assert.ok((await events(app, tenant.companyId, 'invoice.cancelled')).some((e) => e.id === inv.id));
        }
      }
    } finally {
      facturapi.receiverMustAnswer(false);
    }
  });

  test('while a substitute is being stamped the old invoice is not cancelled by hand; the substitution cancels it (01) and links the two', async () => {
    const s = await sale(api, { customer_id: setup.customer.id });
    const old = await settled((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    // Facturapi is down for the substitute's first two tries: it stays pending through the retries.
    facturapi.fault({ method: 'POST', status: 503, times: 2 });
    const sub = await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' }, substitutes_id: old.id } });
    assert.equal(sub.status, 201, sub.text);
    const refused = await api.post(`/invoices/${old.id}/cancel`, { data: { motive: '02' } });
    assert.equal(refused.status, 422, refused.text);
    assert.equal(refused.body.error, 'validation_failed');
    assert.match(refused.body.errors.id[0], /sustituta/);
    assert.equal((await api.get(`/invoices/${old.id}`)).body.data.status, 'valid', 'the refusal changed nothing');
    const fresh = await settled(sub.body.data.id);
    assert.equal(fresh.status, 'valid');
    const oldNow = await waitFor(async () => {
      await retriesDue();
      const o = (await api.get(`/invoices/${old.id}`)).body.data;
      return o.status === 'cancelled' && o;
    }, 30_000, 'the substituted invoice cancelled');
    assert.deepEqual([oldNow.cancellation.motive, oldNow.cancellation.substitute_uuid, oldNow.substituted_by_id], ['01', fresh.uuid, fresh.id]);
  });

  test('a deferred sale: payments made before the invoice and while it waits out an outage get their complements at its stamp, numbered in order', async () => {
    const s = await sale(api, { customer_id: setup.customer.id, payment_terms: 'deferred' });
    const pay = async (amount_cents: number) => {
      const res = await api.post(`/sales/${s.id}/payments`, { data: { account_id: setup.account.id, amount_cents } });
      assert.equal(res.status, 201, res.text);
    };
    await pay(100_000); // before the invoice is asked for
    facturapi.fault({ method: 'POST', status: 503, times: 1 });
    const inv = (await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data;
    await waitFor(async () => (await app.pool.query(`SELECT 1 FROM pgboss.job WHERE name = $1 AND data->>'invoice_id' = $2 AND state = 'retry'`, [INVOICES.name, inv.id])).rowCount, 20_000, 'the stamp waiting for its retry');
    await pay(78_000); // while the invoice is pending
    assert.equal((await api.get(`/invoices/${inv.id}`)).body.data.status, 'pending');
    assert.equal((await settled(inv.id)).status, 'valid');
    await pay(200_000); // after the stamp
    const done = await waitFor(async () => {
      await retriesDue();
      const i = (await api.get(`/invoices/${inv.id}`)).body.data;
      return i.payment_complements.length === 3 && i.payment_complements.every((c: any) => c.status === 'valid') && i;
    }, 60_000, 'three complements stamped');
    assert.deepEqual(
      done.payment_complements.map((c: any) => [c.installment, c.amount_cents]),
      [[1, 100_000], [2, 78_000], [3, 200_000]],
    );
    const { rows } = await app.pool.query('SELECT installment, previous_balance_cents::int AS before FROM invoice_payment_complements WHERE invoice_id = $1 ORDER BY installment', [inv.id]);
    assert.deepEqual(rows.map((r) => r.before), [378_000, 278_000, 200_000]);
    assert.equal((await events(app, tenant.companyId, 'invoice.payment_complement_added')).filter((e) => e.id === inv.id).length, 3);
  });

  test('a deferred sale paid while its cancellation is pending, then refused: that payment gets its complement, numbered first', async () => {
    const s = await sale(api, { customer_id: setup.customer.id, payment_terms: 'deferred' });
    const inv = await settled((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    // The cancellation meets an outage first (it stays pending through the retry), then a refusal.
    facturapi.fault({ method: 'DELETE', status: 503 });
    facturapi.fault({ method: 'DELETE', status: 400, message: 'El receptor rechazó la cancelación' });
    assert.equal((await api.post(`/invoices/${inv.id}/cancel`, { data: { motive: '02' } })).status, 200);
    await waitFor(async () => (await app.pool.query(`SELECT 1 FROM pgboss.job WHERE name = $1 AND data->>'invoice_id' = $2 AND state = 'retry'`, [INVOICES.name, inv.id])).rowCount, 20_000, 'the cancellation waiting for its retry');
    const pay = async (amount_cents: number) => {
      const res = await api.post(`/sales/${s.id}/payments`, { data: { account_id: setup.account.id, amount_cents } });
      assert.equal(res.status, 201, res.text);
    };
    await pay(100_000); // while the cancellation is pending
    assert.equal((await api.get(`/invoices/${inv.id}`)).body.data.status, 'cancellation_pending');
    await waitFor(async () => (await retriesDue(), (await api.get(`/invoices/${inv.id}`)).body.data.status === 'valid'), 60_000, 'the cancellation refused');
    await pay(50_000); // after the refusal
    const done = await waitFor(async () => {
      await retriesDue();
      const i = (await api.get(`/invoices/${inv.id}`)).body.data;
      return i.payment_complements.length === 2 && i.payment_complements.every((c: any) => c.status === 'valid') && i;
    }, 60_000, 'two complements stamped');
    assert.match(done.failure_reason, /cancelación rechazada: El receptor rechazó/);
    assert.deepEqual(done.payment_complements.map((c: any) => [c.installment, c.amount_cents]), [[1, 100_000], [2, 50_000]]);
    const { rows } = await app.pool.query('SELECT previous_balance_cents::int AS before FROM invoice_payment_complements WHERE invoice_id = $1 ORDER BY installment', [inv.id]);
    assert.deepEqual(rows.map((r) => r.before), [378_000, 278_000], 'each from the balance left before it');
  });

  test('a deferred sale invoiced again after a cancellation: the new invoice declares every payment again, from installment 1; a cancellation asked again clears the refusal', async () => {
    const s = await sale(api, { customer_id: setup.customer.id, payment_terms: 'deferred' });
    const first = await settled((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    const pay = async (amount_cents: number) => {
      const res = await api.post(`/sales/${s.id}/payments`, { data: { account_id: setup.account.id, amount_cents } });
      assert.equal(res.status, 201, res.text);
    };
    const complementsOf = (id: string, n: number) => waitFor(async () => {
      const i = (await api.get(`/invoices/${id}`)).body.data;
      return i.payment_complements.length === n && i.payment_complements.every((c: any) => c.status === 'valid') && i;
    }, 60_000, `${n} complements of ${id} stamped`);
    await pay(100_000);
    await pay(78_000);
    await complementsOf(first.id, 2);
    // A refused cancellation leaves its reason; asked again, the reason goes (it is not this request's).
    facturapi.fault({ method: 'DELETE', status: 400, message: 'El receptor rechazó la cancelación' });
    assert.equal((await api.post(`/invoices/${first.id}/cancel`, { data: { motive: '02' } })).status, 200);
    await waitFor(async () => (await api.get(`/invoices/${first.id}`)).body.data.failure_reason !== null, 30_000, 'the refusal');
    const again = await api.post(`/invoices/${first.id}/cancel`, { data: { motive: '02' } });
    assert.deepEqual([again.status, again.body.data.status, again.body.data.failure_reason], [200, 'cancellation_pending', null]);
    const cancelled = await waitFor(async () => {
      const i = (await api.get(`/invoices/${first.id}`)).body.data;
      return i.status === 'cancelled' && i;
    }, 30_000, 'cancelled');
    assert.equal(cancelled.failure_reason, null);
    // Invoiced again: the cancelled invoice's complements went with it; the new one declares both payments.
    const second = await settled((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    await complementsOf(second.id, 2);
    await pay(100_000);
    const done = await complementsOf(second.id, 3);
    assert.deepEqual(done.payment_complements.map((c: any) => [c.installment, c.amount_cents]), [[1, 100_000], [2, 78_000], [3, 100_000]]);
    const { rows } = await app.pool.query('SELECT previous_balance_cents::int AS before FROM invoice_payment_complements WHERE invoice_id = $1 ORDER BY installment', [second.id]);
    assert.deepEqual(rows.map((r) => r.before), [378_000, 278_000, 200_000], 'the chain of balances starts at the invoice\'s total');
  });

  test('motive 01 by hand names the substitute by its UUID in any case (a UUID is case-insensitive)', async () => {
    const s = await sale(api, { customer_id: setup.customer.id });
    const old = await settled((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    // The substitution's own cancellation of the old one is refused: it stays valid beside the new one.
    facturapi.fault({ method: 'DELETE', status: 400, message: 'El receptor rechazó la cancelación' });
    const fresh = await settled((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' }, substitutes_id: old.id } })).body.data.id);
    await waitFor(async () => {
      const o = (await api.get(`/invoices/${old.id}`)).body.data;
      return o.status === 'valid' && o.failure_reason !== null;
    }, 30_000, 'the automatic cancellation refused');
    const byHand = await api.post(`/invoices/${old.id}/cancel`, { data: { motive: '01', substitute_uuid: ` ${fresh.uuid.toLowerCase()} ` } });
    assert.equal(byHand.status, 200, byHand.text);
    assert.equal(byHand.body.data.cancellation.substitute_uuid, fresh.uuid);
    await waitFor(async () => (await api.get(`/invoices/${old.id}`)).body.data.status === 'cancelled', 30_000, 'cancelled with 01');
  });

  test('a payment complement declares how the payment was made; a payment a later stamped complement counts is not deleted', async () => {
    const cash = (await api.post('/accounts', { data: { name: 'Caja', kind: 'cash', currency: 'mxn' } })).body.data;
    const s = await sale(api, { customer_id: setup.customer.id, payment_terms: 'deferred' });
    const inv = await settled((await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    const complements = (n: number) => waitFor(async () => {
      const i = (await api.get(`/invoices/${inv.id}`)).body.data;
      return i.payment_complements.length === n && i.payment_complements.every((c: any) => c.status !== 'pending') && i.payment_complements;
    }, 60_000, `${n} complements settled`);
    const sentForms = () => facturapi.requests
      .filter((r) => r.method === 'POST' && r.body?.type === 'P' && r.body.complements?.[0]?.data?.[0]?.related_documents?.[0]?.uuid === inv.uuid)
      .map((r) => r.body.complements[0].data[0].payment_form);
    // Said by the client; else by the account: cash 01, bank 03.
    const card = await api.post(`/sales/${s.id}/payments`, { data: { account_id: setup.account.id, amount_cents: 1_000, payment_form: '28' } });
    assert.equal(card.status, 201, card.text);
    await api.post(`/sales/${s.id}/payments`, { data: { account_id: cash.id, amount_cents: 1_000 } });
    await api.post(`/sales/${s.id}/payments`, { data: { account_id: setup.account.id, amount_cents: 1_000 } });
    await complements(3);
    assert.deepEqual(sentForms(), ['28', '01', '03']);
    assert.deepEqual((await api.get(`/sales/${s.id}`)).body.data.payments.map((p: any) => p.payment_form), ['28', '01', '03']);
    const undefinedForm = await api.post(`/sales/${s.id}/payments`, { data: { account_id: setup.account.id, amount_cents: 1_000, payment_form: '99' } });
    assert.equal(undefinedForm.status, 422, 'a payment made has a form: 99 (por definir) is not one');
    assert.ok(undefinedForm.body.errors.payment_form);
    // A payment whose complement the provider refuses, then a later one stamped: the later one's previous
    // balance counts the first, so the first stays (409); the last failed one, counted by none, is deleted.
    facturapi.fault({ method: 'POST', status: 400, message: 'Rechazado' });
    const failed = (await api.post(`/sales/${s.id}/payments`, { data: { account_id: setup.account.id, amount_cents: 5_000 } })).body.data.payments.at(-1);
    await complements(4);
    await api.post(`/sales/${s.id}/payments`, { data: { account_id: setup.account.id, amount_cents: 7_000 } });
    await complements(5);
    facturapi.fault({ method: 'POST', status: 400, message: 'Rechazado' });
    const lastFailed = (await api.post(`/sales/${s.id}/payments`, { data: { account_id: setup.account.id, amount_cents: 3_000 } })).body.data.payments.at(-1);
    const all = await complements(6);
    assert.deepEqual(all.map((c: any) => c.status), ['valid', 'valid', 'valid', 'failed', 'valid', 'failed']);
    const kept = await api.delete(`/incomes/${failed.income_id}`);
    assert.equal(kept.status, 409, kept.text);
    assert.equal(kept.body.error, 'payment_complement_issued');
    assert.match(kept.body.message, /pago posterior/);
    assert.equal((await api.delete(`/incomes/${lastFailed.income_id}`)).status, 204);
    assert.equal((await api.get(`/sales/${s.id}`)).body.data.paid_cents, 15_000);
  });

  test('each company issues under its own Facturapi organization: made by wsctl company tax-profile with its legal data and CSD, its own key on every invoice', async () => {
    // The first company's organization, made in before(): legal data, the CSD (Facturapi reads the RFC from it), a live key.
    const own = [...facturapi.organizations.values()].find((o) => o.legal.legal_name === 'ESCUELA KEMPER URGATE')!;
    assert.ok(own, 'an organization for the first company');
    assert.deepEqual([own.legal.tax_id, own.legal.tax_system, own.legal.zip, own.has_certificate], ['EKU9003173C9', '601', '42501', true]);
    // A second company: another RFC, another organization.
    const other = await seedTenant(app.pool, { modules: ['invoicing'], rateLimitPerMinute: 100_000 });
    const otherApi = client(app.baseUrl, other.key);
    const csd = testCsd('AAA010101AAA', 'EMPRESA DOS');
    const profile = async () => (await wsctl(app, ['company', 'tax-profile', other.companyId, '--rfc', csd.rfc, '--legal-name', 'EMPRESA DOS', '--tax-regime', '601', '--zip', '06600', '--cer', csd.cerPath, '--key', csd.keyPath, '--key-password', csd.password, '--json']));
    const first = await profile();
    assert.equal(first.code, 0, first.stderr);
    assert.doesNotMatch(first.stdout + first.stderr, /sk_(live|test|user)_/, 'no Facturapi key printed');
    const organizations = facturapi.organizations.size;
    const theirs = [...facturapi.organizations.values()].find((o) => o.legal.legal_name === 'EMPRESA DOS')!;
    assert.deepEqual([theirs.legal.tax_id, theirs.legal.zip], ['AAA010101AAA', '06600']);
    // Saved again: the same organization, brought up to date.
    assert.equal((await profile()).code, 0);
    assert.equal(facturapi.organizations.size, organizations, 'no second organization');
    const customer = (await otherApi.post('/customers', { data: { name: 'C', tax_id: 'URE180429TM6', legal_name: 'UNIVERSIDAD ROBOTICA ESPAÑOLA', address: { postal_code: '86991' } } })).body.data;
    await otherApi.post('/accounts', { data: { name: 'Banco', kind: 'bank', currency: 'mxn' } });
    const mine = await settled((await api.post(`/sales/${(await sale(api, { customer_id: setup.customer.id })).id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data.id);
    const otherSale = await sale(otherApi, { customer_id: customer.id });
    const theirsInvoice = (await otherApi.post(`/sales/${otherSale.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data;
    const stampedTheirs = await waitFor(async () => {
      const inv = (await otherApi.get(`/invoices/${theirsInvoice.id}`)).body.data;
      return inv.status !== 'pending' && inv;
    }, 90_000, 'the second company’s invoice settled');
    assert.equal(stampedTheirs.status, 'valid', stampedTheirs.failure_reason);
    const issuerOf = (id: string) => [...facturapi.invoices.values()].find((i) => i.external_id === id)!.issuer.tax_id;
    assert.deepEqual([issuerOf(mine.id), issuerOf(stampedTheirs.id)], ['EKU9003173C9', 'AAA010101AAA']);
    const keyOf = (id: string) => facturapi.requests.find((r) => r.method === 'POST' && r.body?.external_id === id)!.headers.authorization;
    assert.notEqual(keyOf(mine.id), keyOf(stampedTheirs.id));
    assert.match(keyOf(stampedTheirs.id)!, new RegExp(`^Bearer sk_live_${theirs.id}_`));
    // Emitter data saved before Facturapi was configured (no organization): 422 no_emitter until saved again.
    await app.pool.query('DELETE FROM facturapi_organizations WHERE company_id = $1', [other.companyId]);
    const refused = await otherApi.post(`/sales/${(await sale(otherApi, { customer_id: customer.id })).id}/invoice`, { data: { receiver: { tax_regime: '601' } } });
    assert.deepEqual([refused.status, refused.body.error], [422, 'no_emitter']);
    assert.match(refused.body.message, /Facturapi/);
  });

  test('the database connection lost while tax-profile waits for Facturapi: an error for the operator, the web process alive, the lock gone', async () => {
    const other = await seedTenant(app.pool, { modules: ['invoicing'] });
    const csd = testCsd('AAA010101AAA', 'EMPRESA DOS');
    const hold = facturapi.hold('PUT', /\/certificate$/);
    const running = wsctl(app, ['company', 'tax-profile', other.companyId, '--rfc', csd.rfc, '--legal-name', 'EMPRESA TRES', '--tax-regime', '601', '--zip', '06600', '--cer', csd.cerPath, '--key', csd.keyPath, '--key-password', csd.password, '--json']);
    await hold.arrived;
    // The connection holding the company's lock dies (a database restart, a failover).
    // Of this test's database only: other test files share the cluster (their transactions hold advisory locks too).
    const { rowCount } = await app.pool.query(
      `SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.pid <> pg_backend_pid() AND a.datname = current_database()`,
    );
    assert.ok(rowCount! >= 1, 'the lock holder was found');
    hold.release();
    const run = await running;
    assert.notEqual(run.code, 0, run.stdout);
    assert.equal((await fetch(`${app.url}/healthz`)).status, 200, 'the web process is alive');
    // Saved again, it goes through: the lock went with the dead session.
    const again = await wsctl(app, ['company', 'tax-profile', other.companyId, '--rfc', csd.rfc, '--legal-name', 'EMPRESA TRES', '--tax-regime', '601', '--zip', '06600', '--cer', csd.cerPath, '--key', csd.keyPath, '--key-password', csd.password, '--json']);
    assert.equal(again.code, 0, again.stderr);
  });

  test('Facturapi stamping in the background (202 pending, or an answer lost): the retry finds it pending and waits, never posts again', async () => {
    const lookups = (id: string) => facturapi.requests.filter((r) => r.method === 'GET' && r.path === `/v2/invoices?external_id=${id}`).length;
    for (const answer of ['202 pending', 'lost'] as const) {
      facturapi.stampInBackground();
      if (answer === 'lost') facturapi.fault({ method: 'POST', status: 500, afterCreate: true });
      try {
        const inv = (await api.post(`/sales/${(await sale(api, { customer_id: setup.customer.id })).id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data;
        await waitFor(async () => [...facturapi.invoices.values()].some((i) => i.external_id === inv.id), 20_000, 'posted once');
        // Retried while Facturapi still stamps: looked up, found pending, not posted again; never valid without a UUID.
        await waitFor(async () => (await retriesDue(), lookups(inv.id) >= 3), 30_000, 'two retries looked it up');
        assert.equal([...facturapi.invoices.values()].filter((i) => i.external_id === inv.id).length, 1);
        assert.deepEqual([(await api.get(`/invoices/${inv.id}`)).body.data.status, (await api.get(`/invoices/${inv.id}`)).body.data.uuid], ['pending', null], answer);
        facturapi.stampInBackground(false);
        facturapi.finishStamping([...facturapi.invoices.values()].find((i) => i.external_id === inv.id)!.id);
        const stamped = await waitFor(async () => {
          await retriesDue();
          const i = (await api.get(`/invoices/${inv.id}`)).body.data;
          return i.status !== 'pending' && i;
        }, 30_000, 'stamped');
        assert.equal(stamped.status, 'valid');
        assert.ok(stamped.uuid, 'with its UUID');
        assert.equal(facturapi.requests.filter((r) => r.method === 'POST' && r.body?.external_id === inv.id).length, 1, 'posted once');
      } finally {
        facturapi.stampInBackground(false);
      }
    }
  });

  test('an invoice still pending whose job ran out of retries gets a new one from the hourly reconcile, and is stamped once', async () => {
    const s = await sale(api, { customer_id: setup.customer.id });
    facturapi.fault({ method: 'POST', status: 503, times: 1 });
    const inv = (await api.post(`/sales/${s.id}/invoice`, { data: { receiver: { tax_regime: '601' } } })).body.data;
    // Its first try meets the outage and the job waits for its retry...
    await waitFor(async () => (await app.pool.query(`SELECT 1 FROM pgboss.job WHERE name = $1 AND data->>'invoice_id' = $2 AND state = 'retry'`, [INVOICES.name, inv.id])).rowCount, 20_000, 'the job waiting for its retry');
    // ...then it runs out of them, as after 15 tries over a long outage (pg-boss marks it failed), an hour ago.
    await app.pool.query(`UPDATE pgboss.job SET state = 'failed' WHERE name = $1 AND data->>'invoice_id' = $2`, [INVOICES.name, inv.id]);
    await app.pool.query(`UPDATE invoices SET updated_at = now() - interval '2 hours' WHERE id = $1`, [inv.id]);
    assert.equal((await api.get(`/invoices/${inv.id}`)).body.data.status, 'pending');
    const requeued = await reconcile({ pool: app.pool, jobs: app.deps.jobs });
    assert.ok(requeued >= 1, `re-queued ${requeued}`);
    const stamped = await settled(inv.id);
    assert.equal(stamped.status, 'valid');
    assert.equal([...facturapi.invoices.values()].filter((i) => i.external_id === inv.id).length, 1, 'stamped once');
  });
});
