/**
 * Outbound Client ID Metadata Documents (issue 39, item 3): when the MCP server's authorization server advertises
 * `client_id_metadata_document_supported`, the meeting-notes connector (any `oauth2_mcp` connector) uses the URL of a
 * document the service publishes as its client id — no Dynamic Client Registration, nothing stored — and the
 * authorization server fetches the document to learn the redirect URI. Without the flag it registers by DCR
 * (test/e2e/notes.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeNotesMcp } from '../fakes/notes-mcp.ts';
import { followAuthorizationLink, startHarness, type Harness } from '../helpers/harness.ts';

let h: Harness;
let mcp: FakeNotesMcp;
let connectionId: string;
let redirectUri: string;

beforeAll(async () => {
  mcp = new FakeNotesMcp();
  await mcp.start();
  h = await startHarness({ oauth: { discovery: true, cimd: true, requireResource: mcp.mcpUrl } });
  mcp.authorizationServer = h.oauth;
  const connection = await h.client.createConnection({
    connection_name: 'notes',
    connector: 'notes',
    oauth: { resource: mcp.mcpUrl },
  });
  connectionId = connection.id;
  redirectUri = connection.redirect_uri!;
});

afterAll(async () => {
  await h?.close();
  await mcp?.close();
});

describe('an MCP connector at an authorization server that takes Client ID Metadata Documents', () => {
  it('publishes the document: its own URL as client_id, the connection callback, a public client', async () => {
    const url = `${h.url}/oauth/client-metadata/${connectionId}`;
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toContain('max-age');
    expect(await res.json()).toEqual({
      client_id: url,
      client_name: expect.any(String),
      client_uri: h.config.publicUrl,
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
  });

  it('answers 404 for an unknown id and for a connection that is not an MCP one', async () => {
    expect((await fetch(`${h.url}/oauth/client-metadata/conn_unknown`)).status).toBe(404);
    const other = await h.client.createConnection({
      connection_name: 'helpdesk',
      connector: 'helpdesk',
      api_base_url: 'https://{{domain}}/api/v2',
    });
    expect((await fetch(`${h.url}/oauth/client-metadata/${other.id}`)).status).toBe(404);
  });

  it('authorizes with the document URL as client id: no registration, the document fetched, the account ACTIVE', async () => {
    const { link, connected_account_id } = await h.client.getAuthorizationLink({
      connectionName: 'notes',
      identifier: 'ann',
    });
    const start = await fetch(link, { redirect: 'manual' });
    const authorize = new URL(start.headers.get('location')!);
    expect(authorize.searchParams.get('client_id')).toBe(`${h.url}/oauth/client-metadata/${connectionId}`);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');

    const done = await followAuthorizationLink(link, 'ann');
    expect(done.status).toBe(200);
    expect(h.oauth.counts.register).toBe(0);
    expect(h.oauth.counts.metadataDocuments).toBe(1);
    const exchange = h.oauth.tokenRequests.filter((r) => r.grant_type === 'authorization_code');
    expect(exchange).toHaveLength(1);
    expect(exchange[0]).toMatchObject({
      client_id: `${h.url}/oauth/client-metadata/${connectionId}`,
      resource: mcp.mcpUrl,
      redirect_uri: redirectUri,
    });
    expect(exchange[0]!.client_secret).toBeUndefined();
    expect((await h.client.getConnectedAccount(connected_account_id)).status).toBe('ACTIVE');
    // Nothing was registered, so nothing is stored on the connection.
    expect((await h.client.getConnection('notes')).client_registered).toBe(false);

    const { data } = await h.client.executeTool({
      toolName: 'notes_list_meetings',
      toolInput: {},
      connectionName: 'notes',
      identifier: 'ann',
    });
    expect((data as { isError?: boolean }).isError).toBeFalsy();
  });
});
