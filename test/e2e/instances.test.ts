/**
 * Two service instances on one PostgreSQL database (issue 15 point 2, issue 14 point 2). Each caches connections,
 * accounts and credential states (no store read per call once warm); a change made through one — a connection
 * changed, an account deleted, an API credential revoked, an account's API key rotated — is seen by the other within
 * one second, through the store's LISTEN/NOTIFY change feed; an expired OAuth token is still refreshed once across
 * both. A dashboard session opened on one works on the other (sessions and the cookie key are in the store), a
 * sign-out on one is seen by the other within one second, and failed sign-ins and token requests on both count
 * towards one throttle.
 * The same caches on SQLite follow another process's writes through PRAGMA data_version.
 */
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  authorize,
  PG_URL,
  serviceEnv,
  startHarness,
  TEST_CLIENT_ID,
  TEST_CLIENT_SECRET,
  type Harness,
} from '../helpers/harness.ts';
import { expireStoredToken } from '../helpers/tools.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { startMailboxSettingsApi } from '../fakes/mailbox-settings.ts';
import type { Listening } from '../fakes/listen.ts';
import { loadConfig } from '../../runtime/config.ts';
import { startServer, type RunningServer } from '../../runtime/server.ts';
import { AgentConnectorClient } from '../../packages/client/src/index.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { AccountService } from '../../runtime/accounts/service.ts';

const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const who = { connectionName: 'helpdesk', identifier: 'user-1' };
const SEEN_WITHIN_MS = 1_000;
const ADMIN_PASSWORD = 'instances-admin-password-3e7a';

let a: Harness;
let b: RunningServer;
let clientB: AgentConnectorClient;
let desk: FakeDesk;
let otherDesk: FakeDesk;
let mailApi: Listening;

/**
 * Checks `seen` every 10 ms until it holds or one second has passed since the change, and returns how long it took.
 * The one second is the requirement under test (a change is seen by the other instance within one second), not a
 * guard against a hang.
 */
async function seenWithin(seen: () => Promise<boolean>): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await seen()) return Date.now() - start;
    if (Date.now() - start > SEEN_WITHIN_MS) return Infinity;
    await new Promise((r) => setTimeout(r, 10));
  }
}

const ticket = (client: AgentConnectorClient) =>
  client.executeTool({ toolName: 'helpdesk_tickets_list', toolInput: { per_page: 1 }, ...who });

async function status(p: Promise<unknown>): Promise<number | 'ok'> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    return (e as { status?: number }).status ?? -1;
  }
}

beforeAll(async () => {
  a = await startHarness({ store: 'postgres', env: { ADMIN_PASSWORD } });
  const schema = (a.running.services.store as PostgresStore).schema!;
  const sink = new Writable({ write: (_c, _e, cb) => cb() });
  b = await startServer(loadConfig({ ...serviceEnv(a.dataDir), ADMIN_PASSWORD }), {
    logDestination: sink,
    store: new PostgresStore(PG_URL, schema),
  });
  clientB = new AgentConnectorClient({ clientId: TEST_CLIENT_ID, clientSecret: TEST_CLIENT_SECRET, envUrl: b.url });
  desk = await new FakeDesk().start();
  otherDesk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, 'zd-token-one-4a1f');
  otherDesk.addTenant(DOMAIN, EMAIL, 'zd-token-one-4a1f');
  await a.client.createConnection({
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
  await a.client.upsertConnectedAccount({
    ...who,
    credentials: { domain: DOMAIN, email: EMAIL, api_token: 'zd-token-one-4a1f' },
  });
});

afterAll(async () => {
  await mailApi?.close();
  await b?.close();
  await desk?.close();
  await otherDesk?.close();
  await a?.close();
});

describe('two instances on one PostgreSQL database', () => {
  it('serve a warm tool call without reading the connection, the account or the credential from the store', async () => {
    expect(await status(ticket(clientB))).toBe('ok');
    const store = b.services.store;
    const reads = [
      vi.spyOn(store, 'getConnectionByName'),
      vi.spyOn(store, 'getConnection'),
      vi.spyOn(store, 'findAccount'),
      vi.spyOn(store, 'getAccount'),
      vi.spyOn(store, 'getApiCredential'),
    ];
    try {
      expect(await status(ticket(clientB))).toBe('ok');
      expect(reads.map((r) => r.mock.calls.length)).toEqual([0, 0, 0, 0, 0]);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('a connection changed through one is seen by the other within one second', async () => {
    expect(await status(ticket(clientB))).toBe('ok');
    const before = otherDesk.requests.length;
    await a.client.updateConnection('helpdesk', { api_base_url: otherDesk.baseUrlTemplate });
    const took = await seenWithin(async () => {
      await ticket(clientB);
      return otherDesk.requests.length > before;
    });
    expect(took).toBeLessThanOrEqual(SEEN_WITHIN_MS);
  });

  it("an account's API key rotated through one is used by the other within one second", async () => {
    expect(await status(ticket(clientB))).toBe('ok');
    // The provider now accepts only the new key.
    desk.tenants.get(DOMAIN)!.apiToken = otherDesk.tenants.get(DOMAIN)!.apiToken = 'zd-token-two-9c2e';
    expect(await status(ticket(clientB))).not.toBe('ok');
    await a.client.upsertConnectedAccount({
      ...who,
      credentials: { domain: DOMAIN, email: EMAIL, api_token: 'zd-token-two-9c2e' },
    });
    const took = await seenWithin(async () => (await status(ticket(clientB))) === 'ok');
    expect(took).toBeLessThanOrEqual(SEEN_WITHIN_MS);
  });

  it('an API credential revoked through one is refused by the other within one second', async () => {
    const cred = (await (
      await fetch(`${a.url}/v1/api-credentials`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await token(a.url)}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'to revoke' }),
      })
    ).json()) as { id: string; client_id: string; client_secret: string };
    const onB = new AgentConnectorClient({ clientId: cred.client_id, clientSecret: cred.client_secret, envUrl: b.url });
    expect(await status(ticket(onB))).toBe('ok');
    const revoked = await fetch(`${a.url}/v1/api-credentials/${cred.id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${await token(a.url)}` },
    });
    expect(revoked.status).toBe(200);
    const took = await seenWithin(async () => (await status(ticket(onB))) === 401);
    expect(took).toBeLessThanOrEqual(SEEN_WITHIN_MS);
  });

  it('an account deleted through one is gone for the other within one second', async () => {
    expect(await status(ticket(clientB))).toBe('ok');
    const account = await a.client.getOrCreateConnectedAccount(who);
    await a.client.deleteConnectedAccount(account.id);
    // Gone: a call for the user now asks them to connect (403 authorization_required with a link).
    const took = await seenWithin(async () => (await status(ticket(clientB))) === 403);
    expect(took).toBeLessThanOrEqual(SEEN_WITHIN_MS);
  });

  it('a dashboard session opened on one works on the other; a sign-out on one is seen by the other within one second', async () => {
    const onA = new DashboardClient(a.url);
    expect((await onA.signIn(ADMIN_PASSWORD)).status).toBe(303);
    // The same browser (its cookies) talking to the other instance.
    const onB = new DashboardClient(b.url);
    for (const [k, v] of onA.cookies) onB.cookies.set(k, v);
    const page = await onB.get('/dashboard/connections');
    expect(page.status).toBe(200);
    expect(page.html).toContain('helpdesk');
    // A form token from a page of B is accepted by A: both derive it from the shared cookie key.
    const signOut = await onA.post('/dashboard/sign-out', { _csrf: DashboardClient.csrf(page.html) });
    expect(signOut.location).toBe('/dashboard/sign-in?done=signed-out');
    const took = await seenWithin(async () => {
      const r = await onB.get('/dashboard/connections');
      return r.status === 303 && r.location!.startsWith('/dashboard/sign-in');
    });
    expect(took).toBeLessThanOrEqual(SEEN_WITHIN_MS);
  });

  it('counts failed dashboard sign-ins on both instances towards one throttle', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      statuses.push((await new DashboardClient(i % 2 ? b.url : a.url).signIn('not-the-password')).status);
    }
    // Wrong passwords, checked: 401 each, none throttled yet (a throttled attempt is 429).
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401]);
    // One count for the user over both instances: six attempts, and the sixth (past the five free ones) blocks.
    const state = await b.services.store.getThrottle('dashboard-user:admin');
    expect(state).toMatchObject({ count: 6 });
    expect(state!.blockedUntil).toBeGreaterThan(state!.lastAt);
    await b.services.store.compareAndSetThrottle('dashboard-user:admin', state!.version, null);
  });

  it('counts failed /oauth/token attempts on both instances towards one throttle', async () => {
    const clientId = 'acs_throttle_probe';
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${i % 2 ? b.url : a.url}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: 'wrong' }),
      });
      await res.body?.cancel();
      statuses.push(res.status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 401, 401]);
    const state = await a.running.services.store.getThrottle(`client:${clientId}`);
    expect(state).toMatchObject({ count: 6 });
    expect(state!.blockedUntil).toBeGreaterThan(state!.lastAt);
  });

  it('an expired OAuth token is refreshed once across both instances', async () => {
    mailApi = await startMailboxSettingsApi(a.oauth);
    a.oauth.addClient({ client_id: 'client-two', client_secret: 'secret-two-5d1b8e', auth: 'client_secret_post' });
    await a.client.createConnection({
      connection_name: 'mail',
      connector: 'mail',
      client_id: 'client-two',
      client_secret: 'secret-two-5d1b8e',
      api_base_url: mailApi.url,
      oauth: { authorize_url: a.oauth.authorizeUrl, token_url: a.oauth.tokenUrl },
    });
    const id = await authorize(a, 'mail', 'mailer');
    const call = (client: AgentConnectorClient) =>
      client.executeTool({
        toolName: 'mail_mailbox_settings_get' as never,
        toolInput: {} as never,
        connectionName: 'mail',
        identifier: 'mailer',
      });
    // Both warm: each has the account cached with its current token.
    await Promise.all([call(a.client), call(clientB)]);
    await expireStoredToken(a.running.services.store, id);
    const before = a.oauth.counts.refresh_token;
    a.oauth.refreshDelayMs = 150;
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => call(i % 2 ? clientB : a.client)));
    a.oauth.refreshDelayMs = 0;
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(a.oauth.counts.refresh_token - before).toBe(1);
  });
});

async function token(url: string): Promise<string> {
  const res = await fetch(`${url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: TEST_CLIENT_ID,
      client_secret: TEST_CLIENT_SECRET,
    }),
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

describe('two processes on one SQLite file', () => {
  it("see each other's account changes before their next read (PRAGMA data_version)", async () => {
    const h = await startHarness();
    const other = new SqliteStore(join(h.dataDir, 'acs.sqlite'));
    try {
      await h.client.createConnection({ connection_name: 'helpdesk', connector: 'helpdesk' });
      const created = await h.client.upsertConnectedAccount({
        ...who,
        credentials: { domain: DOMAIN, email: EMAIL, api_token: 'zd-token-one-4a1f' },
      });
      const accounts: AccountService = h.running.services.accounts;
      const first = await accounts.resolve(who);
      // Cached: the same object comes back without a store read.
      expect((await accounts.resolve(who)).account).toBe(first.account);
      // Another connection to the file (as another process would) disconnects the account.
      await other.updateAccount(created.id, { status: 'DISCONNECTED' }, Date.now());
      expect((await accounts.resolve(who)).account.status).toBe('DISCONNECTED');
      await other.deleteAccount(created.id);
      await expect(accounts.resolve(who)).rejects.toMatchObject({ code: 'account_not_found' });
    } finally {
      await other.close();
      await h.close();
    }
  });

  it('look once per request: its later reads see the state of its first, the next request sees the change', async () => {
    const h = await startHarness();
    const other = new SqliteStore(join(h.dataDir, 'acs.sqlite'));
    try {
      await h.client.createConnection({ connection_name: 'helpdesk', connector: 'helpdesk' });
      const created = await h.client.upsertConnectedAccount({
        ...who,
        credentials: { domain: DOMAIN, email: EMAIL, api_token: 'zd-token-one-4a1f' },
      });
      const accounts: AccountService = h.running.services.accounts;
      const firstRequest = {};
      expect((await accounts.resolve(who, firstRequest)).account.status).toBe('ACTIVE');
      await other.updateAccount(created.id, { status: 'DISCONNECTED' }, Date.now());
      // The same request: no second PRAGMA data_version, so its reads agree with each other.
      expect((await accounts.resolve(who, firstRequest)).account.status).toBe('ACTIVE');
      // A request that starts after the commit sees it.
      expect((await accounts.resolve(who, {})).account.status).toBe('DISCONNECTED');
      // Without a request to scope it to, one resolve is the scope: one look at the feed for both reads.
      const polls = vi.spyOn(h.running.services.store.changes, 'poll');
      expect((await accounts.resolve(who)).account.status).toBe('DISCONNECTED');
      expect(polls).toHaveBeenCalledTimes(1);
      polls.mockRestore();
    } finally {
      await other.close();
      await h.close();
    }
  });
});
