/**
 * Where a webhook may be sent. The address guard applies as for provider calls: a URL whose host resolves to (or is)
 * a private, loopback or link-local address is refused, unless the operator names the host in WEBHOOK_ALLOWED_HOSTS
 * (`host` or `host:port`), for an internal receiver or a local test.
 */
import type { LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { ServiceError } from '../../core/errors.ts';
import { hostAndPort, isPublicAddress, normalizeHost, upstreamDns } from '../upstream/address-guard.ts';

function allowed(u: URL, allowedHosts: readonly string[]): boolean {
  const target = hostAndPort(u);
  const host = target.slice(0, target.lastIndexOf(':'));
  return allowedHosts.some((a) => {
    const i = a.lastIndexOf(':');
    const bracketed = a.startsWith('[');
    // `host`, `host:port`, `[v6]` or `[v6]:port`, compared in the same normal form as the URL's host.
    const hasPort = i > 0 && (bracketed ? a.lastIndexOf(']') < i : a.indexOf(':') === i);
    const entryHost = normalizeHost(hasPort ? a.slice(0, i) : a);
    const entry = hasPort ? `${entryHost}:${a.slice(i + 1)}` : entryHost;
    return entry === host || entry === target;
  });
}

/** Every address `host` resolves to, by the resolver deliveries use (the hosts file, then DNS); none when unknown. */
function resolveAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve) => upstreamDns.lookup(host, { all: true }, (err, list) => resolve(err ? [] : list)));
}

/** `configuredHosts` for the upstream layer: the URL's host when allowed by name, else none (the guard applies). */
export function webhookHostsFor(url: string, allowedHosts: readonly string[]): string[] {
  const u = new URL(url);
  return allowed(u, allowedHosts) ? [hostAndPort(u)] : [];
}

const refuse = (message: string) =>
  new ServiceError(400, 'invalid_input', `Invalid webhook: url ${message}`, [{ field: 'url', message }]);

/** Checks a webhook URL when it is set; the guard is applied again at every delivery (DNS may change). */
export async function checkWebhookUrl(raw: string, allowedHosts: readonly string[]): Promise<string> {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw refuse('must be an absolute http(s) URL');
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw refuse('must be an http(s) URL');
  if (u.username || u.password) throw refuse('must not carry a user name or password');
  if (u.hash) throw refuse('must not have a fragment');
  if (allowed(u, allowedHosts)) return u.href;
  // One normal form before any decision (lower case, no trailing dot; the URL parser already made IDN punycode):
  // `localhost.` and `LOCALHOST` are `localhost`.
  const host = normalizeHost(u.hostname);
  const hint = '; a private receiver must be named in WEBHOOK_ALLOWED_HOSTS';
  if (isIP(host)) {
    if (!isPublicAddress(host)) throw refuse(`points at ${host}, which is not a public address${hint}`);
    return u.href;
  }
  // What the name resolves to is not told: the refusal would otherwise map the service's internal names.
  const addresses = await resolveAll(host);
  if (addresses.some((a) => !isPublicAddress(a.address)))
    throw refuse(`points at ${host}, which does not resolve to public addresses only${hint}`);
  return u.href;
}
