/**
 * What one upsert writes (issue 35, upserts per second), counted: a new account is one insert into the accounts,
 * ACTIVE with its sealed credentials, and one outbox statement for its two events (created, then active) — on
 * PostgreSQL both in one statement; an existing one is one update and one event, after the insert that found it.
 * On both databases, through the HTTP API.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { recordStatements } from '../helpers/statements.ts';

const harnesses: Harness[] = [];
afterAll(async () => {
  for (const h of harnesses) await h.close();
});

/** What each statement that writes `table` does to it (a statement of PostgreSQL's may write it in a WITH). */
const writes = (statements: Array<{ sql: string }>, table: string) =>
  statements.flatMap((s) => {
    const m = new RegExp(`(?:^|\\(|\\bas \\()\\s*(insert into|update|delete from) "?${table}"?\\b`, 'i').exec(s.sql);
    return m ? [m[1]!.slice(0, 6).toLowerCase()] : [];
  });

const inserts = (statements: Array<{ sql: string; params: unknown[] }>, table: string) =>
  statements.filter((s) => new RegExp(`(?:^|\\bas \\()\\s*insert into "?${table}"?\\b`, 'i').test(s.sql));

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
    expect(writes(first, 'connected_accounts')).toEqual(['insert']);
    if (store === 'postgres') {
      // The account and its events in one statement, with no transaction around it.
      const [statement] = first.filter((s) => /insert into "?connected_accounts"?/i.test(s.sql));
      expect(statement!.sql).toMatch(/insert into "?webhook_outbox"?/i);
      const before = first.indexOf(statement!) - 1;
      expect(before < 0 || !/^\s*begin\b/i.test(first[before]!.sql)).toBe(true);
    }
    // (The webhook worker's fan-out may delete them meanwhile: only inserts count here.)
    const outbox = inserts(first, 'webhook_outbox');
    expect(outbox).toHaveLength(1);
    expect(JSON.stringify(outbox[0]!.params)).toMatch(/connected_account\.created.*connected_account\.active/);
    expect(writes(second, 'connected_accounts')).toEqual(['insert', 'update']);
    // On PostgreSQL the insert that found the account carried its events too (written only for a new account).
    expect(inserts(second, 'webhook_outbox')).toHaveLength(store === 'postgres' ? 2 : 1);

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
