/**
 * `npm run demo`: the service with fake providers, so a newcomer sees it work with no provider account.
 * Starts the fake OAuth server, a fake mail provider and a fake support desk; the service on DEMO_PORT or PORT
 * (8090) with data under ./data/demo; a `mail` and a `helpdesk` connection pointed at the fakes; an
 * ACTIVE demo account on each (the mail one connected through the real authorization flow); then
 * prints the commands to try. Ctrl-C stops everything.
 */
import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadConfig } from '../runtime/config.ts';
import { startServer } from '../runtime/server.ts';
import { AgentConnectorClient } from '../packages/client/src/index.ts';
import { FakeOAuthServer } from './fakes/oauth-server.ts';
import { startFakeGraph } from './fakes/graph.ts';
import { FakeDesk } from './fakes/desk.ts';
import { followAuthorizationLink } from './helpers/harness.ts';

// PORT as for the service itself; DEMO_PORT wins when both are set (to run the demo beside a service on PORT).
const port = Number(process.env.DEMO_PORT ?? process.env.PORT ?? 8090);
const dataDir = resolve(process.env.DEMO_DATA_DIR ?? './data/demo');
const clientId = 'demo_client';
const clientSecret = 'demo_secret_do_not_use_in_production';

// The demo starts from a clean slate each time; it never touches ./data itself.
rmSync(dataDir, { recursive: true, force: true });

const oauth = await new FakeOAuthServer().start();
const graph = await startFakeGraph({ validateToken: (t) => !!oauth.validate(t) });
const desk = await new FakeDesk().start();
desk.addTenant('demo.zendesk.com', 'agent@demo.example', 'demo-desk-token');

const config = loadConfig({
  ...process.env,
  PORT: String(port),
  DATA_DIR: dataDir,
  // Port 0 (any free port): the service derives its public URL from the port it gets.
  PUBLIC_URL: process.env.PUBLIC_URL ?? (port ? `http://localhost:${port}` : undefined),
  INITIAL_CLIENT_ID: clientId,
  INITIAL_CLIENT_SECRET: clientSecret,
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  // The fake providers listen on loopback: the demo's connections point there, so the operator lists it.
  UPSTREAM_ALLOWED_HOSTS: process.env.UPSTREAM_ALLOWED_HOSTS ?? '127.0.0.1,localhost,[::1]',
});
const running = await startServer(config);
const client = new AgentConnectorClient({ clientId, clientSecret, envUrl: running.url });

oauth.addClient({ client_id: 'demo-mail-app', client_secret: 'demo-mail-app-secret', auth: 'client_secret_post' });
await client.createConnection({
  connection_name: 'mail',
  connector: 'mail',
  client_id: 'demo-mail-app',
  client_secret: 'demo-mail-app-secret',
  api_base_url: graph.url,
  oauth: { authorize_url: oauth.authorizeUrl, token_url: oauth.tokenUrl },
});
const { link } = await client.getAuthorizationLink({ connectionName: 'mail', identifier: 'demo-user' });
const callback = await followAuthorizationLink(link, 'demo-user');
if (callback.status !== 200) throw new Error(`demo authorization failed: ${callback.status} ${await callback.text()}`);

await client.createConnection({
  connection_name: 'helpdesk',
  connector: 'helpdesk',
  api_base_url: desk.baseUrlTemplate,
});
await client.upsertConnectedAccount({
  connectionName: 'helpdesk',
  identifier: 'demo-user',
  credentials: { domain: 'demo.zendesk.com', email: 'agent@demo.example', api_token: 'demo-desk-token' },
});

const accounts = await client.listConnectedAccounts({ identifier: 'demo-user' });
const base = config.publicUrl;
const token = `TOKEN=$(curl -s -u ${clientId}:${clientSecret} -d grant_type=client_credentials ${base}/oauth/token | sed -E 's/.*"access_token":"([^"]+)".*/\\1/')`;
process.stdout.write(`
Agent connector service demo is running at ${base} (fake providers, nothing leaves this machine).

Connections: mail (OAuth, fake mail provider), helpdesk (API key, fake support desk)
Demo accounts (identifier "demo-user"):
${accounts.connected_accounts.map((a) => `  ${a.connection_name.padEnd(9)} ${a.id}  ${a.status}`).join('\n')}

Try it:

  ${token}

  # list the support desk's tickets with a named tool
  curl -s -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' \\
    -d '{"tool_name":"helpdesk_tickets_list","connection_name":"helpdesk","identifier":"demo-user","tool_input":{"per_page":2}}' \\
    ${base}/v1/tools/execute

  # read the mailbox, and see what a send would do without sending (dry run)
  curl -s -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' \\
    -d '{"tool_name":"mail_list_messages","connection_name":"mail","identifier":"demo-user","tool_input":{"$top":3}}' \\
    ${base}/v1/tools/execute
  curl -s -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' \\
    -d '{"tool_name":"mail_send_message","connection_name":"mail","identifier":"demo-user","dry_run":true,"tool_input":{"toRecipients":["a@example.com"],"subject":"Hi","body":"Hello"}}' \\
    ${base}/v1/tools/execute

  # a raw proxy request: the service adds the desk credentials
  curl -s -H "Authorization: Bearer $TOKEN" -H 'connection_name: helpdesk' -H 'identifier: demo-user' ${base}/proxy/v2/tickets

  # a bad input is a 400 naming the field
  curl -s -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' \\
    -d '{"tool_name":"helpdesk_search_tickets","connection_name":"helpdesk","identifier":"demo-user","tool_input":{"query":"x","page":11}}' \\
    ${base}/v1/tools/execute

API credential: client_id=${clientId} client_secret=${clientSecret}   (Ctrl-C to stop)
Dashboard: ${base}/dashboard  (user admin, password ${(await running.services.firstAdminPassword) ?? 'from ADMIN_PASSWORD'})
`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    void Promise.all([running.close(), oauth.close(), graph.close(), desk.close()]).then(() => process.exit(0));
  });
}
