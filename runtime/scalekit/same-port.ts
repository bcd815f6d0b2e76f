import type { Server } from 'node:http';
import type { Http2Server, Http2Session } from 'node:http2';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import tls, { type TLSSocket } from 'node:tls';

/**
 * The socket as a plain stream, bytes already read included. Node 20's HTTP/2 session reads a net.Socket's handle
 * directly and would miss the preface read to recognise it; given a stream without a handle, it reads through
 * the stream instead. Only HTTP/2 connections take this path.
 */
class SocketStream extends Duplex {
  constructor(private readonly socket: Socket) {
    super();
    socket.on('data', (chunk: Buffer) => {
      if (!this.push(chunk)) socket.pause();
    });
    socket.once('end', () => this.push(null));
    socket.once('error', (e) => this.destroy(e));
    socket.once('close', () => this.destroy());
  }
  get remoteAddress() {
    return this.socket.remoteAddress;
  }
  get remotePort() {
    return this.socket.remotePort;
  }
  override _read() {
    this.socket.resume();
  }
  override _write(chunk: Buffer, encoding: BufferEncoding, done: (e?: Error | null) => void) {
    this.socket.write(chunk, encoding, done);
  }
  override _final(done: (e?: Error | null) => void) {
    this.socket.end(done);
  }
  override _destroy(e: Error | null, done: (e?: Error | null) => void) {
    this.socket.destroy(e ?? undefined);
    done(e);
  }
}

/**
 * The client address of each HTTP/2 session served on a shared plain port. Node wraps the stream handed to it (a
 * stream without a handle) in a socket of its own, which does not know the peer's address; this map does.
 */
const sessionPeers = new WeakMap<Http2Session, string>();

/** Where an HTTP/2 session's client connects from (the audit log's source address); undefined when unknown. */
export function sessionAddress(session: Http2Session | undefined): string | undefined {
  if (!session) return undefined;
  return sessionPeers.get(session) ?? session.socket?.remoteAddress;
}

/** What every HTTP/2 connection with prior knowledge (h2c) starts with (RFC 9113, section 3.4). */
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/**
 * Ends every HTTP/2 session of `h2`: gracefully (a GOAWAY; streams in flight finish, then it closes) or at once.
 * After a graceful end, a session that starts later (its TLS handshake was under way) gets its GOAWAY at once.
 */
function trackSessions(h2: Http2Server): (graceful: boolean) => void {
  const sessions = new Set<Http2Session>();
  let closing = false;
  h2.on('session', (session: Http2Session) => {
    if (closing) return void session.close();
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  return (graceful) => {
    closing = true;
    for (const session of sessions) {
      if (graceful) session.close();
      else session.destroy();
    }
  };
}

/** Takes over `server`'s connection listeners (the HTTP/1.1 parser's), to call them for the connections it hands on. */
function takeHttp1(server: Server): (socket: Socket) => void {
  const http1 = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  return (socket) => {
    for (const listener of http1) listener.call(server, socket);
  };
}

/**
 * Serves HTTP/2 with prior knowledge and HTTP/1.1 on the one listening port of `server`: each new connection's
 * first bytes decide, once, where the connection goes — `h2` when they are the HTTP/2 preface, else the HTTP/1.1
 * server exactly as before. Requests pay nothing: the check is made once per connection, on its first bytes, and
 * the HTTP/1.1 parser then reads the socket directly as it always did.
 *
 * Returns a function that ends the connections still undecided and every HTTP/2 session (for shutdown).
 */
export function sharePortWithHttp2(
  server: Server,
  h2: Http2Server,
  firstByteTimeoutMs: number,
): (opts?: { graceful?: boolean }) => void {
  const http1 = takeHttp1(server);
  const undecided = new Set<Socket>();
  const endSessions = trackSessions(h2);
  // The session is made (and 'session' emitted) synchronously while the connection is handed on, below.
  let handing: string | undefined;
  // First among the session's listeners: the per-client limits (h2-limits.ts) read the address in theirs.
  h2.prependListener('session', (session: Http2Session) => {
    if (handing !== undefined) sessionPeers.set(session, handing);
  });

  server.on('connection', (socket: Socket) => {
    undecided.add(socket);
    socket.setTimeout(firstByteTimeoutMs, () => socket.destroy());
    let seen: Buffer = Buffer.alloc(0);
    const hand = (to: 'http1' | 'h2') => {
      socket.removeListener('data', onData);
      socket.removeListener('close', onClose);
      socket.setTimeout(0);
      undecided.delete(socket);
      socket.pause();
      socket.unshift(seen);
      if (to === 'h2') {
        handing = socket.remoteAddress;
        try {
          h2.emit('connection', new SocketStream(socket));
        } finally {
          handing = undefined;
        }
      } else http1(socket);
      socket.resume();
    };
    const onData = (chunk: Buffer) => {
      seen = seen.length ? Buffer.concat([seen, chunk]) : chunk;
      const n = Math.min(seen.length, PREFACE.length);
      if (seen.compare(PREFACE, 0, n, 0, n) !== 0) hand('http1');
      else if (n === PREFACE.length) hand('h2');
    };
    const onClose = () => undecided.delete(socket);
    socket.on('data', onData);
    socket.once('close', onClose);
  });

  // Graceful: a GOAWAY to every session (streams in flight finish, then the session closes); else cut at once.
  return ({ graceful = false } = {}) => {
    for (const socket of undecided) socket.destroy();
    endSessions(graceful);
  };
}

/**
 * The protocol of a TLS connection, from those its client offers: HTTP/1.1 whenever offered, `h2` to a client that
 * speaks only HTTP/2. gRPC clients (the SDKs' Node and Python transports) offer `h2` alone and get it; a browser
 * or curl offers both and gets HTTP/1.1, which the HTTP API, the dashboard, authorization links and the proxy are
 * served on — as on the plain port, where HTTP/2 is for clients with prior knowledge only.
 */
function chooseProtocol({ protocols }: { protocols: string[] }): string | undefined {
  if (protocols.includes('http/1.1')) return 'http/1.1';
  if (protocols.includes('h2')) return 'h2';
  return undefined;
}

/**
 * Serves HTTPS on the one listening port of `server`, HTTP/2 and HTTP/1.1 alike: every connection is a TLS
 * connection whose ALPN decides, once, where it goes (chooseProtocol) — `h2` to the HTTP/2 server `h2` (the same
 * one that serves h2c in plain mode), `http/1.1` or no ALPN at all to `server`'s HTTP/1.1 parser, as an
 * https.Server does it. The
 * HTTP/1.1 server stays the listening server, so its timeouts, keep-alive, connection tracking and shutdown
 * (closeIdleConnections, closeAllConnections) hold for TLS connections as they do for plain ones.
 *
 * Returns a function for shutdown: gracefully, a GOAWAY to every HTTP/2 session; otherwise every TLS connection
 * (handshakes under way included) and session is cut.
 */
export function sharePortWithTls(
  server: Server,
  h2: Http2Server,
  credentials: { cert: Buffer; key: Buffer },
  handshakeTimeoutMs: number,
): (opts?: { graceful?: boolean }) => void {
  const http1 = takeHttp1(server);
  const endSessions = trackSessions(h2);
  const connections = new Set<Socket>();
  // Never listens: it performs the handshake of each connection `server` accepts, with Node's own server-side TLS
  // set-up (ALPN selection, handshake timeout, client errors), and hands on the secured socket.
  const tlsServer = tls.createServer({
    cert: credentials.cert,
    key: credentials.key,
    ALPNCallback: chooseProtocol,
    handshakeTimeout: handshakeTimeoutMs,
  });
  tlsServer.on('secureConnection', (socket: TLSSocket) => {
    if (socket.alpnProtocol === 'h2') h2.emit('connection', socket);
    else http1(socket);
  });
  // A client that fails the handshake (a plain-HTTP request, an untrusted certificate): its socket is destroyed;
  // nothing to answer, as a TLS server has no way to tell it.
  tlsServer.on('tlsClientError', (_e: Error, socket: TLSSocket) => socket.destroy());

  server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
    tlsServer.emit('connection', socket);
  });

  return ({ graceful = false } = {}) => {
    endSessions(graceful);
    if (!graceful) for (const socket of connections) socket.destroy();
  };
}
