// SSRF guard for outbound webhook calls. A tenant chooses the webhook URL, so
// without this a URL such as https://169.254.169.254/ or a hostname whose DNS
// answers 10.0.0.5 would make our worker reach cloud metadata or internal
// services on the tenant's behalf. Two checks, both on resolved addresses:
//   1. registration (`checkWebhookUrl`): a clear 422 for the obvious cases;
//   2. connect time (`createGuardedAgent`): the one that actually protects,
//      because DNS may answer differently later (rebinding). The agent resolves
//      the host itself, checks every address and hands net/tls exactly those
//      addresses, so no second lookup can swap in an internal one.
// The guard is on in every environment (staging included): only an explicit
// ALLOW_PRIVATE_WEBHOOK_TARGETS=1 turns it off (`npm start`, tests that
// deliver to receivers on 127.0.0.1), and production refuses that setting
// (lib/config.ts). Separately, production accepts only https URLs.
import { isIP } from 'node:net';
import type { LookupFunction } from 'node:net';
import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { Agent, buildConnector } from 'undici';

export type LookupFn = (hostname: string) => Promise<Array<{ address: string; family: 4 | 6 }>>;

type Resolved = Array<{ address: string; family: 4 | 6 }>;

export const SSRF_BLOCKED = 'ERR_SSRF_BLOCKED';

// verbatim: keep the resolver's order (the OS's RFC 6724 preference) instead
// of Node sorting IPv4 first; every address is checked anyway.
const defaultLookup: LookupFn = async (hostname) => {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

// Cloud instance-metadata endpoints get their own reason so logs say what was
// targeted (AWS/GCP/Azure 169.254.169.254, ECS 169.254.170.2, AWS IPv6
// fd00:ec2::254, Alibaba 100.100.100.200 in CGNAT: each also inside a range
// blocked below), and Azure's platform address 168.63.129.16 (WireServer:
// public space, answered only from inside Azure, so no range catches it).
const METADATA = new Set(['169.254.169.254', '169.254.170.2', '100.100.100.200', 'fd00:ec2::254', '168.63.129.16']);

// ipaddr.js range names → our reasons. Anything ipaddr does not call 'unicast'
// is refused; names missing here (as112, amt, teredo, orchid2, discard, ...)
// fall back to 'reserved'. An allow-list of 'unicast' fails closed when a
// special-purpose block is added that we did not think of.
const REASONS: Record<string, string> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'cgnat',
  private: 'private',
  uniqueLocal: 'unique-local',
  deprecatedSiteLocal: 'private',
  benchmarking: 'benchmark',
};

// ipaddr.js files 198.18.0.0/15 (RFC 2544) under 'reserved'; the issue asks
// for it by name.
const BENCHMARK_V4 = ipaddr.IPv4.parseCIDR('198.18.0.0/15');
// Only 2000::/3 is allocated as global unicast; ipaddr calls e.g. 4000::1
// 'unicast' too, but nothing legitimate lives outside 2000::/3.
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

function v4Reason(ip: ipaddr.IPv4): string | null {
  if (METADATA.has(ip.toString())) return 'metadata';
  if (ip.match(BENCHMARK_V4)) return 'benchmark';
  const range = ip.range();
  return range === 'unicast' ? null : (REASONS[range] ?? 'reserved');
}

function v4At(parts: number[], i: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([parts[i] >> 8, parts[i] & 0xff, parts[i + 1] >> 8, parts[i + 1] & 0xff]);
}

function v6Reason(ip: ipaddr.IPv6): string | null {
  const p = ip.parts;
  if (METADATA.has(ip.toString())) return 'metadata';
  const range = ip.range();
  if (range === 'unspecified' || range === 'loopback') return range;
  // Forms that carry an IPv4 address inside: the packet ends up at that IPv4
  // address (dual-stack socket, NAT64 gateway, 6to4 relay), so it is judged
  // as that address. ::ffff:0:0/96 mapped, ::ffff:0:0:0/96 translated
  // (RFC 6145), 64:ff9b::/96 NAT64 (RFC 6052).
  if (range === 'ipv4Mapped' || range === 'rfc6145' || (p[0] === 0x64 && p[1] === 0xff9b && p[2] === 0 && range === 'rfc6052')) {
    return v4Reason(v4At(p, 6));
  }
  if (range === '6to4') return v4Reason(v4At(p, 1)); // 2002:AABB:CCDD::/48
  // IPv4-compatible ::a.b.c.d (deprecated by RFC 4291): never legitimate, but
  // name the embedded address's reason when it has one (::127.0.0.1 → loopback).
  if (p.slice(0, 6).every((x) => x === 0)) return v4Reason(v4At(p, 6)) ?? 'reserved';
  if (range !== 'unicast') return REASONS[range] ?? 'reserved';
  return ip.match(GLOBAL_UNICAST_V6) ? null : 'reserved';
}

/** null when the address is a public unicast address, else a short reason such as 'loopback', 'private', 'link-local', 'unique-local', 'cgnat', 'benchmark', 'multicast', 'broadcast', 'unspecified', 'reserved', 'metadata'. */
export function blockedReason(ip: string): string | null {
  // net.isIP accepts only canonical literals; ipaddr.parse would also take
  // '127.1' or '0x7f.1'. Anything that is not a plain literal is refused
  // rather than guessed at ('invalid'): fail closed.
  const family = isIP(ip);
  if (family === 0) return 'invalid';
  if (family === 4) return v4Reason(ipaddr.IPv4.parse(ip));
  // The zone (fe80::1%eth0) does not change what the address is.
  return v6Reason(ipaddr.IPv6.parse(hexTail(ip.split('%')[0])));
}

/**
 * '::a.b.c.d' → '::xxxx:xxxx'. ipaddr.js 2 reads '::8.8.8.8' as
 * '::ffff:8.8.8.8' (its "deprecated transitional" rule), which would judge an
 * IPv4-compatible address as IPv4-mapped; hex groups parse exactly.
 */
function hexTail(ip: string): string {
  const m = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(ip);
  if (!m) return ip;
  const [a, b, c, d] = m.slice(2).map(Number);
  return `${m[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

export type SsrfBlockedError = Error & { code: typeof SSRF_BLOCKED; hostname: string; address: string; reason: string };

/**
 * The refusal. Its message is what the tenant reads (a delivery's `error_message`): for a host name, not
 * the address it resolved to nor its range, which would tell them what an internal name points at (a
 * name of theirs can be made to resolve to one); for an address they wrote, its range. The fields keep
 * both, for the server's log.
 */
function blockedError(hostname: string, address: string, reason: string): SsrfBlockedError {
  const message = isIP(hostname) ? `destino bloqueado (SSRF): ${hostname} no es una dirección pública (${reason})` : `destino bloqueado (SSRF): ${hostname} no resuelve a una dirección pública`;
  return Object.assign(new Error(message), { code: SSRF_BLOCKED, hostname, address, reason } as const);
}

/** What a host name that does not resolve, or resolves to an address that is not public, is told at registration: the same for both. */
export const NOT_A_PUBLIC_HOST = 'el host no resuelve, o resuelve a una dirección que no es pública';

/** URL hostnames keep IPv6 literals in brackets; resolvers and isIP want them bare. */
function bare(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

/**
 * Every address `hostname` resolves to, or a thrown SsrfBlockedError if ANY
 * of them is blocked. Any, not just the first: net's happy-eyeballs tries the
 * others when the first fails, and the attacker controls the DNS answer, so
 * ['93.184.216.34', '127.0.0.1'] must not pass just because the public
 * address is listed first.
 */
async function resolveChecked(hostname: string, lookup: LookupFn, reasonOf: (ip: string) => string | null): Promise<Resolved> {
  const host = bare(hostname);
  const family = isIP(host);
  const addresses: Resolved = family === 0 ? await lookup(host) : [{ address: host, family: family as 4 | 6 }];
  if (addresses.length === 0) throw Object.assign(new Error(`no addresses for ${host}`), { code: 'ENOTFOUND' });
  for (const { address } of addresses) {
    const reason = reasonOf(address);
    if (reason) throw blockedError(host, address, reason);
  }
  return addresses;
}

/**
 * Registration-time check. Returns null when acceptable, else a Spanish
 * message suitable for a 422 field error on `url` (e.g. 'la URL debe usar
 * https', 'la URL apunta a una dirección privada (loopback)',
 * NOT_A_PUBLIC_HOST). `httpsOnly` (production): http is refused. `guard`
 * false (the explicit opt-out): only syntax/scheme/userinfo checks, no DNS.
 */
export async function checkWebhookUrl(url: string, options: { httpsOnly: boolean; guard: boolean; lookup?: LookupFn }): Promise<string | null> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'la URL no es válida';
  }
  // A backslash, a space or a control character is read one way by the WHATWG parser we deliver with
  // (`http://1.2.3.4\@127.0.0.1/` is host 1.2.3.4) and another by other tools that may take the stored
  // URL (an operator's curl): refused, so what is stored means one thing.
  if (/[\\\s\x00-\x1f\x7f]/.test(url)) return 'la URL no puede contener barras invertidas, espacios ni caracteres de control';
  if (options.httpsOnly ? parsed.protocol !== 'https:' : parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
    return options.httpsOnly ? 'la URL debe usar https' : 'la URL debe usar http o https';
  }
  // `http:host/path` and `https:/host` parse (WHATWG adds the slashes) but curl and most tools read
  // them otherwise: the stored URL is written as it is sent, `scheme://host`.
  if (!/^https?:\/\/[^/]/i.test(url)) return 'la URL debe empezar por http:// o https:// seguido del host';
  // Port 0 reaches no server.
  if (parsed.port === '0') return 'el puerto de la URL no puede ser 0';
  // Credentials in the URL would be stored and logged with it, and are sent as
  // Basic auth by some clients: the signature header is the way to authenticate.
  if (parsed.username !== '' || parsed.password !== '') return 'la URL no puede incluir usuario ni contraseña';
  // A fragment is never sent, so it can only mislead whoever reads the stored URL (`http://1.1.1.1#@127.0.0.1/`).
  if (url.includes('#')) return 'la URL no puede llevar fragmento (#): nunca se envía al receptor';
  if (!options.guard) return null;
  // parsed.hostname is already canonical: the WHATWG parser turns 2130706433,
  // 0x7f.1, 127.1 and 0177.0.0.1 into 127.0.0.1 and compresses IPv6 literals.
  try {
    await resolveChecked(parsed.hostname, options.lookup ?? defaultLookup, blockedReason);
    return null;
  } catch (error) {
    // An address the client wrote: its range. A name: one answer whether it does not resolve or resolves
    // inside, so the check cannot be used to learn which internal names exist and where they point.
    if ((error as { code?: unknown }).code === SSRF_BLOCKED && isIP(bare(parsed.hostname))) {
      return `la URL apunta a una dirección privada (${(error as SsrfBlockedError).reason})`;
    }
    return NOT_A_PUBLIC_HOST;
  }
}

/** net/tls `lookup` option backed by `resolveChecked`: net connects to exactly what this returns. */
function netLookup(lookup: LookupFn, reasonOf: (ip: string) => string | null): LookupFunction {
  return (hostname, options, callback) => {
    resolveChecked(hostname, lookup, reasonOf).then(
      (all) => {
        const wanted = options.family === 4 || options.family === 6 ? all.filter((a) => a.family === options.family) : all;
        if (wanted.length === 0) {
          callback(Object.assign(new Error(`no IPv${options.family} address for ${hostname}`), { code: 'ENOTFOUND' }), '');
        } else if (options.all) {
          callback(null, wanted);
        } else {
          callback(null, wanted[0].address, wanted[0].family);
        }
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
}

/**
 * An undici Agent for outbound webhook POSTs. With the guard on its connector
 * refuses IP-literal hosts that are blocked (net never calls `lookup` for a
 * literal) and gives net/tls a `lookup` that resolves, checks every address
 * and returns only checked ones; the TLS servername stays the URL's hostname,
 * so SNI and certificate validation are unchanged. A refusal fails the request
 * with an error whose code is 'ERR_SSRF_BLOCKED'.
 * `allow` (tests/ops): addresses it returns true for skip the check, e.g. a
 * receiver on 127.0.0.1 in an integration test with the guard on.
 * With `guard` false (the explicit opt-out) it is a plain Agent; an injected
 * `lookup` is still used, unchecked.
 */
export function createGuardedAgent(options: {
  guard: boolean;
  lookup?: LookupFn;
  allow?: (ip: string) => boolean;
  agent?: Agent.Options;
}): Agent {
  const agentOptions = options.agent ?? {};
  const connect = agentOptions.connect;
  if (!options.guard) {
    if (!options.lookup || typeof connect === 'function') return new Agent(agentOptions);
    return new Agent({ ...agentOptions, connect: { ...connect, lookup: netLookup(options.lookup, () => null) } });
  }
  // A custom connector or a unix socket would route around the guard; refuse
  // at start-up rather than run unguarded.
  if (typeof connect === 'function') throw new TypeError('createGuardedAgent: a custom connect function would bypass the SSRF guard');
  if (agentOptions.socketPath != null || (connect && 'path' in connect && connect.path != null)) {
    throw new TypeError('createGuardedAgent: socketPath would bypass the SSRF guard');
  }
  const allow = options.allow;
  const reasonOf = (ip: string): string | null => (allow?.(ip) ? null : blockedReason(ip));
  // A connector function replaces the one undici's Pool would build from the
  // Agent options, so the options that Pool maps into buildConnector are mapped
  // here the same way (undici 8: node_modules/undici/lib/dispatcher/pool.js) to keep them working.
  // useH2c is left out: plaintext HTTP/2 is not something webhook receivers speak.
  const base = buildConnector({
    maxCachedSessions: agentOptions.maxCachedSessions,
    allowH2: agentOptions.allowH2,
    timeout: agentOptions.connectTimeout,
    ...(typeof agentOptions.autoSelectFamily === 'boolean'
      ? { autoSelectFamily: agentOptions.autoSelectFamily, autoSelectFamilyAttemptTimeout: agentOptions.autoSelectFamilyAttemptTimeout }
      : undefined),
    ...connect,
    lookup: netLookup(options.lookup ?? defaultLookup, reasonOf),
  });
  const guarded: buildConnector.connector = (connectOptions, callback) => {
    // undici passes IPv6 literals without brackets; bare() is belt and braces.
    const host = bare(connectOptions.hostname);
    const reason = isIP(host) ? reasonOf(host) : null;
    if (reason) {
      // Asynchronously, like the built-in connector: undici's client does not
      // expect the callback before the connector returns.
      queueMicrotask(() => callback(blockedError(host, host, reason), null));
      return;
    }
    base(connectOptions, callback);
  };
  return new Agent({ ...agentOptions, connect: guarded });
}
