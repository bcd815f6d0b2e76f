/**
 * Two instances on one PostgreSQL database, 100,000 accounts on one connection (issue 35): a delete through one
 * answers at once and runs in the background; the other keeps answering meanwhile (requests it completes while the
 * deletion is still running are counted, not timed), and both see the connection gone at once and its accounts
 * gone at the end.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentConnectorClient } from '../../packages/client/src/index.ts';
import { loadConfig } from '../../runtime/config.ts';
import { startServer, type RunningServer } from '../../runtime/server.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import {
  PG_URL,
  serviceEnv,
  startHarness,
  TEST_CLIENT_ID,
  TEST_CLIENT_SECRET,
  type Harness,
} from '../helpers/harness.ts';
import { seedAccounts, tokenConnection } from '../helpers/scale.ts';

const N = 100_000;
/** A hang guard, not a time limit: seeding and deleting 100,000 rows on a shared machine. */
const HUNG_AFTER_MS = 600_000;

let a: Harness;
let b: RunningServer;
let clientB: AgentConnectorClient;
let ids: string[];

async function status(p: Promise<unknown>): Promise<number | 'ok'> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return (e as { status?: number }).status ?? -1;
  }
}

beforeAll(async () => {
  a = await startHarness({ store: 'postgres' });
  const schema = (a.running.services.store as PostgresStore).schema!;
  b = await startServer(loadConfig(serviceEnv(a.dataDir)), {
    logDestination: new Writable({ write: (_c, _e, cb) => cb() }),
    store: new PostgresStore(PG_URL, schema),
  });
  clientB = new AgentConnectorClient({ clientId: TEST_CLIENT_ID, clientSecret: TEST_CLIENT_SECRET, envUrl: b.url });
  const { store, sealer } = a.running.services;
  const big = tokenConnection('big');
  await store.createConnection(big);
  ids = await seedAccounts(store, sealer, big.id, N);
  await a.client.createConnection({ connection_name: 'other', connector: 'scraper' });
}, HUNG_AFTER_MS);

afterAll(async () => {
  await b?.close();
  await a?.close();
});

describe('two instances, 100,000 accounts, one connection deleted', () => {
  it(
    'a delete through one does not stall the other, and both see it',
    async () => {
      expect((await clientB.getConnectedAccount(ids[N - 1]!)).connection_name).toBe('big');
      const deletion = await a.client.deleteConnection('big');
      expect(deletion.status).toBe('running');
      // Gone for both at once: the name and every account, whatever the batches have reached.
      expect(await status(clientB.getConnection('big'))).toBe(404);
      expect(await status(clientB.getConnectedAccount(ids[N - 1]!))).toBe(404);
      expect(await status(a.client.getConnectedAccount(ids[N - 1]!))).toBe(404);
      // The name is free at once.
      await clientB.createConnection({ connection_name: 'big', connector: 'scraper' });

      let answeredWhileRunning = 0;
      for (let i = 0; ; i++) {
        const account = await clientB.getOrCreateConnectedAccount({ connectionName: 'other', identifier: `u-${i}` });
        expect(account.connection_name).toBe('other');
        const now = await clientB.getConnectionDeletion(deletion.id);
        if (now.status === 'done') break;
        answeredWhileRunning++;
      }
      expect(answeredWhileRunning).toBeGreaterThan(10);
      const done = await a.client.getConnectionDeletion(deletion.id);
      expect(done).toMatchObject({ status: 'done', accounts_deleted: N });
      expect(await a.running.services.store.getAccount(ids[0]!)).toBeUndefined();
      expect((await a.client.getConnection('big')).account_count).toBe(0);
    },
    HUNG_AFTER_MS,
  );
});
