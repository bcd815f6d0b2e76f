/**
 * The headers an upstream request carries besides its own: the connector's (`api.headers`), the service's
 * user agent, the body's content type, the MCP transport's, and the account's credentials. One definition for
 * the runtime (which sends them, and shows them redacted in dry runs) and the generator (which shows them in
 * the connector docs), so the docs show what is really sent.
 */
import type { ApiSpec, CredentialApply } from './spec-model.ts';
import type { UpstreamRequest } from './tool-types.ts';
import { setOwn } from './own.ts';

export const USER_AGENT = 'agent-connector-service/0.1';

export const REDACTED = '[REDACTED]';

/**
 * Two header sets merged into a new object, the second's values winning, every name an own property (a header
 * named `__proto__` included). Built key by key onto an empty literal, not as `{ ...a, ...b }` nor from a `{ ...a }`
 * copy: on Node 20 an object made by a spread gets new hidden classes for every key added to it afterwards, on
 * every evaluation (see runtime/upstream/http.ts), and upstream requests merge headers on every call (the
 * credentials are keys the request's own headers lack).
 */
export function mergeHeaders<V extends string | string[]>(
  a: Record<string, V>,
  b: Record<string, V>,
): Record<string, V> {
  const out: Record<string, V> = {};
  for (const name of Object.keys(a)) setOwn(out, name, a[name]!);
  for (const name of Object.keys(b)) setOwn(out, name, b[name]!);
  return out;
}

export function lowerKeys(h: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in h) out[k.toLowerCase()] = h[k]!;
  return out;
}

export function encodeBody(req: Pick<UpstreamRequest, 'body' | 'bodyEncoding'>): {
  body?: string;
  contentType?: string;
} {
  if (req.body === undefined) return {};
  if (req.bodyEncoding === 'form') {
    const p = new URLSearchParams();
    for (const [k, v] of Object.entries(req.body as Record<string, unknown>))
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a form body's values are the spec's scalars; String() is their form encoding
      if (v !== undefined) p.set(k, String(v));
    return { body: p.toString(), contentType: 'application/x-www-form-urlencoded' };
  }
  return { body: JSON.stringify(req.body), contentType: 'application/json' };
}

export function baseHeaders(connector: { api: Pick<ApiSpec, 'headers'> }): Record<string, string> {
  return { accept: 'application/json', 'user-agent': USER_AGENT, ...lowerKeys(connector.api.headers ?? {}) };
}

/** The headers an `apply` sets, with every credential value shown as [REDACTED]. */
export function redactedCredentialHeaders(apply: CredentialApply): Record<string, string> {
  const out: Record<string, string> = {};
  if (apply.bearer !== undefined) out.authorization = `Bearer ${REDACTED}`;
  if (apply.basic !== undefined) out.authorization = `Basic ${REDACTED}`;
  for (const name of Object.keys(apply.headers ?? {})) out[name.toLowerCase()] = REDACTED;
  return out;
}

/** Every header a request is sent with, credentials redacted: what a dry run and the docs show. */
export function shownHeaders(
  connector: { api: Pick<ApiSpec, 'headers'> },
  defaultApply: CredentialApply,
  r: Pick<UpstreamRequest, 'headers' | 'body' | 'bodyEncoding' | 'anonymous' | 'apply' | 'mcp'>,
): Record<string, string> {
  const headers = mergeHeaders(baseHeaders(connector), lowerKeys(r.headers));
  if (r.mcp) {
    headers['content-type'] = 'application/json';
    headers.accept = 'application/json, text/event-stream';
  }
  if (!r.anonymous) Object.assign(headers, redactedCredentialHeaders(r.apply ?? defaultApply));
  const { contentType } = encodeBody(r);
  if (contentType) headers['content-type'] = contentType;
  return headers;
}
