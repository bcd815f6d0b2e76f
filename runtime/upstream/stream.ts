import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { ServiceError } from '../../core/errors.ts';
import { addressPolicy, guardedAgents, NOT_PUBLIC } from './address-guard.ts';
import { classify, keepAliveAgents, notPublicFailure } from './http.ts';

export interface StreamOptions {
  connectTimeoutMs: number;
  /** Idleness allowed at any point: waiting for the headers, or between bytes of the body. */
  responseTimeoutMs: number;
  /** As in `SendOptions`: hosts that may resolve anywhere; every other one must resolve to public addresses. */
  configuredHosts: readonly string[];
}

/**
 * Opens a streamed upstream request with node:http and the service's keep-alive agents (address-guarded for hosts
 * the connection does not configure). Measured in bench/RESULTS.md: got's stream API cost about four times the CPU
 * of node:http per proxied request, however tuned; buffered calls keep got. Timeouts: `connectTimeoutMs` to
 * connect, then `responseTimeoutMs` of idleness at any point — waiting for the headers or mid-body — so a provider
 * that stalls cuts the client's response instead of holding it open. The body, when there is one, is piped
 * straight into the request without buffering.
 */
export function openStream(
  method: string,
  url: string,
  headers: Record<string, string | string[]>,
  body: IncomingMessage | undefined,
  opts: StreamOptions,
): Promise<IncomingMessage> {
  const policy = addressPolicy(url, opts.configuredHosts);
  if (typeof policy === 'object') return Promise.reject(notPublicFailure(policy.refused));
  const { connectTimeoutMs: connectMs, responseTimeoutMs: responseMs } = opts;
  const u = new URL(url);
  const secure = u.protocol === 'https:';
  const agents = policy === 'guard' ? guardedAgents : keepAliveAgents;
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (e: Error & { code?: string }) => {
      if (settled) return;
      settled = true;
      const code = e.code ?? '';
      if (code === NOT_PUBLIC) reject(notPublicFailure(e.message));
      else if (code === 'ERR_INVALID_CHAR' || code === 'ERR_INVALID_HTTP_TOKEN')
        reject(new ServiceError(400, 'invalid_header', 'A request header has an invalid value'));
      else reject(classify(e, { connectMs, responseMs }));
    };
    const timeout = (event: string, ms: number) =>
      Object.assign(new Error(`timed out (${event}, ${ms} ms)`), { name: 'TimeoutError', event, code: 'ETIMEDOUT' });
    let req: http.ClientRequest;
    try {
      req = (secure ? https : http).request({
        protocol: u.protocol,
        hostname: u.hostname.replace(/^\[|\]$/g, ''),
        port: u.port || (secure ? 443 : 80),
        path: `${u.pathname}${u.search}`,
        method,
        headers,
        agent: secure ? agents.https : agents.http,
      });
    } catch (e) {
      fail(e as Error);
      return;
    }
    let headersIn = false;
    const connectTimer = setTimeout(() => req.destroy(timeout('connect', connectMs)), connectMs);
    req.once('socket', (socket) => {
      if ((socket as { connecting?: boolean }).connecting) socket.once('connect', () => clearTimeout(connectTimer));
      else clearTimeout(connectTimer);
    });
    req.setTimeout(responseMs, () => req.destroy(timeout(headersIn ? 'socket' : 'response', responseMs)));
    req.once('response', (response) => {
      headersIn = true;
      clearTimeout(connectTimer);
      if (settled) return void response.resume();
      settled = true;
      resolve(response);
    });
    req.once('error', (e) => {
      clearTimeout(connectTimer);
      fail(e);
    });
    if (body) {
      body.pipe(req);
      body.once('error', (e) => req.destroy(e));
      body.once('aborted', () =>
        req.destroy(Object.assign(new Error('the client aborted its upload'), { code: 'ECONNRESET' })),
      );
    } else req.end();
  });
}
