/**
 * Slow request senders (issue 12, point 8): HEADERS_TIMEOUT_MS and REQUEST_TIMEOUT_MS on the service's HTTP server.
 * A client that sends its headers a byte at a time, never idle long enough for an idle limit, is cut with 408 once
 * the headers limit has run; an authenticated upload that trickles (never idle either) once the request limit has
 * run. What must keep working: an upload that takes longer than the headers limit, a download that takes longer
 * than the request limit (the answer is not counted), and a keep-alive connection idle between two requests for
 * longer than the headers limit.
 * On main (headersTimeout 66 s checked every 30 s, requestTimeout 0) the slow senders were answered normally once
 * they finished, however long they took.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultyUpstream } from '../fakes/faulty-upstream.ts';
import { loadConfig } from '../../runtime/config.ts';
import { serviceToken, startHarness, type Harness } from '../helpers/harness.ts';
import { record } from './summary.ts';

const HEADERS_MS = 500;
const REQUEST_MS = 2000;

let h: Harness;
let up: FaultyUpstream;
let token: string;
let host: string;

beforeAll(async () => {
  h = await startHarness({
    env: {
      HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      REQUEST_TIMEOUT_MS: String(REQUEST_MS),
      // The uploads below send a byte every 100 ms: never idle for this long, so only the request limit applies.
      BODY_IDLE_TIMEOUT_MS: '1500',
      LOG_LEVEL: 'warn',
    },
  });
  host = new URL(h.url).host;
  up = await new FaultyUpstream().start();
  await h.client.createConnection({ connection_name: 'slow', connector: 'helpdesk', api_base_url: `${up.url}/api` });
  await h.client.upsertConnectedAccount({
    connectionName: 'slow',
    identifier: 'user-1',
    credentials: { domain: 'acme.zendesk.com', email: 'agent@acme.com', api_token: 'zd-slow-token-0b7e19' },
  });
  token = await serviceToken(h.url);
});

afterAll(async () => {
  await up?.close();
  await h?.close();
});

interface Paced {
  /** The first status line's code; 0 when the server closed without answering. */
  status: number;
  /** Everything the server sent. */
  raw: string;
  /** When the connection closed, from the first byte sent. */
  ms: number;
  /** Every part was written before the server closed the connection. */
  sentAll: boolean;
}

/**
 * Writes `parts` one at a time, one every `everyMs` (the first at once), and reads until the server closes the
 * connection. Each part is sent only while the connection is open.
 */
function paced(parts: Array<string | Buffer>, everyMs: number): Promise<Paced> {
  const u = new URL(h.url);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ host: u.hostname, port: Number(u.port) });
    let next = 0;
    let started = 0;
    let timer: NodeJS.Timeout | undefined;
    const write = () => {
      if (next < parts.length && !socket.destroyed && socket.writable) socket.write(parts[next++]!);
      if (next >= parts.length && timer) clearInterval(timer);
    };
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => {});
    socket.on('close', () => {
      if (timer) clearInterval(timer);
      const raw = Buffer.concat(chunks).toString('latin1');
      resolve({
        status: Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1] ?? 0),
        raw,
        ms: performance.now() - started,
        sentAll: next === parts.length,
      });
    });
    socket.on('connect', () => {
      started = performance.now();
      write();
      timer = setInterval(write, everyMs);
    });
  });
}

/** The bytes of `text`, one part each. */
const bytewise = (text: string) => [...text];

const proxyHead = (method: string, path: string, extra: string[]) =>
  [
    `${method} /proxy${path} HTTP/1.1`,
    `Host: ${host}`,
    `Authorization: Bearer ${token}`,
    'connection_name: slow',
    'identifier: user-1',
    'Connection: close',
    ...extra,
    '',
    '',
  ].join('\r\n');

describe('slow headers (HEADERS_TIMEOUT_MS)', () => {
  it('cuts 100 clients that send their headers a byte every 50 ms, with 408 and a closed connection', async () => {
    // About 4 s of headers in all; the limit is 500 ms. Every byte keeps the connection busy, never idle.
    const head = `GET /health HTTP/1.1\r\nHost: ${host}\r\nX-Slow: ${'s'.repeat(40)}\r\nConnection: close\r\n\r\n`;
    const results = await Promise.all(Array.from({ length: 100 }, () => paced(bytewise(head), 50)));
    const cut = results.filter((r) => r.status === 408 && !r.sentAll).length;
    const worst = Math.max(...results.map((r) => r.ms));
    record({
      category: 'attacks tried',
      what: 'slow headers: 100 clients sending headers a byte every 50 ms',
      tried: results.length,
      failed: results.length - cut,
      detail: `all cut with 408 within ${worst.toFixed(0)} ms (limit ${HEADERS_MS} ms)`,
    });
    for (const r of results) {
      expect(r.status, r.raw.slice(0, 200)).toBe(408);
      expect(r.sentAll).toBe(false);
    }
    expect((await fetch(`${h.url}/health`)).status).toBe(200);
  });

  it('closes a connection that sends nothing at all once the headers limit has run', async () => {
    const r = await paced([], 50);
    expect(r.raw).toBe('');
    expect(r.ms).toBeGreaterThanOrEqual(HEADERS_MS - 50);
  });

  it('leaves a keep-alive connection that idles between two requests for longer than the limit alone', async () => {
    const u = new URL(h.url);
    const socket = net.connect({ host: u.hostname, port: Number(u.port) });
    let raw = '';
    socket.on('data', (c: Buffer) => (raw += c.toString('latin1')));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
    socket.write(`GET /health HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    for (let i = 0; i < 200 && !raw.includes('\r\n\r\n'); i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 3 * HEADERS_MS));
    socket.write(`GET /health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
    await closed;
    expect(raw.match(/HTTP\/1\.1 (\d{3})/g)).toEqual(['HTTP/1.1 200', 'HTTP/1.1 200']);
  });
});

describe('slow bodies (REQUEST_TIMEOUT_MS) and what must not be cut', () => {
  it('cuts an authenticated proxy upload that trickles past the request limit, with 408', async () => {
    // 40 bytes, one every 100 ms: 4 s in all, never idle for BODY_IDLE_TIMEOUT_MS; the request limit is 2 s.
    const r = await paced(
      [
        proxyHead('POST', '/v2/uploads.json', ['Content-Type: application/octet-stream', 'Content-Length: 40']),
        ...'u'.repeat(40),
      ],
      100,
    );
    record({
      category: 'attacks tried',
      what: 'slow body: an authenticated proxy upload trickling past REQUEST_TIMEOUT_MS',
      tried: 1,
      failed: r.status === 408 ? 0 : 1,
      detail: `cut after ${r.ms.toFixed(0)} ms (limit ${REQUEST_MS} ms)`,
    });
    expect(r.status, r.raw.slice(0, 200)).toBe(408);
    expect(r.sentAll).toBe(false);
  });

  it('lets a proxy upload that takes longer than the headers limit finish', async () => {
    up.reset();
    up.plan([], { kind: 'status', status: 201, body: { upload: { token: 'u-1' } } });
    // 15 chunks of 1 KB, one every 100 ms: 1.5 s, three times the headers limit.
    const chunk = Buffer.alloc(1024, 'b');
    const r = await paced(
      [
        proxyHead('POST', '/v2/uploads.json', [
          'Content-Type: application/octet-stream',
          `Content-Length: ${15 * 1024}`,
        ]),
        ...Array.from({ length: 15 }, () => chunk),
      ],
      100,
    );
    expect(r.status, r.raw.slice(0, 300)).toBe(201);
    expect(r.sentAll).toBe(true);
    expect(up.received.at(-1)!.bodyBytes).toBe(15 * 1024);
  });

  it('lets a proxy download that takes longer than the request limit finish: the answer is not counted', async () => {
    up.reset();
    // 30 chunks of 1 KB, one every 100 ms: 3 s, longer than the 2 s request limit.
    up.plan([], { kind: 'paced', chunks: 30, chunkBytes: 1024, everyMs: 100 });
    const r = await paced([proxyHead('GET', '/v2/attachments/slow.bin', [])], 100);
    expect(r.status, r.raw.slice(0, 300)).toBe(200);
    expect(r.ms).toBeGreaterThan(REQUEST_MS);
    const body = r.raw.slice(r.raw.indexOf('\r\n\r\n') + 4);
    expect(body).toBe('p'.repeat(30 * 1024));
  });
});

describe('the settings', () => {
  it('default to 15 s for the headers and 30 minutes for the whole request', () => {
    const c = loadConfig({});
    expect([c.headersTimeoutMs, c.requestTimeoutMs]).toEqual([15_000, 1_800_000]);
  });

  it('refuse a headers limit longer than the request limit, naming both', () => {
    expect(() => loadConfig({ HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '10000' })).toThrow(
      'HEADERS_TIMEOUT_MS is 20000: it must be at most REQUEST_TIMEOUT_MS (10000)',
    );
    expect(() => loadConfig({ HEADERS_TIMEOUT_MS: 'soon' })).toThrow('HEADERS_TIMEOUT_MS must be a whole number');
    expect(loadConfig({ HEADERS_TIMEOUT_MS: '20000', REQUEST_TIMEOUT_MS: '0' }).requestTimeoutMs).toBe(0);
  });
});
