import type { ErrorCode } from '../core/errors.ts';
import type { AddressInfo } from 'node:net';
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import http2 from 'node:http2';
import type { Config } from './config.ts';
import { createServices, type ServiceOptions, type Services } from './services.ts';
import { routeTable } from './api/routes.ts';
import { Router } from './api/router.ts';
import { renderError } from './api/respond.ts';
import { sharePortWithHttp2, sharePortWithTls } from './scalekit/same-port.ts';
import { guardHttp2, http2Limits, http2ServerOptions } from './scalekit/h2-limits.ts';

/**
 * The service's HTTP handler. Every route of the API is in one table (runtime/api/routes.ts) and served by its
 * dispatcher (runtime/api/router.ts), the two hot routes included; Express serves the rest: the dashboard, and
 * the 404 of anything else.
 */
export function createHandler(s: Services): (req: IncomingMessage, res: ServerResponse) => void {
  const router = new Router(s, routeTable(s));
  // Express (runtime/app.ts) is loaded with the first request the table does not match: it and its body parsers
  // were about 30 ms of every start.
  let app: Promise<(req: IncomingMessage, res: ServerResponse) => void> | undefined;
  const lifecycle = s.lifecycle;
  return (req, res) => {
    s.foreground.track(res);
    // While draining, each answer closes its connection, so keep-alive clients move to another instance.
    if (lifecycle.draining) res.setHeader('connection', 'close');
    const match = router.match(req.method ?? 'GET', req.url ?? '/');
    if (match) {
      s.metrics.countResponse(res, match.route.operation);
      router.serve(match, req, res);
    } else {
      s.metrics.countResponse(res, /^\/dashboard(\/|\?|$)/i.test(req.url ?? '') ? 'dashboard' : 'unmatched');
      (app ??= import('./app.ts').then((m) => m.createApp(s))).then(
        (serve) => serve(req, res),
        (e: unknown) => renderError(s, e, req, res),
      );
    }
  };
}

export interface RunningServer {
  server: Server;
  services: Services;
  url: string;
  /** Stops at once: open connections, streams included, are cut. */
  close(): Promise<void>;
  /**
   * Stops gracefully: no new connections, /ready answers 503, requests in flight (proxied streams included) may
   * finish for up to `graceMs`, then whatever is left is cut and the services close.
   */
  drain(graceMs: number): Promise<{ cut: number }>;
}

/** Answers every request while the services are still being built (only when the port opened first). */
function starting(req: IncomingMessage, res: ServerResponse): void {
  const ready = /^\/ready\/?(\?|$)/i.test(req.url ?? '');
  res.writeHead(503, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'retry-after': '1',
  });
  res.end(
    JSON.stringify(
      ready
        ? { status: 'starting' }
        : {
            error: {
              code: 'starting' satisfies ErrorCode,
              message: 'The service is starting; retry shortly',
              details: [],
            },
          },
    ),
  );
}

/**
 * Starts the service: store, keys, first credential, HTTP server. With port 0 the system picks a free port:
 * `config.port` becomes the port it got and, when PUBLIC_URL was not given, `config.publicUrl` the address served.
 */
export async function startServer(config: Config, opts: ServiceOptions = {}): Promise<RunningServer> {
  // Slow senders (slowloris): Node counts both limits from a request's first byte, the headers timeout until the
  // headers are complete, the request timeout until the whole body has arrived; neither runs while the answer is
  // being produced or sent, so long downloads, slow providers and SSE/MCP streams are not cut, and an idle
  // keep-alive connection between two requests is governed by keepAliveTimeout alone. Node checks them every
  // connectionsCheckingInterval (30 s by default, which would let a 15 s limit run to 45 s): here a quarter of
  // the headers limit, at most a second (one walk over the connections still receiving a request).
  const shortest = Math.min(...[config.headersTimeoutMs, config.requestTimeoutMs].filter((ms) => ms > 0));
  const server = http.createServer({
    headersTimeout: config.headersTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, Math.max(10, Math.floor(shortest / 4))),
  });
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  // Scalekit's SDK speaks gRPC over HTTP/2 to the same address (runtime/scalekit/): h2c on a plain port, h2
  // negotiated by ALPN with native TLS. Both sides of the port exist before it opens, so that a client gets its
  // own protocol (and TLS) from the first connection on, a 503 "starting" included.
  const h2limits = http2Limits({
    headersTimeoutMs: config.headersTimeoutMs,
    requestTimeoutMs: config.requestTimeoutMs,
    bodyIdleTimeoutMs: config.bodyIdleTimeoutMs,
    keepAliveTimeoutMs: server.keepAliveTimeout,
    maxSessionsPerClient: config.http2MaxSessionsPerClient,
  });
  const h2 = http2.createServer(http2ServerOptions(h2limits));
  const h2counts = guardHttp2(h2, h2limits);
  const endHttp2 = config.tls
    ? sharePortWithTls(server, h2, config.tls, server.headersTimeout)
    : sharePortWithHttp2(server, h2, server.headersTimeout);
  const listen = async () => {
    // A burst of new connections (thousands of clients at once) waits in the accept queue instead of having
    // its SYNs dropped and retried seconds later; Node's default is 511, the kernel caps it at somaxconn.
    server.listen(config.port, config.host, 4096);
    await new Promise<void>((resolve, reject) => {
      server.once('listening', resolve);
      server.once('error', reject);
    });
    config.port = (server.address() as AddressInfo).port;
  };
  const scheme = config.tls ? 'https' : 'http';
  const url = () => `${scheme}://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
  // The services are built with the public URL, which a system-picked port is part of; otherwise the port opens
  // only once the service can answer on it.
  server.on('request', starting);
  h2.on('request', starting);
  if (!config.publicUrl) {
    await listen();
    config.publicUrl = url();
  }
  const services = await createServices(config, opts).catch((e: unknown) => {
    server.close();
    endHttp2();
    throw e;
  });
  server.off('request', starting);
  h2.off('request', starting);
  services.metrics.watchHttp2(h2counts);
  const handler = createHandler(services);
  server.on('request', handler);
  // gRPC's code (Connect, protobuf, the AgentKit descriptors) is loaded on the first HTTP/2 request: a service that
  // never gets one never loads it.
  let grpc: Promise<(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void> | undefined;
  h2.on('request', (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => {
    services.foreground.track(res);
    grpc ??= import('./scalekit/grpc.ts').then((m) => m.createGrpcHandler(services));
    grpc.then(
      (serve) => serve(req, res),
      (e: unknown) => {
        services.log.error({ err: e }, 'the HTTP/2 (gRPC) handler could not be loaded');
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/grpc', 'grpc-status': '13' });
        res.end();
      },
    );
  });
  if (!server.listening) await listen();
  return {
    server,
    services,
    url: url(),
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        endHttp2();
      });
      await services.close();
    },
    async drain(graceMs) {
      services.lifecycle.draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // HTTP/2 (gRPC) sessions get a GOAWAY: their streams in flight finish, no new ones start.
      endHttp2({ graceful: true });
      // A connection that finishes its last response goes idle; close it then, instead of at keepAliveTimeout.
      const sweep = setInterval(() => server.closeIdleConnections(), 50);
      let cut = 0;
      const grace = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), graceMs).unref());
      if ((await Promise.race([closed, grace])) === 'timeout') {
        cut = (await new Promise<number>((resolve) => server.getConnections((_e, n) => resolve(n ?? 0)))) || 0;
        server.closeAllConnections();
        endHttp2();
        await closed;
      }
      clearInterval(sweep);
      await services.close();
      return { cut };
    },
  };
}
