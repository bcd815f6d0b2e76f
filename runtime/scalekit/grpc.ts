import http2 from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import type { Services } from '../services.ts';
import { ScalekitCalls } from './calls.ts';
import { toConnectError } from './errors.ts';
import { ConnectedAccountService, ConnectionService, ToolService } from './descriptors.ts';

/**
 * The service's bearer token, as every REST endpoint takes it. The SDK sends its first call without one and
 * fetches a token on UNAUTHENTICATED, so a missing, bad or expired token must answer exactly that.
 */
async function authenticate(s: Services, ctx: HandlerContext): Promise<void> {
  const h = ctx.requestHeader.get('authorization');
  if (!h || !/^Bearer\s+\S+$/i.test(h))
    throw new ConnectError(
      'Send authorization: Bearer <token>; get a token from POST /oauth/token',
      Code.Unauthenticated,
    );
  try {
    await s.tokens.verify(h.replace(/^Bearer\s+/i, ''));
  } catch {
    throw new ConnectError('The bearer token is invalid, expired or revoked', Code.Unauthenticated);
  }
}

/** Scalekit's AgentKit services on this service's calls, every method behind the bearer token. */
export function scalekitRoutes(s: Services, calls = new ScalekitCalls(s)) {
  const call =
    <Req, Res>(fn: (r: Req) => Promise<Res>) =>
    async (req: Req, ctx: HandlerContext): Promise<Res> => {
      await authenticate(s, ctx);
      try {
        return await fn(req);
      } catch (e) {
        throw toConnectError(e, s.log);
      }
    };
  return (router: ConnectRouter) => {
    router.service(ConnectedAccountService, {
      getConnectedAccountAuth: call(calls.getConnectedAccountAuth.bind(calls)),
      createConnectedAccount: call(calls.createConnectedAccount.bind(calls)),
      updateConnectedAccount: call(calls.updateConnectedAccount.bind(calls)),
      deleteConnectedAccount: call(calls.deleteConnectedAccount.bind(calls)),
      listConnectedAccounts: call(calls.listConnectedAccounts.bind(calls)),
      getMagicLinkForConnectedAccount: call(calls.getMagicLinkForConnectedAccount.bind(calls)),
      verifyConnectedAccountUser: call(calls.verifyConnectedAccountUser.bind(calls)),
    });
    router.service(ToolService, {
      executeTool: call(calls.executeTool.bind(calls)),
      listTools: call(calls.listTools.bind(calls)),
      listScopedTools: call(calls.listScopedTools.bind(calls)),
      listAvailableTools: call(calls.listAvailableTools.bind(calls)),
    });
    router.service(ConnectionService, {
      listAppConnections: call(calls.listAppConnections.bind(calls)),
    });
  };
}

/**
 * The HTTP/2 side of the port: gRPC (and the Connect protocol) for the SDK; any other HTTP/2 request goes to
 * `fallback`, the service's HTTP handler.
 */
export function createGrpcHandler(
  s: Services,
  fallback: (req: IncomingMessage, res: ServerResponse) => void,
): (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void {
  return connectNodeAdapter({
    routes: scalekitRoutes(s),
    grpc: true,
    grpcWeb: false,
    connect: true,
    fallback: ((req: IncomingMessage, res: ServerResponse) => {
      // A gRPC call to a service not served here (the SDK's SSO or directory clients): UNIMPLEMENTED, as
      // trailers only, rather than the HTTP handler's refusal of HTTP/2.
      if (String(req.headers['content-type'] ?? '').startsWith('application/grpc')) {
        res.writeHead(200, {
          'content-type': 'application/grpc',
          'grpc-status': String(Code.Unimplemented),
          'grpc-message': encodeURIComponent(`${req.url ?? ''} is not served here`),
        });
        res.end();
        return;
      }
      fallback(req, res);
    }) as never,
  });
}
