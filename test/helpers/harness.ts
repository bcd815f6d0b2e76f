/**
 * Starts the real service on a port the system picks with a fresh data directory (SQLite by default, or a
 * fresh PostgreSQL schema), the fake OAuth server, and a client library instance — the way a client
 * application would use it. Captures every log line so tests can scan them for secrets.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig, type Config } from '../../runtime/config.ts';
import { startServer, type RunningServer } from '../../runtime/server.ts';
import { AgentConnectorClient } from '../../packages/client/src/index.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { FakeOAuthServer, type FakeOAuthOptions } from '../fakes/oauth-server.ts';
import { scanHarnessSecrets, watchSecrets } from '../reliability/harness-secrets.ts';

export const TEST_CLIENT_ID = 'acs_test_client';
export const TEST_CLIENT_SECRET = 'acs_sk_test_secret_0123456789abcdef';
/** The loopback hosts the fakes listen on, as UPSTREAM_ALLOWED_HOSTS lists them. */
export const LOOPBACK_HOSTS = '127.0.0.1,localhost,[::1]';
export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * A port nothing listens on at the moment of the call, for a connection that must be refused. Not a port to listen
 * on later, as another process may take it in between: a server listens on port 0 and reports the port it got.
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/**
 * The environment of a test service on `dataDir`, with the test API credential. The first start takes a port the
 * system picks; a restart given the URL it got (`restartAt`) comes back on that port at the same public URL, as a
 * restarted deployment does: service tokens, authorization links and redirect URIs name it.
 */
export function serviceEnv(dataDir: string, restartAt?: string): Record<string, string> {
  return {
    ...(restartAt ? { PORT: new URL(restartAt).port, PUBLIC_URL: restartAt } : { PORT: '0' }),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    INITIAL_CLIENT_ID: TEST_CLIENT_ID,
    INITIAL_CLIENT_SECRET: TEST_CLIENT_SECRET,
    LOG_LEVEL: 'info',
    // The fake providers listen on loopback: connections point their overrides there, as an operator names an
    // internal host (a connection's override that resolves to a private address is refused unless listed).
    UPSTREAM_ALLOWED_HOSTS: LOOPBACK_HOSTS,
  };
}

/** A bearer token for the test credential (client credentials at /oauth/token); fails naming the answer. */
export async function serviceToken(url: string): Promise<string> {
  const res = await fetch(`${url}/oauth/token`, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: TEST_CLIENT_ID,
      client_secret: TEST_CLIENT_SECRET,
    }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`POST /oauth/token answered ${res.status}: ${text}`);
  return (JSON.parse(text) as { access_token: string }).access_token;
}

export interface Harness {
  url: string;
  config: Config;
  running: RunningServer;
  client: AgentConnectorClient;
  oauth: FakeOAuthServer;
  /** Every log line the service wrote. */
  logs: string[];
  dataDir: string;
  close(): Promise<void>;
}

export interface HarnessOptions {
  env?: Record<string, string>;
  store?: 'sqlite' | 'postgres';
  oauth?: FakeOAuthOptions;
  dataDir?: string;
  /**
   * Search the logs, the service's answers and the store for the secrets the test sent or the fake provider
   * issued when the harness closes, and fail on a find (default true). Turn off only for a test that plants
   * secrets on purpose, and say why.
   */
  scanSecrets?: boolean;
  /**
   * Return only once the dashboard's admin account is set up (default true). A start finishes it after it
   * answers (its scrypt hash: a pool thread and 32 MiB for a few tenths of a second), which would otherwise
   * overlap what a test measures of this process's memory or CPU. False for a test of that window itself.
   */
  waitForAdmin?: boolean;
}

export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'acs-test-'));
  const config = loadConfig({ ...serviceEnv(dataDir), ...opts.env });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  let store: PostgresStore | undefined;
  if (opts.store === 'postgres') {
    const schema = `t_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
    store = new PostgresStore(PG_URL, schema);
  }
  const running = await startServer(config, { logDestination: sink, store });
  if (opts.waitForAdmin ?? true) await running.services.firstAdminPassword;
  const oauth = await new FakeOAuthServer(opts.oauth).start();
  const watched = watchSecrets();
  const client = new AgentConnectorClient({
    clientId: TEST_CLIENT_ID,
    clientSecret: TEST_CLIENT_SECRET,
    envUrl: running.url,
    fetch: watched.fetch,
  });
  return {
    url: running.url,
    config,
    running,
    client,
    oauth,
    logs,
    dataDir,
    async close() {
      // Every secret this test sent or the fake provider issued, searched for in the logs, the service's answers
      // and the store; a leak fails the test file.
      const scan = await scanHarnessSecrets({
        watched,
        logs,
        oauth,
        running,
        store,
        dataDir: config.dataDir,
        clientSecret: TEST_CLIENT_SECRET,
        enabled: opts.scanSecrets ?? true,
      });
      await running.close();
      await scan.afterClose();
      await oauth.close();
      if (store) {
        const cleanup = new PostgresStore(PG_URL);
        await cleanup.pool.query(`DROP SCHEMA IF EXISTS ${store.schema} CASCADE`).catch(() => {});
        await cleanup.close();
      }
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true });
      scan.assertClean();
    },
  };
}

/**
 * Follows an authorization link the way a browser would: service → fake provider (auto-approves as
 * `user`) → service callback. Returns the final response of the callback.
 */
export async function followAuthorizationLink(link: string, user = 'user-1'): Promise<Response> {
  const start = await fetch(link, { redirect: 'manual' });
  if (start.status !== 302) throw new Error(`link answered ${start.status}: ${await start.text()}`);
  const authorize = new URL(start.headers.get('location')!);
  authorize.searchParams.set('fake_user', user);
  const consent = await fetch(authorize, { redirect: 'manual' });
  if (consent.status !== 302) throw new Error(`authorize answered ${consent.status}: ${await consent.text()}`);
  return fetch(consent.headers.get('location')!, { redirect: 'manual' });
}

/** Creates an OAuth connection pointed at the fake authorization server and the given API base. */
export async function oauthConnection(
  h: Harness,
  name: string,
  connector: string,
  apiBaseUrl: string,
  opts: { authMethod?: 'client_secret_post' | 'client_secret_basic'; extra?: Record<string, unknown> } = {},
) {
  const clientId = `client-${name}`;
  const clientSecret = `secret-${name}-${Math.random().toString(36).slice(2)}`;
  h.oauth.addClient({
    client_id: clientId,
    client_secret: clientSecret,
    auth: opts.authMethod ?? 'client_secret_post',
  });
  return h.client.createConnection({
    connection_name: name,
    connector,
    client_id: clientId,
    client_secret: clientSecret,
    api_base_url: apiBaseUrl,
    oauth: { authorize_url: h.oauth.authorizeUrl, token_url: h.oauth.tokenUrl },
    ...opts.extra,
  });
}

/** Connects an account end to end: link, consent at the fake, callback. Returns the account id. */
export async function authorize(
  h: Harness,
  connectionName: string,
  identifier: string,
  user = identifier,
): Promise<string> {
  const { link, connected_account_id } = await h.client.getAuthorizationLink({ connectionName, identifier });
  const res = await followAuthorizationLink(link, user);
  if (res.status !== 200) throw new Error(`callback answered ${res.status}: ${await res.text()}`);
  return connected_account_id;
}
