/**
 * Speaks HTTP/1.1 over a raw TCP socket, so a test can send what fetch and http.request refuse to: line breaks
 * and NUL in header values, obsolete line folding, conflicting framing headers, raw bytes in the request target.
 */
import net from 'node:net';

export interface RawResponse {
  /** 0 when the server closed the connection without answering. */
  status: number;
  /** Everything the server sent. */
  raw: string;
  body: string;
}

/** Sends the bytes as they are and reads until the server closes the connection (or `timeoutMs` passes). */
export function rawExchange(baseUrl: string, request: string | Buffer, timeoutMs = 5_000): Promise<RawResponse> {
  const u = new URL(baseUrl);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ host: u.hostname, port: Number(u.port) });
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      const raw = Buffer.concat(chunks).toString('latin1');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(raw)?.[1] ?? 0);
      const i = raw.indexOf('\r\n\r\n');
      resolve({ status, raw, body: i < 0 ? '' : raw.slice(i + 4) });
    };
    const timer = setTimeout(done, timeoutMs);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', done);
    socket.on('error', done);
    socket.on('connect', () => socket.write(request));
  });
}

/** A request with the given request line, headers (joined as given) and body; `Connection: close` is added. */
export function rawHttp(requestLine: string, headerLines: string[], body = ''): string {
  return `${requestLine}\r\n${[...headerLines, 'Connection: close'].join('\r\n')}\r\n\r\n${body}`;
}
