import type { IncomingMessage } from 'node:http';
import type { Writable } from 'node:stream';
import type { CredentialApply } from '../../core/spec-model.ts';
import { ProviderError } from '../../core/errors.ts';
import { mergeHeaders } from '../../core/request-headers.ts';
import type { McpToolInfo } from '../../core/tool-types.ts';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import type { Metrics } from '../metrics.ts';
import type { AccountService, LiveAccount } from '../accounts/service.ts';
import { credentialHeaderNames } from '../connectors/catalog.ts';
import { send, stripQuery, upstreamTimeouts, type HttpRequest, type HttpResponse } from './http.ts';
import { McpClients, McpHttpError, type McpTarget, type Session } from './mcp.ts';
import type { CacheSet } from '../caches.ts';
import { refreshOnceAfter401 } from './refresh.ts';
import { openStream, type StreamedAnswer } from './stream.ts';

/**
 * Every call the service makes to a provider on behalf of an account — a tool's request, a proxied request, an MCP
 * call — goes through here: the account's credentials injected, the connector's timeouts (capped by the operator),
 * the address guard for hosts the connection does not configure, and one token refresh after a 401. Below it,
 * `http.ts` (got, buffered: retries and redirects), `stream.ts` (undici, streamed) and `mcp.ts` (the MCP SDK's
 * client over the same buffered exchange).
 */
export class Upstream {
  private readonly mcp: McpClients;

  constructor(
    private accounts: AccountService,
    private config: Config,
    private log: Logger,
    private metrics: Metrics,
    caches: CacheSet,
  ) {
    this.mcp = new McpClients(
      caches.create<string, Session>('mcp_sessions', {
        max: config.caches.mcpSessions,
        ttlMs: config.caches.secretsTtlMs,
      }),
    );
  }

  private timeouts(live: LiveAccount, responseMs: number): { connectMs: number; responseMs: number } {
    return upstreamTimeouts(live.connector.api.timeouts, this.config.upstreamTimeoutMaxMs, {
      connectMs: 10_000,
      responseMs,
    });
  }

  /**
   * A buffered request, with the account's credentials applied as `apply` says (null: a public endpoint, sent
   * without any): the connector's retry policy, credentials dropped on a redirect that leaves the origin, the tool
   * response limit, and one refresh after a 401.
   */
  send(live: LiveAccount, req: HttpRequest, apply: CredentialApply | null): Promise<HttpResponse> {
    const { connectMs, responseMs } = this.timeouts(live, 60_000);
    const options = {
      connectTimeoutMs: connectMs,
      responseTimeoutMs: responseMs,
      retry: live.connector.api.retry,
      maxBytes: this.config.toolResponseLimitBytes,
      credentialHeaders: apply ? credentialHeaderNames(apply) : [],
      configuredHosts: this.accounts.configuredHostsFor(live),
      onRetry: (attempt: number, wait: number, reason: string) =>
        this.log.info({ url: stripQuery(req.url), attempt, wait, reason }, 'retrying upstream request'),
    };
    const started = performance.now();
    const sent = apply
      ? refreshOnceAfter401(
          live,
          this.accounts,
          (l) =>
            send({ ...req, headers: mergeHeaders(req.headers, this.accounts.credentialHeadersFor(l, apply)) }, options),
          (res) => res.status === 401,
        )
      : send(req, options);
    return sent.then((res) => {
      this.metrics.upstreamLatency(live.connector.name, 'tool', (performance.now() - started) / 1000);
      return res;
    });
  }

  /**
   * A streamed request (the proxy) with the account's credentials. Never retried; refreshed once after a 401 only
   * when there is no body, since a streamed body cannot be sent twice.
   */
  stream(
    live: LiveAccount,
    method: string,
    url: URL,
    headers: Record<string, string | string[]>,
    body: IncomingMessage | undefined,
    client?: Writable,
  ): Promise<StreamedAnswer> {
    const { connectMs, responseMs } = this.timeouts(live, 120_000);
    const options = {
      connectTimeoutMs: connectMs,
      responseTimeoutMs: responseMs,
      configuredHosts: this.accounts.configuredHostsFor(live),
      client,
    };
    const started = performance.now();
    return refreshOnceAfter401(
      live,
      this.accounts,
      (l) => openStream(method, url, mergeHeaders(headers, this.accounts.credentialHeadersFor(l)), body, options),
      (response) => response.statusCode === 401 && !body,
      (response) => response.discard(),
    ).then((response) => {
      this.metrics.upstreamLatency(live.connector.name, 'proxy', (performance.now() - started) / 1000);
      return response;
    });
  }

  /** Calls a tool of the MCP server at `url`; the result, or the provider's error. */
  callMcpTool(live: LiveAccount, url: string, tool: string, args: Record<string, unknown>) {
    return this.withMcp(live, url, (target) => this.mcp.callTool(target, tool, args));
  }

  /** The tools the MCP server at `url` lists. */
  listMcpTools(live: LiveAccount, url: string): Promise<McpToolInfo[]> {
    return this.withMcp(live, url, (target) => this.mcp.listTools(target));
  }

  private async withMcp<T>(live: LiveAccount, url: string, run: (target: McpTarget) => Promise<T>): Promise<T> {
    const outcome = await refreshOnceAfter401<T | McpHttpError>(
      live,
      this.accounts,
      (l) => run(this.mcpTarget(l, url)).catch((e: unknown) => (e instanceof McpHttpError ? e : Promise.reject(e))),
      (o) => o instanceof McpHttpError,
    );
    if (outcome instanceof McpHttpError) throw new ProviderError(outcome.status, outcome.body, outcome.headers);
    return outcome;
  }

  private mcpTarget(live: LiveAccount, url: string): McpTarget {
    const { connectMs, responseMs } = this.timeouts(live, 60_000);
    return {
      accountId: live.account.id,
      url,
      credentials: this.accounts.credentialHeadersFor(live),
      policy: {
        connectTimeoutMs: connectMs,
        responseTimeoutMs: responseMs,
        maxBytes: this.config.toolResponseLimitBytes,
        configuredHosts: this.accounts.configuredHostsFor(live),
        limitNote: 'the limit for tool results (TOOL_RESPONSE_LIMIT_BYTES)',
      },
    };
  }
}
