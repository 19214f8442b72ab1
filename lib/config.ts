// The one place that reads the environment (12-factor). Every variable is
// documented here with its default; a bad value stops start-up with a clear
// message instead of surfacing later as a confusing runtime error.
import path from 'node:path';

export type Config = {
  env: 'development' | 'production' | 'test';
  isProduction: boolean;
  port: number;
  /** Unset: embedded PostgreSQL under dataDir. */
  databaseUrl: string | undefined;
  dataDir: string;
  siteUrl: string;
  baseUrl: string;
  bookingUrl: string;
  /** Unset in development: generated into DATA_DIR/admin-token by the dev runner. */
  adminToken: string | undefined;
  smtpUrl: string | undefined;
  /** Requests per minute per API key (contract: 600). */
  rateLimitPerMinute: number;
  /** How long a rate-limit lease may take before the per-process window answers instead. */
  rateLimitLeaseTimeoutMs: number;
  /** Set LOG_LEVEL=silent to drop the per-request log line (benchmarks). */
  logLevel: 'info' | 'silent';
};

function fail(message: string): never {
  throw new Error(`Configuración inválida: ${message}`);
}

function int(name: string, value: string | undefined, fallback: number, min = 0): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) fail(`${name} debe ser un entero >= ${min} (recibido "${value}")`);
  return n;
}

function url(name: string, value: string): string {
  try {
    return new URL(value).toString().replace(/\/$/, '');
  } catch {
    fail(`${name} no es una URL válida (recibido "${value}")`);
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const nodeEnv = env.NODE_ENV ?? 'development';
  if (nodeEnv !== 'development' && nodeEnv !== 'production' && nodeEnv !== 'test') {
    fail(`NODE_ENV debe ser development, production o test (recibido "${nodeEnv}")`);
  }
  const port = int('PORT', env.PORT, 3000);
  if (port > 65535) fail('PORT fuera de rango');
  const siteUrl = url('SITE_URL', env.SITE_URL || `http://localhost:${port}`);
  const isProduction = nodeEnv === 'production';
  if (isProduction && !env.DATABASE_URL) fail('DATABASE_URL es obligatoria en producción');
  if (isProduction && !env.ADMIN_TOKEN) fail('ADMIN_TOKEN es obligatoria en producción');
  if (env.ADMIN_TOKEN !== undefined && env.ADMIN_TOKEN.length > 0 && env.ADMIN_TOKEN.length < 16) {
    fail('ADMIN_TOKEN debe tener al menos 16 caracteres');
  }
  const logLevel = env.LOG_LEVEL ?? 'info';
  if (logLevel !== 'info' && logLevel !== 'silent') fail('LOG_LEVEL debe ser info o silent');
  return {
    env: nodeEnv,
    isProduction,
    port,
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir: path.resolve(env.DATA_DIR || './.data'),
    siteUrl,
    baseUrl: `${siteUrl}/api/v1`,
    bookingUrl: url('BOOKING_URL', env.BOOKING_URL || `${siteUrl}/book`),
    adminToken: env.ADMIN_TOKEN || undefined,
    smtpUrl: env.SMTP_URL || undefined,
    rateLimitPerMinute: int('RATE_LIMIT_PER_MINUTE', env.RATE_LIMIT_PER_MINUTE, 600, 1),
    rateLimitLeaseTimeoutMs: int('RATE_LIMIT_LEASE_TIMEOUT_MS', env.RATE_LIMIT_LEASE_TIMEOUT_MS, 250, 1),
    logLevel,
  };
}
