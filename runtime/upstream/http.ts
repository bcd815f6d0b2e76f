import type { IncomingHttpHeaders } from 'node:http';
import type { Method } from 'got';
import type { RetrySpec } from '../../core/spec-model.ts';
import { UpstreamFailure } from '../../core/errors.ts';
import { addressPolicy, NOT_PUBLIC } from './address-guard.ts';

type GotClient = typeof import('./got-client.ts');
type ExchangeOptions = import('./got-client.ts').ExchangeOptions;
let gotClient: GotClient | undefined;
let loadingGot: Promise<GotClient> | undefined;
/**
 * got and the service's setup of it (runtime/upstream/got-client.ts), loaded with the first buffered request rather
 * than at start: got and the packages it loads (http2-wrapper, its type checks, its cache layer) were about 210 KB
 * of the 2.2 MB of code every start compiled and ran, for a service that may run no tool for a while after it.
 */
function loadGot(): Promise<GotClient> {
  return (loadingGot ??= import('./got-client.ts').then((m) => (gotClient = m)));
}

export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: Buffer | string;
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  url: string;
}

export interface SendOptions {
  connectTimeoutMs: number;
  responseTimeoutMs: number;
  retry?: RetrySpec;
  maxBytes: number;
  /** Header names to drop when a redirect leaves the original origin. */
  credentialHeaders: readonly string[];
  maxRedirects?: number;
  /** Called before each wait, for tests and metrics. */
  onRetry?: (attempt: number, waitMs: number, reason: string) => void;
  /**
   * Hosts the operator or connector configured (see `configuredHosts`); any other host, first or after a
   * redirect, must resolve to public addresses. Undefined: no restriction (for callers whose every URL is configured).
   */
  configuredHosts?: readonly string[];
  /** What the size limit is, for the error when an answer exceeds it (default: the limit for tool results). */
  limitNote?: string;
  /** Ends the exchange early (a fetch caller's AbortSignal). */
  signal?: AbortSignal;
  /**
   * Whether the request may go out on a kept-alive connection (default true). False for requests that are not
   * safe to repeat and must not be lost to a server closing an idle connection just as it is reused (the request
   * then fails with a reset, and whether the server acted on it cannot be told): OAuth token requests, where a
   * repeated refresh could find its refresh token already rotated. They are rare enough that a new connection
   * each costs nothing that matters.
   */
  reuseConnections?: boolean;
}

/** The host of an upstream URL may not be contacted (see address-guard). */
export function notPublicFailure(detail: string): UpstreamFailure {
  return new UpstreamFailure(
    'upstream_host_not_public',
    `The provider host was refused: ${detail}; requests go only to public addresses unless the connection configures the host`,
    502,
  );
}

/**
 * A connector's connect and response timeouts, or the defaults it leaves out, each capped by the
 * operator's UPSTREAM_TIMEOUT_MAX_MS (0: no cap) — e.g. to answer before a load balancer gives up.
 */
export function upstreamTimeouts(
  timeouts: { connect_ms?: number; response_ms?: number } | undefined,
  maxMs: number,
  defaults: { connectMs: number; responseMs: number },
): { connectMs: number; responseMs: number } {
  const cap = (ms: number) => (maxMs > 0 ? Math.min(ms, maxMs) : ms);
  return {
    connectMs: cap(timeouts?.connect_ms ?? defaults.connectMs),
    responseMs: cap(timeouts?.response_ms ?? defaults.responseMs),
  };
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);
const DEFAULT_RETRY: RetrySpec = {
  statuses: [429, 502, 503, 504],
  max_attempts: 3,
  retry_after_header: 'retry-after',
  max_wait_ms: 30_000,
};

/** Seconds, or an HTTP date; undefined when absent or unparseable. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const date = Date.parse(v);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A URL without its query, for logs and messages: a query may carry what the operator's logs have no use for. */
export function stripQuery(url: string): string {
  const i = url.indexOf('?');
  return i < 0 ? url : url.slice(0, i);
}

/**
 * One exchange, no retry and no redirect: the address policy, connect/idle/whole-answer timeouts and the size
 * limit, and every failure as the service's own error (see `classify`).
 */
export async function sendOnce(req: HttpRequest, opts: SendOptions): Promise<HttpResponse> {
  const policy = addressPolicy(req.url, opts.configuredHosts);
  if (typeof policy === 'object') throw notPublicFailure(policy.refused);
  const call: ExchangeOptions = { method: req.method as Method, headers: req.headers };
  if (req.body !== undefined) call.body = req.body;
  if (opts.signal) call.signal = opts.signal;
  // got's stream API, buffered here, rather than its promise API: the promise API keeps each call's objects
  // reachable across scavenges (about 15 KB per call promoted to the old generation, scavenges about ten times as
  // long), the stream API does not. Agents, timeouts and the stream
  // setting come with the prebuilt client, which merges no options per call (got-client.ts, PreparedClient).
  const { clientFor } = gotClient ?? (await loadGot());
  const stream = clientFor(
    opts.connectTimeoutMs,
    opts.responseTimeoutMs,
    policy === 'guard',
    opts.reuseConnections ?? true,
  ).stream(req.url, call);
  // A stream request whose method may carry a body waits for its writable side to end: without a body, end it.
  const method = req.method.toUpperCase();
  if (req.body === undefined && method !== 'GET' && method !== 'HEAD') stream.end();
  let announced: number | undefined;
  /** Bytes of the body received so far (decompressed); undefined until the headers arrive. */
  let received: number | undefined;
  let tooLarge = false;
  try {
    return await new Promise<HttpResponse>((resolve, reject) => {
      let status = 0;
      let headers: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      const refuse = () => {
        tooLarge = true;
        reject(new Error('response too large'));
        stream.destroy();
      };
      stream.on('response', (res: { statusCode: number; headers: IncomingHttpHeaders }) => {
        status = res.statusCode;
        headers = res.headers;
        received = 0;
        const length = res.headers['content-length'];
        announced = length === undefined || !/^\d+$/.test(length) ? undefined : Number(length);
        if (announced !== undefined && announced > opts.maxBytes) refuse();
      });
      stream.on('data', (chunk: Buffer) => {
        if (tooLarge) return;
        received = (received ?? 0) + chunk.length;
        if (received > opts.maxBytes) refuse();
        else chunks.push(chunk);
      });
      stream.on('end', () =>
        resolve({
          status,
          headers,
          body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks),
          url: req.url,
        }),
      );
      // Kept for the stream's life: an error after a refusal must not go unheard (it would be thrown).
      stream.on('error', reject);
      // A stream closed without its end or an error would leave the call waiting for good: fail it instead (after
      // 'end' or 'error' this is a no-op).
      stream.on('close', () => reject(new Error('the answer closed before it ended')));
    });
  } catch (e) {
    if ((e as { code?: string }).code === NOT_PUBLIC) throw notPublicFailure((e as Error).message);
    if (tooLarge) {
      const note =
        opts.limitNote ??
        'the limit for tool results (TOOL_RESPONSE_LIMIT_BYTES); fetch it through /proxy, which streams';
      const early =
        announced !== undefined && announced > opts.maxBytes
          ? `: its Content-Length says ${announced} bytes, so it was refused before its body was read`
          : '';
      throw new UpstreamFailure(
        'response_too_large',
        `The provider's response is larger than ${opts.maxBytes} bytes, ${note}${early}`,
      );
    }
    const failure = classify(e, { connectMs: opts.connectTimeoutMs, responseMs: opts.responseTimeoutMs });
    // Once the headers arrived the provider has answered (and may have acted on the request): a body that then
    // breaks off is reported as cut short and never retried, so a broken answer costs one exchange, not three.
    throw received === undefined ? failure : afterHeaders(failure, received, announced);
  }
}

/**
 * A failure while the body of an answer was being read: the same code (a timeout stays a timeout), a message that
 * says how much of the answer arrived, and marked final, so `send` does not retry it.
 */
function afterHeaders(failure: NetworkFailure, received: number, announced: number | undefined): NetworkFailure {
  const at = `after ${received} bytes${announced === undefined ? '' : ` of the ${announced} its Content-Length announced`}`;
  const what =
    failure.code === 'upstream_timeout'
      ? `${failure.message.replace('did not answer in time', 'did not finish its answer in time')}, ${at}`
      : failure.code === 'provider_malformed_response'
        ? `${failure.message}, ${at}`
        : `The provider's answer was cut short ${at}: ${failure.code === 'upstream_connection_reset' ? 'the provider closed the connection' : failure.message}`;
  return new NetworkFailure(
    failure.code,
    `${what}; not retried, since the provider had answered`,
    failure.status,
    false,
    true,
  );
}

export class NetworkFailure extends UpstreamFailure {
  constructor(
    code: string,
    message: string,
    status: number,
    /** The request provably never reached the provider, so even a POST may be retried. */
    readonly notSent: boolean,
    /** The provider answered and its answer broke off: a retry would only repeat the exchange. */
    readonly final = false,
  ) {
    super(code, message, status);
  }
}

/**
 * A failed exchange with the provider, as the service's own error: timeout (naming the limit that ran
 * out, so a client can tell the connector's timeout from its own), unreachable, reset, or other.
 */
export function classify(e: unknown, limits?: { connectMs: number; responseMs: number }): NetworkFailure {
  // Structural, so errors from the proxy (undici's, in node:http's terms: see stream.ts) and from got (tools)
  // classify alike.
  const err = (e ?? {}) as { name?: string; event?: string; code?: string; message?: string };
  if (err.name === 'TimeoutError') {
    const event = err.event ?? 'response';
    const before = event === 'lookup' || event === 'connect' || event === 'secureConnect';
    const limit = !limits
      ? undefined
      : before
        ? limits.connectMs
        : event === 'request'
          ? limits.connectMs + limits.responseMs
          : limits.responseMs;
    const ms = limit === undefined ? '' : ` after ${limit} ms`;
    return new NetworkFailure(
      'upstream_timeout',
      `The provider did not answer in time (${event} timeout${ms})`,
      504,
      before,
    );
  }
  if (typeof err.code === 'string') {
    const code = err.code;
    if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH') {
      return new NetworkFailure('upstream_unreachable', `The provider could not be reached (${code})`, 502, true);
    }
    if (code === 'ECONNRESET' || code === 'EPIPE') {
      return new NetworkFailure(
        'upstream_connection_reset',
        'The provider closed the connection before answering',
        502,
        false,
      );
    }
    if (code.startsWith('HPE_') || code.startsWith('Z_') || code === 'ERR_CONTENT_DECODING_FAILED') {
      return new NetworkFailure(
        'provider_malformed_response',
        `The provider's answer is not valid HTTP or its compression is broken (${code})`,
        502,
        false,
      );
    }
    return new NetworkFailure('upstream_error', `The request to the provider failed (${code})`, 502, false);
  }
  return new NetworkFailure(
    'upstream_error',
    `The request to the provider failed (${err.message ?? 'unknown'})`,
    502,
    false,
  );
}

/**
 * Sends a request with the retry policy: an idempotent request is retried on a network failure or a
 * listed status; a non-idempotent one only when it provably never arrived, or when the provider asked
 * for a retry with Retry-After (429/503) — so a POST is never duplicated. Redirects are followed for
 * GET/HEAD only, and credential headers are dropped when the redirect changes origin.
 */
export async function send(req: HttpRequest, opts: SendOptions): Promise<HttpResponse> {
  const retry = opts.retry ?? DEFAULT_RETRY;
  const idempotent = IDEMPOTENT.has(req.method.toUpperCase());
  const maxWait = retry.max_wait_ms ?? 30_000;
  let current = req;
  let redirects = 0;
  for (let attempt = 1; ; attempt++) {
    let res: HttpResponse;
    try {
      res = await sendOnce(current, opts);
    } catch (e) {
      const retriable =
        e instanceof NetworkFailure && !e.final && (idempotent || e.notSent) && attempt < retry.max_attempts;
      if (!retriable) throw e;
      const wait = backoff(attempt);
      opts.onRetry?.(attempt, wait, (e as Error).message);
      await sleep(wait);
      continue;
    }
    if (
      res.status >= 300 &&
      res.status < 400 &&
      res.headers.location &&
      (current.method === 'GET' || current.method === 'HEAD')
    ) {
      if (++redirects > (opts.maxRedirects ?? 5)) return res;
      const next = new URL(String(res.headers.location), current.url);
      if (next.protocol !== 'https:' && next.protocol !== 'http:') return res;
      const sameOrigin = next.origin === new URL(current.url).origin;
      const headers = { ...current.headers };
      if (!sameOrigin) for (const h of opts.credentialHeaders) delete headers[h];
      current = { method: current.method, url: next.toString(), headers };
      attempt--;
      continue;
    }
    if (attempt < retry.max_attempts && retry.statuses.includes(res.status)) {
      const after = parseRetryAfter(res.headers[retry.retry_after_header ?? 'retry-after']);
      const providerAsked = after !== undefined && (res.status === 429 || res.status === 503);
      if ((idempotent || providerAsked) && (after === undefined || after <= maxWait)) {
        const wait = after ?? backoff(attempt);
        opts.onRetry?.(attempt, wait, `status ${res.status}`);
        await sleep(wait);
        continue;
      }
    }
    return res;
  }
}

function backoff(attempt: number): number {
  const base = 200 * 2 ** (attempt - 1);
  return Math.min(5_000, base + Math.floor(Math.random() * base * 0.3));
}
