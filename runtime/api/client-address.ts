import type { Services } from '../services.ts';

/** The client's address: with TRUST_PROXY, the first address of X-Forwarded-For, as a reverse proxy sets it. */
export function clientAddress(
  s: Services,
  req: { headers: Record<string, string | string[] | undefined>; socket: { remoteAddress?: string } },
): string {
  const forwarded = req.headers['x-forwarded-for'];
  if (s.config.trustProxy && typeof forwarded === 'string') {
    const first = forwarded.split(',')[0]!.trim();
    if (first) return first;
  }
  return req.socket.remoteAddress ?? 'unknown';
}
