/**
 * The OAuth-protected MCP endpoint (issue 39, item 2) end to end, with real parties on every side:
 *
 * - the MCP client is the official SDK's (`@modelcontextprotocol/sdk`), its StreamableHTTPClientTransport with an
 *   OAuthClientProvider written here: discovery (401 → resource metadata → authorization server metadata),
 *   registration by a Client ID Metadata Document (served by this test over https on loopback, with a certificate
 *   of a CA made for this run) and, separately, by Dynamic Client Registration, then the code, the token,
 *   tools/list and tools/call against the fake helpdesk;
 * - the identity provider is `oidc-provider` (a certified OpenID Provider implementation) running in this test
 *   (test/helpers/oidc-idp.ts, shared with the dashboard's sign-in tests): its login is a form this test's browser
 *   posts, with a password it checks;
 * - the browser is plain HTTP requests following redirects, with a cookie jar, posting the forms it is shown.
 *
 * The service runs in a process of its own, started with NODE_EXTRA_CA_CERTS naming the test CA (Node reads extra
 * CAs only at process start), so that it fetches the https metadata document through its own upstream layer.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { FakeDesk } from '../fakes/desk.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { freePort, serviceEnv, serviceToken } from '../helpers/harness.ts';
import { spawnService, type ServiceProcess } from '../helpers/service-process.ts';
import { createTestCa, type TestCa } from '../helpers/test-ca.ts';
import { IDP_PASSWORD, startTestIdp, type TestIdp } from '../helpers/oidc-idp.ts';

const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const API_TOKEN = 'zd-api-token-oauth-7c1f';
const IDP_CLIENT_ID = 'acs-mcp';
const IDP_CLIENT_SECRET = 'idp-client-secret-4b9e0c2d7a';
const ADMIN_PASSWORD = 'mcp-oauth-admin-password-9f2';
/** Where the MCP client's authorization answers go (a native app on loopback: nothing listens, the URL is read). */
const REDIRECT = 'http://127.0.0.1:53682/callback';

let dir: string;
let ca: TestCa;
let svc: ServiceProcess;
let desk: FakeDesk;
let idp: TestIdp;
let cimd: https.Server;
let cimdUrl: string;
let issuer: string;
let token: string;
let serverA: { id: string; oauth_url: string };
let serverB: { id: string; oauth_url: string };

async function api(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${svc.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  expect(res.status, `${method} ${path}: ${text}`).toBeLessThan(300);
  return JSON.parse(text) as Record<string, unknown>;
}

/**
 * A browser: follows redirects with a cookie jar per host, signs in at the identity provider's form as `user`, and
 * answers the consent page with `decision`. Returns the URL the service finally sends it to (the client's redirect
 * URI), and what it saw on the way.
 */
async function browse(
  start: string,
  user: string,
  decision: 'allow' | 'deny' = 'allow',
): Promise<{ final: URL; consent?: string }> {
  const jar = new Map<string, Map<string, string>>();
  const cookiesFor = (u: URL) =>
    [...(jar.get(u.host) ?? new Map<string, string>())].map(([k, v]) => `${k}=${v}`).join('; ');
  const keep = (u: URL, res: Response) => {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      const cookies = jar.get(u.host) ?? new Map<string, string>();
      cookies.set(pair!.slice(0, i).trim(), pair!.slice(i + 1));
      jar.set(u.host, cookies);
    }
  };
  let consent: string | undefined;
  let url = new URL(start);
  let init: RequestInit = { method: 'GET' };
  for (let hops = 0; hops < 20; hops++) {
    if (url.href.startsWith(REDIRECT)) return { final: url, ...(consent ? { consent } : {}) };
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { cookie: cookiesFor(url), ...(init.headers as Record<string, string>) },
    });
    keep(url, res);
    const location = res.headers.get('location');
    if (location) {
      url = new URL(location, url);
      init = { method: 'GET' };
      continue;
    }
    const html = await res.text();
    expect(res.status, `${url.href}: ${html.slice(0, 300)}`).toBe(200);
    const login = /<form method="post" action="([^"]+\/login)"/.exec(html);
    if (login) {
      url = new URL(login[1]!, url);
      init = {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ login: user, password: IDP_PASSWORD }).toString(),
      };
      continue;
    }
    const csrf = /name="csrf" value="([^"]+)"/.exec(html);
    const action = /<form method="post" action="([^"]+)"/.exec(html);
    if (csrf && action) {
      consent = html;
      url = new URL(action[1]!.replace(/&amp;/g, '&'), url);
      init = {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrf: csrf[1]!, decision }).toString(),
      };
      continue;
    }
    throw new Error(`the browser is stuck at ${url.href}: ${html.slice(0, 300)}`);
  }
  throw new Error('too many redirects');
}

/** The SDK's OAuth client side: what an MCP client application keeps (client, tokens, PKCE verifier). */
class TestOAuthProvider implements OAuthClientProvider {
  info?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;

  constructor(readonly clientMetadataUrl?: string) {}

  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test MCP client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** The SDK client through the whole flow: refused, sent to authorize, the browser, the code, then connected. */
async function signInAndConnect(
  provider: TestOAuthProvider,
  url: string,
  user: string,
): Promise<{ client: Client; callback: URL; consent: string }> {
  const first = new Client({ name: 'oauth-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  await expect(first.connect(transport)).rejects.toThrow(UnauthorizedError);
  expect(provider.authorizationUrl).toBeDefined();
  const { final, consent } = await browse(provider.authorizationUrl!.href, user);
  expect(final.searchParams.get('iss')).toBe(svc.url);
  await transport.finishAuth(final.searchParams.get('code')!);
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
  return { client, callback: final, consent: consent! };
}

const rpc = (url: string, bearer?: string) =>
  fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
  });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'acs-mcp-oauth-'));
  ca = createTestCa();
  const idpPort = await freePort();
  issuer = `http://127.0.0.1:${idpPort}`;
  svc = await spawnService({
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...serviceEnv(dir),
    NODE_EXTRA_CA_CERTS: ca.caFile,
    MCP_OAUTH_OIDC_ISSUER: issuer,
    MCP_OAUTH_OIDC_CLIENT_ID: IDP_CLIENT_ID,
    MCP_OAUTH_OIDC_CLIENT_SECRET: IDP_CLIENT_SECRET,
    MCP_OAUTH_ACCESS_TOKEN_TTL_SECONDS: '600',
    ADMIN_PASSWORD,
  });
  idp = await startTestIdp({
    port: idpPort,
    clientId: IDP_CLIENT_ID,
    clientSecret: IDP_CLIENT_SECRET,
    redirectUri: `${svc.url}/oauth/mcp/callback`,
  });
  for (const user of ['ada', 'bob']) {
    idp.accounts.set(user, { email: `${user}@example.com`, email_verified: true, groups: [] });
  }

  // The client's metadata document, on https (a client id must be an https URL), at loopback.
  cimd = https.createServer({ cert: readFileSync(ca.certFile), key: readFileSync(ca.keyFile) }, (_req, res) => {
    const body = JSON.stringify({
      client_id: cimdUrl,
      client_name: 'Test MCP client (metadata document)',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      application_type: 'native',
    });
    cimdFetches++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => cimd.listen(0, '127.0.0.1', resolve));
  cimdUrl = `https://127.0.0.1:${(cimd.address() as { port: number }).port}/client.json`;

  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, API_TOKEN);
  token = await serviceToken(svc.url);
  await api('POST', '/v1/connections', {
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
  await api('PUT', '/v1/connected-accounts', {
    connection_name: 'helpdesk',
    identifier: 'ada',
    credentials: { domain: DOMAIN, email: EMAIL, api_token: API_TOKEN },
  });
  serverA = (await api('POST', '/v1/mcp-servers', { name: 'support', connections: ['helpdesk'] })) as typeof serverA;
  serverB = (await api('POST', '/v1/mcp-servers', {
    name: 'tickets-only',
    tools: ['helpdesk_tickets_list'],
  })) as typeof serverB;
});

let cimdFetches = 0;

afterAll(async () => {
  if (svc?.proc.exitCode === null) svc.proc.kill('SIGKILL');
  await desk?.close();
  await idp?.close();
  await new Promise((r) => cimd?.close(r));
  ca?.remove();
  rmSync(dir, { recursive: true, force: true });
});

describe('discovery', () => {
  it('names the oauth_url on the server; without a token, 401 naming the resource metadata', async () => {
    expect(serverA.oauth_url).toBe(`${svc.url}/mcp/oauth/${serverA.id}`);
    const res = await rpc(serverA.oauth_url);
    expect(res.status).toBe(401);
    const metadataUrl = `${svc.url}/.well-known/oauth-protected-resource/mcp/oauth/${serverA.id}`;
    expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl}", scope="mcp:tools"`);
    const prm = (await (await fetch(metadataUrl)).json()) as Record<string, unknown>;
    expect(prm).toEqual({
      resource: serverA.oauth_url,
      authorization_servers: [svc.url],
      scopes_supported: ['mcp:tools'],
      bearer_methods_supported: ['header'],
      resource_name: 'support',
    });
    const as = (await (await fetch(`${svc.url}/.well-known/oauth-authorization-server`)).json()) as Record<
      string,
      unknown
    >;
    expect(as).toMatchObject({
      issuer: svc.url,
      client_id_metadata_document_supported: true,
      code_challenge_methods_supported: ['S256'],
      registration_endpoint: `${svc.url}/oauth/mcp/register`,
      authorization_response_iss_parameter_supported: true,
    });
  });

  it('answers an unknown token with error="invalid_token"', async () => {
    const res = await rpc(serverA.oauth_url, 'not-a-token-the-service-issued-000000000000');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect(res.headers.get('www-authenticate')).toContain('resource_metadata=');
  });
});

describe('a client identified by a Client ID Metadata Document', () => {
  let provider: TestOAuthProvider;

  it('signs in at the OpenID provider, consents, lists and calls the tools of that identifier', async () => {
    provider = new TestOAuthProvider(cimdUrl);
    const { client, consent } = await signInAndConnect(provider, serverA.oauth_url, 'ada');
    expect(provider.info?.client_id).toBe(cimdUrl);
    expect(cimdFetches).toBeGreaterThanOrEqual(1);
    expect(idp.logins).toContain('ada');
    // The consent page names the server, the signed-in identifier and the tools.
    expect(consent).toContain('support');
    expect(consent).toContain('<strong>ada</strong>');
    expect(consent).toContain('helpdesk_tickets_list');
    expect(consent).not.toContain('<script');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('helpdesk_tickets_list');
    const before = desk.requests.length;
    const result = await client.callTool({ name: 'helpdesk_tickets_list', arguments: { per_page: 2 } });
    expect(result.isError).toBeFalsy();
    // The call reached the helpdesk on ada's account (the tenant her stored credentials name).
    const sent = desk.requests.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.every((r) => r.domain === DOMAIN)).toBe(true);
    await client.close();
  });

  it('refuses the token at another MCP server (another resource)', async () => {
    const res = await rpc(serverB.oauth_url, provider.saved!.access_token);
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate')!;
    expect(challenge).toContain('error="invalid_token"');
    expect(challenge).toContain('another resource');
    expect((await rpc(serverA.oauth_url, provider.saved!.access_token)).status).toBe(200);
  });

  it('rotates refresh tokens; a used one presented again revokes the grant', async () => {
    const refresh = async (refreshToken: string) =>
      fetch(`${svc.url}/oauth/mcp/token`, {
        method: 'POST',
        body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: cimdUrl }),
      });
    const first = provider.saved!;
    const res = await refresh(first.refresh_token!);
    expect(res.status).toBe(200);
    const next = (await res.json()) as OAuthTokens;
    expect(next.refresh_token).not.toBe(first.refresh_token);
    expect(next.access_token).not.toBe(first.access_token);
    expect((await rpc(serverA.oauth_url, next.access_token)).status).toBe(200);
    const reused = await refresh(first.refresh_token!);
    expect(reused.status).toBe(400);
    expect(((await reused.json()) as { error: string }).error).toBe('invalid_grant');
    // The whole grant went: the newest tokens too.
    expect((await rpc(serverA.oauth_url, next.access_token)).status).toBe(401);
    expect((await refresh(next.refresh_token!)).status).toBe(400);
  });
});

describe('a client registered by Dynamic Client Registration', () => {
  it('registers, signs in, lists and calls; revocation ends its access', async () => {
    const provider = new TestOAuthProvider();
    const { client } = await signInAndConnect(provider, serverA.oauth_url, 'ada');
    expect(provider.info?.client_id).toMatch(/^mcpc_/);
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(1);
    const result = await client.callTool({ name: 'helpdesk_tickets_list', arguments: { per_page: 1 } });
    expect(result.isError).toBeFalsy();
    await client.close();

    const revoked = await fetch(`${svc.url}/oauth/mcp/revoke`, {
      method: 'POST',
      body: new URLSearchParams({ token: provider.saved!.access_token, client_id: provider.info!.client_id }),
    });
    expect(revoked.status).toBe(200);
    const after = await rpc(serverA.oauth_url, provider.saved!.access_token);
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('refuses a web application with an http redirect URI, naming application_type', async () => {
    const res = await fetch(`${svc.url}/oauth/mcp/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9999/cb'], application_type: 'web' }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: string; error_description: string };
    expect(body.error).toBe('invalid_redirect_uri');
    expect(body.error_description).toContain('application_type');
  });
});

describe('a server with its own identity provider', () => {
  it('takes the identifier from the claim it names (email: from the userinfo answer)', async () => {
    const updated = await api('PATCH', `/v1/mcp-servers/${serverB.id}`, {
      oauth_identity_provider: {
        issuer,
        client_id: IDP_CLIENT_ID,
        client_secret: IDP_CLIENT_SECRET,
        identifier_claim: 'email',
      },
    });
    expect(updated.oauth_identity_provider).toEqual({
      issuer,
      client_id: IDP_CLIENT_ID,
      identifier_claim: 'email',
      client_secret_set: true,
    });
    const provider = new TestOAuthProvider();
    const { client, consent } = await signInAndConnect(provider, serverB.oauth_url, 'bob');
    expect(consent).toContain('<strong>bob@example.com</strong>');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['helpdesk_tickets_list']);
    // bob@example.com has no helpdesk account: the tool says so, for that identifier (not ada's account).
    const result = await client.callTool({ name: 'helpdesk_tickets_list', arguments: {} });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toContain('has not connected');
    // The link it hands out is for bob@example.com: its page says for whom. No account exists before the link is
    // completed (issue 38: a just-in-time link reserves the account's id only).
    const link = /https?:\/\/[^\s"'<>)]+\/authorize\?link=[\w-]+/.exec(JSON.stringify(result.content))?.[0];
    expect(link, JSON.stringify(result.content)).toBeDefined();
    const page = await (await fetch(link!)).text();
    expect(page).toContain('For <strong>bob@example.com</strong>');
    const listed = await api('GET', `/v1/connected-accounts?identifier=${encodeURIComponent('bob@example.com')}`);
    expect(JSON.stringify(listed)).not.toContain('bob@example.com');
    await client.close();
  });

  it('refuses an http issuer whose host is not in UPSTREAM_ALLOWED_HOSTS, naming the field', async () => {
    const res = await fetch(`${svc.url}/v1/mcp-servers/${serverB.id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ oauth_identity_provider: { issuer: 'http://idp.internal.example', client_id: 'x' } }),
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { details: { field: string }[] } };
    expect(body.error.details[0]!.field).toBe('oauth_identity_provider.issuer');
    // Nothing changed: the server's own provider is still the one set before.
    const after = await api('GET', `/v1/mcp-servers/${serverB.id}`);
    expect((after.oauth_identity_provider as { identifier_claim: string }).identifier_claim).toBe('email');
  });
});

describe('the authorization endpoint', () => {
  it('sends a foreign resource back to the client as invalid_target, with iss', async () => {
    const u = new URL(`${svc.url}/oauth/mcp/authorize`);
    u.search = new URLSearchParams({
      response_type: 'code',
      client_id: cimdUrl,
      redirect_uri: REDIRECT,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      resource: 'https://elsewhere.example/mcp',
      state: 's1',
    }).toString();
    const res = await fetch(u, { redirect: 'manual' });
    expect(res.status).toBe(302);
    const back = new URL(res.headers.get('location')!);
    expect(back.searchParams.get('error')).toBe('invalid_target');
    expect(back.searchParams.get('state')).toBe('s1');
    expect(back.searchParams.get('iss')).toBe(svc.url);
  });

  it('refuses a plain PKCE method', async () => {
    const u = new URL(`${svc.url}/oauth/mcp/authorize`);
    u.search = new URLSearchParams({
      response_type: 'code',
      client_id: cimdUrl,
      redirect_uri: REDIRECT,
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'plain',
      resource: serverA.oauth_url,
    }).toString();
    const back = new URL((await fetch(u, { redirect: 'manual' })).headers.get('location')!);
    expect(back.searchParams.get('error')).toBe('invalid_request');
    expect(back.searchParams.get('error_description')).toContain('S256');
  });
});

describe('the dashboard', () => {
  it('shows the OAuth endpoint and its identity provider, refuses a bad issuer at its field, and clears the own one', async () => {
    const c = new DashboardClient(svc.url);
    expect((await c.signIn(ADMIN_PASSWORD)).status).toBe(303);
    const pathA = `/dashboard/mcp-servers/${serverA.id}`;
    const page = await c.get(pathA);
    expect(page.status).toBe(200);
    expect(page.html).toContain(serverA.oauth_url);
    expect(page.html).toContain(`the service’s identity provider (<code>${issuer}</code>)`);

    const bad = await c.submit(pathA, `${pathA}/identity-provider`, {
      issuer: 'ftp://idp.example',
      client_id: 'x',
      client_secret: '',
      identifier_claim: 'sub',
    });
    expect(bad.status).toBe(400);
    expect(bad.html).toContain('must be an https URL');
    expect((await api('GET', `/v1/mcp-servers/${serverA.id}`)).oauth_identity_provider).toBeNull();

    const pathB = `/dashboard/mcp-servers/${serverB.id}`;
    expect((await c.get(pathB)).html).toContain('Use the service’s identity provider');
    const cleared = await c.submit(pathB, `${pathB}/identity-provider`, { clear: '1' });
    expect(cleared.status).toBe(303);
    expect((await api('GET', `/v1/mcp-servers/${serverB.id}`)).oauth_identity_provider).toBeNull();
  });
});
