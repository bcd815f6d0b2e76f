/**
 * Run by scale.test.ts: opens the store and works on the unfinished connection deletions, as a restarted service
 * does, until it is killed. Arguments: kind (sqlite|postgres), the SQLite path or PostgreSQL schema, batch size.
 */
import pino from 'pino';
import { ConnectionDeletions } from '../../runtime/jobs/connection-deletions.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { PG_URL } from '../helpers/harness.ts';

const [kind, where, batch] = process.argv.slice(2) as [string, string, string];
const store = kind === 'sqlite' ? new SqliteStore(where) : new PostgresStore(PG_URL, where);
new ConnectionDeletions({
  store,
  log: pino({ level: 'silent' }),
  batchSize: Number(batch),
  onEvents: () => {},
}).start();
process.stdout.write('working\n');
