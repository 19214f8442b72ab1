// The MCP server at {site_url}/api/mcp/v1 (contract: "MCP server"):
// JSON-RPC 2.0 over HTTP POST, stateless, JSON responses only (no SSE), any
// Mcp-Session-Id ignored and never issued. A small handler of our own rather
// than the SDK's transport: the contract's error codes, the quota counted on
// every tools/call and the HTTP-level 401 come out exactly as written. The SDK
// is the test client (test/mcp.test.ts).
import Router from '@koa/router';
import { isWellFormedSecret } from '../auth/keys.ts';
import { logError } from '../../lib/log.ts';
import { toStorableText } from '../../lib/storable-text.ts';
import { API_VERSION } from '../../lib/version.ts';
import { ApiError } from '../errors.ts';
import { authorizationOf, bearerChallengeError, bearerToken, originAllowed } from '../middleware/authenticate.ts';
import { limitUnauthenticated } from '../middleware/rate-limit.ts';
import { isDatabaseUnavailable } from '../middleware/request.ts';
import type { ApiContext, ApiContextExtension, ApiRouter, ApiState } from '../types.ts';
import { fieldErrors, jsonBodyProblem } from '../validation.ts';
import { ACCESS_PREFIX, verifyAccessToken } from '../oauth/store.ts';
import { describeTool, MCP_SCOPES, TOOLS, ToolFailure } from './tools.ts';

export const MCP_PATH = '/api/mcp/v1';
/** Newest first: a requested version we support is echoed, anything else gets the newest. */
export const PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;
const SERVER_INFO = { name: 'workspace-service', title: 'Workspace', version: API_VERSION };

/**
 * RFC 6750 §3.1's error code for a refused request: `invalid_token` when a bearer token came and was
 * refused, `invalid_request` when the Bearer header was malformed (`Bearer a b`), none when no bearer
 * credential came (no header, or another scheme).
 */

type Request = { jsonrpc: '2.0'; id?: string | number | null; method: string; params?: Record<string, unknown> | unknown[] };
/** Who calls: the company, its scopes, the activity label, and an API key's origin allow-list (empty for OAuth tokens). */
type Credential = { companyId: string; scopes: string[]; label: string; allowedOrigins: string[] };

/** A JSON-RPC id worth echoing: a string or a number (an invalid message's object or array id is answered with null). */
const echoable = (id: unknown) => (typeof id === 'string' || typeof id === 'number' ? id : null);
const rpcError = (id: unknown, code: number, message: string, data?: unknown) => ({ jsonrpc: '2.0', id: echoable(id), error: { code, message, ...(data === undefined ? {} : { data }) } });
const result = (id: unknown, value: unknown) => ({ jsonrpc: '2.0', id, result: value });

/**
 * A tool result carries its data twice (the protocol's `content` text and
 * `structuredContent`); serializing it once and reusing the text for both
 * halves the heaviest part of a call (docs/bench.md, "MCP vs REST").
 */
const SERIALIZED = new WeakMap<object, string>();

function toJson(response: object): string {
  const text = SERIALIZED.get(response);
  if (text === undefined) return JSON.stringify(response);
  const { id } = response as { id: unknown };
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text},"isError":false}}`;
}

/** The request body as text, at most `limit` bytes (JSON is UTF-8, RFC 8259); null past the limit. */
function readBody(ctx: ApiContext, limit: number): Promise<string | null> {
  if (Number(ctx.get('Content-Length')) > limit) return Promise.resolve(null);
  const req = ctx.req;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // A client gone before its body was read (it may have left while the credential was checked,
    // when nothing listened yet): no 'end' or 'error' will come.
    const gone = () => reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    const onClose = () => {
      if (!req.readableEnded) gone();
    };
    const done = (value: string | null) => {
      req.off('data', onData).off('end', onEnd).off('error', reject).off('close', onClose);
      if (value === null) req.pause();
      resolve(value);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) done(null);
      else chunks.push(chunk);
    };
    const onEnd = () => done(chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8'));
    if (req.destroyed && !req.readableEnded) return gone();
    req.on('data', onData).on('end', onEnd).on('error', reject).on('close', onClose);
  });
}

const MAX_BODY_BYTES = 256 * 1024;

/** The credential of an MCP request: an API key (service_sk_) or an OAuth access token (service_oat_), checked against its grant on every request. */
async function credentialOf(ctx: ApiContext): Promise<Credential | null> {
  const secret = bearerToken(authorizationOf(ctx));
  if (secret?.startsWith(ACCESS_PREFIX)) {
    const grant = await verifyAccessToken(ctx.deps.pool, secret);
    return grant ? { companyId: grant.companyId, scopes: grant.scopes, label: `oauth:${grant.grantId}`, allowedOrigins: [] } : null;
  }
  if (!secret || !isWellFormedSecret(secret)) return null;
  const key = await ctx.deps.keyCache.lookup(ctx.deps.pool, secret);
  return key ? { companyId: key.companyId, scopes: key.scopes, label: `key:${key.keyId}`, allowedOrigins: key.allowedOrigins } : null;
}

function isRequest(value: unknown): value is Request {
  const v = value as Request;
  return !!v && typeof v === 'object' && !Array.isArray(v) && v.jsonrpc === '2.0' && typeof v.method === 'string' &&
    // MCP: "Unlike base JSON-RPC, the ID MUST NOT be null."
    (v.id === undefined || typeof v.id === 'string' || typeof v.id === 'number') &&
    // JSON-RPC: params is structured, an object or an array (an array is a valid request with invalid params here).
    (v.params === undefined || (typeof v.params === 'object' && v.params !== null));
}

async function callTool(ctx: ApiContext, credential: Credential, id: unknown, params: Record<string, unknown>) {
  const started = performance.now();
  const name = String(params.name ?? '');
  // The activity log keeps what was called as text a column holds, at most 100 characters: the name is the
  // caller's (an unknown one can hold U+0000 or be any length).
  const recorded = name ? toStorableText(name.slice(0, 100)) : '(none)';
  const finish = async (code: number | null) =>
    ctx.deps.mcpActivity.record({ companyId: credential.companyId, credential: credential.label, tool: recorded, ok: code === null, errorCode: code, durationMs: performance.now() - started });
  // Every tools/call counts, failed ones included (contract).
  const quota = await ctx.deps.mcpQuota.consume(credential.companyId);
  if (!quota.ok) {
    await finish(-32004);
    return rpcError(id, -32004, quota.data.available ? 'Se agotó la cuota de llamadas MCP del ciclo.' : 'El plan de la empresa no incluye MCP.', quota.data);
  }
  if (typeof params.name !== 'string' || !params.name) {
    await finish(-32602);
    return rpcError(id, -32602, 'Parámetros inválidos: tools/call requiere name.');
  }
  const tool = TOOLS.find((t) => t.name === name);
  if (!tool) {
    await finish(-32002);
    return rpcError(id, -32002, `Herramienta desconocida: ${recorded}`);
  }
  if (!credential.scopes.includes(tool.scope)) {
    await finish(-32001);
    return rpcError(id, -32001, `La credencial no tiene el permiso ${tool.scope}.`, { required: tool.scope });
  }
  // Text no column can hold (U+0000, a lone surrogate), or nesting past 32 levels, is an invalid argument, not an internal error.
  const problems = jsonBodyProblem(params.arguments);
  // Absent arguments are none; `null` is no object, refused like `[1]` or `"x"`.
  const parsed = tool.input.safeParse(params.arguments === undefined ? {} : params.arguments);
  if (problems || !parsed.success) {
    await finish(-32602);
    return rpcError(id, -32602, 'Argumentos inválidos.', { errors: problems ?? fieldErrors(parsed.error!.issues, '', 'arguments') });
  }
  try {
    const structured = await tool.run({ db: ctx.deps.pool, totals: ctx.deps.totals, companyId: credential.companyId }, parsed.data);
    await finish(null);
    const text = JSON.stringify(structured);
    const response = result(id, { content: [{ type: 'text', text }], structuredContent: structured, isError: false });
    SERIALIZED.set(response, text);
    return response;
  } catch (error) {
    // A REST query refusing an argument (400: more than 100 brand values) is an argument problem.
    if (error instanceof ApiError && error.status === 400) {
      await finish(-32602);
      return rpcError(id, -32602, 'Argumentos inválidos.', { errors: { [error.parameter ?? 'arguments']: [error.message] } });
    }
    if (error instanceof ToolFailure || error instanceof ApiError) {
      await finish(-32003);
      return rpcError(id, -32003, error.message);
    }
    await finish(-32603);
    throw error;
  }
}

const KNOWN_METHODS = new Set(['initialize', 'ping', 'tools/list', 'tools/call']);

async function handle(ctx: ApiContext, credential: Credential, message: Request) {
  // Positional params are JSON-RPC, but every MCP method takes named ones: -32602 (a tools/call still counts, below).
  const positional = Array.isArray(message.params);
  const params = positional ? {} : ((message.params ?? {}) as Record<string, unknown>);
  if (positional && message.method !== 'tools/call' && KNOWN_METHODS.has(message.method)) {
    return rpcError(message.id, -32602, 'Parámetros inválidos: params debe ser un objeto.');
  }
  switch (message.method) {
    case 'initialize': {
      // MCP's InitializeRequest: protocolVersion, capabilities and clientInfo ({name, version}) are required.
      const problems = initializeProblems(params);
      if (problems.length) return rpcError(message.id, -32602, `Parámetros inválidos: ${problems.join('; ')}.`);
      const requested = params.protocolVersion as string;
      const version = (PROTOCOL_VERSIONS as readonly string[]).includes(requested) ? requested : PROTOCOL_VERSIONS[0];
      return result(message.id, {
        protocolVersion: version,
        capabilities: { tools: { listChanged: false } },
        serverInfo: SERVER_INFO,
        instructions: 'Herramientas de solo lectura sobre los datos de la empresa de la credencial.',
      });
    }
    case 'ping':
      return result(message.id, {});
    case 'tools/list':
      return result(message.id, { tools: TOOLS.filter((t) => credential.scopes.includes(t.scope)).map(describeTool) });
    case 'tools/call':
      return callTool(ctx, credential, message.id, params);
    default:
      return rpcError(message.id, -32601, `Método no soportado: ${message.method}`);
  }
}

/** What an `initialize` request's params lack, in MCP's schema (empty when they are whole). */
function initializeProblems(params: Record<string, unknown>): string[] {
  const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
  const problems: string[] = [];
  if (typeof params.protocolVersion !== 'string') problems.push('protocolVersion debe ser un texto (la versión del protocolo, p. ej. 2025-03-26)');
  if (!isObject(params.capabilities)) problems.push('capabilities debe ser un objeto');
  if (!isObject(params.clientInfo) || typeof params.clientInfo.name !== 'string' || typeof params.clientInfo.version !== 'string') {
    problems.push('clientInfo debe ser un objeto con name y version (textos)');
  }
  return problems;
}

/**
 * `handle` for a request sent alone, with a failure of ours answered as the JSON-RPC error the
 * contract names (-32603, Internal error, as a batch answers it in the call's place: handleBatch)
 * rather than as the REST API's HTTP 500, which an MCP client reads as a broken transport. The
 * database away (or the quota's count unwritable) stays HTTP 503 with Retry-After, as on every
 * route: the whole request may be sent again shortly.
 */
async function handleOrInternalError(ctx: ApiContext, credential: Credential, message: Request): Promise<object> {
  try {
    return await handle(ctx, credential, message);
  } catch (error) {
    if (isDatabaseUnavailable(error) || (error instanceof ApiError && error.status === 503)) throw error;
    logError('mcp.call_failed', error, { request_id: ctx.state.requestId, method: message.method });
    return rpcError(message.id, -32603, `Error interno. Referencia: ${ctx.state.requestId}.`);
  }
}

/** An https origin, or (outside production) a loopback http one. */
export function originAccepted(origin: string, production: boolean): boolean {
  try {
    const url = new URL(origin);
    if (url.protocol === 'https:') return true;
    return !production && url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  } catch {
    return false;
  }
}

const NOTIFICATIONS = new Set(['notifications/initialized', 'notifications/cancelled']);

/** Messages in one JSON-RPC batch: each tools/call in it counts against the quota like a call of its own. */
export const MAX_BATCH = 50;

/** A JSON-RPC response object (a client answering a request of ours; this server sends none): ignored. */
function isResponse(value: unknown): boolean {
  const v = value as { jsonrpc?: unknown; method?: unknown; result?: unknown; error?: unknown };
  return !!v && typeof v === 'object' && !Array.isArray(v) && v.jsonrpc === '2.0' && v.method === undefined && ('result' in v || 'error' in v);
}

/**
 * A JSON-RPC batch (an array body), which protocol version 2025-03-26 (the
 * contract's) requires a server to accept; 2025-06-18 removed batching, so a
 * batch is refused under a newer MCP-Protocol-Version. Requests are answered
 * in order, in one array; notifications and responses get no entry; a body
 * with nothing to answer is 202. `initialize` may not be batched (2025-03-26).
 * A single error object: the batch is refused as a whole.
 */
async function handleBatch(ctx: ApiContext, credential: Credential, messages: unknown[], version: string): Promise<object[] | object> {
  if (version && version !== '2025-03-26') return rpcError(null, -32600, `Los lotes JSON-RPC no existen en la versión ${version} del protocolo; envía un mensaje por petición.`);
  if (messages.length === 0) return rpcError(null, -32600, 'Petición inválida: lote vacío.');
  if (messages.length > MAX_BATCH) return rpcError(null, -32600, `Petición inválida: un lote admite hasta ${MAX_BATCH} mensajes.`);
  const responses: object[] = [];
  for (const message of messages) {
    if (isResponse(message)) continue;
    if (!isRequest(message)) {
      responses.push(rpcError((message as { id?: unknown })?.id, -32600, 'Petición inválida: falta jsonrpc "2.0" o la estructura no es válida.'));
    } else if (message.method === 'initialize') {
      if (message.id !== undefined) responses.push(rpcError(message.id, -32600, 'Petición inválida: initialize no puede ir en un lote.'));
    } else if (message.id !== undefined) {
      // One failing call answers -32603 in its place, whatever failed; the others (already counted) keep their answers.
      try {
        responses.push(await handle(ctx, credential, message));
      } catch (error) {
        logError('mcp.batch_call_failed', error, { request_id: ctx.state.requestId, method: message.method });
        responses.push(rpcError(message.id, -32603, 'Error interno.'));
      }
    }
  }
  return responses;
}

/**
 * CORS for browser clients (the MCP Inspector, web apps): an Origin the
 * DNS-rebinding check accepts is echoed and may read the answer, its 401
 * challenge included (discovery starts from WWW-Authenticate). The credential
 * is a bearer header, never a cookie, so no Allow-Credentials. A refused
 * Origin gets no CORS headers: the browser then hides the 403 as well.
 */
function allowOrigin(ctx: ApiContext): boolean {
  const origin = ctx.get('Origin');
  if (!origin || !originAccepted(origin, ctx.deps.config.isProduction)) return false;
  ctx.set('Access-Control-Allow-Origin', origin);
  ctx.vary('Origin');
  // What a browser client must read: the challenge, the session and version headers, and a refusal's
  // rate-limit headers (`Retry-After` on a 429, `RateLimit-*`), as the REST API exposes them.
  ctx.set('Access-Control-Expose-Headers', 'WWW-Authenticate, MCP-Protocol-Version, Mcp-Session-Id, X-Request-Id, X-Service-API-Version, X-Service-API-Released-At, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After');
  return true;
}

export function mcpRouter(): ApiRouter {
  const router: ApiRouter = new Router<ApiState, ApiContextExtension>();

  // The preflight of a browser client's POST (Authorization and Content-Type: application/json are not safelisted).
  router.options(MCP_PATH, async (ctx) => {
    if (ctx.get('Origin') && !allowOrigin(ctx)) {
      throw new ApiError('origin_not_allowed', 'El origen de la petición no está permitido para el servidor MCP.');
    }
    ctx.set('Allow', 'GET, POST, OPTIONS');
    ctx.set('Access-Control-Allow-Methods', 'GET, POST');
    ctx.set('Access-Control-Allow-Headers', 'Authorization, Content-Type, Accept, MCP-Protocol-Version, Mcp-Session-Id, Last-Event-ID');
    ctx.set('Access-Control-Max-Age', '600');
    ctx.status = 204;
  });

  // The unauthenticated handshake; a client asking for an event stream gets 405 (none is offered).
  router.get(MCP_PATH, async (ctx) => {
    allowOrigin(ctx);
    if ((ctx.get('Accept') || '').includes('text/event-stream')) {
      ctx.set('Allow', 'POST');
      ctx.status = 405;
      ctx.body = { error: 'method_not_allowed', message: 'Este servidor MCP no ofrece flujo SSE; usa POST.' };
      return;
    }
    ctx.body = { name: SERVER_INFO.name, version: SERVER_INFO.version, protocol_versions: PROTOCOL_VERSIONS, transport: 'streamable-http (JSON, sin SSE)' };
  });

  router.post(MCP_PATH, async (ctx, next) => {
    // DNS rebinding (the transport spec asks servers to check Origin): a page
    // on another site must not drive a local server from a browser. The
    // credential is a bearer header, never a cookie, so a browser cannot
    // attach it by itself; still, only https origins (and loopback outside
    // production) are accepted, and requests without Origin (every non-browser
    // client) pass.
    const origin = ctx.get('Origin');
    if (origin && !allowOrigin(ctx)) {
      throw new ApiError('origin_not_allowed', 'El origen de la petición no está permitido para el servidor MCP.');
    }
    // An invalid credential fails at HTTP level, before any JSON-RPC (contract).
    const credential = await credentialOf(ctx);
    if (!credential) {
      await limitUnauthenticated(ctx);
      // `scope`: what to ask for (MCP authorization, 2025-11-25: servers SHOULD name it here).
      ctx.set('WWW-Authenticate', `Bearer resource_metadata="${ctx.deps.config.siteUrl}/.well-known/oauth-protected-resource${MCP_PATH}", scope="${MCP_SCOPES.join(' ')}"${bearerChallengeError(authorizationOf(ctx))}`);
      throw new ApiError('invalid_key');
    }
    // A key pinned to origins (contract, Authentication 5) is "the same static key as REST" and is held
    // to its list here as there: Origin, else Referer, must name a listed host; a request carrying neither
    // is refused too (the list pins where the key may be used from).
    if (credential.allowedOrigins.length > 0 && !originAllowed(ctx, credential.allowedOrigins)) {
      throw new ApiError('origin_not_allowed');
    }
    ctx.state.mcpCredential = credential;
    await next();
  }, async (ctx) => {
    const credential = ctx.state.mcpCredential!;
    // Read and parsed here, whatever the declared type, so a bad body is -32700 either way (a small
    // reader rather than koa-body: its content negotiation cost more than the JSON.parse). An oversized
    // one is HTTP 413 with a -32600 naming the limit: nothing of it was parsed.
    let raw: unknown;
    try {
      const text = await readBody(ctx, MAX_BODY_BYTES);
      if (text === null) {
        ctx.status = 413;
        ctx.body = rpcError(null, -32600, `Petición inválida: el cuerpo pasa de ${MAX_BODY_BYTES / 1024} KB.`);
        return;
      }
      raw = JSON.parse(text);
    } catch {
      ctx.body = rpcError(null, -32700, 'Error de análisis: el cuerpo no es JSON.');
      return;
    }
    const version = ctx.get('MCP-Protocol-Version');
    const isInitialize = isRequest(raw) && raw.method === 'initialize';
    if (version && !isInitialize && !(PROTOCOL_VERSIONS as readonly string[]).includes(version)) {
      ctx.status = 400;
      ctx.body = rpcError(isRequest(raw) ? raw.id : null, -32600, `Versión de protocolo no soportada: ${version}`);
      return;
    }
    if (Array.isArray(raw)) {
      const answered = await handleBatch(ctx, credential, raw, version);
      if (Array.isArray(answered) && answered.length === 0) {
        ctx.body = null;
        ctx.status = 202;
        return;
      }
      ctx.set('Content-Type', 'application/json; charset=utf-8');
      ctx.body = Array.isArray(answered) ? `[${answered.map(toJson).join(',')}]` : answered;
      return;
    }
    if (isResponse(raw)) {
      // A response from the client (this server sends no requests, so nothing waits on it):
      // accepted with 202 and no body, as the transport says and as inside a batch.
      ctx.body = null;
      ctx.status = 202;
      return;
    }
    if (!isRequest(raw)) {
      ctx.body = rpcError((raw as { id?: unknown })?.id, -32600, 'Petición inválida: falta jsonrpc "2.0" o la estructura no es válida.');
      return;
    }
    if (raw.id === undefined) {
      // A notification (or a request without id): accepted, no body.
      // Body explicitly empty first (Koa would otherwise write "Accepted"), then the status.
      ctx.body = null;
      ctx.status = 202;
      if (!NOTIFICATIONS.has(raw.method)) ctx.set('X-MCP-Ignored', 'true');
      return;
    }
    const response = toJson(await handleOrInternalError(ctx, credential, raw));
    ctx.set('Content-Type', 'application/json; charset=utf-8');
    ctx.body = response;
  });
  return router;
}

