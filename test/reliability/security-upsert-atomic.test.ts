/**
 * An account upsert is one store transaction (issue 12, point 9): PUT /v1/connected-accounts creates the account
 * and stores its credentials together, so a failure of the second write (storing the credentials) keeps neither,
 * and no PENDING_AUTH account the client was never told about is left behind (the issue saw one after a kill -9
 * between the two writes). A new account is now one insert with its credentials, then its events in the same
 * transaction; the failure is a real one, raised by the database: a trigger refuses the events of one identifier
 * (the write after the account's), on SQLite and on PostgreSQL.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresStore } from '../../runtime/store/postgres.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { record } from './summary.ts';

const DOOMED = 'second-write-fails';
const CREDENTIALS = { domain: 'acme.zendesk.com', email: 'agent@acme.com', api_token: 'zd-atomic-token-6d2f90' };

const stores = [
  {
    kind: 'sqlite' as const,
    /** On a second connection to the service's database file: the service's connection sees the new schema. */
    failSecondWrite: (h: Harness): Promise<void> => {
      const db = new Database(join(h.dataDir, 'acs.sqlite'));
      db.exec(`CREATE TRIGGER fail_second_write BEFORE INSERT ON webhook_outbox
        WHEN NEW.payload LIKE '%${DOOMED}%'
        BEGIN SELECT RAISE(ABORT, 'injected: the second write of the upsert fails'); END`);
      db.close();
      return Promise.resolve();
    },
  },
  {
    kind: 'postgres' as const,
    failSecondWrite: async (h: Harness): Promise<void> => {
      const store = h.running.services.store as unknown as PostgresStore;
      const s = store.schema;
      await store.pool.query(`CREATE FUNCTION ${s}.fail_second_write() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'injected: the second write of the upsert fails'; END $$`);
      await store.pool.query(`CREATE TRIGGER fail_second_write BEFORE INSERT ON ${s}.webhook_outbox
        FOR EACH ROW WHEN (NEW.payload LIKE '%${DOOMED}%') EXECUTE FUNCTION ${s}.fail_second_write()`);
    },
  },
];

let tried = 0;
let failed = 0;
afterAll(() =>
  record({
    category: 'faults injected',
    what: 'account upsert whose second write fails (SQLite, PostgreSQL): nothing kept',
    tried,
    failed,
  }),
);

describe.each(stores)('account upsert on $kind', ({ kind, failSecondWrite }) => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ store: kind, env: { LOG_LEVEL: 'silent' } });
    await h.client.createConnection({ connection_name: 'desk', connector: 'helpdesk' });
    await failSecondWrite(h);
  });
  afterAll(async () => {
    await h?.close();
  });

  it('keeps no PENDING_AUTH account when storing the credentials fails', async ({ onTestFailed }) => {
    tried++;
    onTestFailed(() => void failed++);
    await expect(
      h.client.upsertConnectedAccount({ connectionName: 'desk', identifier: DOOMED, credentials: CREDENTIALS }),
    ).rejects.toMatchObject({ status: 500 });
    const connection = await h.running.services.store.getConnectionByName('desk');
    expect(await h.running.services.store.findAccount(connection!.id, DOOMED)).toBeUndefined();
    const listed = await h.client.listConnectedAccounts({ connectionName: 'desk' });
    expect(listed.connected_accounts.map((a) => a.identifier)).not.toContain(DOOMED);
    // The same request for another identifier is stored whole: the trigger is what failed, not the upsert.
    const ok = await h.client.upsertConnectedAccount({
      connectionName: 'desk',
      identifier: 'another-user',
      credentials: CREDENTIALS,
    });
    expect(ok.status).toBe('ACTIVE');
  });
});
