/**
 * Graceful drain (issue 15 point 4). The service runs as its own process (`runtime/main.ts`, as `npm start` runs it).
 * A 50 MiB download is proxied from a local upstream; the client reads its first bytes, then the service gets
 * SIGTERM. The client, reading slowly on purpose so the body is still in flight, must then receive every byte (same
 * length and SHA-256 as the upstream sent), while the service stops accepting connections and answers /ready with
 * 503 on a connection opened before the signal. The process then exits 0 on its own.
 */
import http from 'node:http';
import net from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceEnv, TEST_CLIENT_ID, TEST_CLIENT_SECRET } from '../helpers/harness.ts';
import { spawnService, type ServiceProcess } from '../helpers/service-process.ts';

const MiB = 1024 * 1024;
const SIZE = 50 * MiB;
const CHUNK = 256 * 1024;

let dataDir: string;
let upstream: http.Server;
let upstreamUrl: string;
let child: ServiceProcess | undefined;
const sentHash = createHash('sha256');

/** Serves SIZE random bytes at /big, chunk by chunk, respecting backpressure; hashes what it sends. */
function startUpstream(): Promise<void> {
  upstream = http.createServer((req, res) => {
    if (!req.url?.startsWith('/desks/acme.zendesk.com/api/big')) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(SIZE) });
    let sent = 0;
    const pump = () => {
      while (sent < SIZE) {
        const chunk = randomBytes(Math.min(CHUNK, SIZE - sent));
        sentHash.update(chunk);
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  return new Promise((resolve) =>
    upstream.listen(0, '127.0.0.1', () => {
      upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
      resolve();
    }),
  );
}

/** Finishes a request begun by hand on an open socket; resolves with the status line's code. */
function finishRequest(socket: net.Socket, rest: string): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (d: Buffer) => {
      text += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (m) {
        socket.off('data', onData);
        resolve(Number(m[1]));
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write(rest);
  });
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'acs-drain-'));
  await startUpstream();
  child = await spawnService({
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...serviceEnv(dataDir),
    SHUTDOWN_GRACE_SECONDS: '600',
  });
});

afterAll(async () => {
  if (child && child.proc.exitCode === null) {
    child.proc.kill('SIGKILL');
    await child.exited;
  }
  upstream?.closeAllConnections();
  upstream?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('SIGTERM drains', () => {
  it('lets a 50 MiB proxied download finish, answers /ready 503 meanwhile, then exits 0', async () => {
    const url = child!.url;
    const tokenRes = await fetch(`${url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        grant_type: 'client_credentials',
        client_id: TEST_CLIENT_ID,
        client_secret: TEST_CLIENT_SECRET,
      }),
    });
    const { access_token: token } = (await tokenRes.json()) as { access_token: string };
    const api = (method: string, path: string, body: unknown) =>
      fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect(
      (
        await api('POST', '/v1/connections', {
          connection_name: 'helpdesk',
          connector: 'helpdesk',
          api_base_url: `${upstreamUrl}/desks/{domain}/api`,
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await api('PUT', '/v1/connected-accounts', {
          connection_name: 'helpdesk',
          identifier: 'drain-user',
          credentials: { domain: 'acme.zendesk.com', email: 'agent@acme.com', api_token: 'zd-drain-token' },
        })
      ).status,
    ).toBe(200);

    expect((await fetch(`${url}/ready`)).status).toBe(200);
    // A request in flight when the signal comes: its headers are half sent.
    const before = new net.Socket();
    await new Promise<void>((resolve) => before.connect(Number(new URL(url).port), '127.0.0.1', resolve));
    before.write('GET /ready HTTP/1.1\r\nhost: x\r\n');

    const received = createHash('sha256');
    let bytes = 0;
    let signalled = false;
    const { port } = new URL(url);
    const done = new Promise<{ status: number; complete: boolean }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port,
          path: '/proxy/big',
          headers: { authorization: `Bearer ${token}`, connection_name: 'helpdesk', identifier: 'drain-user' },
        },
        (res) => {
          res.on('data', (chunk: Buffer) => {
            received.update(chunk);
            bytes += chunk.length;
            if (!signalled) {
              signalled = true;
              child!.proc.kill('SIGTERM');
              // Read slowly for a while, so the body is surely still in flight while the service drains.
              res.pause();
              setTimeout(() => res.resume(), 1000);
            }
          });
          res.on('end', () => resolve({ status: res.statusCode!, complete: res.complete }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });

    // While the download is paused: the request in flight on /ready says draining, new connections are refused.
    while (!child!.output.join('').includes('"msg":"draining')) await new Promise((r) => setTimeout(r, 20));
    expect(await finishRequest(before, 'accept: */*\r\n\r\n')).toBe(503);
    before.destroy();
    const refused = await new Promise<boolean>((resolve) => {
      const s = net.connect(Number(port), '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(false);
      });
      s.once('error', () => resolve(true));
    });
    expect(refused).toBe(true);

    const { status, complete } = await done;
    expect(status).toBe(200);
    expect(complete).toBe(true);
    expect(bytes).toBe(SIZE);
    expect(received.digest('hex')).toBe(sentHash.digest('hex'));
    expect(await child!.exited).toBe(0);
    const out = child!.output.join('');
    expect(out).toContain('"msg":"draining');
    expect(out).toContain('"msg":"stopped"');
  });
});
