/**
 * The meeting-notes connector end to end: client library → service → a fake Granola MCP server built on the MCP
 * SDK, whose tokens come from the fake OAuth 2.1 authorization server found by discovery. Covers the whole MCP
 * authorization (RFC 9728 discovery, RFC 8414 metadata, RFC 7591 registration once per connection, PKCE S256,
 * RFC 8707 resource on authorize, token and refresh), the MCP client (initialize, session id, SSE with progress
 * notifications, JSON answers, 404 → re-initialize, 401 → refresh once), all four tools, dry runs, the 400 rules
 * and provider errors.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeNotesMcp, MEETINGS } from '../fakes/notes-mcp.ts';
import { followAuthorizationLink, startHarness, type Harness } from '../helpers/harness.ts';
import { AnswerLog } from '../helpers/answer-check.ts';
import { failure } from '../helpers/tools.ts';
import type { Connection } from '../../packages/client/src/index.ts';
import { tools } from '../../generated/registry.ts';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const [LAUNCH, GLOBEX, HIRING] = MEETINGS.map((m) => m.id) as [string, string, string];
const s256 = (v: string) => createHash('sha256').update(v).digest('base64url');

interface ToolResult {
  content: Array<{ type: string; text: string }>;
  isError?: boolean;
}

/** A harness whose OAuth server advertises discovery and registration and requires the fake MCP server as resource. */
async function notesSetup(mcp: FakeNotesMcp, env: Record<string, string> = {}): Promise<Harness> {
  await mcp.start();
  const h = await startHarness({ oauth: { discovery: true, requireResource: mcp.mcpUrl }, env });
  mcp.authorizationServer = h.oauth;
  return h;
}

describe('notes connector against a fake Granola MCP server', () => {
  let h: Harness;
  let mcp: FakeNotesMcp;
  let connection: Connection;
  let annId: string;

  // The MCP server's own answer (response_format detailed), each also checked against the tool's declared output
  // (test/helpers/answer-check.ts).
  const answers = new AnswerLog('notes', () => h);
  const run = async (toolName: string, toolInput: Record<string, unknown>, identifier = 'ann') => {
    const input = { response_format: 'detailed', ...toolInput };
    answers.begin();
    const { data } = await h.client.executeTool({
      toolName: toolName as never,
      toolInput: input as never,
      connectionName: 'notes',
      identifier,
    });
    await answers.check(toolName, input, data);
    return data as ToolResult;
  };

  beforeAll(async () => {
    mcp = new FakeNotesMcp();
    h = await notesSetup(mcp);
  });
  afterAll(async () => {
    answers.write();
    await h?.close();
    await mcp?.close();
  });

  describe('authorization: discovery, dynamic registration, PKCE and resource', () => {
    it('creates a connection from a name alone and refuses client credentials', async () => {
      const refused = await failure(
        h.client.createConnection({
          connection_name: 'notes-x',
          connector: 'notes',
          client_id: 'abc',
          client_secret: 'def',
        }),
      );
      expect(refused.status).toBe(400);
      expect(refused.details.map((d) => d.field).sort()).toEqual(['client_id', 'client_secret']);
      expect(refused.details[0]!.message).toContain('registered dynamically');

      connection = await h.client.createConnection({
        connection_name: 'notes',
        connector: 'notes',
        oauth: { resource: mcp.mcpUrl },
      });
      expect(connection).toMatchObject({
        auth_kind: 'oauth2_mcp',
        client_id: null,
        has_client_secret: false,
        scopes: [],
      });
      expect(connection.redirect_uri).toBe(`${h.url}/sso/v1/oauth/${connection.id}/callback`);
      expect(connection.client_registered).toBe(false);
      // Nothing is discovered or registered before the first authorization.
      expect(mcp.metadataRequests).toBe(0);
      expect(h.oauth.counts.register).toBe(0);
    });

    it('discovers the authorization server, registers once, and redirects with PKCE S256 and the resource', async () => {
      const { link, connected_account_id } = await h.client.getAuthorizationLink({
        connectionName: 'notes',
        identifier: 'ann',
      });
      annId = connected_account_id;
      const start = await fetch(link, { redirect: 'manual' });
      expect(start.status).toBe(302);
      const authorize = new URL(start.headers.get('location')!);

      // The authorization endpoint came from the metadata of the server the protected resource named.
      expect(mcp.metadataRequests).toBeGreaterThan(0);
      expect(`${authorize.origin}${authorize.pathname}`).toBe(h.oauth.authorizeUrl);
      expect(h.oauth.counts.register).toBe(1);
      const clientId = authorize.searchParams.get('client_id')!;
      const registered = h.oauth.clients.get(clientId)!;
      expect(registered).toMatchObject({ auth: 'none', redirect_uris: [connection.redirect_uri] });
      expect(registered.client_secret).toBeUndefined();

      const q = Object.fromEntries(authorize.searchParams);
      expect(q).toMatchObject({
        response_type: 'code',
        redirect_uri: connection.redirect_uri,
        code_challenge_method: 'S256',
        resource: mcp.mcpUrl,
      });
      expect(q.code_challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(q.state).toBeTruthy();
      // No scope: the protected resource lists none, and Granola refuses made-up ones such as mcp:tools.
      expect(q.scope).toBeUndefined();
      expect((await h.client.getConnection('notes')).client_registered).toBe(true);
    });

    it('completes the flow: code exchanged with the verifier and the resource; the account turns ACTIVE', async () => {
      const { link } = await h.client.getAuthorizationLink({ connectionName: 'notes', identifier: 'ann' });
      const res = await followAuthorizationLink(link, 'ann');
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('Account connected');

      const exchange = h.oauth.tokenRequests.filter((r) => r.grant_type === 'authorization_code');
      expect(exchange).toHaveLength(1);
      const clientId = [...h.oauth.clients.keys()].find((id) => id.startsWith('dcr_'))!;
      expect(exchange[0]).toMatchObject({
        client_id: clientId,
        resource: mcp.mcpUrl,
        redirect_uri: connection.redirect_uri,
      });
      expect(exchange[0]!.code_verifier).toMatch(/^[A-Za-z0-9_-]{43,128}$/);
      expect(exchange[0]!.client_secret).toBeUndefined();

      const account = await h.client.getConnectedAccount(annId);
      expect(account.status).toBe('ACTIVE');
      expect(account.token_expires_at).not.toBeNull();
      // A second link, on the same or another account, reuses the registration.
      expect(h.oauth.counts.register).toBe(1);
    });

    it('registers once per connection, not per account or per link', async () => {
      const { link } = await h.client.getAuthorizationLink({ connectionName: 'notes', identifier: 'raj' });
      const start = await fetch(link, { redirect: 'manual' });
      const clientId = new URL(start.headers.get('location')!).searchParams.get('client_id');
      expect((await followAuthorizationLink(link, 'raj')).status).toBe(200);
      expect(h.oauth.counts.register).toBe(1);
      expect(h.oauth.tokenRequests.at(-1)).toMatchObject({
        grant_type: 'authorization_code',
        client_id: clientId,
        resource: mcp.mcpUrl,
      });
      expect((await h.client.getOrCreateConnectedAccount({ connectionName: 'notes', identifier: 'raj' })).status).toBe(
        'ACTIVE',
      );

      // The PKCE challenge sent to the authorization server is the S256 of the verifier sent to the token endpoint.
      const { link: third } = await h.client.getAuthorizationLink({ connectionName: 'notes', identifier: 'raj' });
      const before = h.oauth.tokenRequests.length;
      const challenge = new URL((await fetch(third, { redirect: 'manual' })).headers.get('location')!).searchParams.get(
        'code_challenge',
      );
      expect((await followAuthorizationLink(third, 'raj')).status).toBe(200);
      const verifiers = h.oauth.tokenRequests.slice(before).map((r) => r.code_verifier!);
      // Each opening of a link gets a fresh verifier: the challenge of the first opening is not the one redeemed
      // (the fake checked the redeemed verifier against the second opening's challenge).
      expect(verifiers).toHaveLength(1);
      expect(verifiers.map(s256)).not.toContain(challenge);
      expect(h.oauth.counts.register).toBe(1);
    });

    it('a second connection registers its own client; changing the resource forgets the registration', async () => {
      await h.client.createConnection({
        connection_name: 'notes-team',
        connector: 'notes',
        oauth: { resource: mcp.mcpUrl },
      });
      const { link } = await h.client.getAuthorizationLink({ connectionName: 'notes-team', identifier: 'ann' });
      expect((await followAuthorizationLink(link, 'ann')).status).toBe(200);
      expect(h.oauth.counts.register).toBe(2);

      const updated = await h.client.updateConnection('notes-team', { oauth: { resource: `${mcp.mcpUrl}/` } });
      expect(updated.client_registered).toBe(false);
      const { link: again } = await h.client.getAuthorizationLink({ connectionName: 'notes-team', identifier: 'ann' });
      expect((await followAuthorizationLink(again, 'ann')).status).toBe(200);
      expect(h.oauth.counts.register).toBe(3);
      await h.client.deleteConnection('notes-team');
    });

    it('the fake refuses requests without a valid token the way Granola does', async () => {
      const res = await fetch(mcp.mcpUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          authorization: 'Bearer made-up',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /);
      expect(res.headers.get('www-authenticate')).toContain(
        `resource_metadata="${mcp.url}/.well-known/oauth-protected-resource/mcp"`,
      );
    });
  });

  describe('concurrent first authorizations', () => {
    it('agree on one registered client, so every code exchange matches its authorization', async () => {
      await h.client.createConnection({
        connection_name: 'notes-race',
        connector: 'notes',
        oauth: { resource: mcp.mcpUrl },
      });
      const links = await Promise.all(
        ['a', 'b'].map((x) => h.client.getAuthorizationLink({ connectionName: 'notes-race', identifier: `race-${x}` })),
      );
      const registered = h.oauth.counts.register;
      mcp.holdMetadata(2); // both discoveries run side by side, so both register
      const starts = await Promise.all(links.map((l) => fetch(l.link, { redirect: 'manual' })));
      expect(h.oauth.counts.register - registered).toBe(2);
      const [first, second] = starts.map((r) => new URL(r.headers.get('location')!)) as [URL, URL];
      expect(second.searchParams.get('client_id')).toBe(first.searchParams.get('client_id'));
      for (const [i, authorize] of [first, second].entries()) {
        authorize.searchParams.set('fake_user', `race-${i}`);
        const consent = await fetch(authorize, { redirect: 'manual' });
        const callback = await fetch(consent.headers.get('location')!, { redirect: 'manual' });
        expect(callback.status).toBe(200);
      }
      await h.client.deleteConnection('notes-race');
    });
  });

  describe('tools return what the MCP server answers', () => {
    it("lists meetings in a custom range as the server's XML-like text", async () => {
      const before = mcp.received.length;
      const data = await run('notes_list_meetings', {
        time_range: 'custom',
        custom_start: '2026-03-01',
        custom_end: '2026-03-31',
      });
      const listing = data.content[0]!.text;
      expect(data.isError).toBeUndefined();
      expect(listing).toContain('<meetings_list count="2">');
      expect(listing).toContain(`<meeting id="${LAUNCH}" title="Launch planning" date="2026-03-16T15:00:00Z">`);
      expect(listing).toContain('Hank Scorpio <hank@globex.com>');
      expect(listing).not.toContain(HIRING);

      // The MCP lifecycle as the server saw it: initialize, initialized, then the call, in one session.
      const seen = mcp.received.slice(before);
      expect(seen.map((m) => m.method)).toEqual(['initialize', 'notifications/initialized', 'tools/call']);
      const [init, initialized, call] = seen as [(typeof seen)[0], (typeof seen)[0], (typeof seen)[0]];
      // The MCP SDK's handshake offers the SDK's latest protocol version; the fake, the SDK's own server, accepts it.
      expect(init.params).toMatchObject({
        protocolVersion: LATEST_PROTOCOL_VERSION,
        clientInfo: { name: 'agent-connector-service' },
      });
      expect(init.sessionId).toBeUndefined();
      expect(initialized.sessionId).toMatch(/^[0-9a-f-]{36}$/);
      expect(call.sessionId).toBe(initialized.sessionId);
      expect(call.protocolVersionHeader).toBe(LATEST_PROTOCOL_VERSION);
      expect(call.accept).toBe('application/json, text/event-stream');
      expect(call.authorization).toMatch(/^Bearer at_/);
      expect(call.params).toEqual({
        name: 'list_meetings',
        arguments: { time_range: 'custom', custom_start: '2026-03-01', custom_end: '2026-03-31' },
      });
      // The answer was an SSE stream carrying progress notifications before the result.
      expect(call.contentType).toContain('text/event-stream');
      expect(mcp.progressSent).toBeGreaterThan(0);
    });

    it('lists this week and last week relative to the server clock, reusing the session', async () => {
      const sessions = mcp.sessionCount;
      expect((await run('notes_list_meetings', { time_range: 'this_week' })).content[0]!.text).toMatch(
        new RegExp(`count="1">\\n<meeting id="${LAUNCH}"`),
      );
      expect((await run('notes_list_meetings', { time_range: 'last_week' })).content[0]!.text).toMatch(
        new RegExp(`count="1">\\n<meeting id="${GLOBEX}"`),
      );
      expect(mcp.sessionCount).toBe(sessions);
      expect(mcp.toolCalls('list_meetings').at(-1)!.params!.arguments).toEqual({ time_range: 'last_week' });
    });

    it('gets notes, summaries and attendees of several meetings', async () => {
      const data = await run('notes_get_meetings', {
        meeting_ids: [LAUNCH, GLOBEX],
        schema_version: '1',
        tool_version: '1',
      });
      const text = data.content[0]!.text;
      expect(text).toContain('<summary>\nThe team agreed to move the launch date to April 14');
      expect(text).toContain('- Globex wants SSO before renewal');
      expect(text).toContain('Raj Patel <raj@acme.com>');
      // The version selectors were validated, then left out of the upstream call.
      expect(mcp.toolCalls('get_meetings').at(-1)!.params).toEqual({
        name: 'get_meetings',
        arguments: { meeting_ids: [LAUNCH, GLOBEX] },
      });
    });

    it('returns a verbatim transcript', async () => {
      const data = await run('notes_get_meeting_transcript', { meeting_id: LAUNCH, tool_version: '1' });
      expect(data.content[0]!.text).toBe(
        `<transcript meeting_id="${LAUNCH}" title="Launch planning">\n` +
          '[00:00:04] Ann Lee: Can we still make the April 2 launch?\n' +
          '[00:00:11] Raj Patel: Not with the billing migration open. I would say April 14.\n' +
          '[00:00:19] Ann Lee: Agreed, April 14 it is.\n</transcript>',
      );
      expect(mcp.toolCalls('get_meeting_transcript').at(-1)!.params!.arguments).toEqual({ meeting_id: LAUNCH });
    });

    it('answers a question in Markdown with the citation links preserved exactly', async () => {
      const progressBefore = mcp.progressSent;
      const data = await run('notes_query_meetings', {
        query: 'What did we decide about the launch and the Globex renewal?',
        schema_version: '1',
      });
      expect(data).toEqual({
        content: [
          {
            type: 'text',
            text:
              'Here is what your meetings say:\n\n' +
              `- The team agreed to move the launch date to April 14 so QA can finish the billing migration. [[0]](https://notes.granola.ai/d/${LAUNCH})\n` +
              `- Globex asked for SSO before their renewal; Ann will send the security questionnaire. [[1]](https://notes.granola.ai/d/${GLOBEX})`,
          },
        ],
      });
      expect(mcp.progressSent - progressBefore).toBe(4);

      const limited = await run('notes_query_meetings', { query: 'launch and renewal', document_ids: [GLOBEX] });
      expect(limited.content[0]!.text).toContain(`[[0]](https://notes.granola.ai/d/${GLOBEX})`);
      expect(limited.content[0]!.text).not.toContain(LAUNCH);
      expect(mcp.toolCalls('query_granola_meetings').at(-1)!.params!.arguments).toEqual({
        query: 'launch and renewal',
        document_ids: [GLOBEX],
      });
    });

    it('covers every notes tool of the registry', () => {
      const notesTools = [...tools.values()].filter((t) => t.connector === 'notes');
      expect(notesTools.map((t) => t.name).sort()).toEqual([
        'notes_get_meeting_transcript',
        'notes_get_meetings',
        'notes_list_meetings',
        'notes_query_meetings',
      ]);
      const called = new Set(mcp.toolCalls().map((m) => m.params!.name));
      for (const t of notesTools) {
        const upstreamName = (t.examples[0]!.requests[0]!.body as { params: { name: string } }).params.name;
        expect(called, t.name).toContain(upstreamName);
      }
    });
  });

  describe('sessions and token refresh', () => {
    it('re-initializes when the server forgets the session (404), and reads plain JSON answers', async () => {
      mcp.responseMode = 'json';
      await mcp.dropSessions();
      const inits = mcp.received.filter((m) => m.method === 'initialize').length;
      const data = await run('notes_get_meetings', { meeting_ids: [HIRING] });
      expect(data.content[0]!.text).toContain('Hiring debrief');
      expect(mcp.unknownSession).toBe(1);
      expect(mcp.received.filter((m) => m.method === 'initialize').length).toBe(inits + 1);
      expect(mcp.toolCalls('get_meetings').at(-1)!.contentType).toContain('application/json');
      mcp.responseMode = 'sse';
      await mcp.dropSessions();
    });

    it('refreshes an access token the server refuses (401), with the resource, once, then succeeds', async () => {
      h.oauth.expireAccessTokens();
      const refreshes = h.oauth.counts.refresh_token;
      const unauthorized = mcp.unauthorized;
      const data = await run('notes_get_meeting_transcript', { meeting_id: GLOBEX });
      expect(data.content[0]!.text).toContain('Hank Scorpio: SSO is a must for us before we renew.');
      expect(mcp.unauthorized - unauthorized).toBe(1);
      expect(h.oauth.counts.refresh_token - refreshes).toBe(1);
      const refresh = h.oauth.tokenRequests.at(-1)!;
      expect(refresh).toMatchObject({ grant_type: 'refresh_token', resource: mcp.mcpUrl });
      expect(refresh.client_id).toMatch(/^dcr_/);
      // The new token opened a new session.
      const call = mcp.toolCalls('get_meeting_transcript').at(-1)!;
      expect(mcp.received.filter((m) => m.method === 'initialize').at(-1)!.authorization).toBe(call.authorization);
    });

    it('refreshes proactively when the stored token is about to expire, before calling', async () => {
      const store = h.running.services.store;
      const account = (await store.getAccount(annId))!;
      await store.updateAccount(annId, { tokenExpiresAt: Date.now() - 1000 }, Date.now());
      const refreshes = h.oauth.counts.refresh_token;
      const unauthorized = mcp.unauthorized;
      const data = await run('notes_list_meetings', {});
      expect(data.content[0]!.text).toContain('<meetings_list count="2">');
      expect(h.oauth.counts.refresh_token - refreshes).toBe(1);
      expect(mcp.unauthorized).toBe(unauthorized);
      expect(h.oauth.tokenRequests.at(-1)).toMatchObject({ grant_type: 'refresh_token', resource: mcp.mcpUrl });
      expect((await store.getAccount(annId))!.tokenExpiresAt).toBeGreaterThan(Date.now());
      expect((await store.getAccount(annId))!.version).toBeGreaterThan(account.version);
    });

    it("refreshes only once when the server keeps refusing, and reports the 401 as the provider's", async () => {
      const saved = mcp.authorizationServer;
      mcp.authorizationServer = undefined; // no token is valid any more
      const refreshes = h.oauth.counts.refresh_token;
      try {
        const e = await failure(run('notes_list_meetings', {}));
        expect(e.status).toBe(401);
        expect(e.isProviderError).toBe(true);
        expect(h.oauth.counts.refresh_token - refreshes).toBe(1);
      } finally {
        mcp.authorizationServer = saved;
      }
    });

    it('marks the account EXPIRED when the refresh token is revoked', async () => {
      const { link } = await h.client.getAuthorizationLink({ connectionName: 'notes', identifier: 'cleo' });
      expect((await followAuthorizationLink(link, 'cleo')).status).toBe(200);
      expect((await run('notes_list_meetings', {}, 'cleo')).content[0]!.text).toContain('meetings_list');
      h.oauth.revokeSubject('cleo');
      const e = await failure(run('notes_list_meetings', {}, 'cleo'));
      expect(e.status).toBe(409);
      expect(e.code).toBe('account_expired');
      expect((await h.client.getOrCreateConnectedAccount({ connectionName: 'notes', identifier: 'cleo' })).status).toBe(
        'EXPIRED',
      );
    });
  });

  describe('dry runs', () => {
    it('show the JSON-RPC tools/call of every tool without the version selectors, sending nothing', async () => {
      const before = mcp.received.length;
      const inputs: Record<string, Record<string, unknown>> = {
        notes_get_meeting_transcript: { meeting_id: LAUNCH },
        notes_get_meetings: { meeting_ids: [LAUNCH] },
        notes_list_meetings: { time_range: 'custom', custom_start: '2026-03-01', custom_end: '2026-03-31' },
        notes_query_meetings: { query: 'action items', document_ids: [GLOBEX] },
      };
      const upstream: Record<string, string> = {
        notes_get_meeting_transcript: 'get_meeting_transcript',
        notes_get_meetings: 'get_meetings',
        notes_list_meetings: 'list_meetings',
        notes_query_meetings: 'query_granola_meetings',
      };
      for (const [toolName, input] of Object.entries(inputs)) {
        const { data } = await h.client.executeTool({
          toolName: toolName as never,
          toolInput: { ...input, schema_version: '1', tool_version: '1' } as never,
          connectionName: 'notes',
          identifier: 'ann',
          dryRun: true,
        });
        expect(data).toEqual({
          requests: [
            {
              method: 'POST',
              url: mcp.mcpUrl,
              headers: {
                accept: 'application/json, text/event-stream',
                'content-type': 'application/json',
                'user-agent': 'agent-connector-service/0.1',
                authorization: 'Bearer [REDACTED]',
              },
              body: { jsonrpc: '2.0', method: 'tools/call', params: { name: upstream[toolName], arguments: input } },
            },
          ],
        });
      }
      expect(mcp.received.length).toBe(before);
    });

    it('work before the account is authorized', async () => {
      await h.client.getOrCreateConnectedAccount({ connectionName: 'notes', identifier: 'pending' });
      const { data } = await h.client.executeTool({
        toolName: 'notes_get_meeting_transcript',
        toolInput: { meeting_id: LAUNCH },
        connectionName: 'notes',
        identifier: 'pending',
        dryRun: true,
      });
      expect((data as { requests: Array<{ url: string }> }).requests[0]!.url).toBe(mcp.mcpUrl);
      const e = await failure(run('notes_get_meeting_transcript', { meeting_id: LAUNCH }, 'pending'));
      expect(e.code).toBe('account_not_authorized');
    });
  });

  describe('bad input is a 400 naming each field, before anything is sent', () => {
    it('refuses more than 10 meeting IDs, none, and IDs that are not UUIDs', async () => {
      const before = mcp.received.length;
      const eleven = Array.from({ length: 11 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
      const tooMany = await failure(run('notes_get_meetings', { meeting_ids: eleven }));
      expect(tooMany.status).toBe(400);
      expect(tooMany.code).toBe('invalid_input');
      expect(tooMany.details).toEqual([{ field: 'meeting_ids', message: 'must have at most 10 items' }]);
      await run('notes_get_meetings', { meeting_ids: eleven.slice(0, 10) }).catch(() => undefined);
      const afterTen = mcp.received.length;
      expect(afterTen).toBeGreaterThan(before);

      expect((await failure(run('notes_get_meetings', { meeting_ids: [] }))).details).toEqual([
        { field: 'meeting_ids', message: 'must have at least 1 item(s)' },
      ]);
      expect((await failure(run('notes_get_meetings', { meeting_ids: [LAUNCH, 'meeting-7'] }))).details).toEqual([
        { field: 'meeting_ids[1]', message: 'must be a UUID' },
      ]);
      expect((await failure(run('notes_get_meeting_transcript', { meeting_id: 'abc' }))).details).toEqual([
        { field: 'meeting_id', message: 'must be a UUID' },
      ]);
      expect((await failure(run('notes_get_meeting_transcript', {}))).details).toEqual([
        { field: 'meeting_id', message: 'is required' },
      ]);
      expect(mcp.received.length).toBe(afterTen);
    });

    it('requires custom_start and custom_end when time_range is custom, naming each missing one', async () => {
      const before = mcp.received.length;
      const both = await failure(run('notes_list_meetings', { time_range: 'custom' }));
      expect(both.status).toBe(400);
      expect(both.details).toEqual([
        { field: 'custom_start', message: 'is required when time_range is "custom"' },
        { field: 'custom_end', message: 'is required when time_range is "custom"' },
      ]);
      const one = await failure(run('notes_list_meetings', { time_range: 'custom', custom_start: '2026-03-01' }));
      expect(one.details).toEqual([{ field: 'custom_end', message: 'is required when time_range is "custom"' }]);
      const badDate = await failure(
        run('notes_list_meetings', { time_range: 'custom', custom_start: '03/01/2026', custom_end: '2026-03-31' }),
      );
      expect(badDate.details).toEqual([{ field: 'custom_start', message: 'must be a date in the form YYYY-MM-DD' }]);
      const badRange = await failure(run('notes_list_meetings', { time_range: 'yesterday' }));
      expect(badRange.details).toEqual([
        { field: 'time_range', message: 'must be one of: this_week, last_week, last_30_days, custom' },
      ]);
      expect(mcp.received.length).toBe(before);
    });

    it('refuses an unknown schema_version or tool_version, naming the versions that exist', async () => {
      const before = mcp.received.length;
      const e = await failure(run('notes_query_meetings', { query: 'x', schema_version: '2', tool_version: 'latest' }));
      expect(e.status).toBe(400);
      expect(e.details).toEqual([
        { field: 'schema_version', message: 'must be one of: 1' },
        { field: 'tool_version', message: 'must be one of: 1' },
      ]);
      const extra = await failure(run('notes_query_meetings', { query: 'x', version: '1' }));
      expect(extra.details[0]!.field).toBe('version');
      expect(mcp.received.length).toBe(before);
    });
  });

  describe('provider errors', () => {
    it('an isError tool result is a provider error carrying the result', async () => {
      const e = await failure(
        run('notes_get_meeting_transcript', { meeting_id: '99999999-9999-4999-8999-999999999999' }),
      );
      expect(e.isProviderError).toBe(true);
      expect(e.status).toBe(502);
      expect(e.providerBody).toEqual({
        content: [{ type: 'text', text: 'Meeting 99999999-9999-4999-8999-999999999999 not found' }],
        isError: true,
      });
    });

    it('the free plan has no transcripts: the refusal is a provider error', async () => {
      mcp.basicPlanUsers.add('raj');
      try {
        const e = await failure(run('notes_get_meeting_transcript', { meeting_id: LAUNCH }, 'raj'));
        expect(e.isProviderError).toBe(true);
        expect((e.providerBody as ToolResult).content[0]!.text).toContain('Business and Enterprise plans');
        // …and only the last 30 days are listed.
        const listing = (
          await run(
            'notes_list_meetings',
            { time_range: 'custom', custom_start: '2026-01-01', custom_end: '2026-03-31' },
            'raj',
          )
        ).content[0]!.text;
        expect(listing).toContain('count="2"');
        expect(listing).not.toContain(HIRING);
      } finally {
        mcp.basicPlanUsers.delete('raj');
      }
    });

    it('a JSON-RPC error (the transcript rate limit) is a provider error carrying the error', async () => {
      mcp.transcriptBudget = 1;
      try {
        await run('notes_get_meeting_transcript', { meeting_id: HIRING });
        const e = await failure(run('notes_get_meeting_transcript', { meeting_id: HIRING }));
        expect(e.isProviderError).toBe(true);
        expect(e.status).toBe(502);
        expect(e.providerBody).toEqual({
          error: {
            code: -32000,
            message: 'Rate limit exceeded for get_meeting_transcript; retry later',
            data: { retry_after: 30 },
          },
        });
        expect(e.executionId).toMatch(/^exe_/);
      } finally {
        mcp.transcriptBudget = undefined;
      }
      // The session survives a refused call.
      expect((await run('notes_get_meeting_transcript', { meeting_id: HIRING })).content[0]!.text).toContain(
        'backend candidate',
      );
    });

    it('never leaks tokens into responses or logs', async () => {
      const secrets = [...h.oauth.issuedAccessTokens(), ...h.oauth.liveRefreshTokens()];
      expect(secrets.length).toBeGreaterThan(0);
      const logs = h.logs.join('');
      for (const s of secrets) expect(logs).not.toContain(s);
      const accounts = JSON.stringify(await h.client.listConnectedAccounts({ connectionName: 'notes' }));
      for (const s of secrets) expect(accounts).not.toContain(s);
    });
  });
});

describe('notes discovery from the WWW-Authenticate challenge', () => {
  let h: Harness;
  let mcp: FakeNotesMcp;

  beforeAll(async () => {
    // The metadata lives at a URL only the 401 challenge names, and lists a scope to request.
    mcp = new FakeNotesMcp({ metadataAt: 'custom', scopesSupported: ['meetings:read'] });
    h = await notesSetup(mcp, { TOOL_RESPONSE_LIMIT_BYTES: '8192' });
    await h.client.createConnection({ connection_name: 'notes', connector: 'notes', oauth: { resource: mcp.mcpUrl } });
  });
  afterAll(async () => {
    await h?.close();
    await mcp?.close();
  });

  it('follows resource_metadata from the 401 and requests the scopes the resource lists', async () => {
    const { link } = await h.client.getAuthorizationLink({ connectionName: 'notes', identifier: 'ann' });
    const start = await fetch(link, { redirect: 'manual' });
    expect(start.status).toBe(302);
    const authorize = new URL(start.headers.get('location')!);
    expect(mcp.unauthorized).toBeGreaterThan(0);
    expect(mcp.metadataRequests).toBe(1);
    expect(authorize.searchParams.get('scope')).toBe('meetings:read');
    expect(authorize.searchParams.get('resource')).toBe(mcp.mcpUrl);
    expect((await followAuthorizationLink(link, 'ann')).status).toBe(200);
    const data = (
      await h.client.executeTool({
        toolName: 'notes_list_meetings',
        toolInput: { time_range: 'this_week', response_format: 'detailed' },
        connectionName: 'notes',
        identifier: 'ann',
      })
    ).data as ToolResult;
    expect(data.content[0]!.text).toContain('Launch planning');
  });

  it('refuses metadata that describes another resource', async () => {
    await h.client.createConnection({
      connection_name: 'notes-other',
      connector: 'notes',
      oauth: { resource: mcp.mcpUrl },
    });
    mcp.advertisedResource = 'http://127.0.0.1:9/elsewhere';
    try {
      const registered = h.oauth.counts.register;
      const { link } = await h.client.getAuthorizationLink({ connectionName: 'notes-other', identifier: 'ann' });
      const start = await fetch(link, { redirect: 'manual' });
      expect(start.status).toBe(502);
      expect(await start.text()).toContain('describes http://127.0.0.1:9/elsewhere');
      expect(h.oauth.counts.register).toBe(registered);
    } finally {
      mcp.advertisedResource = undefined;
    }
  });

  it('refuses a tool answer above the response limit, with a clear error', async () => {
    mcp.meetings.push({
      ...MEETINGS[0]!,
      id: 'd4e5f6a7-b8c9-4d0e-8f1a-2b3c4d5e6f70',
      transcript: Array.from({ length: 300 }, (_, i) => ({
        speaker: 'Ann Lee',
        at: `00:${String(i % 60).padStart(2, '0')}:00`,
        text: 'And another thing about the roadmap.',
      })),
    });
    const e = await failure(
      h.client.executeTool({
        toolName: 'notes_get_meeting_transcript',
        toolInput: { meeting_id: 'd4e5f6a7-b8c9-4d0e-8f1a-2b3c4d5e6f70' },
        connectionName: 'notes',
        identifier: 'ann',
      }),
    );
    expect(e.status).toBe(502);
    expect(e.code).toBe('response_too_large');
    expect(e.isProviderError).toBe(false);
    const data = (
      await h.client.executeTool({
        toolName: 'notes_get_meetings',
        toolInput: { meeting_ids: [LAUNCH], response_format: 'detailed' },
        connectionName: 'notes',
        identifier: 'ann',
      })
    ).data as ToolResult;
    expect(data.content[0]!.text).toContain('Launch planning');
  });
});
