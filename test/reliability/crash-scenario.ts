/**
 * Crash safety, one scenario for both stores (crash.test.ts runs it on SQLite, crash-postgres.test.ts on
 * PostgreSQL). The service runs as a child process (`runtime/main.ts`, SQLite under DATA_DIR or a fresh PostgreSQL
 * schema) and is killed with
 * SIGKILL in the middle of 1,000 concurrent account upserts (PUT /v1/connected-accounts on the helpdesk API-key
 * connector, each with its own API token, plus re-upserts of earlier accounts with new tokens) and OAuth
 * authorizations (links followed through the fake OAuth server, concurrently), then restarted on the same data
 * directory and store. Ten rounds, each killed at a different moment (after 1 acknowledgement, then after 10 %, 20 % ... of
 * the writes). After every kill:
 *   - every write acknowledged (2xx received) before the kill is in the store, decrypts, and holds exactly the
 *     values sent (or, for a re-upsert, a value sent later than the acknowledged one);
 *   - the store passes its integrity check;
 *   - no account is half-written: ACTIVE has secrets that decrypt to values the test sent or the provider issued
 *     for that very user, PENDING_AUTH has none;
 *   - the restarted service serves: the old service token is still accepted, an acknowledged account reads
 *     ACTIVE through the API, and tools run on an OAuth account authorized before the crash and on a new upsert.
 * A last check kills the service while it holds an account's refresh lock: after the restart the account must
 * refresh at once, not stay locked by the dead process.
 * Every secret involved is then searched for in the service's output and the store (the raw SQLite files; every
 * row of the PostgreSQL schema).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_URL, serviceEnv, TEST_CLIENT_ID, TEST_CLIENT_SECRET } from '../helpers/harness.ts';
import { spawnService, type ServiceProcess } from '../helpers/service-process.ts';
import { FakeOAuthServer } from '../fakes/oauth-server.ts';
import { FakeDesk } from '../fakes/desk.ts';
import type { Listening } from '../fakes/listen.ts';
import { startMailboxSettingsApi } from '../fakes/mailbox-settings.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { encodeCursor } from '../../runtime/store/cursor.ts';
import type { Account } from '../../runtime/store/types.ts';
import { loadKeyring } from '../../runtime/crypto/keys.ts';
import { Sealer } from '../../runtime/crypto/sealer.ts';
import { aad } from '../../runtime/crypto/aad.ts';
import { TokenTap } from './token-tap.ts';
import { record } from './summary.ts';
import { recordScan, SecretRegistry, sqliteFiles } from './secret-registry.ts';
import { pgRows } from './harness-secrets.ts';

const SOAK = Boolean(Number(process.env.RELIABILITY_SOAK));
const ROUNDS = SOAK ? 30 : 10;
const UPSERTS = 1000;
const REUPSERTS = 50;
const OAUTH_FLOWS = SOAK ? 200 : 60;
const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const DESK_TOKEN = `zd-desk-${randomBytes(12).toString('hex')}`;

/** Declares the crash tests on one store: SQLite under a data directory, or a fresh PostgreSQL schema. */
export function describeCrashSuite(backend: 'sqlite' | 'postgres'): void {
  const where = backend === 'postgres' ? 'PostgreSQL schema' : 'SQLite data dir';
  const stored = backend === 'postgres' ? 'every row of the PostgreSQL schema' : 'the SQLite files';

  let dataDir: string;
  /** The PostgreSQL schema of this run (fresh, dropped at the end). */
  const schema = `crash_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  let url: string | undefined;
  let child: ServiceProcess | undefined;
  let oauth: FakeOAuthServer;
  let tap: TokenTap;
  let api: Listening;
  let desk: FakeDesk;
  let serviceToken: string;
  const output: string[] = [];
  const secrets = new SecretRegistry();
  const providerSecret = `secret-crash-${randomBytes(12).toString('hex')}`;

  /** The first start takes a port the system picks; every restart comes back on it (see serviceEnv). */
  async function startChild(): Promise<ServiceProcess> {
    const c = await spawnService({
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...serviceEnv(dataDir, url),
      // One service token serves the whole run, which can outlast the default 15 minutes on a loaded machine.
      TOKEN_TTL_SECONDS: '7200',
      ...(backend === 'postgres' ? { DATABASE_URL: PG_URL, DATABASE_SCHEMA: schema } : {}),
    });
    url ??= c.url;
    return c;
  }

  async function kill(c: ServiceProcess): Promise<void> {
    c.proc.kill('SIGKILL');
    await c.exited;
    output.push(...c.output);
  }

  async function stop(c: ServiceProcess): Promise<void> {
    c.proc.kill('SIGTERM');
    await c.exited;
    output.push(...c.output);
  }

  function api_(method: string, path: string, body?: unknown): Promise<Response> {
    return fetch(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${serviceToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  }

  async function json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const res = await api_(method, path, body);
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${text}`);
    return JSON.parse(text) as T;
  }

  async function upsert(identifier: string, apiToken: string): Promise<boolean> {
    const res = await api_('PUT', '/v1/connected-accounts', {
      connection_name: 'helpdesk',
      identifier,
      credentials: { domain: DOMAIN, email: EMAIL, api_token: apiToken },
    });
    await res.arrayBuffer();
    return res.status === 200;
  }

  /** Link → service → fake provider consent as `identifier` → callback. True when the callback said "connected". */
  async function authorizeFlow(identifier: string): Promise<boolean> {
    const { link } = await json<{ link: string }>('POST', '/v1/connected-accounts/authorization-link', {
      connection_name: 'mail',
      identifier,
    });
    const start = await fetch(link, { redirect: 'manual' });
    await start.arrayBuffer();
    if (start.status !== 302) return false;
    const to = new URL(start.headers.get('location')!);
    to.searchParams.set('fake_user', identifier);
    const consent = await fetch(to, { redirect: 'manual' });
    await consent.arrayBuffer();
    if (consent.status !== 302) return false;
    const callback = await fetch(consent.headers.get('location')!, { redirect: 'manual' });
    await callback.arrayBuffer();
    return callback.status === 200;
  }

  /** What the test sent per helpdesk identifier, in order, and the index of the last acknowledged value. */
  const sent = new Map<string, { values: string[]; acked: number }>();
  const ackedOAuth = new Set<string>();

  interface StoreCheck {
    problems: string[];
    accounts: number;
    ackedChecked: number;
  }

  /** The store the service uses, opened as another process would. */
  function openStore(): SqliteStore | PostgresStore {
    return backend === 'postgres' ? new PostgresStore(PG_URL, schema) : new SqliteStore(join(dataDir, 'acs.sqlite'));
  }

  /** Opens the store and key the way the service would, while the service is down, and checks everything. */
  async function checkStore(): Promise<StoreCheck> {
    const store = openStore();
    const problems: string[] = [];
    let ackedChecked = 0;
    try {
      problems.push(...(await store.integrityCheck()).map((p) => `integrity: ${p}`));
      const sealer = new Sealer(loadKeyring({ dataDir, mayCreate: false }).keyring);
      const connections = new Map((await store.listConnections()).map((c) => [c.id, c.name]));
      const all: Account[] = [];
      for (let after: string | undefined; ;) {
        const page = await store.listAccounts({ limit: 1000, after });
        all.push(...page);
        if (page.length < 1000) break;
        after = encodeCursor(page[page.length - 1]!);
      }
      const byIdentifier = new Map<string, Account>();
      for (const a of all) {
        const connection = connections.get(a.connectionId);
        byIdentifier.set(`${connection}/${a.identifier}`, a);
        const where = `${connection}/${a.identifier} (${a.status})`;
        if (a.status === 'PENDING_AUTH') {
          if (a.secretsSealed !== null) problems.push(`${where}: pending with secrets`);
          continue;
        }
        if (a.status !== 'ACTIVE') {
          problems.push(`${where}: unexpected status`);
          continue;
        }
        if (!a.secretsSealed) {
          problems.push(`${where}: active without secrets`);
          continue;
        }
        let s: Record<string, string>;
        try {
          s = JSON.parse(sealer.open(a.secretsSealed, aad.accountSecrets(a.id))) as Record<string, string>;
        } catch (e) {
          problems.push(`${where}: secrets do not decrypt (${(e as Error).message})`);
          continue;
        }
        if (connection === 'helpdesk') {
          const known = sent.get(a.identifier);
          if (!known?.values.includes(s.api_token!)) problems.push(`${where}: holds an API token never sent for it`);
          if (a.fields.domain !== DOMAIN || a.fields.email !== EMAIL)
            problems.push(`${where}: fields ${JSON.stringify(a.fields)}`);
        } else if (connection === 'mail') {
          if (oauth.validate(s.access_token)?.subject !== a.identifier)
            problems.push(`${where}: access token not issued for this user`);
          if (!tap.issuedTogether(s.access_token, s.refresh_token))
            problems.push(`${where}: token pair not issued together`);
        }
      }
      for (const [identifier, { values, acked }] of sent) {
        if (acked < 0) continue;
        ackedChecked++;
        const a = byIdentifier.get(`helpdesk/${identifier}`);
        if (!a || a.status !== 'ACTIVE' || !a.secretsSealed) {
          problems.push(`helpdesk/${identifier}: acknowledged but ${a ? a.status : 'missing'}`);
          continue;
        }
        const token = (JSON.parse(sealer.open(a.secretsSealed, aad.accountSecrets(a.id))) as Record<string, string>)
          .api_token!;
        if (!values.slice(acked).includes(token))
          problems.push(`helpdesk/${identifier}: holds an older value than the acknowledged one`);
      }
      for (const identifier of ackedOAuth) {
        ackedChecked++;
        const a = byIdentifier.get(`mail/${identifier}`);
        if (!a || a.status !== 'ACTIVE')
          problems.push(`mail/${identifier}: acknowledged but ${a ? a.status : 'missing'}`);
      }
      return { problems, accounts: all.length, ackedChecked };
    } finally {
      await store.close();
    }
  }

  /** One round: the whole load at once, SIGKILL once `killAt` writes were acknowledged. */
  async function round(r: number, killAt: number) {
    const c = child!;
    let acks = 0;
    let killed: Promise<void> | undefined;
    const ack = () => {
      acks++;
      if (acks === killAt) killed = kill(c);
    };
    const work: Array<Promise<unknown>> = [];
    // Earlier accounts to re-upsert, each once: no two writes of this round race on one account, so the value
    // acknowledged last is the one that must be stored.
    const earlier = [...sent.keys()];
    const previous = earlier.length
      ? Array.from(
          { length: Math.min(REUPSERTS, earlier.length) },
          (_, k) => earlier[(r * 97 + k * 13) % earlier.length]!,
        )
      : [];
    const reupserted = new Set<string>();
    for (let i = 0; i < UPSERTS; i++) {
      const identifier = `r${r}-u${i}`;
      const value = `zd-${randomBytes(16).toString('hex')}`;
      const entry = { values: [value], acked: -1 };
      sent.set(identifier, entry);
      secrets.add('API key', value);
      work.push(
        upsert(identifier, value).then((ok) => {
          if (!ok) return;
          entry.acked = Math.max(entry.acked, 0);
          ack();
        }),
      );
      // Re-upserts of earlier accounts with a new value, interleaved with the new ones.
      const again =
        i % Math.floor(UPSERTS / REUPSERTS) === 0 ? previous[i / Math.floor(UPSERTS / REUPSERTS)] : undefined;
      if (again && !reupserted.has(again)) {
        reupserted.add(again);
        const e = sent.get(again)!;
        const v = `zd-${randomBytes(16).toString('hex')}`;
        const index = e.values.push(v) - 1;
        secrets.add('API key', v);
        work.push(
          upsert(again, v).then((ok) => {
            if (!ok) return;
            e.acked = Math.max(e.acked, index);
            ack();
          }),
        );
      }
      if (i % Math.floor(UPSERTS / OAUTH_FLOWS) === 0) {
        const who = `r${r}-o${i}`;
        work.push(
          authorizeFlow(who).then((ok) => {
            if (!ok) return;
            ackedOAuth.add(who);
            ack();
          }),
        );
      }
    }
    const settled = await Promise.allSettled(work);
    if (!killed) killed = kill(c);
    await killed;
    child = undefined;
    return { acks, total: work.length, unanswered: settled.filter((s) => s.status === 'rejected').length };
  }

  /** After a restart: the old service token works, acknowledged data reads back, tools run. */
  async function servesAgain(r: number): Promise<string[]> {
    const problems: string[] = [];
    const ackedHelpdesk = [...sent].reverse().find(([, e]) => e.acked >= 0)?.[0];
    if (ackedHelpdesk) {
      const list = await json<{ connected_accounts: Array<{ id: string; status: string }> }>(
        'GET',
        `/v1/connected-accounts?connection_name=helpdesk&identifier=${encodeURIComponent(ackedHelpdesk)}`,
      );
      if (list.connected_accounts[0]?.status !== 'ACTIVE')
        problems.push(`round ${r}: ${ackedHelpdesk} reads ${list.connected_accounts[0]?.status}`);
    }
    const oauthUser = [...ackedOAuth].at(-1);
    if (oauthUser) {
      const res = await api_('POST', '/v1/tools/execute', {
        tool_name: 'mail_mailbox_settings_get',
        tool_input: { response_format: 'detailed' },
        connection_name: 'mail',
        identifier: oauthUser,
      });
      const body = (await res.json()) as { data?: { subject?: string } };
      if (res.status !== 200 || body.data?.subject !== oauthUser)
        problems.push(`round ${r}: tool on ${oauthUser} answered ${res.status} ${JSON.stringify(body)}`);
    }
    const desked = await api_('PUT', '/v1/connected-accounts', {
      connection_name: 'helpdesk-desk',
      identifier: `check-${r}`,
      credentials: { domain: DOMAIN, email: EMAIL, api_token: DESK_TOKEN },
    });
    await desked.arrayBuffer();
    const tickets = await api_('POST', '/v1/tools/execute', {
      tool_name: 'helpdesk_tickets_list',
      tool_input: { per_page: 1 },
      connection_name: 'helpdesk-desk',
      identifier: `check-${r}`,
    });
    const tbody = (await tickets.json()) as { data?: { tickets?: unknown[] } };
    if (desked.status !== 200 || tickets.status !== 200 || tbody.data?.tickets?.length !== 1)
      problems.push(`round ${r}: helpdesk tool answered ${tickets.status}`);
    return problems;
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'acs-crash-'));
    oauth = await new FakeOAuthServer().start();
    oauth.addClient({ client_id: 'client-crash', client_secret: providerSecret, auth: 'client_secret_post' });
    tap = await new TokenTap(oauth.tokenUrl).start();
    desk = await new FakeDesk().start();
    desk.addTenant(DOMAIN, EMAIL, DESK_TOKEN);
    api = await startMailboxSettingsApi(oauth);
    child = await startChild();
    const res = await fetch(`${url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: TEST_CLIENT_ID,
        client_secret: TEST_CLIENT_SECRET,
      }),
    });
    serviceToken = ((await res.json()) as { access_token: string }).access_token;
    await json('POST', '/v1/connections', { connection_name: 'helpdesk', connector: 'helpdesk' });
    await json('POST', '/v1/connections', {
      connection_name: 'helpdesk-desk',
      connector: 'helpdesk',
      api_base_url: desk.baseUrlTemplate,
    });
    await json('POST', '/v1/connections', {
      connection_name: 'mail',
      connector: 'mail',
      client_id: 'client-crash',
      client_secret: providerSecret,
      api_base_url: api.url,
      oauth: { authorize_url: oauth.authorizeUrl, token_url: tap.url },
    });
  });

  afterAll(async () => {
    if (child) await stop(child);
    await tap?.close();
    await oauth?.close();
    await api?.close();
    await desk?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    if (backend === 'postgres') {
      const cleanup = new PostgresStore(PG_URL);
      await cleanup.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
      await cleanup.close();
    }
  });

  describe(`SIGKILL during concurrent upserts and OAuth callbacks, restart on the same ${where}`, () => {
    it(
      `keeps every acknowledged write, a sound store and no half-written account (${ROUNDS} crashes)`,
      // A hang guard. On a loaded machine (load 17 on 2 cores, both stores' runs at once) the ten rounds took 17
      // minutes on SQLite and 18 on PostgreSQL.
      { timeout: SOAK ? 5_400_000 : 1_800_000 },
      async () => {
        const lines: string[] = [];
        let survived = 0;
        let acknowledged = 0;
        let accounts = 0;
        const allProblems: string[] = [];
        for (let r = 0; r < ROUNDS; r++) {
          const total = UPSERTS + REUPSERTS + OAUTH_FLOWS;
          // After the first acknowledgement, then after 10 %, 20 % ... 90 % of the writes.
          const killAt = r % 10 === 0 ? 1 : Math.floor((total * (r % 10)) / 10);
          const outcome = await round(r, killAt);
          const check = await checkStore();
          child = await startChild();
          const serving = await servesAgain(r);
          const problems = [...check.problems, ...serving];
          if (!problems.length) survived++;
          allProblems.push(...problems.map((p) => `round ${r}: ${p}`));
          acknowledged = check.ackedChecked;
          accounts = check.accounts;
          lines.push(
            `round ${r}: killed after ${outcome.acks} of ${outcome.total} writes acknowledged (${outcome.unanswered} unanswered); ${check.accounts} accounts; ${problems.length} problems`,
          );
        }
        console.log(lines.join('\n'));
        record({
          category: 'crashes survived',
          what: `SIGKILL mid-way through ${UPSERTS} concurrent upserts + ${REUPSERTS} re-upserts + ${OAUTH_FLOWS} OAuth callbacks, restart on the same ${where}`,
          tried: ROUNDS,
          failed: ROUNDS - survived,
          detail: `${acknowledged} acknowledged writes (${ackedOAuth.size} OAuth callbacks) verified after the last crash, ${accounts} accounts checked for half-writes${allProblems.length ? `; first problems: ${allProblems.slice(0, 3).join(' | ')}` : ''}`,
        });
        expect(allProblems).toEqual([]);
      },
    );

    it('releases the refresh lock of a killed process: the account refreshes right after the restart', async () => {
      child ??= await startChild();
      const who = 'lease-holder';
      expect(await authorizeFlow(who)).toBe(true);
      const store = openStore();
      const mail = (await store.getConnectionByName('mail'))!;
      const account = (await store.findAccount(mail.id, who))!;
      await store.updateAccount(account.id, { tokenExpiresAt: Date.now() - 1000 }, Date.now(), account.version);
      await store.close();

      tap.hold = true;
      const inflight = api_('POST', '/v1/tools/execute', {
        tool_name: 'mail_mailbox_settings_get',
        tool_input: { response_format: 'detailed' },
        connection_name: 'mail',
        identifier: who,
      }).catch(() => undefined);
      await tap.waitForHeld();
      await kill(child);
      child = undefined;
      await inflight;
      tap.dropHeld();
      tap.hold = false;

      child = await startChild();
      const before = tap.refreshes;
      const res = await api_('POST', '/v1/tools/execute', {
        tool_name: 'mail_mailbox_settings_get',
        tool_input: { response_format: 'detailed' },
        connection_name: 'mail',
        identifier: who,
      });
      const body = (await res.json()) as { data?: { subject?: string }; error?: { code: string } };
      const ok = res.status === 200 && body.data?.subject === who && tap.refreshes - before === 1;
      record({
        category: 'crashes survived',
        what: 'SIGKILL while holding an account refresh lock; the restarted service refreshes that account',
        tried: 1,
        failed: ok ? 0 : 1,
        detail: `answered ${res.status}`,
      });
      expect(body).toMatchObject({ data: { subject: who } });
      expect(tap.refreshes - before).toBe(1);
    });

    it('leaves no secret in the service output or the store', async () => {
      if (child) {
        await stop(child);
        child = undefined;
      }
      secrets.add('API client secret', TEST_CLIENT_SECRET);
      secrets.add('provider client secret', providerSecret);
      secrets.addBasic('API key', `${EMAIL}/token`, DESK_TOKEN);
      for (const p of tap.pairs) {
        secrets.add('access token', p.access_token);
        secrets.add('refresh token', p.refresh_token);
      }
      secrets.addAll(
        'PKCE verifier',
        oauth.tokenRequests.map((r) => r.code_verifier),
      );
      const findings = secrets.findInTexts(output.join('').split('\n'), 'service output line');
      if (backend === 'postgres') {
        const store = new PostgresStore(PG_URL, schema);
        try {
          findings.push(...secrets.findInTexts(await pgRows(store), 'database row'));
        } finally {
          await store.close();
        }
      } else findings.push(...secrets.findInFiles(sqliteFiles(join(dataDir, 'acs.sqlite'))));
      recordScan(`crash runs (${backend}): service stdout/stderr and ${stored}`, secrets, findings, secrets.scanned);
      expect(findings).toEqual([]);
    });
  });
}
