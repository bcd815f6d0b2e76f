import type { IncomingHttpHeaders } from 'node:http';
import { CancelError } from 'got';
import type { Config } from '../config.ts';
import { credentialHeaders } from '../connectors/catalog.ts';
import { ProviderError, UpstreamFailure } from '../../core/errors.ts';
import type { LiveAccount } from '../accounts/service.ts';
import type { UpstreamRequest, UpstreamResponse } from '../../core/tool-types.ts';
import { parseSse, type RpcMessage } from '../../core/sse.ts';
import { classify, upstreamClient, upstreamTimeouts } from './http.ts';

const PROTOCOL_VERSION = '2025-06-18';
const CLIENT_INFO = { name: 'agent-connector-service', version: '0.1.0' };

interface Session {
  id?: string;
  protocolVersion: string;
  token: string;
}

class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: IncomingHttpHeaders,
  ) {
    super(`MCP server answered HTTP ${status}`);
  }
}

/**
 * A client for MCP over Streamable HTTP (protocol 2025-06-18): initialize, echo the session id, send
 * notifications/initialized, then tools/call — accepting a JSON or an SSE answer and skipping progress
 * notifications. One session per account and endpoint, re-initialized when the server forgets it (404)
 * or the token changes.
 */
export class McpSessions {
  private sessions = new Map<string, Promise<Session>>();
  private nextId = 1;

  async call(
    live: LiveAccount,
    r: UpstreamRequest,
    config: Config,
    onUnauthorized: (live: LiveAccount) => Promise<LiveAccount | undefined>,
  ): Promise<UpstreamResponse> {
    const timeoutMs = upstreamTimeouts(live.connector.api.timeouts, config.upstreamTimeoutMaxMs, {
      connectMs: 10_000,
      responseMs: 60_000,
    }).responseMs;
    let current = live;
    let refreshed = false;
    for (let attempt = 0; attempt < 3; attempt++) {
      const token = credentialHeaders(current.auth.apply, current.values).authorization ?? '';
      const key = `${current.account.id} ${r.url}`;
      try {
        const session = await this.session(key, r.url, token, timeoutMs);
        const id = this.nextId++;
        const msg = await this.post(
          r.url,
          token,
          session,
          { jsonrpc: '2.0', id, method: 'tools/call', params: { name: r.mcp!.tool, arguments: r.mcp!.arguments } },
          timeoutMs,
          config.toolResponseLimitBytes,
        );
        const reply = msg.find((m) => m.id === id && (m.result !== undefined || m.error !== undefined));
        if (!reply)
          throw new UpstreamFailure(
            'provider_malformed_response',
            'The MCP server answered without a result for the tool call',
          );
        if (reply.error)
          throw new ProviderError([-32600, -32601, -32602].includes(reply.error.code) ? 400 : 502, {
            error: reply.error,
          });
        const result = reply.result as { isError?: boolean };
        if (result?.isError) throw new ProviderError(502, result);
        return { status: 200, headers: {}, body: result };
      } catch (e) {
        if (e instanceof HttpStatusError) {
          if (e.status === 404 && attempt < 2) {
            this.sessions.delete(key);
            continue;
          }
          if (e.status === 401 && !refreshed) {
            // One refresh per call: a server that refuses the fresh token too has refused the account.
            refreshed = true;
            this.sessions.delete(key);
            const next = await onUnauthorized(current);
            if (next) {
              current = next;
              continue;
            }
          }
          throw new ProviderError(e.status, e.body, e.headers);
        }
        if (!(e instanceof ProviderError)) this.sessions.delete(key);
        throw e;
      }
    }
    throw new UpstreamFailure('mcp_session_failed', 'The MCP server kept refusing the session');
  }

  private session(key: string, url: string, token: string, timeoutMs: number): Promise<Session> {
    const existing = this.sessions.get(key);
    if (existing) {
      return existing.then((s) => {
        if (s.token === token) return s;
        this.sessions.delete(key);
        return this.session(key, url, token, timeoutMs);
      });
    }
    const p = (async () => {
      const session: Session = { protocolVersion: PROTOCOL_VERSION, token };
      const id = this.nextId++;
      const { messages, headers } = await this.exchange(
        url,
        token,
        session,
        {
          jsonrpc: '2.0',
          id,
          method: 'initialize',
          params: { protocolVersion: PROTOCOL_VERSION, capabilities: {}, clientInfo: CLIENT_INFO },
        },
        timeoutMs,
        1024 * 1024,
      );
      const reply = messages.find((m) => m.id === id);
      if (!reply || reply.error) {
        throw new UpstreamFailure(
          'mcp_initialize_failed',
          `MCP initialize failed: ${reply?.error?.message ?? 'no result'}`,
        );
      }
      const sid = headers['mcp-session-id'];
      if (typeof sid === 'string' && sid) session.id = sid;
      const negotiated = (reply.result as { protocolVersion?: string })?.protocolVersion;
      if (negotiated) session.protocolVersion = negotiated;
      await this.exchange(
        url,
        token,
        session,
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        timeoutMs,
        64 * 1024,
      );
      return session;
    })();
    this.sessions.set(key, p);
    p.catch(() => this.sessions.delete(key));
    return p;
  }

  private async post(
    url: string,
    token: string,
    session: Session,
    body: RpcMessage & { params?: unknown },
    timeoutMs: number,
    maxBytes: number,
  ) {
    return (await this.exchange(url, token, session, body, timeoutMs, maxBytes)).messages;
  }

  private async exchange(
    url: string,
    token: string,
    session: Session,
    body: RpcMessage & { params?: unknown },
    timeoutMs: number,
    maxBytes: number,
  ): Promise<{ messages: RpcMessage[]; headers: IncomingHttpHeaders }> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: token,
      'user-agent': 'agent-connector-service/0.1',
    };
    if (session.id) headers['mcp-session-id'] = session.id;
    if (body.method !== 'initialize') headers['mcp-protocol-version'] = session.protocolVersion;
    let res;
    const limits = { connectMs: Math.min(10_000, timeoutMs), responseMs: timeoutMs };
    try {
      // Idle and whole-answer limits too: a server that stalls or drips mid-answer must not hold the call forever.
      const promise = upstreamClient.post(url, {
        body: JSON.stringify(body),
        headers,
        timeout: {
          connect: limits.connectMs,
          response: timeoutMs,
          socket: timeoutMs,
          request: limits.connectMs + timeoutMs,
        },
      });
      promise.on('downloadProgress', (p: { transferred: number }) => {
        if (p.transferred > maxBytes) promise.cancel();
      });
      res = await promise;
    } catch (e) {
      if (e instanceof CancelError) {
        throw new UpstreamFailure(
          'response_too_large',
          `The MCP server's answer is larger than ${maxBytes} bytes, the limit for tool results`,
        );
      }
      throw classify(e, limits);
    }
    const text = res.rawBody.toString('utf8');
    const type = String(res.headers['content-type'] ?? '');
    if (res.statusCode >= 400) {
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // keep the text
      }
      throw new HttpStatusError(res.statusCode, parsed, res.headers);
    }
    if (res.statusCode === 202 || !text) return { messages: [], headers: res.headers };
    if (type.includes('text/event-stream')) return { messages: parseSse(text), headers: res.headers };
    try {
      const parsed = JSON.parse(text) as RpcMessage | RpcMessage[];
      return { messages: Array.isArray(parsed) ? parsed : [parsed], headers: res.headers };
    } catch {
      throw new UpstreamFailure('provider_malformed_response', 'The MCP server sent malformed JSON');
    }
  }
}
