/**
 * The world the example agent acts in, all on this machine: a fake support desk and a fake mail provider (with
 * its fake OAuth server), the connector service in this process on a free port, a `helpdesk` and a `mail`
 * connection pointed at the fakes, and one end user, `jane-support`, connected to both — the mail account
 * through the real authorization flow, the desk one with an API key. Nothing here is what an agent does; it is
 * what the operator and the end user did before (see docs/http-api.md, "Calling it").
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../runtime/config.ts';
import { startServer } from '../../runtime/server.ts';
import { AgentConnectorClient } from '../../packages/client/src/index.ts';
import { FakeOAuthServer } from '../../test/fakes/oauth-server.ts';
import { startFakeGraph, type FakeGraph } from '../../test/fakes/graph.ts';
import { FakeDesk } from '../../test/fakes/desk.ts';
import { followAuthorizationLink } from '../../test/helpers/harness.ts';

export const IDENTIFIER = 'jane-support';
const DESK_DOMAIN = 'acme.zendesk.com';

export interface World {
  client: AgentConnectorClient;
  desk: FakeDesk;
  graph: FakeGraph;
  /** The ticket the customer opened about the printer. */
  ticketId: number;
  close(): Promise<void>;
}

export async function startWorld(): Promise<World> {
  const dataDir = mkdtempSync(join(tmpdir(), 'acs-agent-example-'));
  const oauth = await new FakeOAuthServer().start();
  const graph = await startFakeGraph({ validateToken: (t) => !!oauth.validate(t) });
  const desk = await new FakeDesk().start();
  const tenant = desk.addTenant(DESK_DOMAIN, 'jane@acme.com', 'desk-api-token');
  // The customer's ticket, as the customer (user 2 of the fake desk, Jane Customer) opened it.
  const now = new Date().toISOString();
  const ticketId = tenant.nextId++;
  tenant.tickets.set(ticketId, {
    id: ticketId,
    subject: 'Printer on the 3rd floor jams',
    description: 'It jams on every page since Monday.',
    status: 'open',
    priority: 'high',
    type: 'incident',
    tags: [],
    assignee_id: 1,
    group_id: null,
    requester_id: 2,
    created_at: now,
    updated_at: now,
  });
  tenant.comments.set(ticketId, [
    { id: tenant.nextId++, body: 'It jams on every page since Monday.', public: true, author_id: 2, created_at: now },
  ]);

  const clientId = 'example_client';
  const clientSecret = 'example_secret_not_for_production';
  const running = await startServer(
    loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      INITIAL_CLIENT_ID: clientId,
      INITIAL_CLIENT_SECRET: clientSecret,
      LOG_LEVEL: 'warn',
      // The fake providers listen on loopback: the connections' overrides point there, so the operator lists it.
      UPSTREAM_ALLOWED_HOSTS: '127.0.0.1,localhost,[::1]',
    }),
  );
  const client = new AgentConnectorClient({ clientId, clientSecret, envUrl: running.url });

  await client.createConnection({
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
  await client.upsertConnectedAccount({
    connectionName: 'helpdesk',
    identifier: IDENTIFIER,
    credentials: { domain: DESK_DOMAIN, email: 'jane@acme.com', api_token: 'desk-api-token' },
  });
  oauth.addClient({ client_id: 'mail-app', client_secret: 'mail-app-secret', auth: 'client_secret_post' });
  await client.createConnection({
    connection_name: 'mail',
    connector: 'mail',
    client_id: 'mail-app',
    client_secret: 'mail-app-secret',
    api_base_url: graph.url,
    oauth: { authorize_url: oauth.authorizeUrl, token_url: oauth.tokenUrl },
  });
  const { link } = await client.getAuthorizationLink({ connectionName: 'mail', identifier: IDENTIFIER });
  const callback = await followAuthorizationLink(link, IDENTIFIER);
  if (callback.status !== 200) throw new Error(`the mail authorization failed: ${callback.status}`);

  return {
    client,
    desk,
    graph,
    ticketId,
    async close() {
      await Promise.all([running.close(), oauth.close(), graph.close(), desk.close()]);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
