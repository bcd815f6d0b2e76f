/**
 * The address guard beyond tool calls and the proxy (group "proxy and OAuth security"): MCP requests, and the
 * OAuth requests of MCP discovery — the unauthenticated probe, the protected-resource metadata, the authorization
 * server's metadata, registration and the token endpoint — go through the upstream layer, so a host the connection
 * does not configure must resolve to public addresses. Names resolve through a resolver the test controls (as in
 * proxy-attacks.test.ts), pointing at a sentinel that must see no connection at all: no request, no credential.
 */
import { isIP } from 'node:net';
import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { FakeNotesMcp } from '../fakes/notes-mcp.ts';
import { FakeOAuthServer } from '../fakes/oauth-server.ts';
import { upstreamDns } from '../../runtime/upstream/address-guard.ts';
import { endpointsFor, registrationWriter } from '../../runtime/oauth/endpoints.ts';
import { getConnector } from '../../runtime/connectors/catalog.ts';
import { UpstreamFailure } from '../../core/errors.ts';
import { ConnectorServiceError } from '../../packages/client/src/index.ts';
import type { ConnectorDefinition } from '../../core/tool-types.ts';
import { Sentinel } from './sentinel.ts';
import { record } from './summary.ts';

const MCP_TOKEN = 'mcp-guard-access-token-8d2e';
const REFRESH_TOKEN = 'mcp-guard-refresh-token-41c7';
const originalLookup = upstreamDns.lookup;

/** The test's DNS: names nobody configured that point at loopback, where the sentinel listens. */
const DNS: Record<string, string[]> = {
  'mcp.internal.test': ['127.0.0.1'],
  'meta.internal.test': ['127.0.0.1'],
  'tokens.internal.test': ['127.0.0.1'],
};
const asked: string[] = [];

let h: Harness;
let sentinel: Sentinel;
let other: Sentinel;
const tally = { tried: 0, failed: 0 };

function attack(name: string, fn: () => Promise<void>) {
  it(name, async () => {
    tally.tried++;
    try {
      await fn();
    } catch (e) {
      tally.failed++;
      throw e;
    }
  });
}

async function refusal(p: Promise<unknown>): Promise<UpstreamFailure> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(UpstreamFailure);
  expect((e as UpstreamFailure).code).toBe('upstream_host_not_public');
  return e as UpstreamFailure;
}

beforeAll(async () => {
  h = await startHarness({ env: { LOG_LEVEL: 'warn' } });
  sentinel = await new Sentinel().start();
  other = await new Sentinel().start();
  upstreamDns.lookup = ((
    hostname: string,
    options: unknown,
    cb: (e: NodeJS.ErrnoException | null, a: LookupAddress[]) => void,
  ) => {
    asked.push(hostname);
    const addresses = DNS[hostname];
    if (!addresses) return (originalLookup as (...a: unknown[]) => void)(hostname, options, cb);
    cb(
      null,
      addresses.map((address) => ({ address, family: isIP(address) })),
    );
  }) as never;
});

afterAll(async () => {
  upstreamDns.lookup = originalLookup;
  record({ category: 'attacks tried', what: 'address guard on MCP requests and OAuth/MCP discovery', ...tally });
  await sentinel?.close();
  await other?.close();
  await h?.close();
});

describe('MCP requests', () => {
  attack(
    'to a host the connection does not configure are refused unless it is public: no connection, no token',
    async () => {
      const s = h.running.services;
      await h.client.createConnection({
        connection_name: 'notes-guard',
        connector: 'notes',
        oauth: { resource: `${sentinel.url}/mcp` },
      });
      await h.client.upsertConnectedAccount({
        connectionName: 'notes-guard',
        identifier: 'u',
        credentials: { access_token: MCP_TOKEN },
      });
      const live = await s.accounts.live(await s.accounts.resolve({ connectionName: 'notes-guard', identifier: 'u' }));

      const lookups = asked.length;
      const byName = `http://mcp.internal.test:${sentinel.port}/mcp`;
      const e = await refusal(s.upstream.callMcpTool(live, byName, 'list_meetings', {}));
      expect(e.message).toContain('mcp.internal.test resolves to an address that is not public');
      await refusal(s.upstream.listMcpTools(live, byName));
      // The refusal came from the lookup the socket would have used.
      expect(asked.slice(lookups)).toContain('mcp.internal.test');
      // An address literal outside the public internet, on a port the connection does not name, never gets a lookup.
      await refusal(s.upstream.callMcpTool(live, `${other.url}/mcp`, 'list_meetings', {}));
      expect(sentinel.connections + other.connections).toBe(0);

      // The host the connection configures is reached, with the account's token: the refusals above were the guard's.
      const reached = await s.upstream.callMcpTool(live, `${sentinel.url}/mcp`, 'list_meetings', {}).catch((x) => x);
      expect((reached as UpstreamFailure).code).toBe('provider_malformed_response'); // a sentinel is no MCP server
      expect(sentinel.requests.map((r) => r.method)).toEqual(['POST']);
      expect(sentinel.headerValues('authorization')).toEqual([`Bearer ${MCP_TOKEN}`]);
      sentinel.requests.length = 0;
      sentinel.connections = 0;
    },
  );
});

describe('MCP discovery', () => {
  attack('refuses protected-resource metadata that a 401 challenge places on a host nobody configured', async () => {
    const resource = await new Sentinel().start();
    const metadataUrl = `http://meta.internal.test:${sentinel.port}/.well-known/oauth-protected-resource/mcp`;
    resource.respond = () => ({
      status: 401,
      headers: { 'www-authenticate': `Bearer error="invalid_token", resource_metadata="${metadataUrl}"` },
      body: '{"error":"invalid_token"}',
    });
    try {
      await h.client.createConnection({
        connection_name: 'notes-meta',
        connector: 'notes',
        oauth: { resource: `${resource.url}/mcp` },
      });
      const lookups = asked.length;
      const { link } = await h.client.getAuthorizationLink({ connectionName: 'notes-meta', identifier: 'u' });
      const start = await fetch(link, { redirect: 'manual' });
      expect(start.status).toBe(502);
      expect(await start.text()).toContain('meta.internal.test resolves to an address that is not public');
      expect(asked.slice(lookups)).toContain('meta.internal.test');
      // The configured resource got the unauthenticated probe, the SDK's initialize; the named host got nothing.
      expect(resource.requests.map((r) => JSON.parse(r.body.toString()).method)).toEqual(['initialize']);
      expect(sentinel.connections).toBe(0);
    } finally {
      await resource.close();
    }
  });

  attack(
    "refuses the authorization server a connector's resource names unless it is public; trusts the one of an operator's resource",
    async () => {
      const mcp = await new FakeNotesMcp().start();
      const as = await new FakeOAuthServer({ discovery: true, requireResource: mcp.mcpUrl }).start();
      mcp.authorizationServer = as;
      try {
        const s = h.running.services;
        const deps = {
          sealer: s.sealer,
          publicUrl: s.config.publicUrl,
          upstreamAllowedHosts: s.config.upstreamAllowedHosts,
          updateRegistration: registrationWriter(s.store, (id) => s.accounts.invalidateConnection(id)),
        };
        // The connector itself names the MCP server (as notes names Granola's): what that server's metadata names
        // is not configured by anyone, and here it is a loopback address.
        const notes = getConnector('notes')!;
        const connector: ConnectorDefinition = {
          ...notes,
          auth: notes.auth.map((a) => (a.kind === 'oauth2_mcp' ? { ...a, resource: mcp.mcpUrl } : a)),
          api: { ...notes.api, base_url: mcp.mcpUrl },
        };
        await h.client.createConnection({ connection_name: 'notes-default', connector: 'notes' });
        const byConnector = (await s.store.getConnectionByName('notes-default'))!;
        const e = await refusal(endpointsFor(connector, byConnector, deps));
        expect(e.message).toContain(`${new URL(as.url).hostname} is not a public address`);
        expect(mcp.metadataRequests).toBe(1);
        expect(as.requests).toEqual([]);

        // The operator names the MCP server: the authorization server it names is the operator's too.
        await h.client.createConnection({
          connection_name: 'notes-operator',
          connector: 'notes',
          oauth: { resource: mcp.mcpUrl },
        });
        const byOperator = (await s.store.getConnectionByName('notes-operator'))!;
        const ep = await endpointsFor(notes, byOperator, deps);
        expect(ep.as.token_endpoint).toBe(as.tokenUrl);
        expect(as.requests).toEqual(['GET /.well-known/oauth-authorization-server', 'POST /register']);
      } finally {
        await as.close();
        await mcp.close();
      }
    },
  );

  attack('never sends a refresh token to a token endpoint on a host nobody configured', async () => {
    const mcp = await new FakeNotesMcp().start();
    const as = await new FakeOAuthServer({
      discovery: true,
      requireResource: mcp.mcpUrl,
      advertise: { token_endpoint: `http://tokens.internal.test:${sentinel.port}/token` },
    }).start();
    mcp.authorizationServer = as;
    try {
      await h.client.createConnection({
        connection_name: 'notes-tokens',
        connector: 'notes',
        oauth: { resource: mcp.mcpUrl },
      });
      await h.client.upsertConnectedAccount({
        connectionName: 'notes-tokens',
        identifier: 'u',
        credentials: { access_token: 'at-the-server-never-issued', refresh_token: REFRESH_TOKEN },
      });
      const lookups = asked.length;
      // The MCP server refuses the token (401); the refresh that follows discovers the token endpoint.
      const e = await h.client
        .executeTool({
          toolName: 'notes_list_meetings',
          toolInput: {},
          connectionName: 'notes-tokens',
          identifier: 'u',
        })
        .catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ConnectorServiceError);
      expect((e as ConnectorServiceError).code).toBe('upstream_host_not_public');
      expect((e as ConnectorServiceError).message).toContain(
        'tokens.internal.test resolves to an address that is not public',
      );
      expect(mcp.unauthorized).toBe(2); // the discovery probe, and the tool call
      expect(as.counts.register).toBe(1);
      expect(asked.slice(lookups)).toContain('tokens.internal.test');
      expect(sentinel.connections).toBe(0);
      expect(as.tokenRequests).toEqual([]);
      expect(h.logs.join('')).not.toContain(REFRESH_TOKEN);
    } finally {
      await as.close();
      await mcp.close();
    }
  });
});

describe('MCP discovery to private address literals', () => {
  // The addresses tool calls refuse (test/reliability/proxy-attacks.test.ts), named by what MCP discovery reads: the
  // loopback address on a port no connection configures, the same address IPv4-mapped in IPv6, the cloud metadata
  // address. `other` listens on that loopback port and must see no connection.
  const targets = (): Record<string, string> => ({
    'loopback on a port nobody configured': `http://127.0.0.1:${other.port}`,
    'IPv4-mapped loopback': `http://[::ffff:7f00:1]:${other.port}`,
    'the cloud metadata address': 'http://169.254.169.254',
  });
  const refusedAs: Record<string, string> = {
    'loopback on a port nobody configured': '127.0.0.1 is not a public address',
    'IPv4-mapped loopback': '::ffff:7f00:1 is not a public address',
    'the cloud metadata address': '169.254.169.254 is not a public address',
  };

  /** A connection whose MCP resource (the operator's, so trusted) answers as `respond` says; opens its link. */
  async function discover(
    name: string,
    respond: Sentinel['respond'],
  ): Promise<{ status: number; text: string; resource: Sentinel }> {
    const resource = await new Sentinel().start();
    resource.respond = respond;
    await h.client.createConnection({
      connection_name: name,
      connector: 'notes',
      oauth: { resource: `${resource.url}/mcp` },
    });
    const { link } = await h.client.getAuthorizationLink({ connectionName: name, identifier: 'u' });
    const start = await fetch(link, { redirect: 'manual' });
    const text = await start.text();
    await resource.close();
    return { status: start.status, text, resource };
  }

  for (const name of ['loopback on a port nobody configured', 'IPv4-mapped loopback', 'the cloud metadata address']) {
    attack(`refuses protected-resource metadata a 401 challenge places at ${name}`, async () => {
      const metadataUrl = `${targets()[name]}/.well-known/oauth-protected-resource/mcp`;
      const { status, text, resource } = await discover(`notes-literal-${Object.keys(refusedAs).indexOf(name)}`, (r) =>
        r.method === 'POST'
          ? {
              status: 401,
              headers: { 'www-authenticate': `Bearer error="invalid_token", resource_metadata="${metadataUrl}"` },
              body: '{"error":"invalid_token"}',
            }
          : undefined,
      );
      expect(status).toBe(502);
      expect(text).toContain(refusedAs[name]);
      // Only the unauthenticated probe reached the configured resource; nothing reached the named address.
      expect(resource.requests.map((r) => r.method)).toEqual(['POST']);
      expect(other.connections).toBe(0);
    });

    attack(`does not follow a redirect from the configured resource's metadata to ${name}`, async () => {
      const { status, text, resource } = await discover(
        `notes-redirect-${Object.keys(refusedAs).indexOf(name)}`,
        (r): ReturnType<NonNullable<Sentinel['respond']>> => {
          // No metadata URL in the challenge: discovery tries the resource's own well-known URLs, which redirect.
          if (r.method === 'POST')
            return { status: 401, headers: { 'www-authenticate': 'Bearer error="invalid_token"' } };
          return { status: 302, headers: { location: `${targets()[name]}/.well-known/oauth-protected-resource/mcp` } };
        },
      );
      // The configured host was asked (it is trusted, whatever its address) and answered with redirects; no
      // request followed one of them, so discovery found no metadata.
      expect(status).toBe(502);
      expect(text).toContain('No OAuth protected-resource metadata');
      expect(resource.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
        'POST /mcp',
        'GET /.well-known/oauth-protected-resource/mcp',
        'GET /.well-known/oauth-protected-resource',
      ]);
      expect(other.connections).toBe(0);
    });
  }
});
