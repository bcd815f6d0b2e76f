/**
 * Secrets. One service on one SQLite data directory, restarted as a real deployment would be, with fake providers.
 *
 * 1. Surfaces: connections, accounts (API keys, Basic credentials, imported and authorized OAuth tokens), tool
 *    calls, dry runs, the proxy, refreshes, expiry, and the errors a client meets (validation, provider refusal,
 *    unreachable provider, malformed JSON, bad service credentials, forged callbacks). Every secret created goes
 *    into a registry.
 * 2. Key rotation with the real command, as child processes against the data directory: `npm run keys -- add`,
 *    restart, `rotate` (while the service runs), `verify`, `remove <old kid>` (refused before the rotation); after
 *    another restart everything decrypts and works: tools on API-key and OAuth accounts, a refresh (the connection's
 *    client secret), an authorization started before the rotation (the PKCE verifier), the service token.
 * 3. Tampering: a ciphertext with one character changed, and a ciphertext moved to another account, fail to
 *    decrypt; a tool call or a proxy call on such an account answers a clear service error naming the account and
 *    what to do (not an internal error), other accounts keep working, `keys verify` names both, and an upsert
 *    repairs the account.
 * 4. At the end, no registered secret appears in any log line, HTTP response (status, headers, body), output of
 *    the keys command, or the raw bytes of the SQLite database and its -wal file.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, serviceEnv, TEST_CLIENT_ID, TEST_CLIENT_SECRET } from '../helpers/harness.ts';
import { expireStoredToken, failure } from '../helpers/tools.ts';
import { FakeOAuthServer } from '../fakes/oauth-server.ts';
import { FakeDesk } from '../fakes/desk.ts';
import type { Listening } from '../fakes/listen.ts';
import { startMailboxSettingsApi } from '../fakes/mailbox-settings.ts';
import { loadConfig } from '../../runtime/config.ts';
import { startServer, type RunningServer } from '../../runtime/server.ts';
import { AgentConnectorClient } from '../../packages/client/src/index.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { TokenTap } from './token-tap.ts';
import { record } from './summary.ts';
import { recordScan, recordingFetch, SecretRegistry, sqliteFiles } from './secret-registry.ts';

const secret = (prefix: string) => `${prefix}-${randomBytes(16).toString('hex')}`;
const EMAIL = 'agent@acme.com';
const MAIL_CLIENT = 'client-secrets';
const MAIL_SECRET_1 = secret('mail-client-secret');
const MAIL_SECRET_2 = secret('mail-client-secret');
const tenants = {
  'desk-user': { domain: 'desk.zendesk.com', token: secret('zd') },
  'tamper-a': { domain: 'tamper-a.zendesk.com', token: secret('zd') },
  'tamper-b': { domain: 'tamper-b.zendesk.com', token: secret('zd') },
  'tamper-c': { domain: 'tamper-c.zendesk.com', token: secret('zd') },
} as const;

let dataDir: string;
let url: string | undefined;
let service: RunningServer | undefined;
let client: AgentConnectorClient;
let oauth: FakeOAuthServer;
let tap: TokenTap;
let desk: FakeDesk;
let api: Listening;
const logs: string[] = [];
const responses: string[] = [];
/**
 * The service restarts on the same port while the client keeps its pool: a request may go out on a keep-alive
 * socket the old process closed. Like any HTTP client, retry such a request once on a new connection.
 */
const retryStaleSocket: typeof fetch = async (input, init) => {
  try {
    return await fetch(input, init);
  } catch (e) {
    const stale = (e as { cause?: { code?: string } }).cause?.code === 'UND_ERR_SOCKET';
    if (!stale || init?.body instanceof ReadableStream) throw e;
    return fetch(input, init);
  }
};
const rec = recordingFetch(responses, retryStaleSocket);
const commandOutput: string[] = [];
const registry = new SecretRegistry();
/** Responses that show a secret by design (a new API credential's secret, shown once): kept out of the scan. */
const byDesign = new Set<string>();

/** The first start takes a port the system picks; a restart comes back on it (see serviceEnv). */
async function startService(): Promise<RunningServer> {
  const config = loadConfig(serviceEnv(dataDir, url));
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const running = await startServer(config, { logDestination: sink });
  url ??= running.url;
  return running;
}

async function restart(): Promise<void> {
  await service?.close();
  service = await startService();
}

/** `npm run keys -- <args>` as its own process against the data directory. */
function keys(...args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      'npm',
      ['run', '--silent', 'keys', '--', ...args],
      { cwd: process.cwd(), env: { PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: dataDir } },
      (err, stdout, stderr) => {
        const out = `${stdout}${stderr}`;
        commandOutput.push(out);
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out });
      },
    );
  });
}

function run(
  toolName: string,
  identifier: string,
  connectionName: string,
  toolInput: Record<string, unknown> = {},
  dryRun = false,
) {
  return client.executeTool({
    toolName: toolName as never,
    toolInput: toolInput as never,
    connectionName,
    identifier,
    dryRun,
  });
}

/** A user following an authorization link: service → fake provider → service callback. */
async function openLink(link: string, user: string): Promise<string> {
  const start = await rec(link, { redirect: 'manual' });
  expect(start.status).toBe(302);
  const to = new URL(start.headers.get('location')!);
  to.searchParams.set('fake_user', user);
  const consent = await fetch(to, { redirect: 'manual' });
  expect(consent.status).toBe(302);
  return consent.headers.get('location')!;
}

async function authorizeUser(identifier: string): Promise<void> {
  const { link } = await client.getAuthorizationLink({ connectionName: 'mail', identifier });
  const callback = await rec(await openLink(link, identifier), { redirect: 'manual' });
  expect(callback.status).toBe(200);
}

async function withStore<T>(fn: (store: SqliteStore) => Promise<T>): Promise<T> {
  const store = new SqliteStore(join(dataDir, 'acs.sqlite'));
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

async function accountId(connectionName: string, identifier: string): Promise<string> {
  return (await client.getOrCreateConnectedAccount({ connectionName, identifier })).id;
}

async function expireToken(id: string) {
  await withStore((store) => expireStoredToken(store, id));
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'acs-secrets-'));
  oauth = await new FakeOAuthServer().start();
  oauth.addClient({ client_id: MAIL_CLIENT, client_secret: MAIL_SECRET_1, auth: 'client_secret_post' });
  tap = await new TokenTap(oauth.tokenUrl).start();
  desk = await new FakeDesk().start();
  for (const t of Object.values(tenants)) desk.addTenant(t.domain, EMAIL, t.token);
  api = await startMailboxSettingsApi(oauth);
  service = await startService();
  client = new AgentConnectorClient({
    clientId: TEST_CLIENT_ID,
    clientSecret: TEST_CLIENT_SECRET,
    envUrl: service.url,
    fetch: rec,
  });
  registry.add('API client secret', TEST_CLIENT_SECRET);
  registry.add('provider client secret', MAIL_SECRET_1);
  registry.add('provider client secret', MAIL_SECRET_2);
  for (const t of Object.values(tenants)) registry.addBasic('API key', `${EMAIL}/token`, t.token);
});

afterAll(async () => {
  await service?.close();
  await tap?.close();
  await oauth?.close();
  await desk?.close();
  await api?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

describe('secrets', () => {
  it('every surface a client reaches: connections, accounts, tools, dry runs, proxy, refresh, errors', async () => {
    // Connections.
    await client.createConnection({
      connection_name: 'helpdesk',
      connector: 'helpdesk',
      api_base_url: desk.baseUrlTemplate,
    });
    await client.createConnection({
      connection_name: 'mail',
      connector: 'mail',
      client_id: MAIL_CLIENT,
      client_secret: MAIL_SECRET_1,
      api_base_url: api.url,
      oauth: { authorize_url: oauth.authorizeUrl, token_url: tap.url },
    });
    const closed = `http://127.0.0.1:${await freePort()}`;
    await client.createConnection({ connection_name: 'scraper', connector: 'scraper' });
    await client.createConnection({ connection_name: 'prodata', connector: 'prodata', api_hosts: { apify: closed } });
    await client.createConnection({ connection_name: 'callintel-key', connector: 'callintel', auth_kind: 'api_key' });
    // A new client secret: the provider now expects it.
    await client.updateConnection('mail', { client_secret: MAIL_SECRET_2 });
    oauth.addClient({ client_id: MAIL_CLIENT, client_secret: MAIL_SECRET_2, auth: 'client_secret_post' });
    expect((await client.getConnection('mail')).has_client_secret).toBe(true);
    await client.listConnections();

    // Accounts with API keys and Basic credentials.
    for (const [identifier, t] of Object.entries(tenants)) {
      await client.upsertConnectedAccount({
        connectionName: 'helpdesk',
        identifier,
        credentials: { domain: t.domain, email: EMAIL, api_token: t.token },
      });
    }
    const scraperToken = secret('apify_api');
    const prodataKey = secret('prodata-key');
    const accessKeySecret = secret('gong-secret');
    registry.add('API key', scraperToken);
    registry.add('API key', prodataKey);
    registry.addBasic('API key', 'QWERTY1234567890', accessKeySecret);
    await client.upsertConnectedAccount({
      connectionName: 'scraper',
      identifier: 'u1',
      credentials: { token: scraperToken },
    });
    await client.upsertConnectedAccount({
      connectionName: 'prodata',
      identifier: 'u1',
      credentials: { api_key: prodataKey },
    });
    await client.upsertConnectedAccount({
      connectionName: 'callintel-key',
      identifier: 'u1',
      credentials: { access_key: 'QWERTY1234567890', access_key_secret: accessKeySecret },
    });
    // OAuth: tokens imported from elsewhere (unknown to the provider), and an authorization through the flow.
    const imported = { access_token: secret('imported-at'), refresh_token: secret('imported-rt') };
    registry.add('access token', imported.access_token);
    registry.add('refresh token', imported.refresh_token);
    await client.upsertConnectedAccount({
      connectionName: 'mail',
      identifier: 'imported',
      credentials: { ...imported, expires_in: 3600 },
    });
    await authorizeUser('mail-user');
    await client.listConnectedAccounts({ limit: 50 });
    for (const a of (await client.listConnectedAccounts()).connected_accounts) await client.getConnectedAccount(a.id);

    // Tools, dry runs, proxy.
    expect(
      ((await run('helpdesk_tickets_list', 'desk-user', 'helpdesk', { per_page: 1 })).data as { tickets: unknown[] })
        .tickets,
    ).toHaveLength(1);
    await run(
      'helpdesk_ticket_create',
      'desk-user',
      'helpdesk',
      { comment_body: 'Printer on fire', subject: 'Help' },
      true,
    );
    await run('mail_mailbox_settings_get', 'mail-user', 'mail', {}, true);
    await run('scraper_fetch_actor_details', 'u1', 'scraper', { actor: 'apify/web-scraper' }, true);
    await run('prodata_get_ad', 'u1', 'prodata', { ad_id: '123' }, true);
    await run('callintel_users_list', 'u1', 'callintel-key', {}, true);
    const toolSecret = secret('apify_api');
    registry.add('API key (tool input)', toolSecret);
    const plan = await run(
      'prodata_bulk_scrape_profiles',
      'u1',
      'prodata',
      { scraper_token: toolSecret, profile_urls: ['https://www.linkedin.com/in/x'] },
      true,
    );
    expect(JSON.stringify(plan.data)).toContain('[REDACTED]');
    const proxied = await client.request({ connectionName: 'helpdesk', identifier: 'desk-user', path: '/v2/tickets' });
    expect(proxied.status).toBe(200);

    // Refresh: proactive, then reactive, then a revocation (EXPIRED, with the provider's reason).
    expect(
      (
        (await run('mail_mailbox_settings_get', 'mail-user', 'mail', { response_format: 'detailed' })).data as {
          subject: string;
        }
      ).subject,
    ).toBe('mail-user');
    await expireToken(await accountId('mail', 'mail-user'));
    await run('mail_mailbox_settings_get', 'mail-user', 'mail');
    oauth.expireAccessTokens();
    await run('mail_mailbox_settings_get', 'mail-user', 'mail');
    await authorizeUser('revoked-user');
    oauth.revokeSubject('revoked-user');
    oauth.expireAccessTokens();
    expect((await failure(run('mail_mailbox_settings_get', 'revoked-user', 'mail'))).code).toBe(
      'authorization_required',
    );
    expect((await failure(run('mail_mailbox_settings_get', 'imported', 'mail'))).code).toBe('authorization_required');
    await client.getConnectedAccount(await accountId('mail', 'imported'));

    // Errors a client meets, each carrying a secret in its request.
    const stray = secret('zd');
    registry.add('API key', stray);
    const errors = [
      // A domain outside the allowlist, with a valid-looking token.
      failure(
        client.upsertConnectedAccount({
          connectionName: 'helpdesk',
          identifier: 'bad',
          credentials: { domain: 'evil.example.com', email: EMAIL, api_token: stray },
        }),
      ),
      // The token under a field name the connector does not have.
      failure(
        client.upsertConnectedAccount({
          connectionName: 'helpdesk',
          identifier: 'bad',
          credentials: { domain: 'desk.zendesk.com', email: EMAIL, token: stray },
        }),
      ),
      // A token with a control character.
      failure(
        client.upsertConnectedAccount({
          connectionName: 'helpdesk',
          identifier: 'bad',
          credentials: { domain: 'desk.zendesk.com', email: EMAIL, api_token: `${stray}\u0001` },
        }),
      ),
      // Checked at the provider, which refuses it.
      failure(
        client.upsertConnectedAccount({
          connectionName: 'helpdesk',
          identifier: 'bad',
          credentials: { domain: 'desk.zendesk.com', email: EMAIL, api_token: stray },
          verify: true,
        }),
      ),
      // OAuth tokens with an unknown extra field and a bad expiry.
      failure(
        client.upsertConnectedAccount({
          connectionName: 'mail',
          identifier: 'bad',
          credentials: { access_token: stray, id_token: stray, expires_in: -1 },
        }),
      ),
      // A tool input with a secret and an invalid other field; then the same call to an unreachable provider.
      failure(run('prodata_bulk_scrape_profiles', 'u1', 'prodata', { scraper_token: toolSecret, profile_urls: [] })),
      failure(
        run('prodata_bulk_scrape_profiles', 'u1', 'prodata', {
          scraper_token: toolSecret,
          profile_urls: ['https://www.linkedin.com/in/x'],
        }),
      ),
    ];
    const codes = (await Promise.all(errors)).map((e) => e.code);
    expect(codes).toEqual([
      'invalid_input',
      'invalid_input',
      'invalid_input',
      'invalid_credentials',
      'invalid_input',
      'invalid_input',
      'upstream_unreachable',
    ]);
    // A provider refusing the stored credentials (the tenant's token changed at the desk).
    await client.upsertConnectedAccount({
      connectionName: 'helpdesk',
      identifier: 'stale',
      credentials: { domain: 'desk.zendesk.com', email: EMAIL, api_token: stray },
    });
    expect((await failure(run('helpdesk_tickets_list', 'stale', 'helpdesk'))).code).toBe('provider_error');

    // Malformed JSON around a secret: the parser quotes the body near the error.
    const token = (await (
      await rec(`${url}/oauth/token`, {
        method: 'POST',
        body: new URLSearchParams({ client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET }),
      })
    ).json()) as { access_token: string };
    const malformed = await rec(`${url}/v1/connected-accounts`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token.access_token}`, 'content-type': 'application/json' },
      body: `{"connection_name":"helpdesk","identifier":"bad","credentials":{"api_token":${stray}}}`,
    });
    const malformedText = await malformed.text();
    expect(malformed.status).toBe(400);
    expect(malformedText).not.toContain(stray.slice(0, 6));
    const badJsonToken = await rec(`${url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"client_id":"${TEST_CLIENT_ID}","client_secret":${TEST_CLIENT_SECRET}}`,
    });
    expect(badJsonToken.status).toBe(400);
    expect(await badJsonToken.text()).not.toContain(TEST_CLIENT_SECRET.slice(0, 6));
    // Wrong service credentials, and a forged callback.
    expect(
      (
        await rec(`${url}/oauth/token`, {
          method: 'POST',
          body: new URLSearchParams({ client_id: TEST_CLIENT_ID, client_secret: stray }),
        })
      ).status,
    ).toBe(401);
    const mail = await client.getConnection('mail');
    expect((await rec(`${url}/sso/v1/oauth/${mail.id}/callback?code=${stray}&state=${stray}`)).status).toBe(400);

    // A new API credential: its secret is shown once, in that response only.
    const before = responses.length;
    const created = (await (
      await rec(`${url}/v1/api-credentials`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token.access_token}`, 'content-type': 'application/json' },
        body: '{"name":"second"}',
      })
    ).json()) as { client_secret: string };
    registry.add('API client secret', created.client_secret);
    byDesign.add(responses[before]!);
    await rec(`${url}/v1/api-credentials`, { headers: { authorization: `Bearer ${token.access_token}` } });
  });

  it('rotates keys with the keys command: add, rotate, remove the old key; everything still decrypts and works', async () => {
    const listed = await keys('list');
    expect(listed.code).toBe(0);
    const oldKid = /^(\S+) \(active\)/m.exec(listed.out)![1]!;
    // An authorization started before the rotation and finished after it: its PKCE verifier is sealed meanwhile.
    const { link } = await client.getAuthorizationLink({ connectionName: 'mail', identifier: 'across-rotation' });
    const pendingCallback = await openLink(link, 'across-rotation');

    const added = await keys('add');
    expect(added.code).toBe(0);
    const newKid = /added (\S+) and made it active/.exec(added.out)![1]!;
    expect(newKid).not.toBe(oldKid);
    // The old key still holds values: removing it is refused.
    const early = await keys('remove', oldKid);
    expect(early.code).not.toBe(0);
    expect(early.out).toMatch(/still use/);

    await restart();
    await client.upsertConnectedAccount({
      connectionName: 'helpdesk',
      identifier: 'after-add',
      credentials: { domain: tenants['desk-user'].domain, email: EMAIL, api_token: tenants['desk-user'].token },
    });
    const rotated = await keys('rotate');
    expect(rotated.code).toBe(0);
    const [, done, total, current] = /rotated (\d+) of (\d+) sealed value\(s\); (\d+) already/
      .exec(rotated.out)!
      .map(Number);
    expect(done).toBeGreaterThan(10);
    const verified = await keys('verify');
    expect(verified.code).toBe(0);
    const after = await keys('list');
    expect(after.out).toContain(`${oldKid}: 0 sealed value(s)`);
    const removed = await keys('remove', oldKid);
    expect(removed.code).toBe(0);
    const file = JSON.parse(readFileSync(join(dataDir, 'keys.json'), 'utf8')) as {
      active: string;
      keys: Record<string, string>;
    };
    expect(Object.keys(file.keys)).toEqual([newKid]);

    await restart();
    const sealed = await withStore((store) => store.listSealed(undefined, 10_000));
    expect(sealed.filter((c) => !c.value.startsWith(`v1.${newKid}.`))).toEqual([]);
    // Everything works with the new key alone.
    const checks: Array<[string, () => Promise<unknown>]> = [
      ['API-key tool', () => run('helpdesk_tickets_list', 'desk-user', 'helpdesk', { per_page: 1 })],
      ['proxy', () => client.request({ connectionName: 'helpdesk', identifier: 'desk-user', path: '/v2/tickets' })],
      ['OAuth tool', () => run('mail_mailbox_settings_get', 'mail-user', 'mail')],
      [
        'refresh (client secret)',
        async () => {
          await expireToken(await accountId('mail', 'mail-user'));
          return run('mail_mailbox_settings_get', 'mail-user', 'mail');
        },
      ],
      [
        'authorization across the rotation (PKCE verifier)',
        async () => {
          const res = await rec(pendingCallback, { redirect: 'manual' });
          if (res.status !== 200) throw new Error(`callback answered ${res.status}`);
          return run('mail_mailbox_settings_get', 'across-rotation', 'mail');
        },
      ],
      ['new authorization', () => authorizeUser('after-rotation')],
      ['service token issued before the rotation', () => client.listConnections()],
    ];
    const failed: string[] = [];
    for (const [what, check] of checks) await check().catch((e: Error) => failed.push(`${what}: ${e.message}`));
    record({
      category: 'secrets scanned',
      what: 'key rotation by the keys command (add, rotate while serving, verify, remove old key): values re-encrypted, service checks after restart',
      tried: total! + checks.length,
      failed: total! - done! - current! + failed.length,
      detail: `${done} of ${total} sealed values rotated to the new key; ${checks.length - failed.length} of ${checks.length} service checks passed${failed.length ? `: ${failed.join('; ')}` : ''}`,
    });
    expect(failed).toEqual([]);
  });

  it('a tampered or moved ciphertext fails to decrypt with a clear error; others keep working; an upsert repairs it', async () => {
    const ids = {
      a: await accountId('helpdesk', 'tamper-a'),
      b: await accountId('helpdesk', 'tamper-b'),
      c: await accountId('helpdesk', 'tamper-c'),
    };
    await withStore(async (store) => {
      const cells = (await store.listSealed(undefined, 10_000)).filter((c) => c.table === 'connected_accounts');
      const cellA = cells.find((c) => c.id === ids.a)!;
      const cellB = cells.find((c) => c.id === ids.b)!;
      const cellC = cells.find((c) => c.id === ids.c)!;
      // One character of the ciphertext changed.
      const i = cellA.value.length - 5;
      const flipped = `${cellA.value.slice(0, i)}${cellA.value[i] === 'A' ? 'B' : 'A'}${cellA.value.slice(i + 1)}`;
      expect(await store.replaceSealed({ ...cellA, value: flipped }, cellA.value)).toBe(true);
      // B's intact ciphertext copied onto C.
      expect(await store.replaceSealed({ ...cellC, value: cellB.value }, cellC.value)).toBe(true);
    });

    const outcomes: string[] = [];
    const clear = async (what: string, p: Promise<unknown>, id: string) => {
      const e = await failure(p);
      const ok =
        e.status < 500 &&
        e.code === 'credentials_unreadable' &&
        e.message.includes(id) &&
        !/at .*\.ts:\d+/.test(e.message);
      if (!ok) outcomes.push(`${what}: ${e.status} ${e.code} ${e.message}`);
      return e;
    };
    const tool = await clear(
      'tool on the tampered account',
      run('helpdesk_tickets_list', 'tamper-a', 'helpdesk'),
      ids.a,
    );
    await clear(
      'proxy on the tampered account',
      client.request({ connectionName: 'helpdesk', identifier: 'tamper-a', path: '/v2/tickets' }),
      ids.a,
    );
    await clear(
      'tool on the account given another account’s ciphertext',
      run('helpdesk_tickets_list', 'tamper-c', 'helpdesk'),
      ids.c,
    );
    // The connection's sealed client secret altered: the next refresh cannot authenticate to the provider.
    await withStore(async (store) => {
      const cell = (await store.listSealed(undefined, 10_000)).find((c) => c.column === 'client_secret_sealed')!;
      const i = cell.value.length - 3;
      expect(
        await store.replaceSealed(
          { ...cell, value: `${cell.value.slice(0, i)}${cell.value[i] === 'A' ? 'B' : 'A'}${cell.value.slice(i + 1)}` },
          cell.value,
        ),
      ).toBe(true);
    });
    await expireToken(await accountId('mail', 'mail-user'));
    const refresh = await failure(run('mail_mailbox_settings_get', 'mail-user', 'mail'));
    if (refresh.status >= 500 || refresh.code !== 'credentials_unreadable' || !refresh.message.includes('mail')) {
      outcomes.push(`refresh with a tampered client secret: ${refresh.status} ${refresh.code} ${refresh.message}`);
    }
    expect(outcomes).toEqual([]);
    expect(tool.message).toMatch(/upsert|authorization link/i);
    expect(refresh.message).toMatch(/PATCH/);
    await client.updateConnection('mail', { client_secret: MAIL_SECRET_2 });
    expect(
      (
        (await run('mail_mailbox_settings_get', 'mail-user', 'mail', { response_format: 'detailed' })).data as {
          subject: string;
        }
      ).subject,
    ).toBe('mail-user');
    // The raw answer: a service error, no stack.
    const raw = await rec(`${url}/v1/tools/execute`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${((await (await rec(`${url}/oauth/token`, { method: 'POST', body: new URLSearchParams({ client_id: TEST_CLIENT_ID, client_secret: TEST_CLIENT_SECRET }) })).json()) as { access_token: string }).access_token}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        tool_name: 'helpdesk_tickets_list',
        tool_input: {},
        connection_name: 'helpdesk',
        identifier: 'tamper-a',
      }),
    });
    expect(raw.headers.get('x-error-source')).toBe('service');
    expect(await raw.text()).not.toMatch(/\.ts:\d+|node:internal|DecryptError/);

    // The source account is untouched, and the account reads fine without its secrets.
    expect(
      ((await run('helpdesk_tickets_list', 'tamper-b', 'helpdesk', { per_page: 1 })).data as { tickets: unknown[] })
        .tickets,
    ).toHaveLength(1);
    expect((await client.getConnectedAccount(ids.a)).status).toBe('ACTIVE');
    const verify = await keys('verify');
    expect(verify.code).not.toBe(0);
    expect(verify.out).toContain(ids.a);
    expect(verify.out).toContain(ids.c);
    // Re-entering the credentials repairs the account.
    await client.upsertConnectedAccount({
      connectionName: 'helpdesk',
      identifier: 'tamper-a',
      credentials: { domain: tenants['tamper-a'].domain, email: EMAIL, api_token: tenants['tamper-a'].token },
    });
    expect(
      ((await run('helpdesk_tickets_list', 'tamper-a', 'helpdesk', { per_page: 1 })).data as { tickets: unknown[] })
        .tickets,
    ).toHaveLength(1);
    record({
      category: 'attacks tried',
      what: 'tampered ciphertext and ciphertext moved to another record (account secrets, connection client secret), used through tools, the proxy and a refresh: clear service error, not a 500',
      tried: 4,
      failed: outcomes.length,
    });
  });

  it('leaves no secret in any log line, response, command output or database file', async () => {
    for (const p of tap.pairs) {
      registry.add('access token', p.access_token);
      registry.add('refresh token', p.refresh_token);
    }
    registry.addAll(
      'PKCE verifier',
      oauth.tokenRequests.map((r) => r.code_verifier),
    );
    registry.addAll(
      'authorization code',
      oauth.tokenRequests.map((r) => r.code),
    );
    const db = join(dataDir, 'acs.sqlite');
    // The database with its write-ahead log while the service runs, then the checkpointed file after it stopped.
    const running = registry.findInFiles(sqliteFiles(db));
    await service!.close();
    service = undefined;
    const findings = [
      ...running,
      ...registry.findInFiles(sqliteFiles(db)),
      ...registry.findInTexts(logs, 'log line'),
      ...registry.findInTexts(
        responses.filter((r) => !byDesign.has(r)),
        'response',
      ),
      ...registry.findInTexts(commandOutput, 'keys command output'),
    ];
    recordScan(
      'logs, API responses (accounts, connections, dry runs, errors), keys command output, SQLite database and -wal',
      registry,
      findings,
      registry.scanned,
    );
    expect(logs.length).toBeGreaterThan(10);
    expect(responses.length).toBeGreaterThan(50);
    expect(findings).toEqual([]);
  });
});
