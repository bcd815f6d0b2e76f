/**
 * Where a webhook may be sent. The address guard applies as for provider calls: a URL whose host resolves to (or is)
 * a private, loopback or link-local address is refused, unless the operator names the host in WEBHOOK_ALLOWED_HOSTS
 * (`host` or `host:port`), for an internal receiver or a local test.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { ServiceError } from '../../core/errors.ts';
import { hostAndPort, isPublicAddress } from '../upstream/address-guard.ts';

function allowed(u: URL, allowedHosts: readonly string[]): boolean {
  const target = hostAndPort(u);
  const host = target.slice(0, target.lastIndexOf(':'));
  return allowedHosts.some((a) => {
    const entry = a.toLowerCase().replace(/^\[|\]$/g, '');
    return entry === host || entry === target;
  });
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
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const hint = '; a private receiver must be named in WEBHOOK_ALLOWED_HOSTS';
  if (isIP(host)) {
    if (!isPublicAddress(host)) throw refuse(`points at ${host}, which is not a public address${hint}`);
    return u.href;
  }
  const addresses = await lookup(host, { all: true }).catch(() => undefined);
  const bad = addresses?.find((a) => !isPublicAddress(a.address));
  if (bad) throw refuse(`points at ${host}, which resolves to ${bad.address}, not a public address${hint}`);
  return u.href;
}
