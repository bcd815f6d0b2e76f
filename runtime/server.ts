import type { AddressInfo } from 'node:net';
import http, { type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { executeTool } from './api/execute.ts';
import type { Config } from './config.ts';
import { createServices, type ServiceOptions, type Services } from './services.ts';
import { apiRouter } from './api/routes.ts';
import { dashboardRouter } from './dashboard/index.ts';
import { ProviderError, ServiceError, unauthorized } from '../core/errors.ts';
import { toolCount } from '../generated/registry.ts';
import { requestId } from './ids.ts';

declare module 'express-serve-static-core' {
  interface Request {
    requestId: string;
    credentialId?: string;
  }
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

export function resultPage(title: string, message: string, ok: boolean): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#1f2933}
h1{font-size:1.4rem;color:${ok ? '#17653d' : '#9b1c1c'}}</style></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p></body></html>`;
}

type AnyRequest = IncomingMessage & { requestId?: string; credentialId?: string };

/** The bearer token check of every API route: signature, audience, expiry, credential not revoked. */
async function authenticate(s: Services, req: AnyRequest): Promise<void> {
  const h = req.headers.authorization;
  if (!h || !/^Bearer\s+\S+$/i.test(h))
    throw unauthorized('Send Authorization: Bearer <token>; get a token from POST /oauth/token');
  const claims = await s.tokens.verify(h.replace(/^Bearer\s+/i, ''));
  req.credentialId = claims.credentialId;
}

function bearer(s: Services) {
  return async (req: Request, _res: Response, next: NextFunction) => {
    await authenticate(s, req);
    next();
  };
}

/** Gives the request its id (the client's, when it is a sane one); refuses anything but HTTP/1.x. */
function startRequest(req: AnyRequest, res: ServerResponse): boolean {
  const given = req.headers['x-request-id'];
  req.requestId = typeof given === 'string' && /^[\w.-]{1,64}$/.test(given) ? given : requestId();
  res.setHeader('x-request-id', req.requestId);
  // Node reads a request line without a version as HTTP/0.9, yet still parses header lines after it: a raw line
  // break in the target ("GET /proxy/x?q=a<CR><LF>X-Evil: 1") would turn the rest of the target into a header
  // the proxy forwards. HTTP/0.9 has no headers at all, so such a request can only be an attack.
  if (req.httpVersionMajor !== 1) {
    sendJson(res, 400, errorBody(req, 'bad_request', 'Only HTTP/1.0 and HTTP/1.1 requests are accepted'), {
      'x-error-source': 'service',
    });
    return false;
  }
  return true;
}

function errorBody(
  req: AnyRequest,
  code: string,
  message: string,
  details?: unknown,
  extra: Record<string, unknown> = {},
) {
  return { error: { code, message, ...(details ? { details } : {}) }, request_id: req.requestId, ...extra };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * Every error the API answers, in one shape: a provider's refusal keeps the provider's status and body and is
 * marked `x-error-source: provider`; everything else is the service's own, marked `service`.
 */
export function renderError(s: Services, err: unknown, req: AnyRequest, res: ServerResponse): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const execution = (err as { executionId?: string }).executionId;
  const extra = execution ? { execution_id: execution } : {};
  if (err instanceof ProviderError) {
    const status = err.status >= 400 && err.status <= 599 ? err.status : 502;
    const headers: Record<string, string> = { 'x-error-source': 'provider' };
    const retryAfter = err.headers['retry-after'];
    if (typeof retryAfter === 'string') headers['retry-after'] = retryAfter;
    sendJson(
      res,
      status,
      {
        ...errorBody(req, 'provider_error', `The provider answered HTTP ${err.status}`, undefined, extra),
        error: {
          code: 'provider_error',
          message: `The provider answered HTTP ${err.status}`,
          provider_status: err.status,
          provider_body: err.body ?? null,
        },
      },
      headers,
    );
    return;
  }
  // Everything below is the service's own answer: marked so, or a client could take it for the provider's.
  const service = { 'x-error-source': 'service' };
  if (err instanceof ServiceError) {
    sendJson(res, err.status, errorBody(req, err.code, err.message, err.details, extra), {
      ...service,
      ...(err.headers ?? {}),
    });
    return;
  }
  const e = err as { type?: string; status?: number; message?: string };
  if (e?.type === 'entity.too.large') {
    sendJson(
      res,
      413,
      errorBody(req, 'payload_too_large', `The request body is larger than ${s.config.bodyLimitBytes} bytes`),
      service,
    );
    return;
  }
  if (e?.type === 'entity.parse.failed') {
    // The parser's message may quote the body around the error, and the body may carry credentials: only the
    // position of the error goes back to the client.
    const at = /at position (\d+)/.exec(e.message ?? '');
    const where = at
      ? ` (error at position ${at[1]})`
      : /end of JSON input/.test(e.message ?? '')
        ? ' (it ends too early)'
        : '';
    sendJson(res, 400, errorBody(req, 'invalid_json', `The request body is not valid JSON${where}`), service);
    return;
  }
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    sendJson(res, 415, errorBody(req, 'unsupported_media_type', e.message ?? 'Unsupported encoding'), service);
    return;
  }
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) {
    sendJson(res, e.status, errorBody(req, 'bad_request', e.message ?? 'Bad request'), service);
    return;
  }
  s.log.error({ requestId: req.requestId, err: (err as Error)?.stack ?? String(err) }, 'unhandled error');
  sendJson(
    res,
    500,
    errorBody(req, 'internal_error', `Internal error; quote request id ${req.requestId}`, undefined, extra),
    service,
  );
}

/**
 * The service's HTTP handler. The two routes every client call takes — `ANY /proxy/*` and
 * `POST /v1/tools/execute` — are dispatched here, before Express: measured in bench/RESULTS.md, Express's
 * router costs about 80 µs of CPU per request, a fifth of a proxied call. They use the same body parser,
 * authentication and error rendering as the routes Express serves; everything else goes to Express.
 */
export function createHandler(s: Services): (req: IncomingMessage, res: ServerResponse) => void {
  const app = createApp(s);
  const parseJson = express.json({ limit: s.config.bodyLimitBytes, strict: true });
  const parse = (req: IncomingMessage, res: ServerResponse) =>
    new Promise<void>((resolve, reject) =>
      parseJson(req as never, res as never, (err?: unknown) => (err ? reject(err) : resolve())),
    );
  return (req: AnyRequest, res) => {
    const url = req.url ?? '';
    const proxy = url.startsWith('/proxy/');
    const execute = !proxy && req.method === 'POST' && /^\/v1\/tools\/execute\/?(?:\?|$)/.test(url);
    if (!proxy && !execute) {
      app(req, res);
      return;
    }
    if (!startRequest(req, res)) return;
    void (async () => {
      try {
        await authenticate(s, req);
        if (proxy) {
          await s.proxy.handle(req, res, url.slice('/proxy'.length));
        } else {
          await parse(req, res);
          await executeTool(s, (req as { body?: unknown }).body, res);
        }
      } catch (e) {
        renderError(s, e, req, res);
      }
    })();
  };
}

export function createApp(s: Services): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  if (s.config.trustProxy) app.set('trust proxy', true);

  app.use((req, res, next) => {
    if (startRequest(req, res)) next();
  });

  app.get('/health', async (_req, res) => {
    res.json({ status: 'ok', store: s.store.kind, tools: toolCount });
  });

  const small = { limit: '16kb' };
  app.post(
    '/oauth/token',
    express.urlencoded({ ...small, extended: false }),
    express.json(small),
    async (req: Request, res: Response) => {
      res.setHeader('cache-control', 'no-store');
      const body = (req.body ?? {}) as Record<string, unknown>;
      let clientId = typeof body.client_id === 'string' ? body.client_id : '';
      let clientSecret = typeof body.client_secret === 'string' ? body.client_secret : '';
      const basic = /^Basic\s+(\S+)$/i.exec(req.headers.authorization ?? '');
      if (basic) {
        const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
        const i = decoded.indexOf(':');
        if (i > 0) {
          try {
            clientId = decodeURIComponent(decoded.slice(0, i));
            clientSecret = decodeURIComponent(decoded.slice(i + 1));
          } catch {
            // RFC 6749 §2.3.1 form-encodes both parts; a malformed escape is a bad request, not a server error.
            res.status(400).json({
              error: 'invalid_request',
              error_description: 'The HTTP Basic credentials are not form-encoded correctly',
            });
            return;
          }
        }
      }
      const grant = body.grant_type ?? 'client_credentials';
      if (grant !== 'client_credentials') {
        res
          .status(400)
          .json({ error: 'unsupported_grant_type', error_description: 'Only client_credentials is supported' });
        return;
      }
      if (!clientId || !clientSecret) {
        res.status(400).json({
          error: 'invalid_request',
          error_description: 'client_id and client_secret are required (form fields, JSON, or HTTP Basic)',
        });
        return;
      }
      try {
        const { token, expiresIn } = await s.tokens.exchange(clientId, clientSecret, req.ip ?? 'unknown');
        res.json({ access_token: token, token_type: 'Bearer', expires_in: expiresIn });
      } catch (e) {
        if (e instanceof ServiceError) {
          for (const [k, v] of Object.entries(e.headers ?? {})) res.setHeader(k, v);
          res
            .status(e.status)
            .json({ error: e.code === 'too_many_attempts' ? 'slow_down' : e.code, error_description: e.message });
          return;
        }
        throw e;
      }
    },
  );

  app.get('/sso/v1/oauth/:connectionId/authorize', async (req, res) => {
    const link = typeof req.query.link === 'string' ? req.query.link : '';
    try {
      const url = await s.oauth.start(req.params.connectionId!, link);
      res.setHeader('cache-control', 'no-store');
      res.redirect(302, url);
    } catch (e) {
      if (!(e instanceof ServiceError)) throw e;
      res
        .status(e.status)
        .type('html')
        .send(resultPage('Authorization could not start', e.message, false));
    }
  });
  app.get('/sso/v1/oauth/:connectionId/callback', async (req, res) => {
    res.setHeader('cache-control', 'no-store');
    try {
      const outcome = await s.oauth.callback(
        req.params.connectionId!,
        new URLSearchParams(req.url.split('?')[1] ?? ''),
      );
      if (outcome.redirectTo) {
        res.redirect(302, outcome.redirectTo);
        return;
      }
      res
        .status(outcome.ok ? 200 : 400)
        .type('html')
        .send(resultPage(outcome.ok ? 'Account connected' : 'Authorization failed', outcome.message, outcome.ok));
    } catch (e) {
      if (!(e instanceof ServiceError)) throw e;
      res
        .status(e.status)
        .type('html')
        .send(resultPage('Authorization failed', e.message, false));
    }
  });

  const auth = bearer(s);
  // Origin-form /proxy/ requests never reach Express (see createHandler); an absolute-form target
  // (GET http://host/proxy/...) would, and is refused: only a path names what to proxy.
  app.all('/proxy/{*path}', auth, async () => {
    throw new ServiceError(400, 'invalid_proxy_path', 'The request target must be a path starting with /proxy/', [
      { field: 'path', message: 'must be a path, not an absolute URL' },
    ]);
  });

  app.use('/v1', express.json({ limit: s.config.bodyLimitBytes, strict: true }), auth, apiRouter(s));

  app.use('/dashboard', dashboardRouter(s));

  app.use((req, res) => {
    sendJson(res, 404, errorBody(req, 'not_found', `No route ${req.method} ${req.path}`), {
      'x-error-source': 'service',
    });
  });

  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => renderError(s, err, req, res));
  return app;
}

export interface RunningServer {
  server: Server;
  services: Services;
  url: string;
  close(): Promise<void>;
}

/**
 * Starts the service: store, keys, first credential, HTTP server. With port 0 the system picks a free port:
 * `config.port` becomes the port it got and, when PUBLIC_URL was not given, `config.publicUrl` the address served.
 */
export async function startServer(config: Config, opts: ServiceOptions = {}): Promise<RunningServer> {
  const server = http.createServer();
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
  const url = () => `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`;
  // The services are built with the public URL, which a system-picked port is part of; otherwise the port opens
  // only once the service can answer on it.
  if (!config.publicUrl) {
    await listen();
    config.publicUrl = url();
  }
  const services = await createServices(config, opts).catch((e: unknown) => {
    server.close();
    throw e;
  });
  server.on('request', createHandler(services));
  if (!server.listening) await listen();
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 0;
  return {
    server,
    services,
    url: url(),
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await services.close();
    },
  };
}
