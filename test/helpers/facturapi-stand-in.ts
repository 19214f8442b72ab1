// A local stand-in for the part of Facturapi's REST API v2 the invoice
// provider uses, over real HTTP. The account's User Key manages organizations
// (POST /organizations, PUT /organizations/:id/legal, PUT
// /organizations/:id/certificate as multipart cer, key and password, checked
// with @nodecfdi/credentials and giving `legal.tax_id`, PUT .../apikeys/live
// making a new live key, GET .../apikeys/test); every invoice route takes an
// organization's key and sees only that organization's invoices, issued with
// its legal data (refused until it has them and a CSD, as Facturapi's
// `pending_steps`). POST /invoices (types I and P, honouring the body's
// `idempotency_key` and recording `external_id`), GET /invoices?external_id=,
// GET /invoices/:id, DELETE /invoices/:id?motive=&substitution= (accepted at
// once, or, with `receiverMustAnswer`, pending (or `verifying`, the SAT still
// validating) until the test answers for the
// receiver: the invoice stays `valid` with `cancellation_status: pending`, then
// `accepted` and `canceled`, `rejected` or `expired`), GET /invoices/:id/xml and /pdf; its error bodies
// (`{message, status}`); injectable outages (500, 503) and rejections (400),
// and "stamped, but the answer was lost" (the invoice exists, the client gets 500).
import { randomBytes, randomUUID } from 'node:crypto';
import { Credential } from '@nodecfdi/credentials/node';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Stored = { id: string; organization: string; issuer: Organization['legal']; uuid: string; status: string; cancellation_status: string; type: string; external_id: string; series: string | null; folio_number: number; body: any; idempotency: string | null; cancel_motive: string | null; substitution: string | null };
type Organization = { id: string; name: string; legal: { name: string | null; legal_name: string | null; tax_system: string | null; zip: string | null; tax_id: string | null }; has_certificate: boolean; keys: Set<string> };

export async function startFacturapiStandIn(options: { userKey?: string } = {}) {
  const userKey = options.userKey ?? 'sk_user_stand_in';
  const organizations = new Map<string, Organization>();
  const invoices = new Map<string, Stored>();
  const requests: Array<{ method: string; path: string; body: any; headers: IncomingMessage['headers'] }> = [];
  const faults: Array<{ method: string; status: number; message: string; afterCreate?: boolean; times: number }> = [];
  let folio = 0;
  let receiverMustAnswer: false | 'pending' | 'verifying' = false;
  let stampInBackground = false;
  const holds: Array<{ method: string; path: RegExp; reached: () => void; released: Promise<void> }> = [];

  const send = (res: ServerResponse, status: number, body: unknown, type = 'application/json') => {
    res.writeHead(status, { 'content-type': type });
    res.end(typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body));
  };
  const orgView = (o: Organization) => ({ id: o.id, legal: { ...o.legal, address: { zip: o.legal.zip } }, certificate: { has_certificate: o.has_certificate }, is_production_ready: o.has_certificate && !!o.legal.legal_name });
  // The invoice's `total` as Facturapi computes it from the items: quantity × price less the discount; a
  // price with `tax_included` (Facturapi's default) has its taxes taken out of it, one without has them
  // added; the sum rounded to cents.
  const totalOf = (body: any): number | undefined => {
    if (!Array.isArray(body?.items)) return undefined;
    let total = 0;
    for (const item of body.items) {
      const amount = Number(((item.quantity ?? 1) * item.product.price).toFixed(6)) - (item.discount ?? 0);
      const rate = (item.product.taxes ?? []).reduce((n: number, t: any) => n + (t.factor === 'Exento' ? 0 : (t.rate ?? 0.16)), 0);
      const base = item.product.tax_included === false ? amount : amount / (1 + rate);
      total += base + base * rate;
    }
    return Math.round(total * 100) / 100;
  };
  const view = (i: Stored) => ({ id: i.id, uuid: i.status === 'pending' ? null : i.uuid, status: i.status, cancellation_status: i.cancellation_status, type: i.type, external_id: i.external_id, series: i.series, folio_number: i.folio_number, total: totalOf(i.body), stamp: { date: '2026-11-24T18:00:00.000Z' }, verification_url: `https://verificacfdi.facturaelectronica.sat.gob.mx/default.aspx?id=${i.uuid}` });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const type = req.headers['content-type'] ?? '';
    const form = type.startsWith('multipart/form-data') ? await new Request('http://stand-in', { method: 'PUT', headers: { 'content-type': type }, body: raw }).formData() : null;
    const body = form ? null : raw.length ? JSON.parse(raw.toString('utf8')) : null;
    requests.push({ method: req.method!, path: url.pathname + url.search, body: body ?? (form ? Object.fromEntries([...form.keys()].map((k) => [k, true])) : null), headers: req.headers });
    const held = holds.find((h) => h.method === req.method && h.path.test(url.pathname));
    if (held) {
      holds.splice(holds.indexOf(held), 1);
      held.reached();
      await held.released;
    }
    const bearer = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    const org = /^\/v2\/organizations(?:\/([^/]+)(?:\/(legal|certificate|apikeys\/live|apikeys\/test))?)?$/.exec(url.pathname);
    if (org) {
      // Organizations: the User Key only.
      if (bearer !== userKey) return send(res, 401, { message: 'Invalid API key', status: 401 });
      const [, orgId, part] = org;
      if (req.method === 'POST' && !orgId) {
        if (!body?.name) return send(res, 400, { message: 'name is required', status: 400 });
        const o: Organization = { id: randomBytes(12).toString('hex'), name: body.name, legal: { name: body.name, legal_name: null, tax_system: null, zip: null, tax_id: null }, has_certificate: false, keys: new Set() };
        organizations.set(o.id, o);
        return send(res, 200, orgView(o));
      }
      const o = orgId ? organizations.get(orgId) : undefined;
      if (!o) return send(res, 404, { message: 'Organization not found', status: 404 });
      if (req.method === 'PUT' && part === 'legal') {
        Object.assign(o.legal, { name: body.name ?? o.legal.name, legal_name: body.legal_name ?? o.legal.legal_name, tax_system: body.tax_system ?? o.legal.tax_system, zip: body.address?.zip ?? o.legal.zip });
        return send(res, 200, orgView(o));
      }
      if (req.method === 'PUT' && part === 'certificate') {
        const cer = form?.get('cer');
        const key = form?.get('key');
        const password = form?.get('password');
        if (!(cer instanceof Blob) || !(key instanceof Blob) || typeof password !== 'string') return send(res, 400, { message: 'cer, key and password are required', status: 400 });
        try {
          const credential = Credential.create(Buffer.from(await cer.arrayBuffer()).toString('binary'), Buffer.from(await key.arrayBuffer()).toString('binary'), password);
          o.legal.tax_id = credential.rfc();
        } catch {
          return send(res, 400, { message: 'La contraseña no corresponde a la llave privada', status: 400 });
        }
        o.has_certificate = true;
        return send(res, 200, orgView(o));
      }
      if (req.method === 'PUT' && part === 'apikeys/live') {
        const live = `sk_live_${o.id}_${randomBytes(6).toString('hex')}`;
        o.keys.add(live);
        return send(res, 200, JSON.stringify(live));
      }
      if (req.method === 'GET' && part === 'apikeys/test') {
        o.keys.add(`sk_test_${o.id}`);
        return send(res, 200, JSON.stringify(`sk_test_${o.id}`));
      }
      return send(res, 405, { message: 'Method not allowed', status: 405 });
    }
    // Invoices: an organization's key; the organization is the issuer.
    const issuer = [...organizations.values()].find((o) => o.keys.has(bearer));
    if (!issuer) return send(res, 401, { message: 'Invalid API key', status: 401 });
    const fault = faults.find((f) => f.times > 0 && f.method === req.method);
    if (fault && !fault.afterCreate) {
      fault.times--;
      return send(res, fault.status, { message: fault.message, status: fault.status });
    }
    const m = /^\/v2\/invoices(?:\/([^/]+))?(?:\/(xml|pdf))?$/.exec(url.pathname);
    if (!m) return send(res, 404, { message: 'Not found', status: 404 });
    const [, id, format] = m;
    if (req.method === 'POST' && !id) {
      if (!issuer.has_certificate || !issuer.legal.legal_name || !issuer.legal.tax_system) return send(res, 400, { message: 'La organización no ha completado su configuración: datos fiscales y CSD', status: 400 });
      const idem = body?.idempotency_key ?? null;
      const again = idem ? [...invoices.values()].find((i) => i.organization === issuer.id && i.idempotency === idem) : undefined;
      if (again) return send(res, 200, view(again));
      if (!body?.customer?.tax_id || !Array.isArray(body.items ?? body.complements)) return send(res, 400, { message: 'Missing customer or items', status: 400 });
      if (body.customer.tax_id === 'XIA190128J61') return send(res, 400, { message: 'El RFC del receptor no está en la lista de RFC inscritos no cancelados en el SAT', status: 400 });
      const stored: Stored = { id: `fapi_${randomUUID().slice(0, 12)}`, organization: issuer.id, issuer: { ...issuer.legal }, uuid: randomUUID().toUpperCase(), status: stampInBackground ? 'pending' : 'valid', cancellation_status: 'none', type: body.type, external_id: body.external_id, series: body.series ?? 'F', folio_number: ++folio, body, idempotency: idem, cancel_motive: null, substitution: null };
      invoices.set(stored.id, stored);
      if (fault?.afterCreate) {
        fault.times--;
        return send(res, fault.status, { message: fault.message, status: fault.status });
      }
      // Stamping in the background: 202 with the invoice pending and no UUID yet (Facturapi's answer after an intermittent error).
      return send(res, stored.status === 'pending' ? 202 : 200, view(stored));
    }
    if (req.method === 'GET' && !id) {
      const ext = url.searchParams.get('external_id');
      const data = [...invoices.values()].filter((i) => i.organization === issuer.id && (!ext || i.external_id === ext)).map(view);
      return send(res, 200, { page: 1, total_pages: 1, total_results: data.length, data });
    }
    const inv = id ? invoices.get(id) : undefined;
    if (!inv || inv.organization !== issuer.id) return send(res, 404, { message: 'Invoice not found', status: 404 });
    if (format && inv.status === 'pending') return send(res, 404, { message: 'La factura aún no está timbrada', status: 404 });
    if (req.method === 'GET' && format === 'xml') return send(res, 200, `<?xml version="1.0"?><cfdi:Comprobante xmlns:cfdi="http://www.sat.gob.mx/cfd/4" Version="4.0"><!-- ${inv.uuid} --></cfdi:Comprobante>`, 'application/xml');
    if (req.method === 'GET' && format === 'pdf') return send(res, 200, Buffer.from(`%PDF-1.4 stand-in ${inv.uuid}`), 'application/pdf');
    if (req.method === 'GET' && !format) return send(res, 200, view(inv));
    if (req.method === 'DELETE') {
      inv.cancel_motive = url.searchParams.get('motive');
      inv.substitution = url.searchParams.get('substitution');
      if (inv.cancel_motive === '01' && !inv.substitution) return send(res, 400, { message: 'El motivo 01 requiere el UUID de sustitución', status: 400 });
      if (inv.status === 'canceled') return send(res, 400, { message: 'La factura ya está cancelada', status: 400 });
      if (receiverMustAnswer) {
        inv.cancellation_status = receiverMustAnswer;
        return send(res, 200, view(inv));
      }
      inv.status = 'canceled';
      inv.cancellation_status = 'accepted';
      return send(res, 200, view(inv));
    }
    return send(res, 405, { message: 'Method not allowed', status: 405 });
  }

  const server: Server = createServer((req, res) => void handle(req, res).catch((e) => send(res, 500, { message: String(e), status: 500 })));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v2`;
  return {
    env: { FACTURAPI_KEY: userKey, FACTURAPI_URL: url },
    organizations,
    invoices,
    requests,
    /** The next `times` requests of `method` fail with `status`; `afterCreate`: a POST stamps, then answers the failure. */
    fault(f: { method: string; status: number; message?: string; afterCreate?: boolean; times?: number }) {
      faults.push({ message: 'Service unavailable', times: 1, ...f });
    },
    /** From now on a cancellation waits for the receiver (`answerForReceiver`), as one of a CFDI over 1,000 pesos does. */
    receiverMustAnswer(on: boolean | 'pending' | 'verifying' = true) {
      receiverMustAnswer = on === true ? 'pending' : on;
    },
    /** The next `method` request to `path` waits until `release()`; `reached` resolves when it arrives. */
    hold(method: string, path: RegExp) {
      let release!: () => void;
      let reached!: () => void;
      const arrived = new Promise<void>((resolve) => (reached = resolve));
      holds.push({ method, path, reached, released: new Promise<void>((resolve) => (release = resolve)) });
      return { arrived, release: () => release() };
    },
    /** From now on a new invoice is `pending` (Facturapi stamping in the background) until `finishStamping`. */
    stampInBackground(on = true) {
      stampInBackground = on;
    },
    finishStamping(providerId: string) {
      invoices.get(providerId)!.status = 'valid';
    },
    /** The receiver's answer to a pending cancellation, as Facturapi then shows it on the invoice. */
    answerForReceiver(providerId: string, answer: 'accepted' | 'rejected' | 'expired') {
      const inv = invoices.get(providerId);
      if (inv?.cancellation_status !== 'pending' && inv?.cancellation_status !== 'verifying') throw new Error(`no pending cancellation for ${providerId}`);
      inv.cancellation_status = answer;
      if (answer === 'accepted') inv.status = 'canceled';
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
