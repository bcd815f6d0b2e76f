import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { Agent } from 'undici';
import { ServiceError } from '../../core/errors.ts';
import { addressPolicy, guardedLookup, NOT_PUBLIC, resolverLookup } from './address-guard.ts';
import { classify, notPublicFailure } from './http.ts';

export interface StreamOptions {
  connectTimeoutMs: number;
  /** Idleness allowed at any point: waiting for the headers, or between bytes of the body. */
  responseTimeoutMs: number;
  /** As in `SendOptions`: hosts that may resolve anywhere; every other one must resolve to public addresses. */
  configuredHosts: readonly string[];
}

/** A provider's answer to a streamed request: its status and headers, and its body still to be read. */
export interface StreamedAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable;
}

/**
 * The connection pools of streamed requests, one per connect timeout and address policy (a connector's timeouts
 * are fixed, so there are a handful). undici's pools rather than node:http's agents: a bare pass-through on undici
 * took 46 µs of CPU per request where one on http.request took 57, and the service's proxy went from about 150 to
 * 98 µs (bench/RESULTS.md, issue 14). No cap on connections per origin (see
 * `keepAliveAgents` in http.ts); idle connections are closed after the server's keep-alive hint, or 4 s.
 * The address guard is the same lookup as on the buffered path: a host the connection does not configure must
 * resolve to public addresses only, checked on every new connection.
 */
const pools = new Map<string, Agent>();
function poolFor(undici: Undici, connectMs: number, guarded: boolean): Agent {
  const key = `${connectMs}:${guarded ? 'guarded' : 'open'}`;
  let pool = pools.get(key);
  if (!pool) {
    pool = new undici.Agent({ connect: { timeout: connectMs, lookup: guarded ? guardedLookup : resolverLookup } });
    if (pools.size >= 100) {
      for (const old of pools.values()) void old.close();
      pools.clear();
    }
    pools.set(key, pool);
  }
  return pool;
}

/**
 * undici's parts, not its main module (see undici-parts.d.ts): its pool and request API, loaded with the first
 * streamed request (about 360 KB of code that a service which never proxies does not load, nor parse at start).
 */
interface Undici {
  Agent: typeof import('undici/lib/dispatcher/agent.js');
  request: typeof import('undici/lib/api/api-request.js');
  errors: typeof import('undici/lib/core/errors.js');
}
let undici: Undici | undefined;
let loading: Promise<Undici> | undefined;
function loadUndici(): Promise<Undici> {
  return (loading ??= Promise.all([
    import('undici/lib/dispatcher/agent.js'),
    import('undici/lib/api/api-request.js'),
    import('undici/lib/core/errors.js'),
  ]).then(
    ([agent, request, errors]) => (undici = { Agent: agent.default, request: request.default, errors: errors.default }),
  ));
}

/** An undici failure in the terms `classify` reads (those of node:http and got). */
function asNodeError(
  errors: Undici['errors'],
  e: Error & { code?: string },
  connectMs: number,
  responseMs: number,
): Error {
  const timeout = (event: string, ms: number) =>
    Object.assign(new Error(`timed out (${event}, ${ms} ms)`), { name: 'TimeoutError', event, code: 'ETIMEDOUT' });
  switch (e.code) {
    case 'UND_ERR_CONNECT_TIMEOUT':
      return timeout('connect', connectMs);
    case 'UND_ERR_HEADERS_TIMEOUT':
      return timeout('response', responseMs);
    case 'UND_ERR_BODY_TIMEOUT':
      return timeout('socket', responseMs);
    case 'UND_ERR_SOCKET':
    case 'UND_ERR_CLOSED':
      return Object.assign(new Error(e.message), { code: 'ECONNRESET' });
    default:
      // An answer that is not HTTP/1.1: named as node:http's parser names it.
      return e instanceof errors.HTTPParserError
        ? Object.assign(new Error(e.message), { code: e.code ?? 'HPE_INVALID_CONSTANT' })
        : e;
  }
}

/**
 * Opens a streamed upstream request on the service's pools (address-guarded for hosts the connection does not
 * configure). Measured in bench/RESULTS.md: got's stream API cost about four times the CPU of node:http per
 * proxied request, however tuned, and node:http more than undici; buffered calls keep got. Timeouts:
 * `connectTimeoutMs` to connect, then `responseTimeoutMs` waiting for the headers and again of idleness between
 * bytes of the body, so a provider that stalls cuts the client's response instead of holding it open. The body,
 * when there is one, is streamed into the request without buffering.
 */
export async function openStream(
  method: string,
  url: string,
  headers: Record<string, string | string[]>,
  body: IncomingMessage | undefined,
  opts: StreamOptions,
): Promise<StreamedAnswer> {
  const policy = addressPolicy(url, opts.configuredHosts);
  if (typeof policy === 'object') throw notPublicFailure(policy.refused);
  const { connectTimeoutMs: connectMs, responseTimeoutMs: responseMs } = opts;
  const u = new URL(url);
  const parts = undici ?? (await loadUndici());
  try {
    const answer = await parts.request.call(poolFor(parts, connectMs, policy === 'guard'), {
      origin: u.origin,
      path: `${u.pathname}${u.search}`,
      method: method as 'GET',
      headers,
      body: body ?? null,
      headersTimeout: responseMs,
      bodyTimeout: responseMs,
    });
    return { statusCode: answer.statusCode, headers: answer.headers, body: answer.body };
  } catch (err) {
    const e = err as Error & { code?: string };
    if (e.code === NOT_PUBLIC) throw notPublicFailure(e.message);
    if (e instanceof parts.errors.InvalidArgumentError || e instanceof parts.errors.NotSupportedError)
      throw new ServiceError(400, 'invalid_header', 'A request header has an invalid value');
    throw classify(asNodeError(parts.errors, e, connectMs, responseMs), { connectMs, responseMs });
  }
}
