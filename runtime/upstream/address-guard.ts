/**
 * Upstream hosts that nobody trusted configured — a support desk's domain from an account, a provider's
 * redirect target — must resolve to public addresses: a name under `*.zendesk.com` that resolves to 127.0.0.1,
 * 10.x or the cloud metadata address would otherwise turn the service into a proxy into its own network
 * (and DNS can change between the check and the connection, so the check is the lookup the socket uses).
 * Hosts the operator or the connector configured are exempt: a self-hosted provider may well live on 10.x.
 */
import dns, { type LookupAddress, type LookupOptions } from 'node:dns';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { processCache } from '../caches.ts';
import CacheableLookup, { type EntryObject } from 'cacheable-lookup';
import ipaddr from 'ipaddr.js';

/**
 * IANA special-purpose ranges ipaddr.js does not name (or names as unicast): the IPv6 dummy prefix (RFC 9780),
 * documentation 3fff::/20 (RFC 9637), local-use NAT64 64:ff9b:1::/48 (RFC 8215), and the 6to4 relay anycast.
 */
const EXTRA_SPECIAL: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> = [
  ipaddr.parseCIDR('100:0:0:1::/64'),
  ipaddr.parseCIDR('3fff::/20'),
  ipaddr.parseCIDR('64:ff9b:1::/48'),
  ipaddr.parseCIDR('192.88.99.0/24'),
];
const NAT64 = ipaddr.parseCIDR('64:ff9b::/96');

function isPublicV4(a: ipaddr.IPv4): boolean {
  return a.range() === 'unicast' && !EXTRA_SPECIAL.some(([net, bits]) => net.kind() === 'ipv4' && a.match(net, bits));
}

/** The IPv4 address an IPv6 form carries (mapped ::ffff:a.b.c.d, translated ::ffff:0:a.b.c.d, NAT64 64:ff9b::/96). */
function embeddedV4(a: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  if (a.isIPv4MappedAddress()) return a.toIPv4Address();
  const p = a.parts;
  const tail = () => new ipaddr.IPv4([p[6]! >> 8, p[6]! & 0xff, p[7]! >> 8, p[7]! & 0xff]);
  if (a.range() === 'rfc6145') return tail();
  if (a.match(NAT64[0], NAT64[1])) return tail();
  return undefined;
}

/**
 * A unicast address on the public internet, classified with ipaddr.js against the IANA special-purpose registries
 * of both families. IPv6 forms that carry an IPv4 address (IPv4-mapped, IPv4-translated, NAT64's well-known
 * prefix) are judged by that address; IPv4-compatible addresses (::a.b.c.d, deprecated), 6to4 and Teredo (which
 * tunnel to an address of the sender's choice) and every other special range are not public.
 */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  // isIP first: ipaddr.js also reads the classic inet_aton forms (0x7f.1, 2130706433), which URLs normalise.
  const family = isIP(bare.replace(/%.*$/, ''));
  if (family === 0) return false;
  const noZone = bare.replace(/%.*$/, '');
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // IPv6 in the WHATWG URL parser's canonical form first (ipaddr.js reads ::a.b.c.d as ::ffff:a.b.c.d).
    parsed = ipaddr.parse(family === 6 ? new URL(`http://[${noZone}]/`).hostname.slice(1, -1) : noZone);
  } catch {
    return false;
  }
  if (parsed.kind() === 'ipv4') return isPublicV4(parsed as ipaddr.IPv4);
  const v6 = parsed as ipaddr.IPv6;
  const v4 = embeddedV4(v6);
  if (v4) return isPublicV4(v4);
  // The first 96 bits zero: ::, ::1, and the IPv4-compatible addresses (::127.0.0.1).
  if (v6.parts.slice(0, 6).every((x) => x === 0)) return false;
  return v6.range() === 'unicast' && !EXTRA_SPECIAL.some(([net, bits]) => net.kind() === 'ipv6' && v6.match(net, bits));
}

/**
 * Names in /etc/hosts (read once), answered without DNS: `localhost` and the like, as `dns.lookup` would.
 * Names under `.localhost` are loopback (RFC 6761).
 */
function readHostsFile(path = '/etc/hosts'): Map<string, LookupAddress[]> {
  const out = new Map<string, LookupAddress[]>();
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    // no hosts file: only localhost below
  }
  for (const line of text.split('\n')) {
    const [address, ...names] = line.replace(/#.*/, '').trim().split(/\s+/);
    const family = address ? isIP(address) : 0;
    if (!family) continue;
    for (const name of names) {
      const key = name.toLowerCase();
      const list = out.get(key) ?? [];
      if (!list.some((a) => a.address === address)) list.push({ address: address!, family });
      out.set(key, list);
    }
  }
  if (!out.has('localhost'))
    out.set('localhost', [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
  return out;
}
let hosts: Map<string, LookupAddress[]> | undefined;

/**
 * c-ares (`dns.resolve4`/`resolve6`) with a cache that honours the records' TTLs, never `dns.lookup`: getaddrinfo
 * runs in libuv's four-thread pool, which password hashing and file I/O also use, so a burst of sign-ins would
 * stall every upstream call waiting for a name. `lookup: false` keeps cacheable-lookup from falling back to it.
 */
/**
 * Its answers are kept in a bounded LRU (HOST_CACHE_SIZE): the names looked up include hosts that account fields
 * give (a support desk's domain per account), so a plain map would grow with the population. Each answer keeps the
 * TTL cacheable-lookup gives it.
 */
const dnsAnswers = processCache<string, EntryObject[]>('dns_answers', 'hosts');
const cache = new CacheableLookup({
  lookup: false,
  maxTtl: 300,
  errorTtl: 0.15,
  cache: {
    get: (name: string) => dnsAnswers().get(name),
    set: (name: string, answer: EntryObject[], ttlMs: number) => dnsAnswers().set(name, answer, ttlMs),
    delete: (name: string) => dnsAnswers().delete(name),
    clear: () => dnsAnswers().clear(),
  },
});

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** Resolves a name for an upstream socket, like `dns.lookup` (same options and callback) but off the thread pool. */
export function resolverLookup(
  hostname: string,
  options: LookupOptions | number | LookupCallback,
  callback?: LookupCallback,
): void {
  const cb = (typeof options === 'function' ? options : callback)!;
  const opts: LookupOptions =
    typeof options === 'object' ? options : typeof options === 'number' ? { family: options } : {};
  const name = normalizeHost(hostname);
  const answer = (list: LookupAddress[]) => {
    const wanted = opts.family === 4 || opts.family === 6 ? list.filter((a) => a.family === opts.family) : list;
    if (!wanted.length) {
      const e: NodeJS.ErrnoException = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
        code: 'ENOTFOUND',
        hostname,
      });
      return process.nextTick(() => cb(e, opts.all ? [] : ''));
    }
    if (opts.all) return process.nextTick(() => cb(null, wanted));
    process.nextTick(() => cb(null, wanted[0]!.address, wanted[0]!.family));
  };
  const literal = isIP(name.replace(/^\[|\]$/g, ''));
  if (literal) return answer([{ address: name.replace(/^\[|\]$/g, ''), family: literal }]);
  hosts ??= readHostsFile();
  const fromHosts = hosts.get(name) ?? (name.endsWith('.localhost') ? hosts.get('localhost') : undefined);
  if (fromHosts) return answer(fromHosts);
  cache.lookup(
    name,
    { ...opts, all: true } as never,
    ((err: NodeJS.ErrnoException | null, list: LookupAddress[]) => {
      if (err) return cb(err, opts.all ? [] : '');
      answer(list.map((a) => ({ address: a.address, family: a.family })));
    }) as never,
  );
}

/** The resolver the guarded lookup asks; tests swap `lookup` for one they control. */
export const upstreamDns: { lookup: typeof dns.lookup } = { lookup: resolverLookup as typeof dns.lookup };

export const NOT_PUBLIC = 'EADDRNOTPUBLIC';

/** `dns.lookup` for sockets to untrusted hosts: every address the name resolves to must be public. */
export function guardedLookup(
  hostname: string,
  options: LookupOptions | number | LookupCallback,
  callback?: LookupCallback,
): void {
  const cb = (typeof options === 'function' ? options : callback)!;
  const opts: LookupOptions =
    typeof options === 'object' ? options : typeof options === 'number' ? { family: options } : {};
  upstreamDns.lookup(hostname, { ...opts, all: true }, (err, addresses) => {
    if (err) return cb(err, []);
    const list = addresses;
    const bad = list.find((a) => !isPublicAddress(a.address));
    if (bad || !list.length) {
      // The address itself is not told: the message reaches the API client, and would map internal names.
      const e: NodeJS.ErrnoException = new Error(
        bad ? `${hostname} resolves to an address that is not public` : `${hostname} resolves to no address`,
      );
      e.code = NOT_PUBLIC;
      return cb(e, []);
    }
    if (opts.all) return cb(null, list);
    cb(null, list[0]!.address, list[0]!.family);
  });
}

/** Keep-alive agents whose sockets connect only to public addresses. */
export const guardedAgents = {
  http: new http.Agent({ keepAlive: true, maxFreeSockets: 64, scheduling: 'lifo', lookup: guardedLookup }),
  https: new https.Agent({ keepAlive: true, maxFreeSockets: 64, scheduling: 'lifo', lookup: guardedLookup }),
};

/** The same without keep-alive: a connection per request (see `SendOptions.reuseConnections`). */
export const guardedOneShotAgents = {
  http: new http.Agent({ keepAlive: false, lookup: guardedLookup }),
  https: new https.Agent({ keepAlive: false, lookup: guardedLookup }),
};

/**
 * A host name in the one form every check compares: IDN as punycode (what the URL parser makes of a Unicode name),
 * lower case, without IPv6 brackets or a trailing dot (`LocalHost.` is `localhost`).
 */
export function normalizeHost(host: string): string {
  const bare = host.trim().replace(/^\[|\]$/g, '');
  const ascii = isIP(bare) ? bare : domainToASCII(bare) || bare;
  return ascii.toLowerCase().replace(/\.+$/, '');
}

/** `host:port` of a URL (the scheme's default port when none is given), the host in its normal form. */
export function hostAndPort(u: URL): string {
  const port = u.port || (u.protocol === 'https:' ? '443' : u.protocol === 'http:' ? '80' : '');
  return `${normalizeHost(u.hostname)}:${port}`;
}

/** Whether `host:port` is a configured one, or on a subdomain of one with the same port. */
export function isConfiguredHost(target: string, configured: readonly string[]): boolean {
  const i = target.lastIndexOf(':');
  const [host, port] = [target.slice(0, i), target.slice(i + 1)];
  return configured.some((c) => {
    const j = c.lastIndexOf(':');
    const [ch, cp] = [c.slice(0, j), c.slice(j + 1)];
    return port === cp && (host === ch || (!isIP(ch) && host.endsWith(`.${ch}`)));
  });
}

/**
 * For a request to `url`: undefined when its host and port are configured (any address will do), else the
 * reason it may not be contacted at all (an IP literal outside the public internet, which no lookup would
 * catch), else 'guard' (contact it through the guarded agents).
 */
export function addressPolicy(
  url: string | URL,
  configured: readonly string[] | undefined,
): undefined | 'guard' | { refused: string } {
  if (!configured) return undefined;
  const u = typeof url === 'string' ? new URL(url) : url;
  if (isConfiguredHost(hostAndPort(u), configured)) return undefined;
  const bare = u.hostname.replace(/^\[|\]$/g, '');
  if (isIP(bare) && !isPublicAddress(bare)) return { refused: `${bare} is not a public address` };
  return 'guard';
}

/**
 * Whether the URL's host is in an operator's list of hosts that may resolve anywhere (WEBHOOK_ALLOWED_HOSTS,
 * UPSTREAM_ALLOWED_HOSTS): each entry `host`, `host:port`, `[v6]` or `[v6]:port`, compared in the normal form.
 */
export function listedHost(u: URL, list: readonly string[]): boolean {
  const target = hostAndPort(u);
  const host = target.slice(0, target.lastIndexOf(':'));
  return list.some((a) => {
    const i = a.lastIndexOf(':');
    const bracketed = a.startsWith('[');
    const hasPort = i > 0 && (bracketed ? a.lastIndexOf(']') < i : a.indexOf(':') === i);
    const entryHost = normalizeHost(hasPort ? a.slice(0, i) : a);
    const entry = hasPort ? `${entryHost}:${a.slice(i + 1)}` : entryHost;
    return entry === host || entry === target;
  });
}

/** Every address `host` resolves to, by the resolver upstream calls use (the hosts file, then DNS); none when unknown. */
function resolveAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve) => upstreamDns.lookup(host, { all: true }, (err, list) => resolve(err ? [] : list)));
}

/**
 * Why a destination a caller names (a webhook, a connection's API base URL) may not be used: its host is, or
 * resolves to, an address outside the public internet and is not in `list`; undefined when it may. What a name
 * resolves to is not told (the answer would map the service's internal names). The guard applies again at every
 * request, as DNS may change.
 */
export async function privateDestination(u: URL, list: readonly string[]): Promise<string | undefined> {
  if (listedHost(u, list)) return undefined;
  // One normal form before any decision (lower case, no trailing dot): `localhost.` and `LOCALHOST` are `localhost`.
  const host = normalizeHost(u.hostname);
  if (isIP(host)) return isPublicAddress(host) ? undefined : `points at ${host}, which is not a public address`;
  const addresses = await resolveAll(host);
  if (addresses.some((a) => !isPublicAddress(a.address)))
    return `points at ${host}, which does not resolve to public addresses only`;
  return undefined;
}
