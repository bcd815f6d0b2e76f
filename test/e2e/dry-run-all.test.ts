/**
 * A dry run of every tool in the registry, through the HTTP API: the service returns exactly the
 * upstream request(s) the tool's YAML example states, sends nothing, and redacts every credential.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectors, tools } from '../../generated/registry.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { fieldValue } from '../helpers/tools.ts';

let h: Harness;
const SECRET = 'dry-run-secret-value-do-not-leak';

beforeAll(async () => {
  h = await startHarness();
  for (const c of connectors.values()) {
    const auth = c.auth[0]!;
    await h.client.createConnection({
      connection_name: c.name,
      connector: c.name,
      ...(auth.kind === 'oauth2' ? { client_id: 'dry-run-client', client_secret: SECRET } : {}),
    });
    if ('fields' in auth) {
      const credentials = Object.fromEntries(auth.fields.map((f) => [f.name, fieldValue(f, c.exampleFields, SECRET)]));
      await h.client.upsertConnectedAccount({ connectionName: c.name, identifier: 'dry', credentials });
    } else {
      // An OAuth account needs no tokens for a dry run; token-response fields the examples assume are set directly.
      const a = await h.client.getOrCreateConnectedAccount({ connectionName: c.name, identifier: 'dry' });
      if (Object.keys(c.exampleFields).length) {
        const stored = (await h.running.services.store.getAccount(a.id))!;
        await h.running.services.store.updateAccount(
          a.id,
          { fields: { ...c.exampleFields } },
          Date.now(),
          stored.version,
        );
      }
    }
  }
});
afterAll(async () => h?.close());

describe.each([...connectors.values()].map((c) => [c.name, c] as const))('%s', (name, connector) => {
  it.each(connector.toolNames.map((t) => [t]))('%s', async (toolName) => {
    const tool = tools.get(toolName)!;
    for (const example of tool.examples) {
      const { data } = await h.client.executeTool({
        toolName: toolName as never,
        toolInput: example.input as never,
        connectionName: name,
        identifier: 'dry',
        dryRun: true,
      });
      const { requests } = data as {
        requests: Array<{ method: string; url: string; headers: Record<string, string>; body?: unknown }>;
      };
      expect(requests.map((r) => `${r.method} ${r.url}`)).toEqual(example.requests.map((r) => `${r.method} ${r.url}`));
      requests.forEach((r, i) => expect(r.body).toEqual(example.requests[i]!.body));
      expect(JSON.stringify(data)).not.toContain(SECRET);
    }
  });
});

it('covers every tool of the registry', () => {
  expect([...connectors.values()].reduce((n, c) => n + c.toolNames.length, 0)).toBe(tools.size);
});
