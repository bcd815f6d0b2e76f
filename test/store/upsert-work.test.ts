/**
 * What one upsert writes (issue 35, upserts per second), counted: a new account is one insert into the accounts,
 * ACTIVE with its sealed credentials, and one outbox statement for its two events (created, then active); an
 * existing one is one update and one event. On both databases, through the HTTP API.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { recordStatements } from '../helpers/statements.ts';

const harnesses: Harness[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.close();
});

const writes = (statements: Array<{ sql: string }>, table: string) =>
  statements.filter((s) => new RegExp(`^\\s*(insert into|update|delete from) "?${table}"?\\b`, 'i').test(s.sql));

const inserts = (statements: Array<{ sql: string; params: unknown[] }>, table: string) =>
  statements.filter((s) => new RegExp(`^\\s*insert into "?${table}"?\\b`, 'i').test(s.sql));

describe.each(['sqlite', 'postgres'] as const)('an upsert (%s)', (store) => {
  it('writes a new account once, and both its events in one statement', async () => {
    const h = await startHarness({ store });
    harnesses.push(h);
    await h.client.createConnection({ connection_name: 'keys', connector: 'scraper' });

    const recording = recordStatements();
    const created = await h.client.upsertConnectedAccount({
      connectionName: 'keys',
      identifier: 'user-1',
      credentials: { token: 'tok-first' },
    });
    const first = [...recording.statements];
    recording.statements.length = 0;
    const updated = await h.client.upsertConnectedAccount({
      connectionName: 'keys',
      identifier: 'user-1',
      credentials: { token: 'tok-second' },
    });
    const second = [...recording.statements];
    recording.stop();

    expect(created.status).toBe('ACTIVE');
    expect(updated.id).toBe(created.id);
    expect(writes(first, 'connected_accounts').map((s) => s.sql.trim().slice(0, 6).toLowerCase())).toEqual(['insert']);
    // (The webhook worker's fan-out may delete them meanwhile: only inserts count here.)
    const outbox = inserts(first, 'webhook_outbox');
    expect(outbox).toHaveLength(1);
    expect(JSON.stringify(outbox[0]!.params)).toMatch(/connected_account\.created.*connected_account\.active/);
    expect(writes(second, 'connected_accounts').map((s) => s.sql.trim().slice(0, 6).toLowerCase())).toEqual([
      'insert',
      'update',
    ]);
    expect(inserts(second, 'webhook_outbox')).toHaveLength(1);

    // The credentials of a new account open under its own id (they are sealed before the insert gives it).
    const accounts = h.running.services.accounts;
    await h.client.upsertConnectedAccount({
      connectionName: 'keys',
      identifier: 'user-2',
      credentials: { token: 'tok-new' },
    });
    const live = await accounts.live(await accounts.resolve({ connectionName: 'keys', identifier: 'user-2' }));
    expect(live.secrets).toEqual({ token: 'tok-new' });
    const again = await accounts.live(await accounts.resolve({ connectionName: 'keys', identifier: 'user-1' }));
    expect(again.secrets).toEqual({ token: 'tok-second' });
    expect(again.account.version).toBe(2);
  });
});
