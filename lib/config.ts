// The one place that reads the environment (12-factor). Every variable is
// documented here with its default; a bad value stops start-up with a clear
// message instead of surfacing later as a confusing runtime error.
import { randomBytes } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** The bucket of BLOB_STORE=s3 (storage/s3.ts). */
export type S3Config = {
  /** Origin of the service, e.g. https://s3.us-east-1.amazonaws.com or http://127.0.0.1:9000. */
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** `endpoint/bucket/key` (MinIO, most self-hosted services) rather than `bucket.endpoint/key` (AWS). */
  pathStyle: boolean;
  /** Prepended to every object key (e.g. `workspace/`): several deployments can share a bucket. */
  prefix: string;
};

export type Config = {
  env: 'development' | 'production' | 'test';
  isProduction: boolean;
  port: number;
  /** Unset: embedded PostgreSQL under dataDir. */
  databaseUrl: string | undefined;
  dataDir: string;
  siteUrl: string;
  /** SITE_URL was set, not defaulted to localhost and PORT (always, in production). */
  siteUrlGiven: boolean;
  baseUrl: string;
  bookingUrl: string;
  /** ADMIN_TOKEN; in development without it, DATA_DIR/admin-token (generated once); unset in tests without it. */
  adminToken: string | undefined;
  smtpUrl: string | undefined;
  /** Requests per minute per API key (contract: 600). */
  rateLimitPerMinute: number;
  /** How long a rate-limit lease may take before the per-process window answers instead. */
  rateLimitLeaseTimeoutMs: number;
  /**
   * Proxies in front of the web process whose X-Forwarded-* entries are
   * trusted (TRUST_PROXY_HOPS, default 1: the platform router, which appends
   * the client's address). Only that many entries, counted from the right, are
   * read: the leftmost ones are whatever the client sent. 0: no proxy, the
   * socket's address is the client's.
   */
  trustProxyHops: number;
  /** Bearer token of GET /metrics; unset: the route does not exist (METRICS_TOKEN). */
  metricsToken: string | undefined;
  /** Upload bodies (form submissions with files) read at once per web process; more get 503 (UPLOAD_CONCURRENCY). */
  uploadConcurrency: number;
  /** LOG_LEVEL=silent drops the event lines on stdout, the per-request one included (tests, benchmarks); errors on stderr stay. */
  logLevel: 'info' | 'silent';
  /**
   * The SSRF guard on webhook targets (lib/ssrf.ts), on in every environment:
   * a staging host without it lets a tenant point a webhook at 10.x and read
   * the answer back from the delivery history. ALLOW_PRIVATE_WEBHOOK_TARGETS=1
   * turns it off (npm start, tests with local receivers); production refuses it.
   */
  ssrfGuard: boolean;
  /**
   * PostgreSQL connections this process may hold in total
   * (PG_MAX_CONNECTIONS; PG_POOL_MAX is read as a deprecated alias), split
   * among its pools by lib/connection-budget.ts.
   */
  pgMaxConnections: number;
  /** Where pgMaxConnections came from: PG_MAX_CONNECTIONS, or PG_POOL_MAX (its deprecated alias), for messages. */
  pgMaxConnectionsVariable: 'PG_MAX_CONNECTIONS' | 'PG_POOL_MAX';
  /**
   * Key of the bookers' manage links (BOOKING_TOKEN_KEY, at least 32
   * characters; required in production). A manage token is an HMAC of the
   * booking id under it, so the database holds only digests and a leaked
   * database alone opens no booking. Unset outside production: a key
   * generated once into DATA_DIR/booking-token-key.
   */
  bookingTokenKey: string;
  /**
   * Google Calendar (docs/calendar-sync.md): null unless GOOGLE_CLIENT_ID and
   * GOOGLE_CLIENT_SECRET are set. The base URLs default to Google's and are
   * settable so tests (and proxies) can point the client elsewhere.
   */
  google: { clientId: string; clientSecret: string; apiUrl: string; tokenUrl: string; authUrl: string; revokeUrl: string } | null;
  /**
   * Key of secrets stored in the database (ENCRYPTION_KEY, at least 32
   * characters): Google refresh tokens, and the CSD keys and passwords of
   * invoicing. Required in production once Google or invoicing is
   * configured; otherwise generated once into DATA_DIR/encryption-key.
   */
  encryptionKey: string;
  /**
   * Who stamps tax invoices (docs/invoicing.md): Facturapi when FACTURAPI_KEY
   * (the account's User Key, `sk_user_…`: each company is an organization of
   * that account) is set (FACTURAPI_URL, default https://www.facturapi.io/v2;
   * FACTURAPI_MODE `live` (default) or `test`, which organization keys the
   * invoices are sent with), otherwise the development provider, whose
   * documents say they are not valid for tax.
   */
  facturapi: { key: string; url: string; mode: 'live' | 'test' } | null;
  /** The platform's name for this process (Heroku's DYNO, e.g. web.1): part of every connection's application_name. */
  dyno: string | undefined;
  /**
   * Where new blobs go (storage/blobs.ts): null for PostgreSQL (BLOB_STORE
   * unset or `postgres`, the zero-setup default), the bucket for
   * BLOB_STORE=s3 (S3_BUCKET, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY required;
   * S3_REGION default us-east-1; S3_ENDPOINT default AWS's endpoint of the
   * region; S3_FORCE_PATH_STYLE default 1 with S3_ENDPOINT, 0 without;
   * S3_PREFIX default empty). docs/operations.md, "Blob storage".
   */
  s3: S3Config | null;
};

/** Default connection budget: web + worker (8 each) + release (3) fit the smallest Heroku plan (20). */
export const DEFAULT_PG_MAX_CONNECTIONS = 8;

/** A setting the process cannot start with; `loadConfigOrExit` prints it as one line. */
export class ConfigError extends Error {}

function fail(message: string): never {
  throw new ConfigError(`Configuración inválida: ${message}`);
}

function int(name: string, value: string | undefined, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined || value === '') return fallback;
  // Decimal digits only: Number() would also read "0x1000", "1e3" and " 42".
  const n = /^\d{1,15}$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isInteger(n) || n < min || n > max) {
    fail(`${name} debe ser un entero ${max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `entre ${min} y ${max}`} (recibido "${value}")`);
  }
  return n;
}

function flag(name: string, value: string | undefined): boolean {
  if (value === undefined || value === '') return false;
  const v = value.toLowerCase();
  if (v === '1' || v === 'true' || v === 'yes' || v === 'on') return true;
  if (v === '0' || v === 'false' || v === 'no' || v === 'off') return false;
  fail(`${name} debe ser 1 o 0 (recibido "${value}")`);
}

/**
 * A URL as an error message may show it: its credentials (the user and password before `@`, a
 * `password=` parameter) replaced by `***`. The message goes to stderr, which the platform keeps in its
 * logs; a DATABASE_URL with a typo in its port must not put the database's password there.
 */
export function withoutCredentials(value: string): string {
  return value.replace(/^([^:/?#]+:\/\/)[^/?#]*@/, '$1***@').replace(/([?&]password=)[^&#]*/gi, '$1***');
}

/** An absolute URL with one of `protocols` (http and https unless said), without its trailing slash. */
function url(name: string, value: string, protocols = ['http:', 'https:']): string {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    fail(`${name} no es una URL válida (recibido "${withoutCredentials(value)}")`);
  }
  if (!protocols.includes(parsed.protocol)) fail(`${name} debe empezar con ${protocols.map((p) => `${p}//`).join(' o ')} (recibido "${withoutCredentials(value)}")`);
  return parsed.toString().replace(/\/$/, '');
}

/**
 * BOOKING_URL: on a host of its own, any path (the web process serves that host's paths as the booking
 * pages); on SITE_URL's host, only SITE_URL/book, where the pages are: any other path there would put
 * dead links in every public_url, manage_url and booker email.
 */
function bookingUrl(value: string | undefined, siteUrl: string): string {
  const booking = url('BOOKING_URL', value || `${siteUrl}/book`);
  const parsed = new URL(booking);
  if (parsed.search || parsed.hash) fail(`BOOKING_URL es la base de los enlaces de reservas: sin ?consulta ni #fragmento (recibido "${withoutCredentials(booking)}")`);
  const site = new URL(siteUrl);
  if (parsed.host === site.host && booking !== `${siteUrl}/book`) {
    fail(`BOOKING_URL en el host de SITE_URL debe ser ${siteUrl}/book, donde se sirven las páginas de reservas; para otra ruta, dale un host propio (recibido "${withoutCredentials(booking)}")`);
  }
  return booking;
}

/** A development secret kept under DATA_DIR: read, or created once (two processes racing both end with the file's value). */
function developmentSecret(dataDir: string, name: string): string {
  const file = path.join(dataDir, name);
  try {
    return readFileSync(file, 'utf8').trim();
  } catch {
    // A DATA_DIR under a file (ENOTDIR) or where this user may not write (EACCES): one line, as every setting.
    try {
      mkdirSync(dataDir, { recursive: true });
    } catch (error) {
      fail(`DATA_DIR no se puede crear (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): "${dataDir}"`);
    }
    // Written whole under another name, then linked into place (link fails if the name exists): a
    // process starting at the same moment reads the whole secret or none, never an empty file.
    const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    // A DATA_DIR that exists but this user may not write (EACCES, EROFS): one line too.
    const unwritable = (error: unknown) =>
      fail(`DATA_DIR no admite escritura (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): "${dataDir}"; hace falta para guardar ${name}`);
    try {
      writeFileSync(draft, randomBytes(32).toString('base64url'), { flag: 'wx', mode: 0o600 });
    } catch (error) {
      unwritable(error);
    }
    try {
      linkSync(draft, file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') unwritable(error);
    } finally {
      unlinkSync(draft);
    }
    return readFileSync(file, 'utf8').trim();
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const nodeEnv = env.NODE_ENV || 'development'; // empty is unset, as for every other variable
  if (nodeEnv !== 'development' && nodeEnv !== 'production' && nodeEnv !== 'test') {
    fail(`NODE_ENV debe ser development, production o test (recibido "${nodeEnv}")`);
  }
  const port = int('PORT', env.PORT, 3000);
  if (port > 65535) fail(`PORT debe ser un entero entre 0 y 65535 (recibido "${env.PORT}")`);
  const isProduction = nodeEnv === 'production';
  // Every absolute URL the service hands out or stores (media, booking links, OAuth metadata) starts
  // here; in production the default (this process's own port on localhost) is never the public root,
  // and a worker, which has no PORT, would store URLs on another port than the web's.
  if (isProduction && !env.SITE_URL) fail('SITE_URL es obligatoria en producción (la raíz pública, por ejemplo https://api.example.com)');
  const siteUrl = url('SITE_URL', env.SITE_URL || `http://localhost:${port}`);
  // The root every other URL is built on by appending a path (`${siteUrl}/api/v1`): a path, query or fragment would end up inside them.
  const root = new URL(siteUrl);
  if (root.pathname !== '/' || root.search || root.hash) {
    fail(`SITE_URL es una raíz: esquema, host y puerto, sin ruta, consulta ni fragmento (recibido "${withoutCredentials(env.SITE_URL ?? '')}")`);
  }
  // Production answers plain HTTP with 426: every URL handed out (OAuth metadata, media, booking
  // pages) must be one that works, and RFC 8414 wants an https issuer.
  if (isProduction && root.protocol !== 'https:') fail(`SITE_URL debe empezar con https:// en producción (recibido "${withoutCredentials(env.SITE_URL ?? '')}")`);
  if (isProduction && env.BOOKING_URL && !/^https:\/\//i.test(env.BOOKING_URL)) fail(`BOOKING_URL debe empezar con https:// en producción (recibido "${withoutCredentials(env.BOOKING_URL)}")`);
  if (isProduction && !env.DATABASE_URL) fail('DATABASE_URL es obligatoria en producción');
  // node-postgres would read a malformed value as a host name and fail later with ENOTFOUND.
  if (env.DATABASE_URL) url('DATABASE_URL', env.DATABASE_URL, ['postgres:', 'postgresql:', 'socket:']);
  if (isProduction && !env.ADMIN_TOKEN) fail('ADMIN_TOKEN es obligatoria en producción');
  if (env.ADMIN_TOKEN !== undefined && env.ADMIN_TOKEN.length > 0 && env.ADMIN_TOKEN.length < 16) {
    fail('ADMIN_TOKEN debe tener al menos 16 caracteres');
  }
  const allowPrivateTargets = flag('ALLOW_PRIVATE_WEBHOOK_TARGETS', env.ALLOW_PRIVATE_WEBHOOK_TARGETS);
  if (isProduction && allowPrivateTargets) {
    fail(
      'ALLOW_PRIVATE_WEBHOOK_TARGETS no se admite en producción: sin el guard SSRF un cliente puede apuntar un webhook ' +
        'a la red interna (10.x, 169.254.169.254) y leer la respuesta en el historial de entregas',
    );
  }
  const pgMaxConnections = env.PG_MAX_CONNECTIONS
    ? int('PG_MAX_CONNECTIONS', env.PG_MAX_CONNECTIONS, DEFAULT_PG_MAX_CONNECTIONS, 1)
    : int('PG_POOL_MAX', env.PG_POOL_MAX, DEFAULT_PG_MAX_CONNECTIONS, 1);
  if (isProduction && !env.BOOKING_TOKEN_KEY) fail('BOOKING_TOKEN_KEY es obligatoria en producción (firma las ligas de gestión de reservas)');
  if (env.BOOKING_TOKEN_KEY && env.BOOKING_TOKEN_KEY.length < 32) fail('BOOKING_TOKEN_KEY debe tener al menos 32 caracteres');
  const dataDir = path.resolve(env.DATA_DIR || './.data');
  if (existsSync(dataDir) && !statSync(dataDir).isDirectory()) fail(`DATA_DIR no es un directorio (recibido "${env.DATA_DIR}")`);
  // One without the other would start with the sync silently off.
  if (Boolean(env.GOOGLE_CLIENT_ID) !== Boolean(env.GOOGLE_CLIENT_SECRET)) fail('GOOGLE_CLIENT_ID y GOOGLE_CLIENT_SECRET van juntas: define las dos o ninguna');
  const google =
    env.GOOGLE_CLIENT_ID && env.GOOGLE_CLIENT_SECRET
      ? {
          clientId: env.GOOGLE_CLIENT_ID,
          clientSecret: env.GOOGLE_CLIENT_SECRET,
          apiUrl: url('GOOGLE_API_URL', env.GOOGLE_API_URL || 'https://www.googleapis.com/calendar/v3'),
          tokenUrl: url('GOOGLE_TOKEN_URL', env.GOOGLE_TOKEN_URL || 'https://oauth2.googleapis.com/token'),
          authUrl: url('GOOGLE_AUTH_URL', env.GOOGLE_AUTH_URL || 'https://accounts.google.com/o/oauth2/v2/auth'),
          revokeUrl: url('GOOGLE_REVOKE_URL', env.GOOGLE_REVOKE_URL || 'https://oauth2.googleapis.com/revoke'),
        }
      : null;
  if (isProduction && !env.ENCRYPTION_KEY && (google || env.FACTURAPI_KEY)) fail('ENCRYPTION_KEY es obligatoria en producción con Google Calendar o facturación (cifra los secretos guardados)');
  // Facturapi issues an invoice under the organization whose key sent it: one organization's key would issue every company's invoices under one RFC.
  if (env.FACTURAPI_KEY && !env.FACTURAPI_KEY.startsWith('sk_user_')) fail('FACTURAPI_KEY debe ser la User Key de la cuenta de Facturapi (sk_user_…): cada empresa emite con su propia organización, creada por wsctl company tax-profile');
  if (env.FACTURAPI_MODE && env.FACTURAPI_MODE !== 'live' && env.FACTURAPI_MODE !== 'test') fail('FACTURAPI_MODE debe ser live o test');
  if (env.ENCRYPTION_KEY && env.ENCRYPTION_KEY.length < 32) fail('ENCRYPTION_KEY debe tener al menos 32 caracteres');
  // As ADMIN_TOKEN: a short bearer token is guessable.
  if (env.METRICS_TOKEN && env.METRICS_TOKEN.length < 16) fail('METRICS_TOKEN debe tener al menos 16 caracteres');
  const logLevel = env.LOG_LEVEL || 'info'; // empty is unset, as for every other variable
  const s3 = s3Config(env);
  if (logLevel !== 'info' && logLevel !== 'silent') fail('LOG_LEVEL debe ser info o silent');
  return {
    env: nodeEnv,
    isProduction,
    port,
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir,
    siteUrl,
    siteUrlGiven: Boolean(env.SITE_URL),
    baseUrl: `${siteUrl}/api/v1`,
    bookingUrl: bookingUrl(env.BOOKING_URL, siteUrl),
    // Development: DATA_DIR/admin-token, the file `npm start` and wsctl use, so `npm run web` beside them takes the same token.
    adminToken: env.ADMIN_TOKEN || (nodeEnv === 'development' ? developmentSecret(dataDir, 'admin-token') : undefined),
    // nodemailer's URL form: smtp:// (STARTTLS when offered) or smtps:// (TLS from the start).
    smtpUrl: env.SMTP_URL ? url('SMTP_URL', env.SMTP_URL, ['smtp:', 'smtps:']) : undefined,
    rateLimitPerMinute: int('RATE_LIMIT_PER_MINUTE', env.RATE_LIMIT_PER_MINUTE, 600, 1),
    // Above a minute a lease would outlive the window it counts in (and Node's timers stop at 2^31 - 1 ms).
    rateLimitLeaseTimeoutMs: int('RATE_LIMIT_LEASE_TIMEOUT_MS', env.RATE_LIMIT_LEASE_TIMEOUT_MS, 1000, 1, 60_000),
    trustProxyHops: int('TRUST_PROXY_HOPS', env.TRUST_PROXY_HOPS, 1, 0),
    uploadConcurrency: int('UPLOAD_CONCURRENCY', env.UPLOAD_CONCURRENCY, 8, 1),
    metricsToken: env.METRICS_TOKEN || undefined,
    logLevel,
    ssrfGuard: !allowPrivateTargets,
    pgMaxConnections,
    pgMaxConnectionsVariable: env.PG_MAX_CONNECTIONS || !env.PG_POOL_MAX ? 'PG_MAX_CONNECTIONS' : 'PG_POOL_MAX',
    dyno: env.DYNO || undefined,
    bookingTokenKey: env.BOOKING_TOKEN_KEY || developmentSecret(dataDir, 'booking-token-key'),
    google,
    facturapi: env.FACTURAPI_KEY
      ? { key: env.FACTURAPI_KEY, url: url('FACTURAPI_URL', env.FACTURAPI_URL || 'https://www.facturapi.io/v2'), mode: env.FACTURAPI_MODE === 'test' ? 'test' : 'live' }
      : null,
    encryptionKey: env.ENCRYPTION_KEY || (isProduction ? '' : developmentSecret(dataDir, 'encryption-key')),
    s3,
  };
}

function s3Config(env: NodeJS.ProcessEnv): S3Config | null {
  const store = env.BLOB_STORE || 'postgres';
  if (store === 'postgres') return null;
  if (store !== 's3') fail(`BLOB_STORE debe ser postgres o s3 (recibido "${store}")`);
  for (const name of ['S3_BUCKET', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY'] as const) {
    if (!env[name]) fail(`${name} es obligatoria con BLOB_STORE=s3`);
  }
  const region = env.S3_REGION || 'us-east-1';
  if (!/^[a-z0-9-]{1,64}$/.test(region)) fail(`S3_REGION: letras minúsculas, dígitos y "-", como us-east-1 (recibido "${region}")`);
  const prefix = env.S3_PREFIX || '';
  // Segments of letters, digits, ".", "_" and "-" that do not start with "." (no "..", no "./", no leading or double "/"):
  // the key is signed as written and must reach the service as written.
  if (!/^(?:[A-Za-z0-9_-][A-Za-z0-9._-]*\/?)*$/.test(prefix)) {
    fail(`S3_PREFIX: segmentos de letras, dígitos, ".", "_" y "-" separados por "/", sin "/" inicial ni segmentos que empiecen con "." (recibido "${prefix}")`);
  }
  // S3's bucket naming rules: it becomes part of a host name with virtual-hosted addressing.
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(env.S3_BUCKET!) || env.S3_BUCKET!.includes('..')) fail(`S3_BUCKET no es un nombre de bucket válido (recibido "${env.S3_BUCKET}")`);
  const endpoint = url('S3_ENDPOINT', env.S3_ENDPOINT || `https://s3.${region}.amazonaws.com`);
  // Path-style by default with an endpoint of one's own (MinIO), and for a bucket name with dots: as a
  // host name (`a.b.s3.amazonaws.com`) it matches no certificate of AWS's (its wildcard covers one label).
  const pathStyle = env.S3_FORCE_PATH_STYLE ? flag('S3_FORCE_PATH_STYLE', env.S3_FORCE_PATH_STYLE) : Boolean(env.S3_ENDPOINT) || env.S3_BUCKET!.includes('.');
  // Virtual-hosted addressing puts the bucket in the host name and keeps no path of the endpoint.
  if (!pathStyle && new URL(endpoint).pathname.replace(/\/$/, '') !== '') {
    fail(`S3_ENDPOINT con una ruta (${endpoint}) pide S3_FORCE_PATH_STYLE=1: con el bucket en el nombre de host, la ruta se perdería`);
  }
  return {
    endpoint,
    bucket: env.S3_BUCKET!,
    region,
    accessKeyId: env.S3_ACCESS_KEY_ID!,
    secretAccessKey: env.S3_SECRET_ACCESS_KEY!,
    pathStyle,
    prefix,
  };
}

/**
 * `loadConfig` for a process's entry point: a bad setting is one line on stderr and exit 1 (the
 * README promises a clear message, not a stack trace).
 */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`error: ${error.message}\n`);
    process.exit(1);
  }
}
