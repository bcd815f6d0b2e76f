/**
 * The HTTP/2 side of the port gets the limits the HTTP/1.1 side has (slow senders, idle connections) and those only
 * HTTP/2 needs (streams per session, sessions per client, streams the client resets at once). Node's HTTP/2 server has
 * no header or request timeout and never closes an idle session by itself, and HTTP/2's stream cancellation lets a
 * client make the server start work for a request it abandons a moment later ("rapid reset", CVE-2023-44487), across
 * as many fresh sessions as it likes. Everything here is counted per client address and per session, in O(1) per
 * event; the per-address table holds only addresses with a live session or a recent reset.
 */
import http2, { type Http2Server, type Http2Session, type ServerHttp2Stream } from 'node:http2';
import { sessionAddress } from './same-port.ts';

export interface Http2Limits {
  /** Streams one session may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS). */
  maxConcurrentStreams: number;
  /** Sessions one client address may hold at once; a further one is refused. */
  maxSessionsPerClient: number;
  /** A new session must open its first stream within this long (the HTTP/1.1 side's headers timeout). */
  firstStreamTimeoutMs: number;
  /** A session with no open stream for this long is closed (the HTTP/1.1 side's keep-alive timeout). */
  idleSessionTimeoutMs: number;
  /** A request body with no byte for this long is cut (BODY_IDLE_TIMEOUT_MS); 0: no limit. */
  bodyIdleTimeoutMs: number;
  /** A request (headers and body) must have arrived this long after its stream opened (REQUEST_TIMEOUT_MS); 0: none. */
  requestTimeoutMs: number;
  /**
   * Streams a client address may reset before the answer starts: a bucket of `resetBurst`, refilled at
   * `resetsPerSecond`. An address that empties it has its sessions ended (GOAWAY ENHANCE_YOUR_CALM) and new ones
   * refused for `resetPenaltyMs`.
   */
  resetBurst: number;
  resetsPerSecond: number;
  resetPenaltyMs: number;
}

/** Defaults derived from the HTTP/1.1 side's settings. */
export function http2Limits(c: {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  bodyIdleTimeoutMs: number;
  keepAliveTimeoutMs: number;
  maxSessionsPerClient: number;
}): Http2Limits {
  return {
    maxConcurrentStreams: 100,
    maxSessionsPerClient: c.maxSessionsPerClient,
    firstStreamTimeoutMs: c.headersTimeoutMs > 0 ? c.headersTimeoutMs : 15_000,
    idleSessionTimeoutMs: c.keepAliveTimeoutMs,
    bodyIdleTimeoutMs: c.bodyIdleTimeoutMs,
    requestTimeoutMs: c.requestTimeoutMs,
    resetBurst: 200,
    resetsPerSecond: 20,
    resetPenaltyMs: 30_000,
  };
}

/** The server options that carry the per-session limits (the rest is enforced by `guardHttp2`). */
export function http2ServerOptions(limits: Http2Limits): http2.ServerOptions {
  return {
    settings: { maxConcurrentStreams: limits.maxConcurrentStreams, maxHeaderListSize: 64 * 1024 },
    // Streams opened beyond the advertised limit, and malformed frames, end the session sooner than Node's defaults.
    maxSessionRejectedStreams: 20,
    maxSessionInvalidFrames: 100,
  };
}

/** What the guard refused or cut, for /metrics. */
export interface Http2GuardCounts {
  sessionsRefused: number;
  sessionsIdleClosed: number;
  streamsTimedOut: number;
  resetFloodsStopped: number;
}

interface Client {
  sessions: Set<Http2Session>;
  tokens: number;
  refilledAt: number;
  blockedUntil: number;
}

const { NGHTTP2_ENHANCE_YOUR_CALM, NGHTTP2_CANCEL } = http2.constants;

const { NGHTTP2_STREAM_STATE_HALF_CLOSED_REMOTE, NGHTTP2_STREAM_STATE_CLOSED } = http2.constants;

/** The client has closed its side of the stream: its whole request has arrived (read or not). */
function sentAll(stream: ServerHttp2Stream): boolean {
  try {
    const state = stream.state.state;
    return state === NGHTTP2_STREAM_STATE_HALF_CLOSED_REMOTE || state === NGHTTP2_STREAM_STATE_CLOSED;
  } catch {
    return true;
  }
}

function windowFull(stream: ServerHttp2Stream, session: Http2Session): boolean {
  try {
    return stream.state.localWindowSize === 0 || session.state.localWindowSize === 0;
  } catch {
    return false;
  }
}

/** Applies `limits` to every session of `h2`; returns the counters of what it refused. */
export function guardHttp2(h2: Http2Server, limits: Http2Limits, now = Date.now): Http2GuardCounts {
  const counts: Http2GuardCounts = {
    sessionsRefused: 0,
    sessionsIdleClosed: 0,
    streamsTimedOut: 0,
    resetFloodsStopped: 0,
  };
  const clients = new Map<string, Client>();

  const clientOf = (address: string): Client => {
    let c = clients.get(address);
    if (!c) {
      c = { sessions: new Set(), tokens: limits.resetBurst, refilledAt: now(), blockedUntil: 0 };
      clients.set(address, c);
    }
    return c;
  };
  // An address leaves the table once it has no session, a full bucket and no block: the table is bounded by the
  // live sessions plus the addresses still serving a penalty.
  const release = (address: string, c: Client) => {
    if (c.sessions.size === 0 && c.blockedUntil <= now()) {
      refill(c);
      if (c.tokens >= limits.resetBurst) clients.delete(address);
    }
  };
  const refill = (c: Client) => {
    const t = now();
    c.tokens = Math.min(limits.resetBurst, c.tokens + ((t - c.refilledAt) / 1000) * limits.resetsPerSecond);
    c.refilledAt = t;
  };

  h2.on('session', (session: Http2Session) => {
    // On a shared plain port Node's socket for the session does not know the peer: same-port.ts records it.
    const address = sessionAddress(session) ?? 'unknown';
    const c = clientOf(address);
    if (c.blockedUntil > now() || c.sessions.size >= limits.maxSessionsPerClient) {
      counts.sessionsRefused++;
      session.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
      session.destroy();
      return;
    }
    c.sessions.add(session);
    let open = 0;
    let idle: NodeJS.Timeout | undefined;
    const idleFor = (ms: number) => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        counts.sessionsIdleClosed++;
        session.close();
        // A client that never acknowledges the GOAWAY does not keep the session: it is cut a moment later.
        setTimeout(() => session.destroy(), 1000).unref();
      }, ms);
      idle.unref();
    };
    idleFor(limits.firstStreamTimeoutMs);
    session.once('close', () => {
      clearTimeout(idle);
      c.sessions.delete(session);
      release(address, c);
    });
    session.on('error', () => {
      // Reported to the client as the session ends; nothing to do here but not crash on it.
    });

    session.on('stream', (stream: ServerHttp2Stream, _headers, flags: number) => {
      open++;
      clearTimeout(idle);
      // Reset by the client before the answer started: one token. An address out of tokens has every session ended
      // and is refused for a while. A stream whose HEADERS and RST_STREAM came in one read is already aborted here.
      const reset = () => {
        refill(c);
        c.tokens -= 1;
        if (c.tokens < 0 && c.blockedUntil <= now()) {
          counts.resetFloodsStopped++;
          c.blockedUntil = now() + limits.resetPenaltyMs;
          for (const s of c.sessions) {
            s.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
            s.destroy();
          }
        }
      };
      if (stream.aborted) reset();
      else stream.once('aborted', () => !stream.headersSent && reset());
      stream.once('close', () => {
        if (--open === 0 && !session.closed && !session.destroyed) idleFor(limits.idleSessionTimeoutMs);
      });
      // A request with a body: it must keep arriving (body idle) and be complete in time (request timeout).
      const endOfStream = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      if (endOfStream) return;
      let whole: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(whole);
        stream.setTimeout(0);
      };
      const cut = () => {
        // The client has sent its whole request (its side of the stream is closed): what is left to read is the
        // service's to read, however long that takes.
        if (sentAll(stream)) return done();
        counts.streamsTimedOut++;
        if (!stream.closed) stream.close(NGHTTP2_CANCEL);
      };
      if (limits.requestTimeoutMs > 0) {
        whole = setTimeout(cut, limits.requestTimeoutMs);
        whole.unref();
      }
      if (limits.bodyIdleTimeoutMs > 0) {
        stream.on('timeout', () => {
          // While the flow-control window is full the client cannot send: the service has not read what it holds
          // yet (its handler is still loading, say), so the wait is the service's, not the client's.
          if (!sentAll(stream) && windowFull(stream, session)) return void stream.setTimeout(limits.bodyIdleTimeoutMs);
          cut();
        });
        stream.setTimeout(limits.bodyIdleTimeoutMs);
      }
      stream.once('end', done);
      stream.once('close', done);
    });
  });
  return counts;
}
