/**
 * A provider that misbehaves on purpose. Each request it receives is recorded (method, path, headers,
 * body size), then answered with the next scripted fault: an error status with or without Retry-After,
 * a hang before the headers, a stall, a connection reset or a clean close in the middle of the body (with
 * or without a Content-Length), a reset before the headers, malformed JSON, a redirect, a response of any
 * size (streamed from a generator, so the fake itself never holds it), a slow but good answer, or a good
 * answer sent slowly. It speaks raw node:http so that it controls
 * its sockets; it also counts what it managed to write and how many requests were in flight at once.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createGzip } from 'node:zlib';
import { asText } from '../helpers/text.ts';

export type Fault =
  /** An answer with this status, headers and body (JSON when an object). */
  | { kind: 'status'; status: number; headers?: Record<string, string>; body?: unknown }
  /** Reads the request and never answers. */
  | { kind: 'hang' }
  /**
   * Sends the headers and part of the body, then goes silent with the connection open. Chunked, unless
   * `contentLength` is given: then the headers announce that many bytes (`bytes` may be 0: only the headers).
   */
  | { kind: 'stall'; bytes: number; contentLength?: number }
  /** Closes the connection with a TCP reset before any byte of the answer. */
  | { kind: 'reset' }
  /** Sends the headers and part of the body, then resets the connection. */
  | { kind: 'reset_mid_body'; bytes: number }
  /** Announces `contentLength` bytes, sends `bytes` of them, then closes the connection cleanly (FIN, no reset). */
  | { kind: 'cut_short'; bytes: number; contentLength: number }
  /** A good answer of `chunks` chunks of `chunkBytes` bytes, one every `everyMs`: a slow download that ends. */
  | { kind: 'paced'; chunks: number; chunkBytes: number; everyMs: number }
  /** A 200 with content-type application/json whose body is not JSON. */
  | { kind: 'malformed_json' }
  /** A redirect to another URL (relative or absolute). */
  | { kind: 'redirect'; location: string; status?: number }
  /** A 200 of `bytes` bytes, with or without content-length; `gzip` compresses it on the wire (a "zip bomb"). */
  | { kind: 'huge'; bytes: number; contentLength: boolean; gzip?: boolean }
  /** A good JSON answer after `ms`. */
  | { kind: 'slow'; ms: number; body: unknown }
  /**
   * Headers (after `afterMs`, default at once), then one byte of body every `everyMs`, never idle long enough for
   * an idle timeout.
   */
  | { kind: 'dribble'; everyMs: number; afterMs?: number }
  /** Bytes that are not HTTP at all instead of an answer. */
  | { kind: 'garbage' }
  /** A 200 that claims content-encoding gzip but is not compressed. */
  | { kind: 'bad_gzip' }
  /**
   * An MCP server (Streamable HTTP, JSON answers) whose `tools/call` meets the fault `call` (or, without
   * one, gets a good result); `initialize` (answered with a session id) and notifications (202) go well,
   * however often the client sends them.
   */
  | { kind: 'mcp'; call?: Fault };

export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  bodyBytes: number;
  /** The body as text, when it is small (64 KB at most). */
  body: string;
}

const CHUNK = Buffer.alloc(64 * 1024, 'a');

export class FaultyUpstream {
  readonly received: Received[] = [];
  /** Bytes of response bodies produced (huge answers, before any compression, and partial bodies). */
  bytesWritten = 0;
  /** Requests being answered right now, and the most there ever were at once. */
  inFlight = 0;
  peakInFlight = 0;
  private script: Fault[] = [];
  private fallback: Fault = { kind: 'status', status: 200, body: { ok: true } };
  private server!: http.Server;
  private sockets = new Set<Socket>();
  private held: Array<() => void> | undefined;
  url = '';

  /** `host` may be another loopback address (127.0.0.2) to stand for another provider host. */
  async start(host = '127.0.0.1'): Promise<this> {
    // A client that goes away while sending its request (the service cutting a slow upload) ends the exchange.
    this.server = http.createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()));
    this.server.keepAliveTimeout = 65_000;
    this.server.headersTimeout = 66_000;
    this.server.requestTimeout = 0;
    this.server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.once('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server.listen(0, host, 4096, resolve));
    this.url = `http://${host}:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** The next requests get these faults, in order; after them, every request gets `then`. */
  plan(faults: Fault[], then: Fault = { kind: 'status', status: 200, body: { ok: true } }): void {
    this.script = [...faults];
    this.fallback = then;
  }

  /** Holds every answer (after the request is recorded) until the returned function is called. */
  hold(): () => void {
    const waiting: Array<() => void> = [];
    this.held = waiting;
    return () => {
      this.held = undefined;
      for (const go of waiting.splice(0)) go();
    };
  }

  reset(): void {
    this.received.length = 0;
    this.bytesWritten = 0;
    this.peakInFlight = this.inFlight;
    this.script = [];
    this.fallback = { kind: 'status', status: 200, body: { ok: true } };
  }

  count(method: string): number {
    return this.received.filter((r) => r.method === method).length;
  }

  /** How many JSON-RPC messages with this method were received. */
  rpcCount(method: string): number {
    return this.received.filter((r) => r.body.includes(`"method":"${method}"`)).length;
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    this.inFlight++;
    this.peakInFlight = Math.max(this.peakInFlight, this.inFlight);
    res.once('close', () => this.inFlight--);
    let bodyBytes = 0;
    const kept: Buffer[] = [];
    for await (const chunk of req) {
      bodyBytes += (chunk as Buffer).length;
      if (bodyBytes <= 64 * 1024) kept.push(chunk as Buffer);
    }
    const body = bodyBytes <= 64 * 1024 ? Buffer.concat(kept).toString('utf8') : '';
    this.received.push({ method: req.method ?? 'GET', path: req.url ?? '/', headers: req.headers, bodyBytes, body });
    const fault = this.script.shift() ?? this.fallback;
    if (this.held) await new Promise<void>((go) => this.held!.push(go));
    await this.answer(fault, req, res, body);
  }

  private async answer(fault: Fault, req: http.IncomingMessage, res: http.ServerResponse, body: string): Promise<void> {
    switch (fault.kind) {
      case 'mcp': {
        const message = JSON.parse(body) as { id?: unknown; method?: string };
        if (message.method === 'tools/call' && fault.call) return this.answer(fault.call, req, res, body);
        if (message.id === undefined) {
          res.writeHead(202).end();
          return;
        }
        const result =
          message.method === 'tools/call'
            ? { content: [{ type: 'text', text: '<meeting id="m-1" title="Launch review" />' }] }
            : {
                protocolVersion: '2025-06-18',
                capabilities: { tools: {} },
                serverInfo: { name: 'faulty', version: '1' },
              };
        const answer = JSON.stringify({ jsonrpc: '2.0', id: message.id, result });
        res.writeHead(200, {
          'content-type': 'application/json',
          'mcp-session-id': 'session-1',
          'content-length': Buffer.byteLength(answer),
        });
        res.end(answer);
        return;
      }
      case 'status': {
        const json = fault.body !== undefined && typeof fault.body !== 'string';
        const body = fault.body === undefined ? '' : json ? JSON.stringify(fault.body) : asText(fault.body);
        res.writeHead(fault.status, {
          ...(json ? { 'content-type': 'application/json' } : {}),
          'content-length': Buffer.byteLength(body),
          ...fault.headers,
        });
        res.end(body);
        return;
      }
      case 'hang':
        return;
      case 'reset':
        req.socket.resetAndDestroy();
        return;
      case 'stall':
      case 'reset_mid_body':
      case 'cut_short': {
        // Chunked unless a length is announced, so that only a broken connection (never a terminating chunk) can
        // tell the reader the body is cut.
        const announced = fault.kind === 'reset_mid_body' ? undefined : fault.contentLength;
        res.writeHead(200, {
          'content-type': 'application/json',
          ...(announced === undefined ? {} : { 'content-length': String(announced) }),
        });
        const part = Buffer.alloc(fault.bytes, ' ');
        if (part.length) part[0] = '['.charCodeAt(0);
        // The headers go out even when no body byte follows them.
        res.flushHeaders();
        if (part.length) res.write(part);
        this.bytesWritten += part.length;
        if (fault.kind === 'reset_mid_body') setTimeout(() => req.socket.resetAndDestroy(), 50);
        if (fault.kind === 'cut_short') setTimeout(() => req.socket.end(), 50);
        return;
      }
      case 'paced': {
        res.writeHead(200, {
          'content-type': 'application/octet-stream',
          'content-length': String(fault.chunks * fault.chunkBytes),
        });
        const chunk = Buffer.alloc(fault.chunkBytes, 'p');
        let sent = 0;
        const timer = setInterval(() => {
          res.write(chunk);
          this.bytesWritten += chunk.length;
          if (++sent === fault.chunks) {
            clearInterval(timer);
            res.end();
          }
        }, fault.everyMs);
        res.once('close', () => clearInterval(timer));
        return;
      }
      case 'malformed_json':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"ticket": {"id": 1, "subject": "cut here');
        return;
      case 'redirect':
        res.writeHead(fault.status ?? 302, { location: fault.location, 'content-length': '0' });
        res.end();
        return;
      case 'slow':
        await new Promise((r) => setTimeout(r, fault.ms));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(fault.body));
        return;
      case 'dribble': {
        if (fault.afterMs) await new Promise((r) => setTimeout(r, fault.afterMs));
        if (res.destroyed) return;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('[');
        const timer = setInterval(() => {
          res.write(' ');
          this.bytesWritten++;
        }, fault.everyMs);
        res.once('close', () => clearInterval(timer));
        return;
      }
      case 'garbage':
        req.socket.end('SSH-2.0-OpenSSH_9.6\r\nnot http at all\r\n\r\n');
        return;
      case 'bad_gzip':
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        res.end('{"ticket": {"id": 1}}');
        return;
      case 'huge':
        await this.huge(fault, res);
        return;
    }
  }

  /** Streams `bytes` bytes, respecting backpressure, and stops as soon as the reader goes away. */
  private async huge(fault: Extract<Fault, { kind: 'huge' }>, res: http.ServerResponse): Promise<void> {
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
    if (fault.contentLength && !fault.gzip) headers['content-length'] = String(fault.bytes);
    if (fault.gzip) headers['content-encoding'] = 'gzip';
    res.writeHead(200, headers);
    let out: NodeJS.WritableStream = res;
    if (fault.gzip) {
      const gz = createGzip({ level: 9 });
      gz.pipe(res);
      out = gz;
    }
    let closed = false;
    res.once('close', () => (closed = true));
    let left = fault.bytes;
    while (left > 0 && !closed) {
      const n = Math.min(left, CHUNK.length);
      const ok = out.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n));
      this.bytesWritten += n;
      left -= n;
      if (!ok)
        await new Promise<void>((r) => {
          const done = () => {
            out.removeListener('drain', done);
            res.removeListener('close', done);
            r();
          };
          out.once('drain', done);
          res.once('close', done);
        });
    }
    if (!closed) out.end();
  }

  close(): Promise<void> {
    for (const go of this.held?.splice(0) ?? []) go();
    for (const s of this.sockets) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
