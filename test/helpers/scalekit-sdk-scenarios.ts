/**
 * What Scalekit's official Node SDK (`@scalekit-sdk/node`), unchanged, must be able to do against this service:
 * one list of scenarios, run in order, over whichever transport the envUrl picks — cleartext HTTP/2 (h2c) for
 * `http://`, h2 negotiated over TLS for `https://` (test/e2e/scalekit-sdk*.test.ts).
 *
 * The scenarios need only the client side (the SDK, the client library, a browser's fetch), so that they can run
 * in a process of their own that trusts a test CA the way a real client does (NODE_EXTRA_CA_CERTS); what the server
 * side set up (the fake desk's tenant, the OAuth client at the fake authorization server, the provider API) comes
 * in as plain data.
 */
import { create } from '@bufbuild/protobuf';
import { ScalekitClient } from '@scalekit-sdk/node';
import {
  AuthorizationDetailsSchema,
  StaticAuthSchema,
} from '@scalekit-sdk/node/lib/pkg/grpc/scalekit/v1/connected_accounts/connected_accounts_pb.js';
import { expect } from 'vitest';
import { AgentConnectorClient } from '../../packages/client/src/index.ts';
import { followAuthorizationLink } from './harness.ts';

export const DESK_DOMAIN = 'acme.zendesk.com';
export const DESK_EMAIL = 'agent@acme.com';
export const DESK_TOKEN = 'zd-api-token-sdk-4b1d';
export const RETURN_ORIGIN = 'https://app.client.example';

/** What the server side of a run set up: the service, and the fakes its connections point at. */
export interface ServerSide {
  envUrl: string;
  clientId: string;
  clientSecret: string;
  /** The fake desk's API base URL template (one tenant: DESK_DOMAIN, DESK_EMAIL, DESK_TOKEN). */
  deskBaseUrlTemplate: string;
  /** The fake authorization server, and an OAuth client registered there for the `mail` connection. */
  oauth: { authorizeUrl: string; tokenUrl: string; clientId: string; clientSecret: string };
  /** A provider API whose GET /v1.0/me answers `{ id }` of the token's user. */
  mailApiUrl: string;
}

export interface ClientSide {
  server: ServerSide;
  sk: ScalekitClient;
  client: AgentConnectorClient;
}

/** The SDK for `server`, and the client library: `client`, or one of its own. */
export function clientSide(server: ServerSide, client?: AgentConnectorClient): ClientSide {
  return {
    server,
    sk: new ScalekitClient(server.envUrl, server.clientId, server.clientSecret),
    client:
      client ??
      new AgentConnectorClient({ clientId: server.clientId, clientSecret: server.clientSecret, envUrl: server.envUrl }),
  };
}

/** The two connections the scenarios use, created through the client library: `helpdesk` (API key) and `mail`. */
export async function createConnections(c: ClientSide): Promise<void> {
  await c.client.createConnection({
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: c.server.deskBaseUrlTemplate,
  });
  await c.client.createConnection({
    connection_name: 'mail',
    connector: 'mail',
    client_id: c.server.oauth.clientId,
    client_secret: c.server.oauth.clientSecret,
    api_base_url: c.server.mailApiUrl,
    oauth: { authorize_url: c.server.oauth.authorizeUrl, token_url: c.server.oauth.tokenUrl },
  });
}

/** The SDK's exception for a promise, or a failure if it resolved. */
async function sdkError(p: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(Error);
  return e as Error & Record<string, unknown>;
}

export interface Scenario {
  name: string;
  run(c: ClientSide): Promise<void>;
}

/** In order: later scenarios use the accounts earlier ones created. */
export const sdkScenarios: Scenario[] = [
  {
    name: 'gets or creates an account with static credentials, fetching its token lazily',
    async run({ sk }) {
      const created = await sk.actions.getOrCreateConnectedAccount({
        connectionName: 'helpdesk',
        identifier: 'user-1',
        authorizationDetails: create(AuthorizationDetailsSchema, {
          details: {
            case: 'staticAuth',
            value: create(StaticAuthSchema, {
              details: { domain: DESK_DOMAIN, email: DESK_EMAIL, api_token: DESK_TOKEN },
            }),
          },
        }),
      });
      expect(created.connectedAccount).toMatchObject({
        identifier: 'user-1',
        connector: 'helpdesk',
        provider: 'helpdesk',
      });
      expect(created.connectedAccount!.status).toBe(1); // ACTIVE
      // The stored key is never echoed back.
      expect(
        JSON.stringify(created.connectedAccount, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)),
      ).not.toContain(DESK_TOKEN);
      const again = await sk.actions.getOrCreateConnectedAccount({ connectionName: 'helpdesk', identifier: 'user-1' });
      expect(again.connectedAccount!.id).toBe(created.connectedAccount!.id);
      const got = await sk.actions.getConnectedAccount({ connectionName: 'helpdesk', identifier: 'user-1' });
      expect(got.connectedAccount!.id).toBe(created.connectedAccount!.id);
    },
  },
  {
    name: 'executes a tool against the fake desk',
    async run({ sk }) {
      const res = await sk.actions.executeTool({
        toolName: 'helpdesk_tickets_list',
        connector: 'helpdesk',
        identifier: 'user-1',
        toolInput: { per_page: 2, sort_order: 'asc' },
      });
      expect(res.executionId).toMatch(/^exe_/);
      expect((res.data as { tickets: unknown[] }).tickets).toHaveLength(2);
    },
  },
  {
    name: 'proxies a raw request with the account credentials',
    async run({ sk }) {
      const res = await sk.actions.request({
        connectionName: 'helpdesk',
        identifier: 'user-1',
        path: '/v2/tickets',
      });
      expect(res.status).toBe(200);
      expect((res.data as { tickets: unknown[] }).tickets.length).toBeGreaterThan(0);
    },
  },
  {
    name: 'lists accounts, connections and tools',
    async run({ sk }) {
      const accounts = await sk.actions.listConnectedAccounts({ connectionName: 'helpdesk' });
      expect(accounts.connectedAccounts.map((a) => a.identifier)).toContain('user-1');
      const connections = await sk.actions.listConnections();
      expect(connections.connections.map((c) => c.connectionName).sort()).toEqual(['helpdesk', 'mail']);
      const tools = await sk.tools.listTools({ filter: { provider: 'helpdesk', summary: true } as never });
      expect(tools.toolNames).toContain('helpdesk_ticket_get');
      const available = await sk.tools.listAvailableTools('user-1');
      expect(available.tools.every((t) => t.provider === 'helpdesk')).toBe(true);
      expect(available.tools.length).toBeGreaterThan(5);
      const scoped = await sk.tools.listScopedTools('user-1', { filter: { connectionNames: ['helpdesk'] } });
      expect(scoped.tools.length).toBe(available.tools.length);
      expect(scoped.tools[0]).toMatchObject({
        identifier: 'user-1',
        connectedAccountId: expect.stringMatching(/^ca_/),
      });
      // The SDK's other clients have no service here: UNIMPLEMENTED.
      const other = await sdkError(sk.organization.listOrganization({ pageSize: 1 }));
      expect(other.name).toBe('ScalekitNotImplementedException');
    },
  },
  {
    name: 'refuses invalid input, naming the field',
    async run({ sk }) {
      const e = await sdkError(
        sk.actions.executeTool({
          toolName: 'helpdesk_ticket_get',
          connector: 'helpdesk',
          identifier: 'user-1',
          toolInput: { ticket_id: 'abc' },
        }),
      );
      expect(e.name).toBe('ScalekitBadRequestException');
      expect(e.message).toContain('ticket_id');
      const bad = await sdkError(
        sk.actions.getOrCreateConnectedAccount({
          connectionName: 'helpdesk',
          identifier: 'user-2',
          authorizationDetails: create(AuthorizationDetailsSchema, {
            details: {
              case: 'staticAuth',
              value: create(StaticAuthSchema, { details: { domain: DESK_DOMAIN, email: DESK_EMAIL } }),
            },
          }),
        }),
      );
      expect(bad.name).toBe('ScalekitBadRequestException');
      expect(bad.message).toContain('api_token');
    },
  },
  {
    name: 'reports a provider failure as TOOL_ERROR with the execution id',
    async run({ sk }) {
      const e = await sdkError(
        sk.actions.executeTool({
          toolName: 'helpdesk_ticket_get',
          connector: 'helpdesk',
          identifier: 'user-1',
          toolInput: { ticket_id: 999999 },
        }),
      );
      expect(e.isToolError).toBe(true);
      expect(e.toolErrorCode).toBe('404');
      expect(e.executionId).toMatch(/^exe_/);
      expect(String(e.toolErrorMessage)).toContain('RecordNotFound');
    },
  },
  {
    name: 'executes a tool given the end user alone, without connector, as the SDK types allow',
    async run({ sk }) {
      // The connection is the one of the tool's connector where "user-1" has an account (POST /v1/tools/execute
      // finds it the same way).
      const res = await sk.actions.executeTool({
        toolName: 'helpdesk_tickets_list',
        identifier: 'user-1',
        toolInput: { per_page: 1 },
      });
      expect(res.executionId).toMatch(/^exe_/);
      expect((res.data as { tickets: unknown[] }).tickets).toHaveLength(1);
      // Nobody by that identifier on a connection of the tool's connector: NOT_FOUND naming what was looked for.
      const nobody = await sdkError(
        sk.actions.executeTool({ toolName: 'helpdesk_tickets_list', identifier: 'nobody', toolInput: {} }),
      );
      expect(nobody.name).toBe('ScalekitNotFoundException');
      expect(nobody.message).toContain('No connected account "nobody"');
      // Neither an account id nor an identifier: INVALID_ARGUMENT naming the field.
      const neither = await sdkError(sk.actions.executeTool({ toolName: 'helpdesk_tickets_list', toolInput: {} }));
      expect(neither.name).toBe('ScalekitBadRequestException');
      expect(neither.message).toContain('identifier');
    },
  },
  {
    name: 'lists accounts page by page, totalSize counting every account the filters match',
    async run({ sk }) {
      const names = ['page-a', 'page-b', 'page-c', 'page-d', 'page-e'];
      for (const identifier of names)
        await sk.actions.getOrCreateConnectedAccount({ connectionName: 'helpdesk', identifier });
      const seen: string[] = [];
      let pageToken: string | undefined;
      do {
        const page = await sk.actions.listConnectedAccounts({
          connectionName: 'helpdesk',
          query: 'page-',
          pageSize: 2,
          pageToken,
        });
        expect(page.connectedAccounts.length).toBeLessThanOrEqual(2);
        expect(page.totalSize).toBe(names.length);
        seen.push(...page.connectedAccounts.map((a) => a.identifier));
        pageToken = page.nextPageToken || undefined;
      } while (pageToken);
      expect(seen.sort()).toEqual(names);
      // Without the query: every helpdesk account ("user-1" besides these), still counted beyond the page.
      const all = await sk.actions.listConnectedAccounts({ connectionName: 'helpdesk', pageSize: 1 });
      expect(all.connectedAccounts).toHaveLength(1);
      expect(all.totalSize).toBe(names.length + 1);
      const one = await sk.actions.listConnectedAccounts({ identifier: 'page-c', pageSize: 1 });
      expect(one.totalSize).toBe(1);
      for (const identifier of names)
        await sk.actions.deleteConnectedAccount({ connectionName: 'helpdesk', identifier });
      expect((await sk.actions.listConnectedAccounts({ connectionName: 'helpdesk', query: 'page-' })).totalSize).toBe(
        0,
      );
    },
  },
  {
    name: 'gives an authorization link for an OAuth connection, and a PENDING_AUTH account before it is used',
    async run({ sk }) {
      const { link, expiry } = await sk.actions.getAuthorizationLink({ connectionName: 'mail', identifier: 'alice' });
      expect(link).toContain('/sso/v1/oauth/');
      expect(expiry).toBeDefined();
      const pending = await sk.actions.getConnectedAccount({ connectionName: 'mail', identifier: 'alice' });
      expect(pending.connectedAccount!.status).toBe(3); // PENDING_AUTH
      expect((await followAuthorizationLink(link, 'alice-at-provider')).status).toBe(200);
      const active = await sk.actions.getConnectedAccount({ connectionName: 'mail', identifier: 'alice' });
      expect(active.connectedAccount!.status).toBe(1);
      const me = await sk.actions.request({ connectionName: 'mail', identifier: 'alice', path: '/v1.0/me' });
      expect(me.data).toEqual({ id: 'alice-at-provider' });
    },
  },
  {
    name: "withholds an OAuth account's access token: accessToken and refreshToken are empty, the proxy uses them",
    async run({ sk }) {
      // This service never returns a provider credential (SECURITY.md, "No secrets out"; docs/from-scalekit.md):
      // the account's status, scopes and expiry come back, the tokens do not. Calls go through request/executeTool.
      const { connectedAccount } = await sk.actions.getConnectedAccount({
        connectionName: 'mail',
        identifier: 'alice',
      });
      expect(connectedAccount!.status).toBe(1);
      const details = connectedAccount!.authorizationDetails!.details;
      expect(details.case).toBe('oauthToken');
      const token = details.value as { accessToken: string; refreshToken: string; scopes: string[] };
      expect(token.accessToken).toBe('');
      expect(token.refreshToken).toBe('');
      expect(connectedAccount!.tokenExpiresAt).toBeDefined();
      const me = await sk.actions.request({ connectionName: 'mail', identifier: 'alice', path: '/v1.0/me' });
      expect(me.data).toEqual({ id: 'alice-at-provider' });
    },
  },
  {
    name: 'verifies the user after OAuth when the link carries a user_verify_url',
    async run({ sk }) {
      const { link } = await sk.actions.getAuthorizationLink({
        connectionName: 'mail',
        identifier: 'bob',
        userVerifyUrl: `${RETURN_ORIGIN}/verify`,
      });
      const back = await followAuthorizationLink(link, 'bob-at-provider');
      expect(back.status).toBe(302);
      const authRequestId = new URL(back.headers.get('location')!).searchParams.get('auth_request_id')!;
      const pending = await sk.actions.getConnectedAccount({ connectionName: 'mail', identifier: 'bob' });
      expect(pending.connectedAccount!.status).toBe(4); // PENDING_VERIFICATION
      const notYet = await sdkError(
        sk.actions.request({ connectionName: 'mail', identifier: 'bob', path: '/v1.0/me' }),
      );
      expect(notYet._errDetails).toMatchObject({ error: { code: 'account_pending_verification' } });
      const wrong = await sdkError(sk.actions.verifyConnectedAccountUser({ authRequestId: 'nope', identifier: 'bob' }));
      expect(wrong.name).toBe('ScalekitNotFoundException');
      await sk.actions.verifyConnectedAccountUser({ authRequestId, identifier: 'bob' });
      const active = await sk.actions.getConnectedAccount({ connectionName: 'mail', identifier: 'bob' });
      expect(active.connectedAccount!.status).toBe(1);
    },
  },
  {
    name: 'deletes an account; getting it then answers not found',
    async run({ sk }) {
      await sk.actions.getOrCreateConnectedAccount({ connectionName: 'helpdesk', identifier: 'gone' });
      await sk.actions.deleteConnectedAccount({ connectionName: 'helpdesk', identifier: 'gone' });
      const e = await sdkError(sk.actions.getConnectedAccount({ connectionName: 'helpdesk', identifier: 'gone' }));
      expect(e.name).toBe('ScalekitNotFoundException');
    },
  },
  {
    name: 'answers UNAUTHENTICATED to a call without or with a bad token, and the SDK recovers with a new one',
    async run({ server }) {
      const fresh = new ScalekitClient(server.envUrl, server.clientId, server.clientSecret);
      (fresh as unknown as { coreClient: { accessToken: string } }).coreClient.accessToken = 'not-a-token';
      const list = await fresh.actions.listConnectedAccounts({ connectionName: 'helpdesk' });
      expect(list.connectedAccounts.length).toBeGreaterThan(0);
      const wrongSecret = new ScalekitClient(server.envUrl, server.clientId, 'wrong-secret');
      const e = await sdkError(wrongSecret.actions.listConnectedAccounts({ connectionName: 'helpdesk' }));
      expect(e.message).toMatch(/401|invalid_client|Unauthorized/i);
    },
  },
  {
    name: 'serves HTTP/1.1 clients on the same port: health, the client library, a proxied call',
    async run({ server, client }) {
      const health = await fetch(`${server.envUrl}/health`);
      expect(health.status).toBe(200);
      const [first] = (await client.listConnectedAccounts({ connectionName: 'helpdesk' })).connected_accounts;
      expect((await client.getConnectedAccount(first!.id)).connection_name).toBe('helpdesk');
      const token = (await (
        await fetch(`${server.envUrl}/oauth/token`, {
          method: 'POST',
          body: new URLSearchParams({
            grant_type: 'client_credentials',
            client_id: server.clientId,
            client_secret: server.clientSecret,
          }),
        })
      ).json()) as { access_token: string };
      // The proxy route as the SDK's `request` calls it (headers connection_name and identifier), by plain fetch.
      const proxied = await fetch(`${server.envUrl}/proxy/v2/tickets`, {
        headers: { authorization: `Bearer ${token.access_token}`, connection_name: 'helpdesk', identifier: 'user-1' },
      });
      expect(proxied.status).toBe(200);
      expect(((await proxied.json()) as { tickets: unknown[] }).tickets.length).toBeGreaterThan(0);
    },
  },
];
