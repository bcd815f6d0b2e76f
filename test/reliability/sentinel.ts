/**
 * A sentinel upstream: an HTTP server that records every request it receives, byte for byte as far as Node
 * exposes them (method, raw target, raw header list, body), and answers 200 with a small JSON body. Attacks
 * that must send nothing assert that it recorded nothing.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface SeenRequest {
  method: string;
  /** The request target exactly as received. */
  url: string;
  /** Header names and values as received, in order (names lower-cased). */
  headers: Array<[string, string]>;
  body: Buffer;
}

export class Sentinel {
  readonly requests: SeenRequest[] = [];
  /** TCP connections accepted, whether or not a request followed. */
  connections = 0;
  /** Answers instead of the default 200 (e.g. a redirect), for a malicious upstream. */
  respond?: (req: SeenRequest) => { status: number; headers?: Record<string, string>; body?: string } | undefined;
  private server?: http.Server;
  private sockets = new Set<Socket>();

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const headers: Array<[string, string]> = [];
        for (let i = 0; i < req.rawHeaders.length; i += 2)
          headers.push([req.rawHeaders[i]!.toLowerCase(), req.rawHeaders[i + 1]!]);
        const seen = { method: req.method ?? '', url: req.url ?? '', headers, body: Buffer.concat(chunks) };
        this.requests.push(seen);
        const custom = this.respond?.(seen);
        res.writeHead(custom?.status ?? 200, { 'content-type': 'application/json', ...custom?.headers });
        res.end(custom?.body ?? JSON.stringify({ sentinel: true }));
      });
    });
    this.server.on('connection', (s: Socket) => {
      this.connections++;
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  /** Values of a header across every recorded request. */
  headerValues(name: string): string[] {
    return this.requests.flatMap((r) => r.headers.filter(([k]) => k === name.toLowerCase()).map(([, v]) => v));
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}
