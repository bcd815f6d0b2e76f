/**
 * The HTTP/2 side of the port (issue 34, findings 1, 2, 4 and 7), against the service in a process of its own, so
 * that "still up" is the process's own exit code. On main before the fix:
 * - one h2c request for a path the HTTP API does not own (`/nonexistent`, `/dashboard`) ended the process;
 * - gRPC read and inflated any message before checking the token (three unauthenticated 300 MB messages: RSS
 *   100 → 1,986 MB);
 * - idle h2c sessions and trickling gRPC bodies stayed open indefinitely;
 * - HEADERS + RST_STREAM floods over fresh sessions each made the server start work for every stream.
 * Nothing here measures time: each case counts what the server did (answers, closed sessions, bytes it let in,
 * its own peak memory from /proc, its guard's counters on /metrics).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http2 from 'node:http2';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpoints } from '../../core/api/endpoints.ts';
import { ConnectedAccountService } from '../../runtime/scalekit/descriptors.ts';
import { serviceEnv, serviceToken } from '../helpers/harness.ts';
import { spawnService, type ServiceProcess } from '../helpers/service-process.ts';
import { createTestCa, type TestCa } from '../helpers/test-ca.ts';
import { record } from './summary.ts';

const LIST = `/${ConnectedAccountService.typeName}/ListConnectedAccounts`;
const MAX_SESSIONS = 40;
const BODY_LIMIT = 64 * 1024;

interface Running {
  svc: ServiceProcess;
  dir: string;
  url: string;
  connect: () => http2.ClientHttp2Session;
}
const running: Running[] = [];
let ca: TestCa;

async function start(extra: Record<string, string> = {}, tls = false): Promise<Running> {
  const dir = mkdtempSync(join(tmpdir(), 'acs-h2-'));
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...serviceEnv(dir),
    // Short enough to see the limits act, long enough for a busy machine to do its part in time.
    HEADERS_TIMEOUT_MS: '2000',
    BODY_IDLE_TIMEOUT_MS: '1000',
    REQUEST_TIMEOUT_MS: '4000',
    KEEP_ALIVE_TIMEOUT_MS: '2000',
    BODY_LIMIT_BYTES: String(BODY_LIMIT),
    HTTP2_MAX_SESSIONS_PER_CLIENT: String(MAX_SESSIONS),
    ...(tls ? { TLS_CERT_FILE: ca.certFile, TLS_KEY_FILE: ca.keyFile } : {}),
    ...extra,
  };
  const svc = await spawnService(env);
  const port = new URL(svc.url).port;
  const url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  const r: Running = {
    svc,
    dir,
    url,
    connect: () => {
      const s = http2.connect(url, tls ? { ca: ca.ca } : {});
      s.on('error', () => {});
      return s;
    },
  };
  running.push(r);
  return r;
}

beforeAll(() => {
  ca = createTestCa();
});
afterAll(async () => {
  for (const r of running) {
    r.svc.proc.kill('SIGKILL');
    await r.svc.exited;
    rmSync(r.dir, { recursive: true, force: true });
  }
  ca?.remove();
});

/** One request on `session`: status, headers (trailers included) and body. */
function request(
  session: http2.ClientHttp2Session,
  headers: http2.OutgoingHttpHeaders,
  body?: Buffer,
): Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers, { endStream: body === undefined });
    let status = 0;
    let got: http2.IncomingHttpHeaders = {};
    let text = '';
    stream.on('response', (h) => {
      status = Number(h[':status']);
      got = { ...got, ...h };
    });
    stream.on('trailers', (t) => (got = { ...got, ...t }));
    stream.setEncoding('utf8').on('data', (d: string) => (text += d));
    stream.on('close', () =>
      status
        ? resolve({ status, headers: got, body: text })
        : reject(new Error(`stream closed with code ${stream.rstCode} before an answer`)),
    );
    stream.on('error', () => {});
    if (body !== undefined) stream.end(body);
  });
}

/** `/health` over HTTP/1.1 and the process's exit code: the service is up when 200 and null. */
async function stillUp(r: Running): Promise<boolean> {
  const res = await fetch(`${r.url}/health`).catch(() => undefined);
  return res?.status === 200 && r.svc.proc.exitCode === null;
}

async function guardCount(r: Running, what: string): Promise<number> {
  const text = await (await fetch(`${r.url}/metrics`)).text();
  const m = new RegExp(`^acs_http2_guard_total\\{what="${what}"\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

/** The service process's peak resident memory (VmHWM), in bytes. */
function peakRss(r: Running): number {
  const status = readFileSync(`/proc/${r.svc.proc.pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** A gRPC message: the 5-byte envelope (compressed flag, length) and the bytes. */
function envelope(message: Buffer, compressed = false, length = message.length): Buffer {
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(length, 1);
  return Buffer.concat([head, message]);
}

const grpcHeaders = (extra: http2.OutgoingHttpHeaders = {}) => ({
  ':method': 'POST',
  ':path': LIST,
  'content-type': 'application/grpc',
  te: 'trailers',
  ...extra,
});

/** Every path of the route table (parameters filled in), and paths the API does not own. */
function everyPath(): Array<{ method: string; path: string }> {
  const out = Object.values(endpoints).map((e) => ({
    method: e.method === 'ANY' ? 'GET' : e.method,
    path: e.path.replace(/\{[^}]+\}/g, 'x'),
  }));
  for (const path of [
    '/nonexistent',
    '/dashboard',
    '/DASHBOARD',
    '/dashboard/login',
    '/dashboard/static/app.js',
    '/dashboard/static/dashboard.css',
    '/favicon.ico',
  ])
    out.push({ method: 'GET', path });
  return out;
}

describe.each([
  ['h2c (prior knowledge)', false],
  ['h2 over TLS (ALPN)', true],
])('every path over %s', (_name, overTls) => {
  it('gets an answer (gRPC, or a clear 4xx) and the process stays up', async () => {
    const r = await start({}, overTls);
    const session = r.connect();
    const paths = everyPath();
    for (const { method, path } of paths) {
      const res = await request(session, { ':method': method, ':path': path });
      expect(res.status, `${method} ${path}`).toBe(400);
      expect(JSON.parse(res.body).error.code, `${method} ${path}`).toBe('http2_not_served');
    }
    // A gRPC call of a served method without a token: UNAUTHENTICATED, as trailers only.
    const grpc = await request(session, grpcHeaders(), envelope(Buffer.alloc(0)));
    expect(grpc.headers['grpc-status']).toBe('16');
    // A method not served here: UNIMPLEMENTED.
    const other = await request(
      session,
      grpcHeaders({ ':path': '/scalekit.v1.sso.SsoService/Nope' }),
      envelope(Buffer.alloc(0)),
    );
    expect(other.headers['grpc-status']).toBe('12');
    session.close();
    // Still up: a fresh session is answered, and the process has not exited.
    const fresh = r.connect();
    expect((await request(fresh, { ':method': 'GET', ':path': '/health' })).status).toBe(400);
    fresh.close();
    expect(r.svc.proc.exitCode).toBeNull();
    if (!overTls) expect(await stillUp(r)).toBe(true);
    record({
      category: 'HTTP/2 requests',
      what: `every route of the route table and unknown or dashboard paths over ${overTls ? 'h2/TLS' : 'h2c'}`,
      tried: paths.length + 2,
      failed: 0,
    });
  });
});

describe('gRPC messages are bounded and read only after the token (h2c)', () => {
  let r: Running;
  let token: string;
  beforeAll(async () => {
    r = await start();
    token = await serviceToken(r.url);
  });

  it('reads no unauthenticated message: three 300 MB uploads are answered UNAUTHENTICATED and cut', async () => {
    const before = peakRss(r);
    const chunk = Buffer.alloc(1024 * 1024, 7);
    const upload = () =>
      new Promise<{ status: string | undefined; sent: number }>((resolve) => {
        const session = r.connect();
        const stream = session.request(grpcHeaders());
        let sent = 0;
        let status: string | undefined;
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          session.destroy();
          resolve({ status, sent });
        };
        stream.on('response', (h) => (status = h['grpc-status'] as string | undefined));
        stream.on('close', finish);
        stream.on('error', finish);
        stream.resume();
        stream.write(envelope(Buffer.alloc(0), false, 300 * 1024 * 1024).subarray(0, 5));
        const pump = () => {
          while (!done && sent < 300 * 1024 * 1024) {
            sent += chunk.length;
            if (!stream.write(chunk)) return void stream.once('drain', pump);
          }
        };
        pump();
      });
    const results = await Promise.all([upload(), upload(), upload()]);
    for (const res of results) {
      expect(res.status).toBe('16');
      // What the client could write before the server ended the stream: flow-control windows, not 300 MB.
      expect(res.sent).toBeLessThan(16 * 1024 * 1024);
    }
    expect(peakRss(r) - before).toBeLessThan(64 * 1024 * 1024);
    record({
      category: 'messages before authentication',
      what: 'unauthenticated 300 MB gRPC messages (3 at once)',
      tried: 3,
      failed: 0,
      detail: `peak RSS +${Math.round((peakRss(r) - before) / 1e6)} MB; client wrote at most ${Math.max(...results.map((x) => x.sent)) >> 20} MiB`,
    });
  });

  it('refuses an authenticated message over BODY_LIMIT_BYTES, plain or inflated, with RESOURCE_EXHAUSTED', async () => {
    // Made first: an idle session is closed after KEEP_ALIVE_TIMEOUT_MS, and compressing takes a while.
    const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024), { level: 9 });
    const session = r.connect();
    const auth = { authorization: `Bearer ${token}` };
    // Announced larger than the limit: refused from the envelope's length.
    const big = await request(session, grpcHeaders(auth), envelope(Buffer.alloc(16), false, 300 * 1024 * 1024));
    expect(big.headers['grpc-status']).toBe('8');
    // 50 MB of zeros gzipped to about 50 KB, under the limit: refused once inflation passes the limit.
    const before = peakRss(r);
    expect(bomb.length).toBeLessThan(BODY_LIMIT);
    const inflated = await request(session, grpcHeaders({ ...auth, 'grpc-encoding': 'gzip' }), envelope(bomb, true));
    expect(inflated.headers['grpc-status']).toBe('8');
    expect(decodeURIComponent(String(inflated.headers['grpc-message']))).toContain('after decompression');
    expect(peakRss(r) - before).toBeLessThan(64 * 1024 * 1024);
    // Within the limit, the call is served.
    const ok = await request(session, grpcHeaders(auth), envelope(Buffer.alloc(0)));
    expect(ok.headers['grpc-status']).toBe('0');
    session.close();
    record({
      category: 'messages before authentication',
      what: 'gRPC messages over the limit (announced, gzip bomb)',
      tried: 2,
      failed: 0,
    });
  });
});

describe('HTTP/2 slow clients get the HTTP/1.1 limits (h2c)', () => {
  let r: Running;
  let token: string;
  beforeAll(async () => {
    r = await start();
    token = await serviceToken(r.url);
  });

  it('closes sessions that never open a stream, and sessions idle after their last stream', async () => {
    // Each session's close is watched from its first moment: a session may well be closed before the request below.
    const watched = (s: http2.ClientHttp2Session) => ({
      s,
      closed: new Promise<true>((resolve) => s.once('close', () => resolve(true))),
    });
    const sessions = Array.from({ length: MAX_SESSIONS - 5 }, () => watched(r.connect()));
    const used = watched(r.connect());
    await request(used.s, { ':method': 'GET', ':path': '/nothing' });
    const closed = await Promise.all([...sessions, used].map((w) => w.closed));
    expect(closed.every(Boolean)).toBe(true);
    expect(await guardCount(r, 'session_idle_closed')).toBeGreaterThanOrEqual(sessions.length + 1);
    record({
      category: 'HTTP/2 slow clients',
      what: 'idle h2c sessions closed by the server',
      tried: closed.length,
      failed: 0,
    });
  });

  it('refuses sessions beyond HTTP2_MAX_SESSIONS_PER_CLIENT from one address', async () => {
    const sessions = Array.from({ length: MAX_SESSIONS + 10 }, () => r.connect());
    const answers = await Promise.all(
      sessions.map((s) =>
        request(s, { ':method': 'GET', ':path': '/x' }).then(
          () => 'served',
          () => 'refused',
        ),
      ),
    );
    for (const s of sessions) s.destroy();
    expect(answers.filter((a) => a === 'refused').length).toBeGreaterThanOrEqual(10);
    expect(await guardCount(r, 'session_refused')).toBeGreaterThanOrEqual(10);
    record({
      category: 'HTTP/2 slow clients',
      what: `sessions beyond HTTP2_MAX_SESSIONS_PER_CLIENT (${MAX_SESSIONS}) refused`,
      tried: sessions.length,
      failed: 0,
    });
  });

  it('counts sessions per client address on the shared plain port (one client at its limit leaves another served)', async () => {
    // Two clients on two loopback addresses: the service listens on 127.0.0.1 and every 127/8 address reaches it.
    const port = Number(new URL(r.url).port);
    const from = (localAddress: string) => {
      const s = http2.connect(r.url, {
        createConnection: () => net.connect({ host: '127.0.0.1', port, localAddress }),
      });
      s.on('error', () => {});
      return s;
    };
    const greedy = Array.from({ length: MAX_SESSIONS + 5 }, () => from('127.0.0.2'));
    const other = Array.from({ length: MAX_SESSIONS }, () => from('127.0.0.3'));
    const answer = (s: http2.ClientHttp2Session) =>
      request(s, { ':method': 'GET', ':path': '/x' }).then(
        () => 'served',
        () => 'refused',
      );
    const [greedyAnswers, otherAnswers] = await Promise.all([
      Promise.all(greedy.map(answer)),
      Promise.all(other.map(answer)),
    ]);
    for (const s of [...greedy, ...other]) s.destroy();
    expect(greedyAnswers.filter((a) => a === 'refused').length).toBeGreaterThanOrEqual(5);
    expect(otherAnswers.every((a) => a === 'served')).toBe(true);
  });

  it('cuts an authenticated gRPC body that stalls, and one that trickles past the request limit', async () => {
    const session = r.connect();
    const cutStream = (trickle: boolean) =>
      new Promise<number>((resolve) => {
        const stream = session.request(grpcHeaders({ authorization: `Bearer ${token}` }));
        stream.on('error', () => {});
        stream.resume();
        stream.write(envelope(Buffer.alloc(0), false, 1000).subarray(0, 5));
        const timer = trickle ? setInterval(() => !stream.closed && stream.write(Buffer.from([1])), 200) : undefined;
        stream.on('close', () => {
          clearInterval(timer);
          resolve(stream.rstCode ?? -1);
        });
      });
    const [stalled, trickled] = await Promise.all([cutStream(false), cutStream(true)]);
    expect(stalled).toBe(http2.constants.NGHTTP2_CANCEL);
    expect(trickled).toBe(http2.constants.NGHTTP2_CANCEL);
    expect(await guardCount(r, 'stream_timed_out')).toBeGreaterThanOrEqual(2);
    session.close();
    record({
      category: 'HTTP/2 slow clients',
      what: 'authenticated gRPC bodies that stall or trickle (h2c)',
      tried: 2,
      failed: 0,
    });
  });
});

describe('HEADERS + RST_STREAM floods over fresh sessions (h2c)', () => {
  it('ends the flooding client and keeps serving others', async () => {
    const r = await start();
    let opened = 0;
    let refusedSessions = 0;
    // 40 fresh sessions, each opening 50 streams and resetting them as soon as their HEADERS are out, as the
    // finding's client did (no credential needed).
    for (let i = 0; i < 40; i++) {
      const session = r.connect();
      let calmed = false;
      session.on('goaway', (code) => (calmed ||= code === http2.constants.NGHTTP2_ENHANCE_YOUR_CALM));
      const gone = new Promise<void>((resolve) => session.once('close', () => resolve()));
      await new Promise<void>((resolve) => {
        session.once('remoteSettings', () => resolve());
        session.once('close', () => resolve());
      });
      const streams: http2.ClientHttp2Stream[] = [];
      for (let j = 0; j < 50 && !session.destroyed && !session.closed; j++) {
        const stream = session.request(grpcHeaders());
        stream.on('error', () => {});
        streams.push(stream);
        opened++;
      }
      // A stream closed before its HEADERS were written is never sent at all: reset on the next turn.
      await new Promise((resolve) => setImmediate(resolve));
      for (const stream of streams) stream.close(http2.constants.NGHTTP2_CANCEL);
      if (!session.destroyed) session.close();
      await gone;
      if (calmed) refusedSessions++;
    }
    expect(await guardCount(r, 'reset_flood_stopped')).toBeGreaterThanOrEqual(1);
    expect(refusedSessions).toBeGreaterThan(0);
    // Streams that reached the service: bounded by the reset budget, not by what the client sent.
    expect(await stillUp(r)).toBe(true);
    record({
      category: 'HTTP/2 reset floods',
      what: 'HEADERS + RST_STREAM floods over 40 fresh h2c sessions',
      tried: opened,
      failed: 0,
      detail: `${refusedSessions} of 40 sessions refused once the client's reset budget was spent`,
    });
  });
});
