import type { IncomingMessage } from 'node:http';
import type { Writable } from 'node:stream';
import type { Agent, Dispatcher } from 'undici';
import { ServiceError } from '../../core/errors.ts';
import { addressPolicy, guardedLookup, NOT_PUBLIC, resolverLookup } from './address-guard.ts';
import { classify, notPublicFailure } from './http.ts';
import { loadedUndici, loadUndici, type Undici } from './undici.ts';

export interface StreamOptions {
  connectTimeoutMs: number;
  /** Idleness allowed at any point: waiting for the headers, or between bytes of the body. */
  responseTimeoutMs: number;
  /** As in `SendOptions`: hosts that may resolve anywhere; every other one must resolve to public addresses. */
  configuredHosts: readonly string[];
  /**
   * The client's response, when there is a client waiting: if it closes before the provider has answered (the
   * client went away), the request to the provider is abandoned at once rather than left to run to its timeout.
   */
  client?: Writable;
}

/** A provider's answer to a streamed request: its status and headers, and its body still to be read. */
export interface StreamedAnswer {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  /**
   * Writes the body to `to` as it arrives, keeping backpressure. Resolves once `to` has finished. When the provider
   * breaks off, `to` is destroyed (a truncated answer, never a clean end) and the promise rejects. When `to` closes
   * first (the client went away), the upstream request is aborted (its connection is not reused) and the promise
   * rejects.
   */
  pipeTo(to: Writable): Promise<void>;
  /** Reads the body and drops it (an answer not passed on), so that its connection can be reused. */
  discard(): void;
  /** Stops the exchange where it is (its connection is closed): for an answer that cannot be passed on. */
  abort(): void;
}

/**
 * The connection pools of streamed requests, one per connect timeout and address policy (a connector's timeouts
 * are fixed, so there are a handful). undici's pools rather than node:http's agents: a bare pass-through on undici
 * took 46 µs of CPU per request where one on http.request took 57, and the service's proxy went from about 150 to
 * 82 µs with the handler below. No cap on connections per origin (see
 * `keepAliveAgents` in got-client.ts); idle connections are closed after the server's keep-alive hint, or 4 s.
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
 * One streamed exchange, on undici's handler interface: the answer's status and headers settle `answer`, and each
 * piece of the body goes straight to the sink `pipeTo` gives, pausing the provider's connection while the sink is
 * full. No stream object or async context per request stands in between (undici's `request()` makes both: about
 * 9 µs of CPU per request more in a bare pass-through). Until a sink is given the connection is
 * paused, and what the parser had already read is kept.
 *
 * **The response timeout is the exchange's own**, one Node timer, rather than undici's `headersTimeout` and
 * `bodyTimeout` (both 0 in `openStream`). For a timeout over a second undici makes a timer object of its own
 * for every request, which stays in undici's list for up to half a second after the answer, whether it fired or
 * not: under load, long enough to outlive two young-generation collections, so each was copied twice and then
 * moved to the old generation, as garbage for the next full collection to find. With this and flat ids (ids.ts),
 * the proxy's young-generation collections promote 16-19.5 KB each instead of 45-52, and keep 213-223 KB alive
 * instead of 319-328. A Node timer is unlinked when it is cleared, and dies young. The semantics are undici's:
 * `responseMs` for the headers from the moment the request has been sent, then `responseMs` of idleness between
 * bytes of the body, and no clock at all while the exchange is paused for a client that reads slowly (or before
 * `pipeTo` has given the body somewhere to go).
 */
class Exchange implements Dispatcher.DispatchHandler {
  readonly answer: Promise<StreamedAnswer>;
  private answered!: (a: StreamedAnswer) => void;
  private refused!: (e: Error) => void;
  private controller?: Dispatcher.DispatchController;
  private headersIn = false;
  private sink?: Writable;
  private dropping = false;
  private held: Buffer[] = [];
  private ended = false;
  private failure?: Error;
  private finished?: { resolve: () => void; reject: (e: Error) => void };
  /** Armed while the provider owes the exchange something: the headers, or the body's next bytes. */
  private timer?: NodeJS.Timeout;
  private readonly timedOut = () => {
    this.timer = undefined;
    // Named as undici names its own timeouts, so that `asFailure` and `openStream` read them as before.
    const e = this.headersIn
      ? Object.assign(new Error('Body Timeout Error'), { code: 'UND_ERR_BODY_TIMEOUT' })
      : Object.assign(new Error('Headers Timeout Error'), { code: 'UND_ERR_HEADERS_TIMEOUT' });
    this.controller?.abort(e);
  };

  /** Set when the client went away before the answer: the exchange is aborted as soon as it can be. */
  abandoned?: Error;
  private readonly clientClosed = () => {
    this.abandoned = Object.assign(new Error('the client went away before the provider answered'), {
      code: 'ECONNRESET',
    });
    this.controller?.abort(this.abandoned);
  };

  constructor(
    private readonly asFailure: (e: Error) => Error,
    private readonly responseMs: number,
    private readonly body?: IncomingMessage,
    private readonly client?: Writable,
  ) {
    this.answer = new Promise((resolve, reject) => {
      this.answered = resolve;
      this.refused = reject;
    });
    // A client already gone (while its account was being resolved, say) has had its 'close'.
    if (client?.destroyed) this.clientClosed();
    else client?.once('close', this.clientClosed);
  }

  /** Called once the connection is there and the request is about to be written. */
  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.abandoned) return controller.abort(this.abandoned);
    // The wait for the headers starts once the request has gone out: with its body, once that has all been read.
    const body = this.body;
    if (!body || body.readableEnded) this.arm();
    else body.once('end', () => !this.headersIn && !controller.aborted && this.arm());
  }

  private arm(): void {
    if (this.timer) this.timer.refresh();
    else {
      this.timer = setTimeout(this.timedOut, this.responseMs);
      this.timer.unref();
    }
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Stops reading the answer, and its clock: a paused exchange waits on its client, not on the provider. */
  private pause(): void {
    this.disarm();
    this.controller?.pause();
  }

  private resume(): void {
    if (this.ended || this.failure || !this.controller || this.controller.aborted) return;
    this.arm();
    this.controller.resume();
  }

  onResponseStart(
    controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    this.headersIn = true;
    this.client?.off('close', this.clientClosed);
    this.pause();
    this.answered({
      statusCode,
      headers,
      pipeTo: (to) => this.pipeTo(to),
      discard: () => {
        this.dropping = true;
        this.held = [];
        this.resume();
      },
      abort: () => {
        this.dropping = true;
        this.held = [];
        this.disarm();
        controller.abort(new Error('the answer was not passed on'));
      },
    });
  }

  onResponseData(_controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.timer?.refresh();
    if (this.dropping) return;
    if (!this.sink) {
      this.held.push(chunk);
      return;
    }
    if (!this.sink.write(chunk)) {
      this.pause();
      this.sink.once('drain', () => this.resume());
    }
  }

  onResponseEnd(): void {
    this.ended = true;
    this.disarm();
    this.sink?.end();
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    this.disarm();
    if (!this.headersIn) {
      this.client?.off('close', this.clientClosed);
      return this.refused(err);
    }
    this.failure ??= this.asFailure(err);
    if (this.sink) {
      this.sink.destroy(this.failure);
      this.finished?.reject(this.failure);
    }
  }

  private pipeTo(to: Writable): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.failure) {
        to.destroy(this.failure);
        return reject(this.failure);
      }
      const clientGone = () => {
        const gone = Object.assign(new Error('the client went away'), { code: 'ECONNRESET' });
        this.dropping = true;
        this.held = [];
        this.disarm();
        this.controller?.abort(gone);
        reject(gone);
      };
      // Gone before the answer came: its 'close' has been and will not come again.
      if (to.destroyed) return clientGone();
      this.finished = { resolve, reject };
      this.sink = to;
      to.once('finish', () => resolve());
      to.once('close', () => {
        if (!to.writableFinished) clientGone();
      });
      const held = this.held;
      this.held = [];
      for (const chunk of held) to.write(chunk);
      if (this.ended) to.end();
      else if (!to.writableNeedDrain) this.resume();
      else to.once('drain', () => this.resume());
    });
  }
}

/**
 * Opens a streamed upstream request on the service's pools (address-guarded for hosts the connection does not
 * configure). Measured with the bench: got's stream API cost about four times the CPU of node:http per
 * proxied request, however tuned, and node:http more than undici; buffered calls keep got. Timeouts:
 * `connectTimeoutMs` to connect, then `responseTimeoutMs` waiting for the headers and again of idleness between
 * bytes of the body, so a provider that stalls cuts the client's response instead of holding it open. The body,
 * when there is one, is streamed into the request without buffering.
 */
export async function openStream(
  method: string,
  url: URL,
  headers: Record<string, string | string[]>,
  body: IncomingMessage | undefined,
  opts: StreamOptions,
): Promise<StreamedAnswer> {
  const policy = addressPolicy(url, opts.configuredHosts);
  if (typeof policy === 'object') throw notPublicFailure(policy.refused);
  const { connectTimeoutMs: connectMs, responseTimeoutMs: responseMs } = opts;
  const parts = loadedUndici() ?? (await loadUndici());
  const exchange = new Exchange(
    (e) => asNodeError(parts.errors, e, connectMs, responseMs),
    responseMs,
    body,
    opts.client,
  );
  poolFor(parts, connectMs, policy === 'guard').dispatch(
    {
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method,
      headers,
      body: body ?? null,
      // The exchange keeps the response timeout itself (see Exchange).
      headersTimeout: 0,
      bodyTimeout: 0,
    },
    exchange,
  );
  try {
    return await exchange.answer;
  } catch (err) {
    // Nobody is waiting for this answer; the status is for the activity record and the log (nginx's 499).
    if (exchange.abandoned)
      throw new ServiceError(499, 'client_gone', 'The client closed its connection before the provider answered');
    const e = err as Error & { code?: string };
    if (e.code === NOT_PUBLIC) throw notPublicFailure(e.message);
    if (e instanceof parts.errors.InvalidArgumentError || e instanceof parts.errors.NotSupportedError)
      throw new ServiceError(400, 'invalid_header', 'A request header has an invalid value');
    throw classify(asNodeError(parts.errors, e, connectMs, responseMs), { connectMs, responseMs });
  }
}
