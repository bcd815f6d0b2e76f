/**
 * Upstream hosts that nobody trusted configured — a support desk's domain from an account, a provider's
 * redirect target — must resolve to public addresses: a name under `*.zendesk.com` that resolves to 127.0.0.1,
 * 10.x or the cloud metadata address would otherwise turn the service into a proxy into its own network
 * (and DNS can change between the check and the connection, so the check is the lookup the socket uses).
 * Hosts the operator or the connector configured are exempt: a self-hosted provider may well live on 10.x.
 */
import dns, { type LookupAddress, type LookupOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP } from 'node:net';

const blocked = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  blocked.addSubnet(net, bits, 'ipv4');
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96], // NAT64
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(net, bits, 'ipv6');
}

/** A unicast address on the public internet. */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  // BlockList checks an IPv4-mapped IPv6 address (::ffff:127.0.0.1) against the IPv4 rules, which is also why
  // ::ffff:0:0/96 is not in the list above: it would match every IPv4 address.
  return family !== 0 && !blocked.check(bare, family === 4 ? 'ipv4' : 'ipv6');
}

/** The resolver the guarded lookup asks; tests swap `lookup` for one they control. */
export const upstreamDns: { lookup: typeof dns.lookup } = { lookup: dns.lookup };

export const NOT_PUBLIC = 'EADDRNOTPUBLIC';

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

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
      const e: NodeJS.ErrnoException = new Error(
        `${hostname} resolves to ${bad?.address ?? 'no address'}, which is not a public address`,
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

/** `host:port` of a URL (the scheme's default port when none is given), host lower-case without brackets. */
export function hostAndPort(u: URL): string {
  const port = u.port || (u.protocol === 'https:' ? '443' : u.protocol === 'http:' ? '80' : '');
  return `${u.hostname
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')}:${port}`;
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
  url: string,
  configured: readonly string[] | undefined,
): undefined | 'guard' | { refused: string } {
  if (!configured) return undefined;
  const u = new URL(url);
  if (isConfiguredHost(hostAndPort(u), configured)) return undefined;
  const bare = u.hostname.replace(/^\[|\]$/g, '');
  if (isIP(bare) && !isPublicAddress(bare)) return { refused: `${bare} is not a public address` };
  return 'guard';
}
