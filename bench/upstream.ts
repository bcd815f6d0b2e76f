/**
 * Loopback processes the benchmark drives: a fake upstream answering a small JSON body (plus a token
 * endpoint that counts refreshes, a 200 MB download and an upload sink), and the baseline — a bare
 * pass-through written with node:http and a keep-alive agent, the least any proxy in Node can cost.
 * Run as a child process: `tsx bench/upstream.ts upstream|bare <port> [upstreamUrl]`.
 */
import http from 'node:http';
import { pipeline } from 'node:stream';

const SMALL = JSON.stringify({
  ticket: { id: 1, subject: 'Benchmark ticket', status: 'open', priority: 'normal', tags: ['bench'] },
});
const CHUNK = Buffer.alloc(64 * 1024, 97);

function upstream(port: number) {
  let refreshes = 0;
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    if (url.startsWith('/oauth/token')) {
      let body = '';
      req.on('data', (c: Buffer) => (body += c));
      req.on('end', () => {
        if (body.includes('grant_type=refresh_token')) refreshes++;
        // A token endpoint is slow compared with an API read; this widens the single-flight window.
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' });
          res.end(
            JSON.stringify({
              access_token: `at-${refreshes}-${Date.now()}`,
              token_type: 'Bearer',
              expires_in: 3600,
              refresh_token: `rt-${refreshes}`,
            }),
          );
        }, 50);
      });
      return;
    }
    if (url === '/stats') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ refreshes }));
      return;
    }
    if (url.includes('/big')) {
      const size = Number(new URL(url, 'http://x').searchParams.get('bytes') ?? 200 * 1024 * 1024);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size) });
      let sent = 0;
      const write = () => {
        while (sent < size) {
          const n = Math.min(CHUNK.length, size - sent);
          sent += n;
          if (!res.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) return void res.once('drain', write);
        }
        res.end();
      };
      write();
      return;
    }
    if (req.method === 'POST' || req.method === 'PUT' || req.method === 'PATCH') {
      let n = 0;
      req.on('data', (c: Buffer) => (n += c.length));
      req.on('end', () => {
        if (url.includes('sendMail')) {
          res.writeHead(202);
          res.end();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ received: n }));
      });
      return;
    }
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(SMALL)) });
    res.end(SMALL);
  });
  server.keepAliveTimeout = 65_000;
  server.listen(port, '127.0.0.1');
}

const HOP = new Set([
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authorization',
  'host',
]);

function bare(port: number, target: string) {
  const agent = new http.Agent({ keepAlive: true, maxFreeSockets: 64 });
  const t = new URL(target);
  const server = http.createServer((req, res) => {
    const headers: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k)) headers[k] = v;
    const up = http.request(
      { host: t.hostname, port: t.port, method: req.method, path: req.url, headers, agent },
      (r) => {
        const out: http.OutgoingHttpHeaders = {};
        for (const [k, v] of Object.entries(r.headers)) if (!HOP.has(k)) out[k] = v;
        res.writeHead(r.statusCode ?? 502, out);
        pipeline(r, res, () => {});
      },
    );
    up.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    pipeline(req, up, () => {});
  });
  server.keepAliveTimeout = 65_000;
  server.listen(port, '127.0.0.1');
}

const [role, port, target] = process.argv.slice(2);
if (role === 'upstream') upstream(Number(port));
else if (role === 'bare') bare(Number(port), target!);
else throw new Error('usage: upstream.ts upstream|bare <port> [target]');
process.send?.('ready');
