/**
 * The baseline: the least a pass-through written in Node can be. A node:http server piping each request to
 * http.request on a keep-alive agent and the answer back, headers as they came; nothing else.
 * Run as a child process: `node --import tsx bench/baseline.ts <port> <upstreamUrl>`; it sends "ready" over IPC.
 */
import http from 'node:http';

const target = new URL(process.argv[3]!);
const agent = new http.Agent({ keepAlive: true });

const server = http.createServer((req, res) => {
  const upstream = http.request(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent },
    (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(upstream);
});
server.keepAliveTimeout = 120_000;
server.listen(Number(process.argv[2]), '127.0.0.1', () => process.send?.('ready'));
