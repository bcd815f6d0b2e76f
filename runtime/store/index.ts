import { join } from 'node:path';
import type { Config } from '../config.ts';
import { PostgresStore } from './postgres.ts';
import { SqliteStore } from './sqlite.ts';
import type { Store } from './types.ts';

/** PostgreSQL when DATABASE_URL is set, else SQLite under the data directory. */
export function openStore(
  config: Pick<Config, 'databaseUrl' | 'dataDir'> & { databaseSchema?: string; databasePoolSize?: number },
  pgSchema?: string,
): Store {
  if (config.databaseUrl) {
    return new PostgresStore(config.databaseUrl, pgSchema ?? config.databaseSchema, config.databasePoolSize);
  }
  return new SqliteStore(join(config.dataDir, 'acs.sqlite'));
}

export type { Store };
