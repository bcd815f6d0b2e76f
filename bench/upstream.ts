/**
 * The fake upstream the bench drives through the baseline and the service: a support desk answering a small
 * ticket JSON to any GET, a download of any size (`/big?bytes=N`) and an upload sink (`POST /upload`).
 * Run as a child process: `node --import tsx bench/upstream.ts <port>`; it sends "ready" over IPC.
 */
import http from 'node:http';

const TICKET = Buffer.from(
  JSON.stringify({
    ticket: {
      id: 123,
      subject: 'Benchmark ticket',
      status: 'open',
      priority: 'normal',
      requester_id: 1,
      tags: ['bench'],
    },
    users: [{ id: 1, name: 'Bench Requester', email: 'requester@example.com' }],
  }),
);
const CHUNK = Buffer.alloc(64 * 1024, 97);

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  if (url.includes('/big')) {
    const size = Number(new URL(url, 'http://x').searchParams.get('bytes'));
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
  if (req.method === 'POST') {
    let n = 0;
    req.on('data', (c: Buffer) => (n += c.length));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ received: n }));
    });
    return;
  }
  req.resume();
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(TICKET.length) });
  res.end(TICKET);
});
server.keepAliveTimeout = 120_000;
server.listen(Number(process.argv[2]), '127.0.0.1', () => process.send?.('ready'));
