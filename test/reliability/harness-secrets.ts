/**
 * The harness's secrets check, run when any test's harness closes, so the whole suite is scanned: every secret a
 * test sent through the harness client (credential fields of upserts, client secrets of connections), every token
 * the fake OAuth server issued or received, PKCE verifiers, authorization codes and the API client secret are
 * searched for in the service's log lines, its answers to the harness client (proxy passthrough excluded: that is
 * the provider's content), and the store (the SQLite file and its -wal, or every row of the PostgreSQL schema).
 */
import { join } from 'node:path';
import { expect } from 'vitest';
import type { RunningServer } from '../../runtime/server.ts';
import type { PostgresStore } from '../../runtime/store/postgres.ts';
import type { FakeOAuthServer } from '../fakes/oauth-server.ts';
import { recordScan, SecretRegistry, sqliteFiles, type Finding } from './secret-registry.ts';

/** Fields of request bodies whose values are secrets (credentials of every connector, OAuth tokens, client secrets). */
const SECRET_FIELDS = new Set([
  'access_token',
  'refresh_token',
  'client_secret',
  'api_token',
  'api_key',
  'token',
  'password',
  'access_key_secret',
  'scraper_token',
]);
/** Shorter values are test placeholders ("secret", "tok") that would match anywhere. */
const MIN_LENGTH = 12;

export interface Watched {
  fetch: typeof fetch;
  sent: Set<string>;
  responses: string[];
}

function collect(value: unknown, into: Set<string>, key = ''): void {
  if (typeof value === 'string') {
    if (SECRET_FIELDS.has(key) && value.length >= MIN_LENGTH) into.add(value);
  } else if (Array.isArray(value)) value.forEach((v) => collect(v, into, key));
  else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) collect(v, into, k);
}

/** A fetch for the harness client that notes the secrets a test sends and keeps the service's answers. */
export function watchSecrets(): Watched {
  const sent = new Set<string>();
  const responses: string[] = [];
  const watched: typeof fetch = async (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (typeof init?.body === 'string') {
      try {
        collect(JSON.parse(init.body), sent);
      } catch {
        // Not JSON.
      }
    } else if (init?.body instanceof URLSearchParams) collect(Object.fromEntries(init.body), sent);
    const res = await fetch(input, init);
    const path = new URL(url).pathname;
    // Proxy answers are the provider's bytes; the service token and a new API credential's secret are shown by design.
    const byDesign = path === '/oauth/token' || (path === '/v1/api-credentials' && init?.method === 'POST');
    if (!path.startsWith('/proxy/') && !byDesign && res.body) {
      responses.push(
        `${res.status} ${path}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${await res.clone().text()}`,
      );
    }
    return res;
  };
  return { fetch: watched, sent, responses };
}

export async function pgRows(store: PostgresStore): Promise<string[]> {
  const tables = await store.pool.query<{ table_name: string }>(
    'SELECT table_name FROM information_schema.tables WHERE table_schema = $1',
    [store.schema],
  );
  const rows: string[] = [];
  for (const { table_name } of tables.rows) {
    rows.push(
      ...(await store.pool.query<{ j: string }>(`SELECT row_to_json(t)::text AS j FROM ${table_name} t`)).rows.map(
        (r) => r.j,
      ),
    );
  }
  return rows;
}

export async function scanHarnessSecrets(h: {
  watched: Watched;
  logs: string[];
  oauth: FakeOAuthServer;
  running: RunningServer;
  store?: PostgresStore;
  dataDir: string;
  clientSecret: string;
  enabled: boolean;
}) {
  const registry = new SecretRegistry();
  if (!h.enabled) return { afterClose: async () => {}, assertClean: () => {} };
  const add = (kind: string, v: unknown) => {
    if (typeof v === 'string' && v.length >= MIN_LENGTH) registry.add(kind, v);
  };
  add('API client secret', h.clientSecret);
  for (const v of h.watched.sent) add('secret sent by the test', v);
  for (const t of h.oauth.issuedAccessTokens()) add('access token', t);
  for (const t of h.oauth.liveRefreshTokens()) add('refresh token', t);
  for (const r of h.oauth.tokenRequests) {
    add('refresh token', r.refresh_token);
    add('PKCE verifier', r.code_verifier);
    add('authorization code', r.code);
    add('provider client secret', r.client_secret);
  }
  const findings: Finding[] = [];
  const sqlite = h.running.services.store.kind === 'sqlite';
  const db = join(h.dataDir, 'acs.sqlite');
  if (registry.size) {
    findings.push(
      ...registry.findInTexts(h.logs, 'log line'),
      ...registry.findInTexts(h.watched.responses, 'response'),
    );
    if (sqlite) findings.push(...registry.findInFiles(sqliteFiles(db)));
    else if (h.store) findings.push(...registry.findInTexts(await pgRows(h.store), 'database row'));
  }
  return {
    /** The SQLite file again once the service checkpointed its write-ahead log into it. */
    afterClose() {
      if (sqlite && registry.size) findings.push(...registry.findInFiles([db]));
      return Promise.resolve();
    },
    assertClean() {
      const file = (expect.getState().testPath ?? '').replace(`${process.cwd()}/`, '');
      recordScan(
        `harness of ${file || 'a test'}: service logs, API answers, store`,
        registry,
        findings,
        registry.scanned,
      );
      if (findings.length) {
        throw new Error(`secrets leaked: ${findings.map((f) => `${f.kind} ${f.preview} in ${f.where}`).join('; ')}`);
      }
    },
  };
}
