import http2 from 'node:http2';
import {
  Code,
  ConnectError,
  createContextKey,
  createContextValues,
  type ConnectRouter,
  type HandlerContext,
} from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { holdsScope, insufficientScope, type TokenClaims } from '../auth/service-auth.ts';
import type { DescService } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import type { Scope } from '../../core/api/scopes.ts';
import { requestId } from '../ids.ts';
import { clientAddress } from '../api/client-address.ts';
import { sessionAddress } from './same-port.ts';
import type { Services } from '../services.ts';
import { callerAccess, ScalekitCalls } from './calls.ts';
import { toConnectError } from './errors.ts';
import { ConnectedAccountService, ConnectionService, ToolService } from './descriptors.ts';

/**
 * Every method of a service that this service implements (ScalekitCalls), each with the one scope it needs: a
 * method implemented without one does not type-check.
 */
type MethodScopes<S extends DescService> = { readonly [M in keyof ServiceImpl<S> & keyof ScalekitCalls]: Scope };

/**
 * The scope each gRPC method needs, the same as its REST route's (core/api/endpoints.ts): one place, read by the
 * handlers below and by test/e2e/scopes.test.ts.
 */
export const GRPC_SCOPES: {
  readonly accounts: MethodScopes<typeof ConnectedAccountService>;
  readonly tools: MethodScopes<typeof ToolService>;
  readonly connections: MethodScopes<typeof ConnectionService>;
} = {
  accounts: {
    getConnectedAccountAuth: 'accounts:read',
    createConnectedAccount: 'accounts:write',
    updateConnectedAccount: 'accounts:write',
    deleteConnectedAccount: 'accounts:write',
    listConnectedAccounts: 'accounts:read',
    getMagicLinkForConnectedAccount: 'links:create',
    verifyConnectedAccountUser: 'links:create',
  },
  tools: {
    executeTool: 'tools:execute',
    listTools: 'tools:execute',
    listScopedTools: 'tools:execute',
    listAvailableTools: 'tools:execute',
  },
  connections: { listAppConnections: 'connections:read' },
};

/** Scalekit's AgentKit services on this service's calls, every method behind the bearer token and its scope. */
export function scalekitRoutes(s: Services, calls = new ScalekitCalls(s)) {
  const call =
    <Req, Res>(scope: Scope, fn: (r: Req) => Promise<Res>) =>
    async (req: Req, ctx: HandlerContext): Promise<Res> => {
      // Checked before the message was read (createGrpcHandler); a call that reached here without it is a bug.
      const claims = ctx.values.get(CLAIMS);
      if (!claims) throw new ConnectError('Not authenticated', Code.Unauthenticated);
      try {
        if (!holdsScope(claims, scope)) throw insufficientScope(scope);
        // The caller's address and the call's request id go to the audit log with any change the call makes.
        const origin = ctx.values.get(ORIGIN);
        return await callerAccess.run(
          { access: claims, sourceAddress: origin?.sourceAddress ?? null, requestId: origin?.requestId ?? null },
          () => fn(req),
        );
      } catch (e) {
        throw toConnectError(e, s.log);
      }
    };
  const a = GRPC_SCOPES.accounts;
  const t = GRPC_SCOPES.tools;
  return (router: ConnectRouter) => {
    router.service(ConnectedAccountService, {
      getConnectedAccountAuth: call(a.getConnectedAccountAuth, calls.getConnectedAccountAuth.bind(calls)),
      createConnectedAccount: call(a.createConnectedAccount, calls.createConnectedAccount.bind(calls)),
      updateConnectedAccount: call(a.updateConnectedAccount, calls.updateConnectedAccount.bind(calls)),
      deleteConnectedAccount: call(a.deleteConnectedAccount, calls.deleteConnectedAccount.bind(calls)),
      listConnectedAccounts: call(a.listConnectedAccounts, calls.listConnectedAccounts.bind(calls)),
      getMagicLinkForConnectedAccount: call(
        a.getMagicLinkForConnectedAccount,
        calls.getMagicLinkForConnectedAccount.bind(calls),
      ),
      verifyConnectedAccountUser: call(a.verifyConnectedAccountUser, calls.verifyConnectedAccountUser.bind(calls)),
    });
    router.service(ToolService, {
      executeTool: call(t.executeTool, calls.executeTool.bind(calls)),
      listTools: call(t.listTools, calls.listTools.bind(calls)),
      listScopedTools: call(t.listScopedTools, calls.listScopedTools.bind(calls)),
      listAvailableTools: call(t.listAvailableTools, calls.listAvailableTools.bind(calls)),
    });
    router.service(ConnectionService, {
      listAppConnections: call(GRPC_SCOPES.connections.listAppConnections, calls.listAppConnections.bind(calls)),
    });
  };
}

/** The verified token of the call, set before Connect reads the message. */
const CLAIMS = createContextKey<TokenClaims | undefined>(undefined);
/** Where the call came from (the client's address, as the HTTP API reads it) and its request id. */
const ORIGIN = createContextKey<{ sourceAddress: string; requestId: string } | undefined>(undefined);

/** A request id the client sent (as the HTTP API accepts one), or undefined. */
function firstHeader(v: string | string[] | undefined): string | undefined {
  const one = Array.isArray(v) ? v[0] : v;
  return one && /^[\w.-]{1,64}$/.test(one) ? one : undefined;
}

/** `/<package.Service>/<Method>` of every method served: the only paths whose messages are ever read. */
function procedurePaths(): Set<string> {
  const paths = new Set<string>();
  for (const service of [ConnectedAccountService, ToolService, ConnectionService])
    for (const method of service.methods) paths.add(`/${service.typeName}/${method.name}`);
  return paths;
}

const UNAUTHENTICATED = 'Send authorization: Bearer <token>; get a token from POST /oauth/token';
const BAD_TOKEN = 'The bearer token is invalid, expired or revoked';

type Request = http2.Http2ServerRequest;
type Response = http2.Http2ServerResponse;

/**
 * Ends the stream once the answer is out, whatever the client is still sending: a refused call's body is never
 * read (RFC 9113, section 8.1: a complete response, then RST_STREAM with NO_ERROR).
 */
function endWithoutReading(res: Response): void {
  res.once('finish', () => {
    if (!res.stream.closed) res.stream.close(http2.constants.NGHTTP2_NO_ERROR);
  });
}

/** A call refused before its message is read: trailers-only for gRPC, the Connect protocol's JSON error otherwise. */
function refuseCall(req: Request, res: Response, code: Code, message: string): void {
  endWithoutReading(res);
  if (String(req.headers['content-type'] ?? '').startsWith('application/grpc')) {
    res.writeHead(200, {
      'content-type': 'application/grpc',
      'grpc-status': String(code),
      'grpc-message': encodeURIComponent(message),
    });
    res.end();
    return;
  }
  const status = code === Code.Unauthenticated ? 401 : code === Code.Unimplemented ? 404 : 400;
  const name =
    code === Code.Unauthenticated
      ? 'unauthenticated'
      : code === Code.Unimplemented
        ? 'unimplemented'
        : 'invalid_argument';
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ code: name, message }));
}

/**
 * Any HTTP/2 request that is not a call of a served method: the HTTP API, the dashboard and the proxy are served
 * over HTTP/1.1 (h2 is negotiated only with clients that offer nothing else), so the answer is a clear refusal in
 * the API's error shape. Never the HTTP/1.1 handler: Express rewrites a request's prototype, which an HTTP/2
 * request does not survive.
 */
function refuseHttp2(req: Request, res: Response): void {
  const id = requestId();
  endWithoutReading(res);
  res.writeHead(400, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-request-id': id,
    'x-error-source': 'service',
  });
  res.end(
    JSON.stringify({
      error: {
        code: 'http2_not_served',
        message: `HTTP/2 on this port serves gRPC only; send ${req.method} ${req.url.slice(0, 200)} over HTTP/1.1`,
      },
      request_id: id,
    }),
  );
}

/**
 * The HTTP/2 side of the port: gRPC (and the Connect protocol) for the SDK. A call's token is checked before its
 * message is read, and messages are bounded (BODY_LIMIT_BYTES, compressed and inflated alike), so an
 * unauthenticated client can make the service read nothing; any other HTTP/2 request gets a refusal.
 */
export function createGrpcHandler(s: Services): (req: Request, res: Response) => void {
  const paths = procedurePaths();
  const claims = new WeakMap<object, TokenClaims>();
  const origins = new WeakMap<object, { sourceAddress: string; requestId: string }>();
  const serve = connectNodeAdapter({
    routes: scalekitRoutes(s),
    grpc: true,
    grpcWeb: false,
    connect: true,
    readMaxBytes: s.config.bodyLimitBytes,
    contextValues: (req) => createContextValues().set(CLAIMS, claims.get(req)).set(ORIGIN, origins.get(req)),
  });
  return (req, res) => {
    if (req.stream.closed || req.stream.destroyed) return;
    const path = req.url.split('?')[0]!;
    if (!paths.has(path)) {
      // A gRPC call to a service not served here (the SDK's SSO or directory clients): UNIMPLEMENTED.
      if (String(req.headers['content-type'] ?? '').startsWith('application/grpc'))
        return refuseCall(req, res, Code.Unimplemented, `${path.slice(0, 200)} is not served here`);
      return refuseHttp2(req, res);
    }
    const h = req.headers.authorization;
    if (!h || !/^Bearer\s+\S+$/i.test(h)) return refuseCall(req, res, Code.Unauthenticated, UNAUTHENTICATED);
    const token = h.replace(/^Bearer\s+/i, '');
    const peer = sessionAddress(req.stream.session);
    origins.set(req, {
      sourceAddress: clientAddress(s, { headers: req.headers, socket: { remoteAddress: peer } }),
      requestId: firstHeader(req.headers['x-request-id']) ?? requestId(),
    });
    const known = s.tokens.knownClaims(token);
    if (known) {
      claims.set(req, known);
      return serve(req, res);
    }
    s.tokens.verify(token).then(
      (verified) => {
        if (req.stream.closed || req.stream.destroyed) return;
        claims.set(req, verified);
        serve(req, res);
      },
      () => refuseCall(req, res, Code.Unauthenticated, BAD_TOKEN),
    );
  };
}
