/**
 * `npx tsx bench/client-micro.ts`: CPU cost per upstream request of the service's got instance (buffered,
 * and as a stream) against node:http with the same keep-alive agent, on loopback, 64 requests in flight.
 * Decides which client the proxy uses (see bench/RESULTS.md).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { keepAliveAgents, upstreamClient } from '../runtime/upstream/got-client.ts';

const body = JSON.stringify({ ticket: { id: 1, subject: 'x', status: 'open' } });
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.keepAliveTimeout = 60_000;
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v2/tickets/1`;

const viaGot = () =>
  upstreamClient(url, { headers: { accept: 'application/json' }, timeout: { connect: 5000, response: 5000 } }).then(
    (r) => r.rawBody.length,
  );
const viaGotStream = () =>
  new Promise<number>((resolve, reject) => {
    const s = upstreamClient.stream(url, {
      headers: { accept: 'application/json' },
      decompress: false,
      timeout: { connect: 5000, response: 5000 },
    });
    let n = 0;
    s.on('data', (c: Buffer) => (n += c.length));
    s.on('end', () => resolve(n));
    s.on('error', reject);
  });
const viaHttp = () =>
  new Promise<number>((resolve, reject) => {
    const req = http.request(url, { agent: keepAliveAgents.http, headers: { accept: 'application/json' } }, (res) => {
      let n = 0;
      res.on('data', (c: Buffer) => (n += c.length));
      res.on('end', () => resolve(n));
    });
    req.on('error', reject);
    req.end();
  });

async function measure(name: string, fn: () => Promise<number>) {
  const total = 20_000;
  const inflight = 64;
  const run = async () => {
    let done = 0;
    await Promise.all(
      Array.from({ length: inflight }, async () => {
        while (done < total) {
          done++;
          await fn();
        }
      }),
    );
  };
  await run();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await run();
  const cpu = process.cpuUsage(cpu0);
  const ms = performance.now() - t0;
  console.log(
    `${name.padEnd(12)} ${(total / (ms / 1000)).toFixed(0).padStart(6)} req/s  ${((cpu.user + cpu.system) / total).toFixed(1).padStart(6)} µs CPU/request (client and server in this process)`,
  );
}
for (let i = 0; i < 2; i++) {
  await measure('node:http', viaHttp);
  await measure('got stream', viaGotStream);
  await measure('got', viaGot);
}
server.close();
process.exit(0);
