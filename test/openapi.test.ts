// The OpenAPI document is generated from the router table, and the reference
// page is served by the app itself with no external resources.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describeTool, TOOLS } from '../api/mcp/tools.ts';
import { apiRoutes } from '../api/routes/index.ts';
import { EMITTED_EVENT_NAMES } from '../lib/webhook-events.ts';
import { client, seedTenant, startTestApp, type TestApp } from './helpers/app.ts';

describe('OpenAPI and reference page', () => {
  let app: TestApp;
  before(async () => {
    app = await startTestApp();
  });
  after(() => app.close());

  test('openapi.json is OpenAPI 3.1, version 1.0.05, public, and lists every route with its scope', async () => {
    const res = await fetch(`${app.baseUrl}/openapi.json`);
    assert.equal(res.status, 200);
    const doc = (await res.json()) as any;
    assert.equal(doc.openapi, '3.1.0');
    assert.equal(doc.info.version, '1.0.05');
    assert.equal(doc.servers[0].url, app.config.baseUrl);
    for (const route of apiRoutes) {
      const op = doc.paths[route.path.replace(/:(\w+)/g, '{$1}')]?.[route.method.toLowerCase()];
      assert.ok(op, `${route.method} ${route.path} is documented`);
      if (route.session) {
        assert.equal(op['x-permission'], route.session === 'signed-in' ? undefined : route.session, `${route.path} names its permission`);
        assert.deepEqual(op.security, [{ userSession: [] }]);
      } else {
        assert.equal(op['x-scope'], route.scope);
      }
      assert.ok(op.responses[String(route.status)], `${route.method} ${route.path} documents its success status`);
    }
  });

  test('openapi.json is sent gzipped to a client that takes gzip, plain to one that does not, and revalidated by its ETag (304)', async () => {
    const plain = await new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      http.get(`${app.baseUrl}/openapi.json`, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c)).on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      }).on('error', reject);
    });
    assert.equal(plain.status, 200);
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.match(plain.headers['content-type']!, /^application\/json/);
    const doc = JSON.parse(plain.body.toString());
    assert.equal(doc.openapi, '3.1.0');
    const etag = plain.headers.etag!;
    assert.match(etag, /^"[\w-]+"$/);
    assert.equal(plain.headers['cache-control'], 'no-cache');
    assert.match(plain.headers.vary!, /Accept-Encoding/);

    const zipped = await fetch(`${app.baseUrl}/openapi.json`, { headers: { 'accept-encoding': 'gzip' } });
    assert.equal(zipped.headers.get('content-encoding'), 'gzip');
    // Another representation, another strong validator (RFC 9110 §8.8.3): a cache never mixes the two bodies.
    assert.equal(zipped.headers.get('etag'), `${etag.slice(0, -1)}-gzip"`);
    assert.deepEqual(await zipped.json(), doc, 'the same document');
    assert.ok(Number(zipped.headers.get('content-length')) < plain.body.length / 5, 'a fifth of the size or less');

    // (node:http: fetch adds `Cache-Control: no-cache` to a conditional request, asking for the whole document.)
    const again = await new Promise<{ status: number; length: number }>((resolve, reject) => {
      http.get(`${app.baseUrl}/openapi.json`, { headers: { 'if-none-match': etag } }, (res) => {
        let length = 0;
        res.on('data', (c) => (length += c.length)).on('end', () => resolve({ status: res.statusCode!, length }));
      }).on('error', reject);
    });
    assert.deepEqual(again, { status: 304, length: 0 });
    // The plain body's ETag does not validate the gzipped one, nor the other way round.
    const crossed = await new Promise<number>((resolve, reject) => {
      http.get(`${app.baseUrl}/openapi.json`, { headers: { 'if-none-match': etag, 'accept-encoding': 'gzip' } }, (res) => {
        res.resume().on('end', () => resolve(res.statusCode!));
      }).on('error', reject);
    });
    assert.equal(crossed, 200);
  });

  test('the user session sign-in and the webhook events the service emits are described', async () => {
    const doc = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as any;
    assert.deepEqual(doc.paths['/user/sessions'].post.security, []);
    assert.ok(doc.paths['/user/sessions/current'].delete);
    // Production answers plain HTTP with 426 there as everywhere; a fault of ours is a 500.
    for (const op of [doc.paths['/user/sessions'].post, doc.paths['/user/sessions/current'].delete]) {
      assert.ok(op.responses['426'] && op.responses['500'], op.operationId);
    }
    assert.equal(doc.components.securitySchemes.userSession.scheme, 'bearer');
    // The single-delivery read always carries the signed body and the receiver's answer (contract); the list does not.
    const ref = (op: any) => op.responses['200'].content['application/json'].schema;
    const schemaOf = (s: any) => (s.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s);
    const one = schemaOf(schemaOf(ref(doc.paths['/webhook-endpoints/{id}/deliveries/{delivery_id}'].get)).properties.data);
    assert.ok(one.required.includes('payload') && one.required.includes('response_body'), JSON.stringify(one.required));
    // Named components get the instants' format too.
    assert.equal(doc.components.schemas.WebhookEndpointWithSecret.properties.created_at.format, 'date-time');
    assert.deepEqual(Object.keys(doc.webhooks).sort(), [...EMITTED_EVENT_NAMES].sort());
    assert.deepEqual(doc.components.schemas.WebhookEvent.required, ['id', 'evento', 'event', 'created_at', 'api_version', 'data']);
    const headers = doc.webhooks['customer.created'].post.parameters.map((p: any) => p.name);
    assert.deepEqual(headers, ['X-Service-Signature', 'X-Service-Event', 'X-Service-Event-Id', 'X-Service-Delivery', 'X-Service-Attempt']);
  });

  test('what a client validates against the document, the API accepts: page up to 200, offsets up to ±15:59; the session routes\' headers', async () => {
    const doc = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as any;
    const page = doc.paths['/customers'].get.parameters.find((p: any) => p.name === 'page');
    assert.deepEqual([page.schema.minimum, page.schema.maximum], [1, 200]);
    const startsAt = doc.paths['/calendar/events'].post.requestBody.content['application/json'].schema.properties.data.properties.starts_at;
    const instant = new RegExp(startsAt.pattern);
    for (const ok of ['2026-12-01T15:00:00Z', '2026-12-01T15:00:00+15:59', '2026-12-01T15:00:00-06:00']) assert.match(ok, instant);
    for (const bad of ['2026-12-01T15:00:00+16:00', '2026-12-01T15:00:00-23:59', '2026-12-01T15:00:00']) assert.doesNotMatch(bad, instant);
    // The API answers the same: +16:00 is refused, +15:59 is not refused for its offset.
    const t = await seedTenant(app.pool);
    const api = client(app.baseUrl, t.key);
    const at = (offset: string) => api.post('/calendar/events', { data: { user_id: t.ownerId, title: 'Desfase', starts_at: `2026-12-01T15:00:00${offset}`, ends_at: '2026-12-02T15:00:00Z' } });
    assert.equal((await at('+16:00')).status, 422);
    assert.equal((await at('+15:59')).status, 201);
    const signIn = doc.paths['/user/sessions'].post.responses['401'].headers;
    assert.ok(signIn['WWW-Authenticate'] && !signIn['RateLimit-Limit'], 'sign-in is outside the rate limit');
    const signOut = doc.paths['/user/sessions/current'].delete.responses;
    assert.ok(signOut['204'].headers['RateLimit-Limit'] && signOut['401'].headers['WWW-Authenticate'] && signOut['429']);
  });

  test('published patterns are portable (no lookaround: RE2-style validators refuse it) and still refuse the years the API refuses', async () => {
    const doc = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as any;
    const patterns: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        for (const [key, value] of Object.entries(node)) {
          if (key === 'pattern' && typeof value === 'string') patterns.push(value);
          else walk(value);
        }
      }
    };
    walk(doc);
    walk(TOOLS.map((tool) => describeTool(tool)));
    assert.ok(patterns.length > 20, `${patterns.length} patterns found`);
    assert.deepEqual(patterns.filter((p) => /\(\?<?[=!]/.test(p)), []);
    // The year bounds, now prefix patterns beside zod's (allOf), as a validator applies them all.
    const ajv = new Ajv2020({ strict: false });
    const day = doc.paths['/reports/income-statement'].get.parameters.find((p: any) => p.name === 'start_on').schema;
    const valid = ajv.compile(day);
    assert.deepEqual(['1899-12-31', '1900-01-01', '2026-02-29', '2028-02-29'].map((d) => valid(d)), [false, true, false, true]);
    const window = doc.paths['/calendar/events'].get.parameters.find((p: any) => p.name === 'to').schema;
    const validWindow = ajv.compile(window);
    assert.deepEqual(['9999-12-31', '9999-12-30', '0000-01-01T00:00:00Z', '0001-01-01T00:00:00Z'].map((d) => validWindow(d)), [false, true, false, true]);
  });

  test('a create that may answer an existing record (metadata.external_ref) documents its 200 beside its 201, with the same body', async () => {
    const doc = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as any;
    for (const path of ['/incomes', '/expenses', '/sales', '/recurring-transactions']) {
      const responses = doc.paths[path].post.responses;
      assert.ok(responses['201'] && responses['200'], `${path}: ${Object.keys(responses)}`);
      assert.deepEqual(responses['200'].content, responses['201'].content, path);
      assert.match(responses['200'].description, /external_ref/);
    }
    assert.equal(doc.paths['/customers'].post.responses['200'], undefined, 'only where the contract says so');
    // POST /automations never reads its body: no Idempotency-Key, and only not_supported_yet under 422.
    const automations = doc.paths['/automations'].post;
    assert.equal((automations.parameters ?? []).some((p: any) => p.name === 'Idempotency-Key'), false);
    assert.equal(automations.responses['422'].description, 'not_supported_yet');
  });

  test('request schemas come from the validators (required fields, enums, strictness)', async () => {
    const doc = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as any;
    const create = doc.paths['/customers'].post.requestBody.content['application/json'];
    assert.deepEqual(create.schema.properties.data.required, ['name']);
    assert.equal(create.schema.properties.data.additionalProperties, false);
    assert.ok(create.example.data.name);
    const lead = doc.paths['/leads'].post.requestBody.content['application/json'].schema.properties.data;
    assert.deepEqual(lead.properties.status.enum, ['new', 'contacted', 'qualified', 'unqualified', 'converted']);
    const list = doc.paths['/customers'].get;
    const names = list.parameters.map((p: any) => p.name);
    for (const p of ['limit', 'starting_after', 'ending_before', 'page', 'include_total', 'include_filtered_total', 'q', 'search']) assert.ok(names.includes(p), p);
    assert.ok(doc.paths['/customers'].post.responses['422']);
    assert.deepEqual(doc.components.schemas.Error.required, ['error', 'message']);
    const post = doc.paths['/customers'].post.responses;
    for (const h of ['X-Request-Id', 'X-Service-API-Version', 'X-Service-API-Released-At', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Idempotent-Replayed']) {
      assert.ok(post['201'].headers[h], `201 documents ${h}`);
    }
    assert.ok(post['429'].headers['Retry-After']);
    assert.match(post['400'].description, /invalid_idempotency_key/);
    assert.match(post['426'].description, /https_required/);
    // What the validators take or refuse beyond types is in the document too.
    assert.match('eku9003173c9', new RegExp(create.schema.properties.data.properties.tax_id.anyOf?.[0]?.pattern ?? create.schema.properties.data.properties.tax_id.pattern), 'a lowercase RFC, which the API takes');
    const income = doc.paths['/incomes'].post.requestBody.content['application/json'].schema.properties.data;
    assert.equal(income.properties.metadata.maxProperties, 50);
    const endpoint = doc.paths['/webhook-endpoints'].post.requestBody.content['application/json'].schema.properties.data;
    assert.equal(endpoint.properties.url.format, 'uri');
    const choices = endpoint.properties.enabled_events.items.enum;
    assert.ok(choices.includes('*') && choices.includes('customer.*') && choices.includes('customer.created') && !choices.includes('nope.event'));
  });

  test('files, reports, headers and what the validators leave loose are documented as clients meet them', async () => {
    const doc = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as any;
    // The invoice's XML and PDF are files, not JSON.
    for (const [format, type] of [['xml', 'application/xml'], ['pdf', 'application/pdf']]) {
      const ok = doc.paths[`/invoices/{id}/${format}`].get.responses['200'];
      assert.deepEqual(Object.keys(ok.content), [type], format);
      assert.ok(ok.headers['Content-Disposition'], `${format} documents Content-Disposition`);
    }
    // The reports describe their bodies.
    const statement = doc.paths['/reports/income-statement'].get.responses['200'].content['application/json'].schema;
    const name = statement.properties.data.$ref.split('/').at(-1);
    assert.ok(doc.components.schemas[name].properties.currencies, `${name} has currencies`);
    // The contract's four required fields of an event are required, though the handler checks them itself.
    const event = doc.paths['/calendar/events'].post.requestBody.content['application/json'].schema.properties.data;
    assert.deepEqual([...event.required].sort(), ['ends_at', 'starts_at', 'title', 'user_id']);
    // metadata is a flat object.
    const income = doc.paths['/incomes'].post.requestBody.content['application/json'].schema.properties.data;
    assert.equal(income.properties.metadata.type, 'object');
    // Every answer carries the version headers, a 204 too; a 401 its WWW-Authenticate; a 426 its Upgrade and no rate limit.
    const deleted = doc.paths['/customers/{id}'].delete.responses;
    assert.ok(deleted['204'].headers['X-Service-API-Version']);
    assert.ok(deleted['401'].headers['WWW-Authenticate']);
    assert.ok(deleted['426'].headers.Upgrade);
    assert.equal(deleted['426'].headers['RateLimit-Limit'], undefined);
    assert.ok(doc.paths['/user/sessions'].post.responses['429'].headers['Retry-After']);
    // The secret shown once is required where it is shown (create, rotate), absent from reads' requirements.
    const withSecret = doc.components.schemas.WebhookEndpointWithSecret;
    assert.ok(withSecret.required.includes('secret'));
    assert.equal(doc.components.schemas.WebhookEndpoint.required.includes('secret'), false);
    assert.equal(doc.components.schemas.WebhookEndpoint.properties.secret, undefined, 'a read never carries the secret');
    assert.equal(doc.paths['/webhook-endpoints/{id}/rotate-secret'].post.responses['200'].content['application/json'].schema.properties.data.$ref, '#/components/schemas/WebhookEndpointWithSecret');
    // An optional body (an action): none, `{}` or `{data: {}}`, so `data` is not required where a body is not.
    const rotate = doc.paths['/webhook-endpoints/{id}/rotate-secret'].post.requestBody;
    assert.equal(rotate.required, false);
    assert.equal(rotate.content['application/json'].schema.required, undefined);
    assert.deepEqual(doc.paths['/customers'].post.requestBody.content['application/json'].schema.required, ['data']);
    // Answers' instants and days have their formats.
    const customer = doc.components.schemas.Customer.properties;
    assert.equal(customer.created_at.format, 'date-time');
    const recurring = doc.paths['/recurring-transactions/{id}'].get.responses['200'].content['application/json'].schema.properties.data.$ref.split('/').at(-1);
    assert.equal(doc.components.schemas[recurring].properties.starts_on.format, 'date');
    // What the server checks is in the schemas a client validates against.
    const product = doc.paths['/products'].post.requestBody.content['application/json'].schema.properties.data.properties;
    assert.equal(product.prices_cents.minProperties, 1);
    assert.equal(product.prices_cents.propertyNames.pattern, '^[a-z]{3}$');
    assert.equal(product.brand_id.anyOf?.[0]?.pattern ?? product.brand_id.pattern, '^[0-9a-f]{24}$');
    assert.equal(doc.components.schemas.Product.properties.category_name.deprecated, true);
    const account = doc.paths['/accounts'].post.requestBody.content['application/json'].schema.properties.data.properties;
    assert.equal(account.currency.pattern, '^[a-z]{3}$');
    const prefs = doc.components.schemas.User.properties.settings_preferences.properties;
    assert.deepEqual(prefs.theme.anyOf?.[0]?.enum ?? prefs.theme.enum, ['light', 'dark', 'schedule']);
    // Errors: each status names its own codes; a write's stored errors may be replays; a fault of ours is documented.
    const createCustomer = doc.paths['/customers'].post.responses;
    assert.ok(doc.paths['/customers/{id}'].patch.responses['404'].headers['Idempotent-Replayed'], 'a handler\'s 404 is stored and replayed');
    assert.ok(doc.paths['/users'].post.responses['403'].headers['Idempotent-Replayed'], 'owner_required is stored and replayed');
    assert.equal(createCustomer['422'].headers['Idempotent-Replayed'], undefined, 'the input\'s own errors are not stored');
    assert.equal(createCustomer['401'].headers['Idempotent-Replayed'], undefined, 'answered before the key is read');
    assert.ok(createCustomer['400'].content['application/json'].schema.allOf[1].properties.error.enum.includes('invalid_request'), 'a body whose framing broke');
    assert.deepEqual(createCustomer['422'].content['application/json'].schema.allOf[1].properties.error.enum.sort(), ['idempotency_key_reused', 'parameter_missing', 'validation_failed']);
    assert.deepEqual(createCustomer['500'].content['application/json'].schema.allOf[1].properties.error.enum, ['internal_error']);
  });

  test('what clients generate types from: every *_cents is an integer, closed sets read back as enums, no code only wsctl answers', async () => {
    const doc = (await (await fetch(`${app.baseUrl}/openapi.json`)).json()) as any;
    // Money is integer minor units (contract): a Go or Java client must not get a float for any of it, a sum included.
    const notInteger: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (!node || typeof node !== 'object') return;
      for (const [key, value] of Object.entries(node)) {
        if (key === 'properties' && value && typeof value === 'object') {
          for (const [name, schema] of Object.entries(value as Record<string, any>)) {
            if (!name.endsWith('_cents')) continue;
            const types = [schema.type, ...(schema.anyOf ?? []).map((s: any) => s.type), schema.additionalProperties?.type].flat().filter(Boolean);
            if (!types.includes('integer')) notInteger.push(`${path}.${name}: ${JSON.stringify(types)}`);
          }
        }
        walk(value, `${path}.${key}`);
      }
    };
    walk(doc, '');
    assert.deepEqual(notInteger, []);
    assert.equal(doc.components.schemas.Account.properties.balance_cents.type, 'integer');
    assert.equal(doc.components.schemas.Account.properties.balance_cents.maximum, undefined, 'a sum is not capped at 2^53 − 1');
    // What the server writes from a closed set is published as that set.
    const invoice = doc.components.schemas.Invoice.properties;
    assert.ok(invoice.payment_form.enum.includes('03') && invoice.cfdi_use.enum.includes('G03'));
    assert.deepEqual(invoice.payment_complements.items.properties.status.enum, ['pending', 'valid', 'failed']);
    assert.ok(doc.components.schemas.Sale.properties.payments.items.properties.payment_form.enum.includes('99'));
    assert.ok(doc.components.schemas.WebhookEndpoint.properties.enabled_events.items.enum.includes('customer.created'));
    assert.deepEqual(doc.components.schemas.Company.properties.enabled_modules.items.enum, ['invoicing']);
    // A rule the schema cannot say is in the description.
    const line = doc.paths['/sales'].post.requestBody.content['application/json'].schema.properties.data.properties.line_items.items.properties;
    assert.match(line.quantity.description, /tres decimales/);
    // `conflict` is answered by the admin API only.
    assert.equal(doc.components.schemas.Error.properties.error.enum.includes('conflict'), false);
    assert.ok(doc.components.schemas.Error.properties.error.enum.includes('not_found'));
  });

  test('the reference page renders every operation and loads nothing from elsewhere', async () => {
    const res = await fetch(`${app.baseUrl}/docs`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/html/);
    assert.match(res.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/, 'not framed by another site');
    const html = await res.text();
    assert.doesNotMatch(html, /<script|<link|https?:\/\/(?!127\.0\.0\.1|localhost)[^"'\s<]*\.(js|css)/i);
    for (const route of apiRoutes) assert.ok(html.includes(route.path.replace(/:(\w+)/g, '{$1}')), route.path);
  });
});
