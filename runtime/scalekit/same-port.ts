import type { Server } from 'node:http';
import type { Http2Server, Http2Session } from 'node:http2';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';

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

/** What every HTTP/2 connection with prior knowledge (h2c) starts with (RFC 9113, section 3.4). */
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');

/**
 * Serves HTTP/2 with prior knowledge and HTTP/1.1 on the one listening port of `server`: each new connection's
 * first bytes decide, once, where the connection goes — the HTTP/2 server when they are the HTTP/2 preface, else
 * the HTTP/1.1 server exactly as before. Requests pay nothing: the check is made once per connection, on its
 * first bytes, and the HTTP/1.1 parser then reads the socket directly as it always did.
 *
 * `createH2` is called on the first HTTP/2 connection (once), so a service that never gets one never loads what
 * its HTTP/2 server needs; that connection's bytes wait in the socket meanwhile. If it fails, `onH2Error` is told
 * and the connection is closed (and so is every later HTTP/2 connection: the failure is kept).
 *
 * Returns a function that ends the connections still undecided and every HTTP/2 session (for shutdown).
 */
export function sharePortWithHttp2(
  server: Server,
  createH2: () => Promise<Http2Server>,
  firstByteTimeoutMs: number,
  onH2Error: (e: unknown) => void,
): (opts?: { graceful?: boolean }) => void {
  const http1 = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  const undecided = new Set<Socket>();
  const sessions = new Set<Http2Session>();
  let h2: Promise<Http2Server> | undefined;
  const http2Server = () =>
    (h2 ??= createH2().then(
      (created) => {
        created.on('session', (session: Http2Session) => {
          sessions.add(session);
          session.once('close', () => sessions.delete(session));
        });
        return created;
      },
      (e: unknown) => {
        onH2Error(e);
        throw e;
      },
    ));
  let ended = false;

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
      if (to === 'http1') {
        for (const listener of http1) listener.call(server, socket);
        socket.resume();
        return;
      }
      // Until the HTTP/2 server exists the bytes stay in the paused socket; a reset meanwhile must not go unheard.
      const whileWaiting = () => socket.destroy();
      socket.once('error', whileWaiting);
      void http2Server().then(
        (created) => {
          socket.removeListener('error', whileWaiting);
          if (socket.destroyed) return;
          if (ended) return void socket.destroy();
          created.emit('connection', new SocketStream(socket));
          socket.resume();
        },
        () => socket.destroy(),
      );
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
    ended = true;
    for (const socket of undecided) socket.destroy();
    for (const session of sessions) {
      if (graceful) session.close();
      else session.destroy();
    }
  };
}
