/**
 * Activity records are written off the request path, in batches (runtime/activity.ts), and none is lost when the
 * service is stopped with SIGTERM right after answering (issue 14 point 2): the service process (as `npm start`
 * runs it) answers a burst of tool calls and proxy calls, gets SIGTERM at once, and the store holds a record of
 * every one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceEnv, TEST_CLIENT_ID, TEST_CLIENT_SECRET } from '../helpers/harness.ts';
import { spawnService, type ServiceProcess } from '../helpers/service-process.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { AgentConnectorClient } from '../../packages/client/src/index.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'acs-activity-'));
let service: ServiceProcess;
let desk: FakeDesk;

beforeAll(async () => {
  desk = await new FakeDesk().start();
  desk.addTenant('acme.zendesk.com', 'agent@acme.com', 'zd-activity-token-3e9d');
  service = await spawnService({ PATH: process.env.PATH, HOME: process.env.HOME, ...serviceEnv(dataDir) });
});

afterAll(async () => {
  if (service?.proc.exitCode === null) service.proc.kill('SIGKILL');
  await desk?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('activity records on SIGTERM', () => {
  it('are all in the store after the service stops, none lost from the batch not yet written', async () => {
    const client = new AgentConnectorClient({
      clientId: TEST_CLIENT_ID,
      clientSecret: TEST_CLIENT_SECRET,
      envUrl: service.url,
    });
    await client.createConnection({
      connection_name: 'helpdesk',
      connector: 'helpdesk',
      api_base_url: desk.baseUrlTemplate,
    });
    const who = { connectionName: 'helpdesk', identifier: 'user-1' };
    await client.upsertConnectedAccount({
      ...who,
      credentials: { domain: 'acme.zendesk.com', email: 'agent@acme.com', api_token: 'zd-activity-token-3e9d' },
    });
    const TOOLS = 150;
    const PROXIED = 50;
    await Promise.all([
      ...Array.from({ length: TOOLS }, () =>
        client.executeTool({ toolName: 'helpdesk_tickets_list', toolInput: { per_page: 1 }, ...who }),
      ),
      ...Array.from({ length: PROXIED }, () => client.request({ ...who, method: 'GET', path: '/v2/tickets' })),
    ]);
    service.proc.kill('SIGTERM');
    expect(await service.exited).toBe(0);

    const store = new SqliteStore(join(dataDir, 'acs.sqlite'));
    try {
      const records = await store.listActivity(10_000);
      expect(records.filter((r) => r.kind === 'tool' && r.name === 'helpdesk_tickets_list')).toHaveLength(TOOLS);
      expect(records.filter((r) => r.kind === 'proxy')).toHaveLength(PROXIED);
      expect([...new Set(records.map((r) => `${r.kind} ${r.status}`))].sort()).toEqual(['proxy 200', 'tool 200']);
    } finally {
      await store.close();
    }
  });
});
