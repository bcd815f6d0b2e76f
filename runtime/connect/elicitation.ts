/**
 * URL-mode elicitation over MCP (issues 38 and 39): a tool call for an end user who must connect an account answers,
 * for a client that declares `capabilities.elicitation.url`, with the protocol's own way of sending the user to a link
 * (the client shows it with its domain; the model never sees it) rather than a tool error whose text carries the link.
 *
 * - 2025-11-25 (the handshake era): the JSON-RPC error `-32042` URLElicitationRequiredError (the SDK's
 *   `UrlElicitationRequiredError`) with `data.elicitations: [{mode: 'url', elicitationId, url, message}]`, then
 *   `notifications/elicitation/complete` once the account is ACTIVE, on the client's GET event stream.
 * - 2026-07-28 (stateless): an `InputRequiredResult` (the SDK's `inputRequired` and `inputRequired.elicitUrl`) with a
 *   `requestState` sealed by the SDK's `createRequestStateCodec` (HMAC-SHA256, expiry, bound to the MCP URL's server
 *   and end user and to the method); the retried call carries it back and runs once the account is ACTIVE.
 *
 * What the SDK lacks, and this file adds:
 * - A session for the handshake era. The endpoint serves that era statelessly (any instance answers any request), so
 *   a `tools/call` does not know what the client declared at `initialize`. For a client that declares URL elicitation,
 *   the initialize answer carries an `Mcp-Session-Id` that is itself signed (HMAC, bound to the MCP URL's server and
 *   end user): any instance reads the capability back from it, and no session table exists.
 * - The event stream and the completion notification: the SDK's per-request transport keeps no stream open past its
 *   answer, and knows nothing of accounts. `ElicitationStreams` holds the GET streams of this instance and follows the
 *   store's change feed (runtime/store/changes.ts): an account row written by any instance sharing the PostgreSQL
 *   database (LISTEN/NOTIFY) or by this process reaches every instance, and the instance holding the stream sends the
 *   notification. On SQLite, changes of other processes are seen only when this process polls (on its next request);
 *   SQLite serves one instance (docs/scale.md).
 * - The elicitation id is derived, not stored: HMAC(session id, connection id). Every instance computes the same one
 *   without a table; within one session a second elicitation for the same connection (after a disconnection) has the
 *   same id, which a client that already saw it complete may ignore (it then still gets the error again on a retry).
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  CLIENT_CAPABILITIES_META_KEY,
  createRequestStateCodec,
  inputRequired,
  UrlElicitationRequiredError,
  type InputRequiredResult,
  type RequestStateCodec,
  type ServerContext,
} from '@modelcontextprotocol/server';
import type { AuthorizationRequiredError } from '../../core/errors.ts';
import type { Sealer } from '../crypto/sealer.ts';
import type { Logger } from '../log.ts';
import type { Change } from '../store/changes.ts';
import type { Account, Store } from '../store/types.ts';

/** How long a handshake-era session id is honoured after its initialize (a client then initializes again). */
const SESSION_TTL_MS = 24 * 3_600_000;
/** How long a 2026-07-28 requestState may be echoed back: the link's lifetime is the bound that matters. */
export const REQUEST_STATE_TTL_SECONDS = 3_600;
/** Most GET event streams one instance holds; a client beyond that is answered 503 and keeps working without one. */
const MAX_STREAMS = 2_000;
/** A comment line on each stream this often, so proxies do not cut an idle stream. */
const KEEPALIVE_MS = 15_000;

/** What a 2026-07-28 requestState carries: the tool call it was issued for (no secret: it is signed, not sealed). */
export interface CallState {
  /** The tool name. */
  t: string;
  /** SHA-256 of the arguments as sent (base64url). */
  a: string;
  /** The connection the user was sent to connect. */
  c: string;
}

/** Whether a client's capabilities declare URL-mode elicitation. */
export function declaresUrlElicitation(capabilities: unknown): boolean {
  const elicitation = (capabilities as { elicitation?: unknown } | undefined)?.elicitation;
  return typeof elicitation === 'object' && elicitation !== null && 'url' in elicitation;
}

/** The client capabilities a 2026-07-28 request declares in its `_meta` envelope. */
export function envelopeCapabilities(ctx: ServerContext): unknown {
  return (ctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[CLIENT_CAPABILITIES_META_KEY];
}

export const argumentsHash = (args: unknown) =>
  createHash('sha256')
    .update(JSON.stringify(args ?? {}))
    .digest('base64url');

/** The user-facing sentence of an `authorization_required` error (the part before the agent's instruction). */
export const whyText = (err: AuthorizationRequiredError) => err.message.replace(/ Send the user to the link.*$/, '');

/** What binds a session id or a requestState to one MCP URL's server and end user. */
export const scopeBinding = (serverId: string, identifier: string) => `${serverId}\0${identifier}`;

export class Elicitations {
  private readonly key: Buffer;
  private readonly streams = new Set<EventStream>();
  private unsubscribe?: () => void;

  constructor(
    sealer: Sealer,
    private readonly store: Store,
    private readonly log: Logger,
    private readonly lifecycle: { draining: boolean },
  ) {
    this.key = sealer.deriveKey('mcp-elicitation');
  }

  private mac(purpose: string, value: string): Buffer {
    return createHmac('sha256', this.key).update(`${purpose}\n${value}`).digest();
  }

  // ---- 2025-11-25: the signed session id ----

  /** A session id for a client that declared URL elicitation at initialize: `e1.<nonce>.<issued>.<mac>`. */
  mintSession(binding: string, now = Date.now()): string {
    const body = `e1.${randomBytes(12).toString('base64url')}.${now.toString(36)}`;
    return `${body}.${this.mac('session', `${binding}\n${body}`).toString('base64url')}`;
  }

  /** Whether the session id is one this service issued for this binding, and still fresh. */
  validSession(id: string | undefined, binding: string, now = Date.now()): boolean {
    if (!id || id.length > 200) return false;
    const parts = id.split('.');
    if (parts.length !== 4 || parts[0] !== 'e1') return false;
    const issued = parseInt(parts[2]!, 36);
    if (!Number.isFinite(issued) || issued > now + 60_000 || now - issued > SESSION_TTL_MS) return false;
    const given = Buffer.from(parts[3]!, 'base64url');
    const want = this.mac('session', `${binding}\n${parts.slice(0, 3).join('.')}`);
    return given.length === want.length && timingSafeEqual(given, want);
  }

  /** The elicitation id of a connection within a session: every instance derives the same. */
  elicitationId(sessionId: string, connectionId: string): string {
    return this.mac('elicitation', `${sessionId}\n${connectionId}`).subarray(0, 18).toString('base64url');
  }

  /** The `-32042` error for a handshake-era client that declared URL elicitation. */
  urlRequired(err: AuthorizationRequiredError, sessionId: string, connectionId: string): UrlElicitationRequiredError {
    const why = whyText(err);
    return new UrlElicitationRequiredError(
      [
        {
          mode: 'url',
          elicitationId: this.elicitationId(sessionId, connectionId),
          url: err.info.link,
          message: `${why} Open the link to connect it; the call can then be retried.`,
        },
      ],
      `${why} The user must connect the account at the link, then the call can be retried.`,
    );
  }

  // ---- 2026-07-28: InputRequiredResult with a signed requestState ----

  /**
   * The SDK's HMAC codec for one MCP URL's requests: the state is bound to the server and end user (a state minted
   * for one user is refused on another user's URL) and to the method, and expires.
   */
  codec(binding: string): RequestStateCodec<CallState> {
    return createRequestStateCodec<CallState>({
      key: this.key,
      ttlSeconds: REQUEST_STATE_TTL_SECONDS,
      bind: (ctx) => `${binding}\0${ctx.mcpReq.method}`,
    });
  }

  /** The input-required answer: a URL elicitation for the link, and the state the retry must carry. */
  async inputRequired(
    err: AuthorizationRequiredError,
    codec: RequestStateCodec<CallState>,
    state: CallState,
    ctx: ServerContext,
  ): Promise<InputRequiredResult> {
    return inputRequired({
      inputRequests: {
        [`connect_${err.info.connectionName}`]: inputRequired.elicitUrl({
          url: err.info.link,
          message: `${whyText(err)} Open the link to connect it; the call is then retried.`,
        }),
      },
      requestState: await codec.mint(state, ctx),
    });
  }

  // ---- the GET event streams of this instance (2025-11-25) ----

  /** Opens the event stream of a session (the SSE answer to GET), or answers 503 when this instance holds too many. */
  open(res: ServerResponse, req: IncomingMessage, p: { sessionId: string; identifier: string; connections: string[] }) {
    if (this.streams.size >= MAX_STREAMS) {
      const body = JSON.stringify({
        jsonrpc: '2.0',
        error: { code: -32000, message: 'This instance holds too many event streams; try again later' },
        id: null,
      });
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '30' });
      res.end(body);
      return;
    }
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-store',
      connection: 'keep-alive',
      'mcp-session-id': p.sessionId,
    });
    res.flushHeaders();
    const stream: EventStream = { ...p, res, sent: new Set() };
    this.streams.add(stream);
    this.follow();
    const keepalive = setInterval(() => {
      if (this.lifecycle.draining) return res.end();
      res.write(': keepalive\n\n');
    }, KEEPALIVE_MS);
    keepalive.unref();
    const close = () => {
      clearInterval(keepalive);
      this.streams.delete(stream);
      if (!this.streams.size) this.stop();
    };
    res.on('close', close);
    req.on('close', () => res.end());
  }

  /** Streams open on this instance (for tests and /metrics-like diagnostics). */
  get openStreams(): number {
    return this.streams.size;
  }

  private follow(): void {
    this.unsubscribe ??= this.store.changes.subscribe((change) => void this.changed(change));
  }

  private stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** An account row changed somewhere: tell the streams of its end user when it is ACTIVE. */
  private async changed(change: Change): Promise<void> {
    if (!this.streams.size) return;
    try {
      if (change.table === 'connected_accounts' && change.id !== '*') {
        const account = await this.store.getAccount(change.id);
        if (account) await this.activated(account);
        return;
      }
      if (change.table !== '*' && change.table !== 'connected_accounts') return;
      // Anything may have changed (a reconnected change feed): look up each stream's accounts.
      const connections = await this.store.listConnections();
      for (const stream of [...this.streams]) {
        for (const name of stream.connections) {
          const c = connections.find((x) => x.name === name);
          const account = c && (await this.store.findAccount(c.id, stream.identifier));
          if (account) await this.activated(account, stream);
        }
      }
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'elicitation completion check failed');
    }
  }

  private async activated(account: Account, only?: EventStream): Promise<void> {
    if (account.status !== 'ACTIVE') return;
    let name: string | undefined;
    for (const stream of only ? [only] : this.streams) {
      if (stream.identifier !== account.identifier || stream.sent.has(account.connectionId)) continue;
      name ??= (await this.store.getConnection(account.connectionId))?.name;
      if (!name || !stream.connections.includes(name)) continue;
      stream.sent.add(account.connectionId);
      const message = {
        jsonrpc: '2.0',
        method: 'notifications/elicitation/complete',
        params: { elicitationId: this.elicitationId(stream.sessionId, account.connectionId) },
      };
      stream.res.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    }
  }
}

interface EventStream {
  sessionId: string;
  identifier: string;
  /** The names of the connections the MCP server's tools run on. */
  connections: string[];
  res: ServerResponse;
  /** The connections whose completion this stream was told (once each). */
  sent: Set<string>;
}
