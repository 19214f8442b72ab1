// A local stand-in for the part of Facturapi's REST API v2 the invoice
// provider uses, over real HTTP: POST /invoices (types I and P, honouring
// `Idempotency-Key` and recording `external_id`), GET /invoices?external_id=,
// GET /invoices/:id, DELETE /invoices/:id?motive=&substitution= (accepted at
// once, or, with `receiverMustAnswer`, pending until the test answers for the
// receiver: the invoice stays `valid` with `cancellation_status: pending`, then
// `accepted` and `canceled`, `rejected` or `expired`), GET /invoices/:id/xml and /pdf; its error bodies
// (`{message, status}`); injectable outages (500, 503) and rejections (400),
// and "stamped, but the answer was lost" (the invoice exists, the client gets 500).
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Stored = { id: string; uuid: string; status: string; cancellation_status: string | null; type: string; external_id: string; series: string | null; folio_number: number; body: any; idempotency: string | null; cancel_motive: string | null; substitution: string | null };

export async function startFacturapiStandIn(options: { key?: string } = {}) {
  const key = options.key ?? 'sk_test_stand_in';
  const invoices = new Map<string, Stored>();
  const requests: Array<{ method: string; path: string; body: any; headers: IncomingMessage['headers'] }> = [];
  const faults: Array<{ method: string; status: number; message: string; afterCreate?: boolean; times: number }> = [];
  let folio = 0;
  let receiverMustAnswer = false;

  const send = (res: ServerResponse, status: number, body: unknown, type = 'application/json') => {
    res.writeHead(status, { 'content-type': type });
    res.end(typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body));
  };
  const view = (i: Stored) => ({ id: i.id, uuid: i.uuid, status: i.status, cancellation_status: i.cancellation_status, type: i.type, external_id: i.external_id, series: i.series, folio_number: i.folio_number, stamp: { date: '2026-11-24T18:00:00.000Z' }, verification_url: `https://verificacfdi.facturaelectronica.sat.gob.mx/default.aspx?id=${i.uuid}` });

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : null;
    requests.push({ method: req.method!, path: url.pathname + url.search, body, headers: req.headers });
    if (req.headers.authorization !== `Bearer ${key}`) return send(res, 401, { message: 'Invalid API key', status: 401 });
    const fault = faults.find((f) => f.times > 0 && f.method === req.method);
    if (fault && !fault.afterCreate) {
      fault.times--;
      return send(res, fault.status, { message: fault.message, status: fault.status });
    }
    const m = /^\/v2\/invoices(?:\/([^/]+))?(?:\/(xml|pdf))?$/.exec(url.pathname);
    if (!m) return send(res, 404, { message: 'Not found', status: 404 });
    const [, id, format] = m;
    if (req.method === 'POST' && !id) {
      const idem = (req.headers['idempotency-key'] as string | undefined) ?? null;
      const again = idem ? [...invoices.values()].find((i) => i.idempotency === idem) : undefined;
      if (again) return send(res, 200, view(again));
      if (!body?.customer?.tax_id || !Array.isArray(body.items ?? body.complements)) return send(res, 400, { message: 'Missing customer or items', status: 400 });
      if (body.customer.tax_id === 'XIA190128J61') return send(res, 400, { message: 'El RFC del receptor no está en la lista de RFC inscritos no cancelados en el SAT', status: 400 });
      const stored: Stored = { id: `fapi_${randomUUID().slice(0, 12)}`, uuid: randomUUID().toUpperCase(), status: 'valid', cancellation_status: null, type: body.type, external_id: body.external_id, series: body.series ?? 'F', folio_number: ++folio, body, idempotency: idem, cancel_motive: null, substitution: null };
      invoices.set(stored.id, stored);
      if (fault?.afterCreate) {
        fault.times--;
        return send(res, fault.status, { message: fault.message, status: fault.status });
      }
      return send(res, 200, view(stored));
    }
    if (req.method === 'GET' && !id) {
      const ext = url.searchParams.get('external_id');
      const data = [...invoices.values()].filter((i) => !ext || i.external_id === ext).map(view);
      return send(res, 200, { page: 1, total_pages: 1, total_results: data.length, data });
    }
    const inv = id ? invoices.get(id) : undefined;
    if (!inv) return send(res, 404, { message: 'Invoice not found', status: 404 });
    if (req.method === 'GET' && format === 'xml') return send(res, 200, `<?xml version="1.0"?><cfdi:Comprobante xmlns:cfdi="http://www.sat.gob.mx/cfd/4" Version="4.0"><!-- ${inv.uuid} --></cfdi:Comprobante>`, 'application/xml');
    if (req.method === 'GET' && format === 'pdf') return send(res, 200, Buffer.from(`%PDF-1.4 stand-in ${inv.uuid}`), 'application/pdf');
    if (req.method === 'GET' && !format) return send(res, 200, view(inv));
    if (req.method === 'DELETE') {
      inv.cancel_motive = url.searchParams.get('motive');
      inv.substitution = url.searchParams.get('substitution');
      if (inv.cancel_motive === '01' && !inv.substitution) return send(res, 400, { message: 'El motivo 01 requiere el UUID de sustitución', status: 400 });
      if (inv.status === 'canceled') return send(res, 400, { message: 'La factura ya está cancelada', status: 400 });
      if (receiverMustAnswer) {
        inv.cancellation_status = 'pending';
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
    env: { FACTURAPI_KEY: key, FACTURAPI_URL: url },
    invoices,
    requests,
    /** The next `times` requests of `method` fail with `status`; `afterCreate`: a POST stamps, then answers the failure. */
    fault(f: { method: string; status: number; message?: string; afterCreate?: boolean; times?: number }) {
      faults.push({ message: 'Service unavailable', times: 1, ...f });
    },
    /** From now on a cancellation waits for the receiver (`answerForReceiver`), as one of a CFDI over 1,000 pesos does. */
    receiverMustAnswer(on = true) {
      receiverMustAnswer = on;
    },
    /** The receiver's answer to a pending cancellation, as Facturapi then shows it on the invoice. */
    answerForReceiver(providerId: string, answer: 'accepted' | 'rejected' | 'expired') {
      const inv = invoices.get(providerId);
      if (inv?.cancellation_status !== 'pending') throw new Error(`no pending cancellation for ${providerId}`);
      inv.cancellation_status = answer;
      if (answer === 'accepted') inv.status = 'canceled';
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
