/**
 * The one route table of the HTTP API and its dispatcher. Each endpoint of core/api/endpoints.ts (method, path,
 * schemas, auth) gets its handler in runtime/api/routes.ts; this module matches a request to it and serves it
 * through the same steps for every route: request id, bearer-token check, body parser, request validation
 * (precompiled validators from generated/api/), handler, and one error renderer.
 *
 * Express is not on this path — the API does not use its middleware chain, which cost about 80 µs of CPU per
 * request on the hot routes (`ANY /proxy/*`, `POST /v1/tools/execute`). Express serves what the
 * table does not match: the dashboard, and the 404 of an unknown route.
 *
 * Matching is the same for every route:
 * - letters in the fixed parts of a path match in any case (`/V1/Tools` is `/v1/tools`);
 * - one trailing slash is ignored (`/v1/tools/` is `/v1/tools`);
 * - fixed parts are compared as sent, percent-encoding included (`/v1/%74ools` is not `/v1/tools`); a path
 *   parameter is percent-decoded once (`/v1/connections/a%20b` names "a b"), and one that is not valid UTF-8
 *   percent-encoding is a 400;
 * - a parameter that takes the rest of the path (the proxy's) gets it as sent, with its query, trailing slash and
 *   all: it is the provider's path, not ours;
 * - HEAD is answered by the GET route; a method the path does not have is a 404, like an unknown path;
 * - an absolute-form request target (`GET http://host/v1/tools`) is matched by its path, except for the proxy,
 *   which takes only a path.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { parse as parseQuery } from 'node:querystring';
import { endpoints, type Endpoint, type OperationId } from '../../core/api/endpoints.ts';
import { ServiceError } from '../../core/errors.ts';
import type { Operations } from '../../generated/api/types.ts';
import type { Services } from '../services.ts';
import { bodyArrived, expressParser, jsonBody, type Middleware } from './json-body.ts';
import { authenticate, renderError, sendJson, startRequest, type AnyRequest } from './respond.ts';
import { checkRequest } from './validate.ts';
import { holdsScope, insufficientScope } from '../auth/service-auth.ts';

export type ApiRequest = AnyRequest & { body?: unknown };

export interface Context<Op extends OperationId> {
  req: ApiRequest;
  res: ServerResponse;
  params: Operations[Op]['params'];
  query: Operations[Op]['query'];
  body: Operations[Op]['body'];
  /** The query string as sent, for handlers that read it themselves (the OAuth callback). */
  rawQuery: string;
}

/** A JSON answer; a handler that writes its own answer (a stream, a redirect, a page) returns nothing. */
export interface Reply<Op extends OperationId> {
  status?: number;
  /** Extra response headers (a `location`). */
  headers?: Record<string, string>;
  body: Operations[Op]['response'];
}

/** May answer at once or later: the router awaits either. */
export type Handler<Op extends OperationId> = (ctx: Context<Op>) => Promise<Reply<Op> | void> | Reply<Op> | void;

/** A handler for every endpoint: an endpoint without one does not type-check. */
export type RouteTable = { [Op in OperationId]: Handler<Op> };

/** The token endpoint's body (form fields or JSON) is small; a larger one is refused early. */
const FORM_BODY_LIMIT = 16 * 1024;

interface Route {
  operation: OperationId;
  endpoint: Endpoint;
  handler: Handler<OperationId>;
  paramNames: string[];
  /** Dynamic routes: the path as a pattern, fixed parts in any case, one trailing slash allowed. */
  pattern?: RegExp;
  /** Rest routes: the fixed part before the rest parameter, lower case, with its final slash. */
  prefix?: string;
  parsers: Middleware[];
  /** The largest body the route's parsers accept. */
  bodyLimit: number;
}

export interface Match {
  route: Route;
  /** Path parameter values as sent (not yet decoded). */
  params: string[];
  /** The rest parameter as sent, query included. */
  rest?: string;
  query: string;
  absolute: boolean;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

/**
 * Runs a middleware: settled at once (undefined, or its error thrown) when it calls `next` before it returns, as the
 * JSON parser does for a body that came with the headers; a promise otherwise.
 */
function runMiddleware(mw: Middleware, req: IncomingMessage, res: ServerResponse): Promise<void> | undefined {
  let settle: ((err?: unknown) => void) | undefined;
  let done = false;
  let failure: unknown;
  mw(req, res, (err) => {
    if (settle) return settle(err);
    done = true;
    failure = err;
  });
  if (done) {
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the middleware's error, passed on unchanged
    if (failure) throw failure;
    return undefined;
  }
  // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors -- the middleware's error, passed on unchanged
  return new Promise((resolve, reject) => (settle = (err) => (err ? reject(err) : resolve())));
}

/** Runs a route's parsers in turn, from the `from`th: settled at once when each one is (see runMiddleware). */
function runParsers(
  parsers: Middleware[],
  req: IncomingMessage,
  res: ServerResponse,
  from = 0,
): Promise<void> | undefined {
  for (let i = from; i < parsers.length; i++) {
    const pending = runMiddleware(parsers[i]!, req, res);
    if (pending) return pending.then(() => runParsers(parsers, req, res, i + 1));
  }
  return undefined;
}

export class Router {
  private readonly byPath = new Map<string, Route>();
  private readonly dynamic = new Map<string, Route[]>();
  private readonly rest: Route[] = [];

  constructor(
    private readonly s: Services,
    table: RouteTable,
  ) {
    const json = jsonBody(s.config.bodyLimitBytes);
    const bodyLimit = (e: Endpoint) => (e.body?.form ? FORM_BODY_LIMIT : s.config.bodyLimitBytes);
    const form = [
      expressParser((express) => express.urlencoded({ limit: FORM_BODY_LIMIT, extended: false }) as Middleware),
      jsonBody(FORM_BODY_LIMIT),
    ];
    for (const operation of Object.keys(endpoints) as OperationId[]) {
      const endpoint: Endpoint = endpoints[operation];
      const paramNames = [...endpoint.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
      const route: Route = {
        operation,
        endpoint,
        handler: table[operation] as Handler<OperationId>,
        paramNames,
        // Every authenticated JSON route reads a JSON body when one is sent (it is checked where the endpoint
        // declares one); the proxy streams its body upstream unread.
        parsers: endpoint.body?.form ? form : endpoint.auth === 'bearer' && !endpoint.rest ? [json] : [],
        bodyLimit: bodyLimit(endpoint),
      };
      const methods = endpoint.method === 'ANY' ? ['*'] : [endpoint.method];
      if (endpoint.rest) {
        route.prefix = endpoint.path.slice(0, endpoint.path.indexOf(`{${endpoint.rest}}`)).toLowerCase();
        this.rest.push(route);
      } else if (!paramNames.length) {
        for (const m of methods) this.byPath.set(`${m} ${endpoint.path.toLowerCase()}`, route);
      } else {
        const source = endpoint.path
          .split('/')
          .map((seg) => (/^\{\w+\}$/.test(seg) ? '([^/]+)' : escapeRegExp(seg)))
          .join('/');
        route.pattern = new RegExp(`^${source}/?$`, 'i');
        for (const m of methods) this.dynamic.set(m, [...(this.dynamic.get(m) ?? []), route]);
      }
    }
  }

  /** The route of a request, or undefined when the table has none (the dashboard, or a 404). */
  match(method: string, url: string): Match | undefined {
    let target = url;
    let absolute = false;
    if (!url.startsWith('/')) {
      const origin = ABSOLUTE_FORM.exec(url);
      if (!origin) return undefined;
      target = url.slice(origin[0].length) || '/';
      absolute = true;
    }
    const lookup = method === 'HEAD' ? 'GET' : method;
    for (const route of this.rest) {
      const n = route.prefix!.length;
      const methodMatches = route.endpoint.method === 'ANY' || route.endpoint.method === lookup;
      if (methodMatches && target.length >= n && target.slice(0, n).toLowerCase() === route.prefix) {
        return { route, params: [], rest: target.slice(n - 1), query: '', absolute };
      }
    }
    const q = target.indexOf('?');
    let path = q < 0 ? target : target.slice(0, q);
    const query = q < 0 ? '' : target.slice(q + 1);
    if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
    const key = path.toLowerCase();
    const exact = this.byPath.get(`${lookup} ${key}`) ?? this.byPath.get(`* ${key}`);
    if (exact) return { route: exact, params: [], query, absolute };
    for (const routes of [this.dynamic.get(lookup), this.dynamic.get('*')]) {
      for (const route of routes ?? []) {
        const m = route.pattern!.exec(path);
        if (m) return { route, params: m.slice(1), query, absolute };
      }
    }
    return undefined;
  }

  /** Serves a matched request; every failure is answered by the one error renderer. */
  serve(m: Match, req: ApiRequest, res: ServerResponse): void {
    if (!startRequest(req, res)) return;
    this.run(m, req, res).catch((e: unknown) => renderError(this.s, e, req, res));
  }

  private async run(m: Match, req: ApiRequest, res: ServerResponse): Promise<void> {
    const { operation, endpoint, handler, paramNames, parsers } = m.route;
    // A known token and a body that came with the headers are settled at once: no promise to wait for.
    if (endpoint.auth === 'bearer') {
      const pending = authenticate(this.s, req);
      if (pending) await pending;
      // The route's one scope (core/api/endpoints.ts), carried by the token: no read.
      if (!holdsScope(req.access!, endpoint.scope)) throw insufficientScope(endpoint.scope);
    }
    if (m.absolute && endpoint.rest) {
      throw new ServiceError(
        400,
        'invalid_proxy_path',
        `The request target must be a path starting with ${m.route.prefix}`,
        [{ field: endpoint.rest, message: 'must be a path, not an absolute URL' }],
      );
    }
    let params: Record<string, string> | undefined;
    if (endpoint.params) {
      params = {};
      paramNames.forEach(
        (name, i) => (params![name] = name === endpoint.rest ? m.rest! : decodeParam(name, m.params[i]!)),
      );
      params = checkRequest(operation, 'params', params);
    }
    const query = endpoint.query ? checkRequest(operation, 'query', parseQuery(m.query)) : undefined;
    if (parsers.length) {
      // A body sent with its headers is pushed by node only after the 'request' event: one microtask later it is all
      // here, and is taken at once rather than read with the timers for a body still arriving.
      if (!bodyArrived(req)) await Promise.resolve();
      const reading = this.readBody(m.route, req, res);
      if (reading) await reading;
    }
    const body = endpoint.body
      ? checkRequest(operation, 'body', req.body === undefined && !endpoint.body.required ? {} : req.body)
      : undefined;
    const reply = await handler({
      req,
      res,
      params: params as never,
      query: query as never,
      body: body as never,
      rawQuery: m.query,
    });
    if (reply) sendJson(res, reply.status ?? 200, reply.body, reply.headers);
  }

  /**
   * Reads a request body with the route's parsers, refusing early what cannot be accepted: a Content-Length over the
   * route's limit before a byte is read (413 naming that limit), and a body that stops arriving — no byte for
   * `bodyIdleTimeoutMs`, or (routes without authentication) not complete within twice that — with 408 and the
   * connection closed, so slow bodies cannot hold connections open.
   */
  private readBody(route: Route, req: ApiRequest, res: ServerResponse): Promise<void> | undefined {
    const declared = req.headers['content-length'];
    if (declared !== undefined && Number(declared) > route.bodyLimit) {
      res.setHeader('connection', 'close');
      throw bodyTooLarge(route.bodyLimit);
    }
    if (bodyArrived(req) || this.s.config.bodyIdleTimeoutMs <= 0) return runParsers(route.parsers, req, res);
    return this.readArrivingBody(route, req, res);
  }

  /** A body still arriving: read with the idle and total limits of `readBody`. */
  private async readArrivingBody(route: Route, req: ApiRequest, res: ServerResponse): Promise<void> {
    const idleMs = this.s.config.bodyIdleTimeoutMs;
    let fail!: (e: Error) => void;
    const cut = new Promise<never>((_resolve, reject) => (fail = reject));
    const timedOut = (what: string) => {
      res.setHeader('connection', 'close');
      res.once('finish', () => req.destroy());
      fail(new ServiceError(408, 'request_timeout', `The request body ${what}`));
    };
    // Progress is read off the socket (a 'data' listener here would start the stream before the parser listens).
    let bytes = req.socket.bytesRead;
    let lastProgress = Date.now();
    const idle = setInterval(
      () => {
        if (req.socket.bytesRead !== bytes) {
          bytes = req.socket.bytesRead;
          lastProgress = Date.now();
        } else if (Date.now() - lastProgress >= idleMs) timedOut(`stopped arriving (no data for ${idleMs} ms)`);
      },
      Math.max(25, Math.floor(idleMs / 4)),
    );
    const total =
      route.endpoint.auth === 'bearer'
        ? undefined
        : setTimeout(() => timedOut(`did not arrive within ${2 * idleMs} ms`), 2 * idleMs);
    try {
      await Promise.race([runParsers(route.parsers, req, res), cut]);
    } finally {
      clearInterval(idle);
      if (total) clearTimeout(total);
    }
  }
}

/** The 413 of a body over `limit` bytes (the limit of the route it was sent to). */
export function bodyTooLarge(limit: number): ServiceError {
  return new ServiceError(
    413,
    'payload_too_large',
    `The request body is larger than ${limit} bytes, this route's limit`,
  );
}

function decodeParam(name: string, raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new ServiceError(400, 'invalid_input', `The path parameter ${name} is not valid percent-encoding`, [
      { field: name, message: 'is not valid percent-encoded UTF-8' },
    ]);
  }
}
