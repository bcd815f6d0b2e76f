/**
 * Native TLS (TLS_CERT_FILE, TLS_KEY_FILE) on the service's one port: Scalekit's official Node SDK, unchanged,
 * over `https://` (gRPC on h2 negotiated by ALPN, its token and proxy calls on HTTP/1.1 over TLS), through the same
 * scenarios as the run over h2c (test/helpers/scalekit-sdk-scenarios.ts); and ALPN, trust and plain HTTP on the
 * port, checked directly.
 *
 * The certificate comes from a CA made for this run (test/helpers/test-ca.ts). The SDK offers no way to give its
 * transports a CA, and Node 20 reads extra CAs only at process start, so the SDK runs in a client process started
 * with NODE_EXTRA_CA_CERTS naming the test CA — nothing in this process stops checking certificates; the direct
 * checks here pass the CA per connection (`ca`).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../runtime/config.ts';
import { startServer } from '../../runtime/server.ts';
import { serviceEnv, startHarness, type Harness } from '../helpers/harness.ts';
import { RETURN_ORIGIN, sdkScenarios, type ServerSide } from '../helpers/scalekit-sdk-scenarios.ts';
import { startScalekitServerSide, type ScalekitServerSide } from '../helpers/scalekit-server-side.ts';
import type { ScenarioResult } from '../helpers/scalekit-sdk-client-process.ts';
import { createTestCa, type TestCa } from '../helpers/test-ca.ts';

let ca: TestCa;
let h: Harness;
let side: ScalekitServerSide;
let port: number;

/** Runs the scenarios in a client process that trusts `caFile`; resolves with its results and its output. */
function runClientProcess(server: ServerSide, caFile: string): Promise<{ results: ScenarioResult[]; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/scalekit-sdk-client-process.ts'], {
    cwd: process.cwd(),
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      NODE_EXTRA_CA_CERTS: caFile,
      SCALEKIT_SERVER_SIDE: JSON.stringify(server),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      const output = `exit ${code}\n${stdout}\n${stderr}`;
      try {
        resolve({ results: JSON.parse(stdout.trim().split('\n').pop() ?? '') as ScenarioResult[], output });
      } catch {
        resolve({ results: [], output });
      }
    });
  });
}

/** A TLS connection to the port offering `alpn`, trusting the test CA: the protocol the service picked. */
function negotiate(alpn: string[]): Promise<string | false> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, ca: ca.ca, ALPNProtocols: alpn }, () => {
      resolve(socket.alpnProtocol ?? false);
      socket.end();
    });
    socket.once('error', reject);
  });
}

/** GET `url` over HTTP/1.1 with `mod`: status, body, and the ALPN protocol of its TLS socket. */
function get(
  mod: typeof http | typeof https,
  url: string,
  opts: https.RequestOptions & Pick<tls.ConnectionOptions, 'ALPNProtocols'> = {},
): Promise<{ status: number; body: string; alpn?: string | false }> {
  return new Promise((resolve, reject) => {
    const req = mod.get(url, { agent: false, ...opts }, (res) => {
      // Read now: a keep-alive agent takes the socket back once the response ends.
      const alpn = (res.socket as tls.TLSSocket).alpnProtocol ?? undefined;
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode!, body, alpn }));
    });
    req.once('error', reject);
  });
}

let client: { results: ScenarioResult[]; output: string };

beforeAll(async () => {
  ca = createTestCa();
  h = await startHarness({
    env: { ALLOWED_REDIRECT_ORIGINS: RETURN_ORIGIN, TLS_CERT_FILE: ca.certFile, TLS_KEY_FILE: ca.keyFile },
  });
  port = Number(new URL(h.url).port);
  side = await startScalekitServerSide(h);
  client = await runClientProcess(side.server, ca.caFile);
});
afterAll(async () => {
  await side?.close();
  await h?.close();
  ca?.remove();
});

describe('the Scalekit SDK against the service over https:// (h2 by ALPN), in a client process trusting the test CA', () => {
  it('runs every scenario', () => {
    expect(
      client.results.map((r) => r.name),
      client.output,
    ).toEqual(sdkScenarios.map((s) => s.name));
  });
  for (const scenario of sdkScenarios) {
    it(scenario.name, () => {
      const result = client.results.find((r) => r.name === scenario.name);
      if (!result) throw new Error(`the client process did not run it:\n${client.output}`);
      if (!result.ok) throw new Error(result.error);
    });
  }
});

describe('TLS on the one port', () => {
  it('serves https:// and names it in its public URL', () => {
    expect(h.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(h.config.publicUrl).toBe(h.url);
  });

  it('negotiates h2 with a client that speaks only HTTP/2 (gRPC), HTTP/1.1 with any client that offers it', async () => {
    // Node's http2.connect (the SDK's transport) and gRPC's own clients offer h2 alone.
    expect(await negotiate(['h2'])).toBe('h2');
    // A browser or curl offers both: the dashboard, authorization links and the HTTP API are HTTP/1.1.
    expect(await negotiate(['h2', 'http/1.1'])).toBe('http/1.1');
    expect(await negotiate(['http/1.1'])).toBe('http/1.1');
    expect(await negotiate([])).toBe(false);
    const unknown = await negotiate(['spdy/3.1']).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(unknown?.message).toMatch(/no application protocol|alert/i);
  });

  it('serves HTTP/1.1 over TLS to a browser-like client, and to one that offers no ALPN', async () => {
    const browser = await get(https, `${h.url}/health`, { ca: ca.ca, ALPNProtocols: ['h2', 'http/1.1'] });
    expect(browser).toMatchObject({ status: 200, alpn: 'http/1.1' });
    expect(JSON.parse(browser.body)).toMatchObject({ status: 'ok' });
    const plain = await get(https, `${h.url}/health`, { ca: ca.ca });
    expect(plain).toMatchObject({ status: 200, alpn: false });
    expect(JSON.parse(plain.body)).toMatchObject({ status: 'ok' });
  });

  it('presents the certificate a client checks: refused without the test CA', async () => {
    const refused = await get(https, `${h.url}/health`).then(
      () => undefined,
      (e: NodeJS.ErrnoException) => e,
    );
    expect(refused?.code).toMatch(
      /SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT/,
    );
  });

  it('answers no plain HTTP on the TLS port, and goes on serving TLS clients', async () => {
    const plain = await get(http, `${h.url.replace('https:', 'http:')}/health`).then(
      (r) => r,
      (e: NodeJS.ErrnoException) => e,
    );
    expect(plain).toBeInstanceOf(Error);
    expect((await get(https, `${h.url}/health`, { ca: ca.ca })).status).toBe(200);
  });
});

describe('draining with TLS connections open', () => {
  it('closes idle HTTP/1.1 keep-alive connections and HTTP/2 sessions at once, those still in their handshake included, cutting none', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'acs-tls-drain-'));
    const running = await startServer(
      loadConfig({ ...serviceEnv(dataDir), TLS_CERT_FILE: ca.certFile, TLS_KEY_FILE: ca.keyFile, LOG_LEVEL: 'silent' }),
      { logDestination: new Writable({ write: (_c, _e, cb) => cb() }) },
    );
    try {
      const agent = new https.Agent({ keepAlive: true, ca: ca.ca });
      expect((await get(https, `${running.url}/health`, { agent })).status).toBe(200);
      // One session the service has answered on (so it has taken it on), one whose client has just finished its
      // side of the handshake: the service may take it on only once the drain has begun.
      const answered = http2.connect(running.url, { ca: ca.ca });
      await new Promise<void>((resolve, reject) => {
        const stream = answered.request({ ':path': '/health' });
        stream.once('response', () => stream.resume().once('end', resolve));
        stream.once('error', reject);
        stream.end();
      });
      const fresh = http2.connect(running.url, { ca: ca.ca });
      await new Promise<void>((resolve, reject) => fresh.once('connect', () => resolve()).once('error', reject));
      const closed = [answered, fresh].map((s) => new Promise<void>((resolve) => s.once('close', resolve)));
      // A grace far longer than the drain takes: it runs out only if a connection is left open, and then the
      // connections it cuts are counted.
      const { cut } = await running.drain(60_000);
      expect(cut).toBe(0);
      await Promise.all(closed);
      agent.destroy();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
