/**
 * Run by store-contract.test.ts: opens the store, writes inside a transaction, says so, and waits there until
 * it is killed. Arguments: kind (sqlite|postgres), the SQLite path or PostgreSQL schema, a connection id.
 */
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { pendingAccount } from '../../runtime/store/types.ts';
import { PG_URL } from '../helpers/harness.ts';

const [kind, where, connectionId] = process.argv.slice(2) as [string, string, string];
const store = kind === 'sqlite' ? new SqliteStore(where) : new PostgresStore(PG_URL, where);
await store.transaction(async (tx) => {
  const { account } = await tx.getOrCreateAccount(pendingAccount('ca_killed', connectionId, 'killed'));
  await tx.updateAccount(account.id, { status: 'ACTIVE', secretsSealed: 'v1.k.iv.ct' }, Date.now());
  process.stdout.write('written\n');
  await new Promise(() => {});
});
