/**
 * A fake Granola MCP server built on the MCP SDK's own server (`McpServer` + `StreamableHTTPServerTransport`,
 * stateful sessions with `Mcp-Session-Id`), speaking MCP Streamable HTTP at `<url>/mcp` with the four upstream
 * tools the notes connector maps to: `get_meeting_transcript`, `get_meetings`, `list_meetings`,
 * `query_granola_meetings`. Tool results are text content shaped like Granola's: an XML-like meeting list,
 * meeting details, transcript segments, and a Markdown answer with `[[n]](https://notes.granola.ai/d/<id>)`
 * citations. Answers come as SSE streams with progress notifications before the result (or as plain JSON when
 * `responseMode` is `json`).
 *
 * It is an OAuth 2.1 protected resource: every request needs a bearer token that its authorization server (the
 * fake OAuth server, started with `discovery: true` and `requireResource: <this MCP url>`) issued for this
 * resource; otherwise 401 with `WWW-Authenticate: Bearer … resource_metadata="…"` (the SDK's middleware). The
 * RFC 9728 metadata naming the authorization server is served at the path-inserted well-known URL, or where
 * `metadataAt` says.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import express, { type Request, type Response } from 'express';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { isInitializeRequest, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FakeOAuthServer } from './oauth-server.ts';
import { listen, type Listening } from './listen.ts';
import { asText } from '../helpers/text.ts';

export interface Meeting {
  id: string;
  title: string;
  /** ISO date-time of the meeting start. */
  date: string;
  participants: Array<{ name: string; email: string }>;
  privateNotes: string;
  summary: string;
  transcript: Array<{ speaker: string; at: string; text: string }>;
}

/** One JSON-RPC message the server received, with what came with it. */
export interface ReceivedMessage {
  method?: string;
  id?: number | string;
  params?: { name?: string; arguments?: Record<string, unknown>; protocolVersion?: string; [k: string]: unknown };
  sessionId?: string;
  protocolVersionHeader?: string;
  accept?: string;
  authorization?: string;
  /** What the server answered: HTTP status and content type. */
  status?: number;
  contentType?: string;
}

export const MEETINGS: Meeting[] = [
  {
    id: '0f8d6a2e-3c4b-4d5e-9f60-718293a4b5c6',
    title: 'Launch planning',
    date: '2026-03-16T15:00:00Z',
    participants: [
      { name: 'Ann Lee', email: 'ann@acme.com' },
      { name: 'Raj Patel', email: 'raj@acme.com' },
    ],
    privateNotes: '- launch date moves to April 14\n- Raj owns the press kit',
    summary: 'The team agreed to move the launch date to April 14 so QA can finish the billing migration.',
    transcript: [
      { speaker: 'Ann Lee', at: '00:00:04', text: 'Can we still make the April 2 launch?' },
      { speaker: 'Raj Patel', at: '00:00:11', text: 'Not with the billing migration open. I would say April 14.' },
      { speaker: 'Ann Lee', at: '00:00:19', text: 'Agreed, April 14 it is.' },
    ],
  },
  {
    id: '6b1e2f3a-4c5d-4e6f-8a7b-9c0d1e2f3a4b',
    title: 'Weekly sync with Globex',
    date: '2026-03-10T09:30:00Z',
    participants: [
      { name: 'Ann Lee', email: 'ann@acme.com' },
      { name: 'Hank Scorpio', email: 'hank@globex.com' },
    ],
    privateNotes: '- Globex wants SSO before renewal',
    summary: 'Globex asked for SSO before their renewal; Ann will send the security questionnaire.',
    transcript: [
      { speaker: 'Hank Scorpio', at: '00:00:02', text: 'SSO is a must for us before we renew.' },
      { speaker: 'Ann Lee', at: '00:00:09', text: 'Understood, I will send the security questionnaire today.' },
    ],
  },
  {
    id: 'c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f',
    title: 'Hiring debrief',
    date: '2026-02-02T14:00:00Z',
    participants: [{ name: 'Raj Patel', email: 'raj@acme.com' }],
    privateNotes: '- strong yes for the backend candidate',
    summary: 'The panel recommends an offer for the backend candidate.',
    transcript: [{ speaker: 'Raj Patel', at: '00:00:01', text: 'Strong yes from me on the backend candidate.' }],
  },
];

const DAY = 86_400_000;

/** Monday 00:00 UTC of the week containing `t`. */
function weekStart(t: number): number {
  const d = new Date(t);
  const monday = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) - ((d.getUTCDay() + 6) % 7) * DAY;
  return monday;
}

const text = (t: string, isError = false): CallToolResult => ({
  content: [{ type: 'text', text: t }],
  ...(isError ? { isError: true } : {}),
});
const attr = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

export interface FakeNotesOptions {
  /** "Now" for relative time ranges (default: 2026-03-18T12:00:00Z). */
  now?: string;
  /** Where the protected-resource metadata lives: path-inserted well-known URL (default), the origin's, or elsewhere. */
  metadataAt?: 'path' | 'origin' | 'custom';
  /** scopes_supported in the protected-resource metadata. */
  scopesSupported?: string[];
}

interface Session {
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  /** The grant the session was opened with; another user's token cannot use it. */
  subject: string;
}

export class FakeNotesMcp {
  private listening!: Listening;
  private sessions = new Map<string, Session>();
  /** The authorization server whose tokens are accepted (set before the first request). */
  authorizationServer?: FakeOAuthServer;
  readonly meetings: Meeting[] = structuredClone(MEETINGS);
  /** Every JSON-RPC message received with a valid token, in order. */
  readonly received: ReceivedMessage[] = [];
  /** Requests refused for a missing or invalid token. */
  unauthorized = 0;
  /** Requests for an unknown (expired or ended) session, answered 404. */
  unknownSession = 0;
  /** GETs of the protected-resource metadata. */
  metadataRequests = 0;
  /** Progress notifications streamed before tool results. */
  progressSent = 0;
  /** How new sessions answer requests: an SSE stream (the server's default) or one JSON object. */
  responseMode: 'sse' | 'json' = 'sse';
  /** Users on the free Basic plan: no transcripts, only the last 30 days. */
  readonly basicPlanUsers = new Set<string>();
  /** Transcript calls allowed before the rate limit answers with a JSON-RPC error (unlimited when undefined). */
  transcriptBudget: number | undefined;
  /** The `resource` the metadata claims (default: this MCP endpoint). */
  advertisedResource: string | undefined;
  private held: Array<() => void> = [];
  private holdFor = 0;

  constructor(readonly opts: FakeNotesOptions = {}) {}

  get url(): string {
    return this.listening.url;
  }
  get mcpUrl(): string {
    return `${this.url}/mcp`;
  }
  get metadataUrl(): string {
    switch (this.opts.metadataAt ?? 'path') {
      case 'path':
        return `${this.url}/.well-known/oauth-protected-resource/mcp`;
      case 'origin':
        return `${this.url}/.well-known/oauth-protected-resource`;
      case 'custom':
        return `${this.url}/meta/resource.json`;
    }
  }
  private get now(): number {
    return Date.parse(this.opts.now ?? '2026-03-18T12:00:00Z');
  }

  /** Forgets every session, as a server restart or session expiry would: the next request gets 404. */
  async dropSessions(): Promise<void> {
    const all = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(all.map((s) => s.server.close()));
  }

  /** Holds the next `n` metadata requests and answers them together once all `n` have arrived (concurrent discoveries). */
  holdMetadata(n: number): void {
    this.holdFor = n;
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /** The tools/call messages received, optionally for one upstream tool. */
  toolCalls(name?: string): ReceivedMessage[] {
    return this.received.filter((m) => m.method === 'tools/call' && (name === undefined || m.params?.name === name));
  }

  // A throw in the executor rejects the promise, as the verifier's callers expect of a bad token.
  private verify = (token: string): Promise<AuthInfo> => new Promise((resolve) => resolve(this.authInfo(token)));

  private authInfo(token: string): AuthInfo {
    const grant = this.authorizationServer?.validate(token);
    if (!grant) throw new InvalidTokenError('The access token is invalid or expired');
    const record = grant as typeof grant & { expiresAt: number };
    return {
      token,
      clientId: grant.clientId,
      scopes: grant.scope ? grant.scope.split(' ') : [],
      expiresAt: Math.floor(record.expiresAt / 1000),
      ...(grant.resource ? { resource: new URL(grant.resource) } : {}),
      extra: { subject: grant.subject },
    };
  }

  private inRange(
    m: Meeting,
    args: { time_range?: string; custom_start?: string; custom_end?: string },
    subject: string,
  ): boolean {
    const t = Date.parse(m.date);
    if (this.basicPlanUsers.has(subject) && t < this.now - 30 * DAY) return false;
    switch (args.time_range ?? 'last_30_days') {
      case 'this_week':
        return t >= weekStart(this.now) && t <= this.now;
      case 'last_week':
        return t >= weekStart(this.now) - 7 * DAY && t < weekStart(this.now);
      case 'last_30_days':
        return t >= this.now - 30 * DAY && t <= this.now;
      default:
        return (
          t >= Date.parse(`${args.custom_start}T00:00:00Z`) && t < Date.parse(`${args.custom_end}T00:00:00Z`) + DAY
        );
    }
  }

  private visible(subject: string): Meeting[] {
    return this.meetings.filter((m) => !this.basicPlanUsers.has(subject) || Date.parse(m.date) >= this.now - 30 * DAY);
  }

  /** The MCP server of one session: the four Granola tools. */
  private buildServer(): McpServer {
    const server = new McpServer({ name: 'granola-fake', version: '1.0.0' }, { capabilities: { logging: {} } });
    const subjectOf = (extra: { authInfo?: AuthInfo }) => asText(extra.authInfo?.extra?.subject ?? '');

    server.registerTool(
      'list_meetings',
      {
        description: "List the user's Granola meeting notes within a time range. Returns meeting titles and metadata.",
        inputSchema: z.strictObject({
          time_range: z.enum(['this_week', 'last_week', 'last_30_days', 'custom']).optional(),
          custom_start: z.string().optional(),
          custom_end: z.string().optional(),
        }),
      },
      async (args, extra) => {
        if (args.time_range === 'custom' && (!args.custom_start || !args.custom_end)) {
          return text('custom_start and custom_end are required when time_range is custom', true);
        }
        await this.progress(extra, 2);
        const found = this.meetings.filter((m) => this.inRange(m, args, subjectOf(extra)));
        const items = found.map(
          (m) =>
            `<meeting id="${m.id}" title="${attr(m.title)}" date="${m.date}">\n  <known_participants>\n${m.participants
              .map((p) => `    ${p.name} <${p.email}>`)
              .join('\n')}\n  </known_participants>\n</meeting>`,
        );
        return text(`<meetings_list count="${found.length}">\n${items.join('\n')}\n</meetings_list>`);
      },
    );

    server.registerTool(
      'get_meetings',
      {
        description: 'Get detailed meeting information for one or more Granola meetings by ID.',
        inputSchema: z.strictObject({ meeting_ids: z.array(z.string()).min(1).max(10) }),
      },
      (args, extra) => {
        const visible = this.visible(subjectOf(extra));
        const found = args.meeting_ids.map((id) => visible.find((m) => m.id === id)).filter((m): m is Meeting => !!m);
        if (!found.length) return text(`No meetings found for IDs: ${args.meeting_ids.join(', ')}`, true);
        return text(
          found
            .map(
              (m) =>
                `<meeting id="${m.id}" title="${attr(m.title)}" date="${m.date}">\n  <known_participants>\n${m.participants
                  .map((p) => `    ${p.name} <${p.email}>`)
                  .join(
                    '\n',
                  )}\n  </known_participants>\n  <private_notes>\n${m.privateNotes}\n  </private_notes>\n  <summary>\n${m.summary}\n  </summary>\n</meeting>`,
            )
            .join('\n'),
        );
      },
    );

    server.registerTool(
      'get_meeting_transcript',
      {
        description: 'Get the full transcript for a specific Granola meeting by ID.',
        inputSchema: z.strictObject({ meeting_id: z.string() }),
      },
      async (args, extra) => {
        if (this.basicPlanUsers.has(subjectOf(extra))) {
          return text(
            'Transcripts are available on Business and Enterprise plans. Upgrade to access meeting transcripts.',
            true,
          );
        }
        const m = this.meetings.find((x) => x.id === args.meeting_id);
        if (!m) return text(`Meeting ${args.meeting_id} not found`, true);
        await this.progress(extra, 1);
        return text(
          `<transcript meeting_id="${m.id}" title="${attr(m.title)}">\n${m.transcript
            .map((s) => `[${s.at}] ${s.speaker}: ${s.text}`)
            .join('\n')}\n</transcript>`,
        );
      },
    );

    server.registerTool(
      'query_granola_meetings',
      {
        description:
          "Query Granola about the user's meetings using natural language. Returns Markdown with inline citation links.",
        inputSchema: z.strictObject({ query: z.string().min(1), document_ids: z.array(z.string()).optional() }),
      },
      async (args, extra) => {
        await this.progress(extra, 4);
        let pool = this.visible(subjectOf(extra));
        if (args.document_ids) pool = pool.filter((m) => args.document_ids!.includes(m.id));
        const words = args.query.toLowerCase().match(/[a-z0-9]{4,}/g) ?? [];
        const hits = pool.filter((m) =>
          words.some((w) => `${m.title} ${m.summary} ${m.privateNotes}`.toLowerCase().includes(w)),
        );
        if (!hits.length) return text(`I couldn't find anything about that in your meeting notes.`);
        const lines = hits.map((m, i) => `- ${m.summary} [[${i}]](https://notes.granola.ai/d/${m.id})`);
        return text(`Here is what your meetings say:\n\n${lines.join('\n')}`);
      },
    );
    return server;
  }

  /** Progress (and a log message) streamed on the request's SSE stream before its result, as Granola does. */
  private async progress(
    extra: {
      sendNotification: (n: never) => Promise<void>;
      _meta?: { progressToken?: string | number };
      requestId: string | number;
    },
    steps: number,
  ): Promise<void> {
    const progressToken = extra._meta?.progressToken ?? `granola-${String(extra.requestId)}`;
    await extra.sendNotification({
      method: 'notifications/message',
      params: { level: 'info', data: 'Searching your meeting notes' },
    } as never);
    for (let i = 1; i <= steps; i++) {
      await extra.sendNotification({
        method: 'notifications/progress',
        params: { progressToken, progress: i, total: steps + 1 },
      } as never);
      this.progressSent++;
    }
  }

  private record(req: Request, res: Response): ReceivedMessage[] {
    const bodies = (Array.isArray(req.body) ? req.body : [req.body]) as Array<Record<string, unknown>>;
    const entries = bodies.map((b): ReceivedMessage => ({
      method: typeof b?.method === 'string' ? b.method : undefined,
      id: b?.id as number | string | undefined,
      params: b?.params as ReceivedMessage['params'],
      sessionId: req.header('mcp-session-id') ?? undefined,
      protocolVersionHeader: req.header('mcp-protocol-version') ?? undefined,
      accept: req.header('accept') ?? undefined,
      authorization: req.header('authorization') ?? undefined,
    }));
    this.received.push(...entries);
    // The transport writes its status and headers with writeHead; note them for the entries.
    const raw = res as unknown as ServerResponse;
    const writeHead = raw.writeHead.bind(raw) as (...a: unknown[]) => ServerResponse;
    (raw as unknown as { writeHead: (...a: unknown[]) => ServerResponse }).writeHead = (...a: unknown[]) => {
      const headers = a.find((x) => x && typeof x === 'object') as Record<string, unknown> | undefined;
      const type = headers && Object.entries(headers).find(([k]) => k.toLowerCase() === 'content-type')?.[1];
      for (const e of entries) {
        e.status = a[0] as number;
        e.contentType = type === undefined ? (raw.getHeader('content-type') as string | undefined) : asText(type);
      }
      return writeHead(...a);
    };
    return entries;
  }

  async start(): Promise<this> {
    const app = express();
    app.disable('x-powered-by');

    app.use(async (req, res, next) => {
      if (req.method !== 'GET' || `${this.url}${req.path}` !== this.metadataUrl) return next();
      this.metadataRequests++;
      if (this.holdFor > 0) {
        const released = new Promise<void>((resolve) => this.held.push(resolve));
        if (this.held.length >= this.holdFor) {
          this.holdFor = 0;
          for (const release of this.held.splice(0)) release();
        }
        await released;
      }
      res.json({
        resource: this.advertisedResource ?? this.mcpUrl,
        authorization_servers: this.authorizationServer ? [this.authorizationServer.url] : [],
        bearer_methods_supported: ['header'],
        resource_name: 'Granola (fake)',
        ...(this.opts.scopesSupported ? { scopes_supported: this.opts.scopesSupported } : {}),
      });
    });

    const auth = (req: Request, res: Response, next: express.NextFunction) =>
      requireBearerAuth({
        verifier: { verifyAccessToken: this.verify },
        resourceMetadataUrl: this.metadataUrl,
        expectedResource: new URL(this.mcpUrl),
      })(req, res, next);
    const countUnauthorized = (_req: Request, res: Response, next: express.NextFunction) => {
      res.on('finish', () => {
        if (res.statusCode === 401) this.unauthorized++;
      });
      next();
    };

    app.post('/mcp', countUnauthorized, auth, express.json(), async (req: Request, res: Response) => {
      const subject = asText((req as Request & { auth?: AuthInfo }).auth?.extra?.subject ?? '');
      const sid = req.header('mcp-session-id');
      const entries = this.record(req, res);
      let session: Session | undefined;
      if (sid) {
        session = this.sessions.get(sid);
        if (!session || session.subject !== subject) {
          this.unknownSession++;
          res.status(404).json({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null });
          return;
        }
      } else if (isInitializeRequest(req.body)) {
        const server = this.buildServer();
        const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          enableJsonResponse: this.responseMode === 'json',
          onsessioninitialized: (id) => {
            this.sessions.set(id, { transport, server, subject });
          },
        });
        await server.connect(transport);
        await transport.handleRequest(req, res, req.body);
        return;
      } else {
        res.status(400).json({
          jsonrpc: '2.0',
          error: { code: -32000, message: 'Bad Request: Mcp-Session-Id header is required' },
          id: null,
        });
        return;
      }
      // Granola limits transcripts aggressively; past the budget the call is refused with a JSON-RPC error.
      const call = entries.find((e) => e.method === 'tools/call' && e.params?.name === 'get_meeting_transcript');
      if (call && this.transcriptBudget !== undefined) {
        if (this.transcriptBudget <= 0) {
          res.status(200).json({
            jsonrpc: '2.0',
            id: call.id,
            error: {
              code: -32000,
              message: 'Rate limit exceeded for get_meeting_transcript; retry later',
              data: { retry_after: 30 },
            },
          });
          return;
        }
        this.transcriptBudget--;
      }
      await session.transport.handleRequest(req, res, req.body);
    });

    app.delete('/mcp', countUnauthorized, auth, async (req: Request, res: Response) => {
      const sid = req.header('mcp-session-id');
      const session = sid ? this.sessions.get(sid) : undefined;
      if (!session) {
        res.status(404).end();
        return;
      }
      this.sessions.delete(sid!);
      await session.transport.handleRequest(req, res);
      await session.server.close();
    });

    this.listening = await listen(app);
    return this;
  }

  async close(): Promise<void> {
    await this.dropSessions();
    await this.listening.close();
  }
}
