/**
 * The account list's cursor through the HTTP API, on both stores: a cursor from a previous page continues the
 * list, and one no page produced is a 400 naming the `cursor` field (the store's InvalidCursor), not a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorServiceError } from '../../packages/client/src/index.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

describe.each(['sqlite', 'postgres'] as const)('GET /v1/connected-accounts on %s', (store) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ store });
    await h.client.createConnection({ connection_name: 'helpdesk', connector: 'helpdesk' });
    for (let i = 0; i < 5; i++)
      await h.client.getOrCreateConnectedAccount({ connectionName: 'helpdesk', identifier: `user-${i}` });
  });
  afterAll(async () => h?.close());

  it('continues from a cursor of a previous page', async () => {
    const first = await h.client.listConnectedAccounts({ limit: 3 });
    expect(first.next_cursor).toEqual(expect.any(String));
    const rest = await h.client.listConnectedAccounts({ limit: 3, cursor: first.next_cursor! });
    expect([...first.connected_accounts, ...rest.connected_accounts].map((a) => a.identifier).sort()).toEqual([
      'user-0',
      'user-1',
      'user-2',
      'user-3',
      'user-4',
    ]);
    expect(rest.next_cursor).toBeNull();
  });

  it('refuses a cursor no page produced with a 400 naming the field', async () => {
    const e = await h.client.listConnectedAccounts({ cursor: 'not-a-cursor' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ConnectorServiceError);
    expect(e).toMatchObject({ status: 400, code: 'invalid_input', details: [{ field: 'cursor' }] });
  });
});
