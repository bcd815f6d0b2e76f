/**
 * got, the HTTP client of tool calls and of the service's other buffered upstream requests (OAuth token requests,
 * webhooks), as the service sets it up: its agents, one prebuilt instance per pair of timeouts, and got's
 * options for `http.request` built so that they keep one shape. Loaded by runtime/upstream/http.ts with the first
 * such request, not at start.
 */
import http from 'node:http';
import https from 'node:https';
import { checkServerIdentity } from 'node:tls';
import got, { Options, type Got, type Method, type Request as GotRequest } from 'got';
// The patch of got's Options (got-patch.ts) applies on import; its original is re-exported for the tests.
export { gotNativeRequestOptions } from './got-patch.ts';
import { guardedAgents, guardedOneShotAgents, resolverLookup } from './address-guard.ts';

/**
 * No cap on sockets per host: the service's own inbound requests already bound how many upstream calls
 * are open, and a cap only queues calls behind it (2,000 users on one provider host, the 513th waiting
 * for a socket, its wait counted by no timeout). Idle sockets kept for reuse are capped.
 */
export const keepAliveAgents = {
  http: new http.Agent({ keepAlive: true, maxFreeSockets: 64, scheduling: 'lifo', lookup: resolverLookup }),
  https: new https.Agent({ keepAlive: true, maxFreeSockets: 64, scheduling: 'lifo', lookup: resolverLookup }),
};

/**
 * Agents that open a connection per request and close it after the answer, for requests that must never go out on
 * a reused connection (see `SendOptions.reuseConnections`).
 */
export const oneShotAgents = {
  http: new http.Agent({ keepAlive: false, lookup: resolverLookup }),
  https: new https.Agent({ keepAlive: false, lookup: resolverLookup }),
};

/**
 * The options got gives `http.request` for the service's requests, each with the one value it must have (node's
 * default), or undefined for any value.
 */
const LEAN_OPTIONS: ReadonlyMap<string, unknown> = new Map<string, unknown>([
  ['agent', undefined],
  ['method', undefined],
  ['headers', undefined],
  ['setHost', true],
  ['checkServerIdentity', checkServerIdentity],
]);

/**
 * got's `request` function (its documented option for replacing `http.request`): the same request, given to node as
 * one small options object instead of a URL plus got's options.
 *
 * got calls `http.request(url, options)` with the request's URL object. Node turns the URL into an options object of
 * eight keys (`urlToHttpOptions`), assigns got's five onto it, then copies the result twice more, into objects without a
 * prototype, which V8 builds as dictionaries key by key: once in `ClientRequest` and once in the agent's `addRequest`,
 * which adds the agent's own options too (about twenty keys by then). Under callgrind those copies were about 80
 * thousand instructions of a tool call's 600 thousand (`Runtime_CopyDataProperties`, called from `addRequest` and
 * `ClientRequest`). The URL's `hash`, `href`, `pathname`, `search` and `protocol` are not read by node once the request
 * has its `path` and the agent its protocol, so they are left out: host, port, path, method, headers and agent are what
 * node reads. The host header, the agent's connection pool key (host and port) and the TLS server name come out as
 * they did. A request that carries anything else (a TLS option, credentials in its URL) is sent as got sends it.
 * With this and the body change of the same part a tool call's main thread ran 15 % fewer instructions.
 */
export function leanRequest(url: URL, options: Record<string, unknown>): http.ClientRequest {
  const secure = url.protocol === 'https:';
  const agent = options.agent as http.Agent | undefined;
  let plain = url.username === '' && url.password === '' && agent !== undefined;
  for (const key in options) {
    const usual = LEAN_OPTIONS.get(key);
    if (!LEAN_OPTIONS.has(key) || (usual !== undefined && options[key] !== usual)) plain = false;
  }
  if (!plain) return (secure ? https : http).request(url, options);
  const hostname = url.hostname;
  return (secure ? https : http).request({
    // An IPv6 literal is bracketed in a URL, not in node's options (as urlToHttpOptions does).
    hostname: hostname.charCodeAt(0) === 0x5b ? hostname.slice(1, -1) : hostname,
    // A URL leaves its scheme's default port out; node's ClientRequest then takes the agent's, the same number.
    port: url.port === '' ? (secure ? 443 : 80) : Number(url.port),
    path: url.pathname + url.search,
    method: options.method as string,
    headers: options.headers as http.OutgoingHttpHeaders,
    agent,
  });
}

/**
 * One prebuilt got instance for every upstream call: keep-alive agents, no automatic retries (the policy
 * below decides), no automatic redirects (credentials must not follow a redirect to another host), no
 * thrown HTTP errors (the caller classifies statuses).
 */
export const upstreamClient: Got = got.extend({
  request: leanRequest as never,
  agent: keepAliveAgents,
  retry: { limit: 0 },
  throwHttpErrors: false,
  followRedirect: false,
  decompress: true,
  responseType: 'buffer',
  http2: false,
  hooks: {},
});

/**
 * The `accept-encoding` got sends when decompression is on and the call gives none (got's `_makeRequest`): the
 * encodings this Node can decompress.
 */
const GOT_ACCEPT_ENCODING = [
  'gzip',
  'deflate',
  ...(typeof process.versions.brotli === 'string' ? ['br'] : []),
  ...(typeof (process.versions as Record<string, string | undefined>).zstd === 'string' ? ['zstd'] : []),
].join(', ');

/** What one buffered exchange sends: the only options that change from call to call. */
export interface ExchangeOptions {
  method: Method;
  headers: Record<string, string>;
  body?: Buffer | string;
  signal?: AbortSignal;
}

/**
 * A prebuilt got instance with an `Options` of its own for its requests, so that a call merges no options.
 *
 * got's call API (`got.stream(url, options)`) merges the call's options into a copy of the instance's on every call:
 * it spreads `{ ...options, isStream: true }`, copies that again (`cloneRaw`), runs each option through its setter
 * and keeps the object for later merges. got also takes an `Options` as its third argument (`got(undefined,
 * undefined, options)` in its types), and the request then copies those options as they are. Here that `Options`
 * (the instance's defaults, as a stream) gets the call's URL, method and headers, and its body when it has one, just
 * before the call: the request copies them in its constructor, so no call sees another's options. The next call
 * sets the URL, method and headers again; a body is taken off at once, so that the shared options do not keep an
 * upload alive. got copies the headers given, names in lower case; the instance's defaults join that copy, rather
 * than a `{ ...defaults }` the call's headers are added to, whose shape V8 would build anew on every call; this
 * took a tool call's CPU down by about 9 % when it was made.
 *
 * The headers got would add to its copy of them, it finds already there. got copies the headers for each request
 * (`{ ...headers }` in its options' constructor), then adds `content-length` for a body and, with decompression on,
 * `accept-encoding`. A key added to a spread copy gives it a hidden class of its own, every time (above): a new map,
 * descriptor array and key cache per request, which V8 allocates in the old generation, about 320 bytes, most of
 * what a got request left there. The same header values, set here before got copies the headers, keep one shape.
 * In loops of 60 000 requests on this client, what outlived the young generation went from 386-776 to 49-100 bytes
 * per request, and a tool call's scavenges promote 11.6-12.1 KB instead of 36.3-37.8.
 *
 * A call with an AbortSignal takes got's call API: got's options cannot have a signal taken off again (its setter
 * takes only an object), so one set on the shared options would end later calls too.
 */
export class PreparedClient {
  private readonly options: Options;
  /** The instance's default headers (got's user agent), under the call's, as got's merge leaves them. */
  private readonly defaultHeaders: Readonly<Record<string, string>>;

  constructor(readonly got: Got) {
    const defaults = got.defaults.options;
    this.options = new Options(undefined, { isStream: true }, defaults);
    this.defaultHeaders = {
      ...(defaults.headers as Record<string, string>),
      ...(defaults.decompress ? { 'accept-encoding': GOT_ACCEPT_ENCODING } : {}),
    };
  }

  /** got's request stream for one exchange. */
  stream(url: string, call: ExchangeOptions): GotRequest {
    if (call.signal) return this.got.stream(url, call);
    const options = this.options;
    try {
      options.url = url;
    } catch {
      // A URL got refuses (malformed, another protocol): got's call API reports it as an error of the stream.
      return this.got.stream(url, call);
    }
    options.method = call.method;
    options.headers = call.headers;
    const headers = options.headers;
    for (const name in this.defaultHeaders) if (!(name in headers)) headers[name] = this.defaultHeaders[name];
    if (call.body === undefined) return this.got(undefined, undefined, options) as GotRequest;
    // As got's _finalizeBody would: the body's size, unless the call gives a length or a transfer encoding.
    if (!('content-length' in headers) && !('transfer-encoding' in headers))
      headers['content-length'] = String(Buffer.byteLength(call.body));
    options.body = call.body;
    try {
      return this.got(undefined, undefined, options) as GotRequest;
    } finally {
      options.body = undefined;
    }
  }
}

/**
 * The client for one pair of timeouts and one set of agents, built once with `upstreamClient.extend` (a connector's
 * timeouts are fixed, so there are a handful): each call then passes only its method, headers and body, and got
 * does not merge and validate the agents and timeouts again on every request. `response` bounds the wait for the
 * answer's first byte once the request is sent, and `request` is a deadline for the whole answer (connect +
 * response, as the README's UPSTREAM_TIMEOUT_MAX_MS says), so a provider that drips a byte at a time (never idle)
 * cannot hold a call forever. There is no idle (`socket`) timeout besides: the deadline already ends a stalled
 * answer, at most the connect timeout later than an idle timeout of the response timeout would, and the idle timer
 * cost every call about 2 µs of CPU, 4 % of got's own.
 */
const clients = new Map<string, PreparedClient>();
export function clientFor(connectMs: number, responseMs: number, guarded: boolean, reuse: boolean): PreparedClient {
  const key = `${connectMs}:${responseMs}:${guarded ? 'guarded' : 'open'}:${reuse ? 'keep-alive' : 'one-shot'}`;
  let client = clients.get(key);
  if (!client) {
    const agent = reuse ? (guarded ? guardedAgents : keepAliveAgents) : guarded ? guardedOneShotAgents : oneShotAgents;
    client = new PreparedClient(
      upstreamClient.extend({
        agent,
        timeout: {
          connect: connectMs,
          secureConnect: connectMs,
          response: responseMs,
          request: connectMs + responseMs,
        },
      }),
    );
    if (clients.size >= 1_000) clients.clear();
    clients.set(key, client);
  }
  return client;
}
