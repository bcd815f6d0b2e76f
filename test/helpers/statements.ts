/**
 * Records the SQL statements the store runs, whichever database: better-sqlite3's statement calls and pg's client
 * queries are wrapped while recording. For tests that count statements or read their query plans.
 */
import Database from 'better-sqlite3';
import pg from 'pg';

export interface Statement {
  sql: string;
  params: unknown[];
}

type Fn = (...a: unknown[]) => unknown;

export function recordStatements(): { statements: Statement[]; stop: () => void } {
  const statements: Statement[] = [];
  const proto = Object.getPrototypeOf(new Database(':memory:').prepare('select 1')) as Record<string, Fn>;
  const originals = (['run', 'all', 'get'] as const).map((name) => [name, proto[name]!] as const);
  for (const [name, original] of originals) {
    proto[name] = function (this: { source: string }, ...a: unknown[]) {
      statements.push({ sql: this.source, params: Array.isArray(a[0]) ? (a[0] as unknown[]) : a });
      return original.apply(this, a);
    };
  }
  const client = pg.Client.prototype as unknown as { query: Fn };
  const query = client.query;
  client.query = function (this: unknown, ...a: unknown[]) {
    const text = typeof a[0] === 'string' ? a[0] : (a[0] as { text?: string })?.text;
    if (text) statements.push({ sql: text, params: Array.isArray(a[1]) ? (a[1] as unknown[]) : [] });
    return query.apply(this, a);
  };
  return {
    statements,
    stop: () => {
      for (const [name, original] of originals) proto[name] = original;
      client.query = query;
    },
  };
}
