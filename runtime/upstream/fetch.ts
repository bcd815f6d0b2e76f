/**
 * The upstream layer as a WHATWG `fetch`, for libraries that take one: oauth4webapi (`[customFetch]`: token,
 * refresh, discovery and registration requests) and the MCP SDK's Streamable HTTP transport. Each request is one
 * `sendOnce` — the address guard at the socket's DNS lookup, connect, idle and whole-answer timeouts, a size
 * limit — and its answer is buffered, so a stall or an oversized body is refused here, classified, before the
 * library reads a byte. Redirects are never followed: the caller sees the 3xx (oauth4webapi asks for `manual`),
 * and a caller asking `redirect: 'error'` gets an error.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { UpstreamFailure } from '../../core/errors.ts';
import { sendOnce, stripQuery, type HttpRequest, type HttpResponse } from './http.ts';

export interface FetchPolicy {
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  maxBytes: number;
  /** As in `SendOptions`: hosts that may resolve anywhere; every other one must resolve to public addresses. */
  configuredHosts: readonly string[];
  /** What the size limit is, for the error when an answer exceeds it. */
  limitNote: string;
  /** As in `SendOptions`: false sends every request on a connection of its own. */
  reuseConnections?: boolean;
}

export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** The request a fetch call describes, as the upstream layer sends it (bodies as text or bytes). */
export function fetchRequest(input: string | URL | Request, init: RequestInit | undefined): HttpRequest {
  if (input instanceof Request) throw new TypeError('the upstream fetch takes a URL and an init, not a Request');
  const headers: Record<string, string> = {};
  new Headers(init?.headers).forEach((value, name) => (headers[name] = value));
  const body = init?.body;
  let bytes: Buffer | string | undefined;
  if (body === undefined || body === null) bytes = undefined;
  else if (typeof body === 'string') bytes = body;
  else if (body instanceof URLSearchParams) bytes = body.toString();
  else if (body instanceof ArrayBuffer) bytes = Buffer.from(body);
  else if (ArrayBuffer.isView(body)) bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  else throw new TypeError('the upstream fetch sends string, form or byte bodies only');
  return { method: (init?.method ?? 'GET').toUpperCase(), url: String(input), headers, body: bytes };
}

/** No body for these statuses (the Response constructor refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** A buffered answer as a `Response`. The body is already decoded, so the encoding and length headers go. */
export function toResponse(res: HttpResponse): Response {
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers as IncomingHttpHeaders)) {
    if (value === undefined || name === 'content-encoding' || name === 'content-length') continue;
    if (Array.isArray(value)) for (const v of value) headers.append(name, v);
    else headers.set(name, value);
  }
  return new Response(NULL_BODY.has(res.status) ? null : res.body, { status: res.status, headers });
}

/** A fetch that sends through the upstream layer under `policy`. */
export function upstreamFetch(policy: FetchPolicy): Fetch {
  return async (input, init) => {
    const res = await sendOnce(fetchRequest(input, init), {
      ...policy,
      credentialHeaders: [],
      ...(init?.signal ? { signal: init.signal } : {}),
    });
    if (init?.redirect === 'error' && res.status >= 300 && res.status < 400) {
      throw new UpstreamFailure('upstream_redirect_refused', `${stripQuery(res.url)} answered with a redirect`);
    }
    return toResponse(res);
  };
}
