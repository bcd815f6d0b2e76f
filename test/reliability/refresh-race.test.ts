/**
 * Token lifecycle across two service instances sharing one store (SQLite data directory, or one PostgreSQL
 * schema where the lock is an advisory lock). Complements test/e2e/oauth.test.ts, which covers one instance.
 *
 * - Both instances see an expired token at once (proactive) or get a 401 at once (reactive): exactly one refresh
 *   request reaches the provider, which rotates refresh tokens and answers a reused one with invalid_grant; the
 *   loser re-reads the stored tokens and succeeds; the account stays ACTIVE.
 * - A refresh that happened outside the lock (the token rotated at the provider and stored between the service's
 *   read and its refresh): the provider answers the service invalid_grant; the service re-reads, sees the stored
 *   token changed, and does NOT mark the account EXPIRED. The control — the token consumed elsewhere but nothing
 *   stored — is a real revocation and does mark it EXPIRED.
 * - Rotation is stored atomically: every (access token, refresh token) pair ever observed in the store, by a
 *   sampler reading the row throughout, was issued together in one token response, and the stored refresh token
 *   is the live one.
 */
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import type { Listening } from '../fakes/listen.ts';
import { startMailboxSettingsApi } from '../fakes/mailbox-settings.ts';
import { loadConfig } from '../../runtime/config.ts';
import { startServer, type RunningServer } from '../../runtime/server.ts';
import { AgentConnectorClient } from '../../packages/client/src/index.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import type { Store } from '../../runtime/store/types.ts';
import { aad } from '../../runtime/crypto/aad.ts';
import { TokenTap } from './token-tap.ts';
import { record } from './summary.ts';
import { recordScan, recordingFetch, SecretRegistry, sqliteFiles } from './secret-registry.ts';
import { join } from 'node:path';

const ROUNDS = Number(process.env.RELIABILITY_SOAK) ? 50 : 5;
const CALLS_PER_INSTANCE = 10;

interface Pair {
  h: Harness;
  b: RunningServer;
  clientB: AgentConnectorClient;
  logsB: string[];
  tap: TokenTap;
  api: Listening;
  /** A third handle on the same store, for sampling and for writes "outside the lock". */
  side: Store;
  clientSecret: string;
  responses: string[];
}

async function startPair(kind: 'sqlite' | 'postgres'): Promise<Pair> {
  const h = await startHarness({ store: kind });
  const config = loadConfig(serviceEnv(h.dataDir));
  const logsB: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logsB.push(String(chunk));
      cb();
    },
  });
  const schema = kind === 'postgres' ? (h.running.services.store as PostgresStore).schema : undefined;
  const b = await startServer(config, {
    logDestination: sink,
    store: schema ? new PostgresStore(PG_URL, schema) : undefined,
  });
  const responses: string[] = [];
  const clientB = new AgentConnectorClient({
    clientId: TEST_CLIENT_ID,
    clientSecret: TEST_CLIENT_SECRET,
    envUrl: b.url,
    fetch: recordingFetch(responses),
  });
  h.client = new AgentConnectorClient({
    clientId: TEST_CLIENT_ID,
    clientSecret: TEST_CLIENT_SECRET,
    envUrl: h.url,
    fetch: recordingFetch(responses),
  });
  const side: Store = schema ? new PostgresStore(PG_URL, schema, 2) : new SqliteStore(join(h.dataDir, 'acs.sqlite'));

  const tap = await new TokenTap(h.oauth.tokenUrl).start();
  const api = await startMailboxSettingsApi(h.oauth);
  const clientSecret = `secret-race-${Math.random().toString(36).slice(2)}`;
  h.oauth.addClient({ client_id: 'client-race', client_secret: clientSecret, auth: 'client_secret_post' });
  await h.client.createConnection({
    connection_name: 'mail',
    connector: 'mail',
    client_id: 'client-race',
    client_secret: clientSecret,
    api_base_url: api.url,
    oauth: { authorize_url: h.oauth.authorizeUrl, token_url: tap.url },
  });
  return { h, b, clientB, logsB, tap, api, side, clientSecret, responses };
}

async function stopPair(p: Pair | undefined): Promise<void> {
  if (!p) return;
  await p.side.close();
  await p.tap.close();
  await p.api.close();
  await p.b.close();
  await p.h.close();
}

function settings(client: AgentConnectorClient, identifier: string) {
  return client.executeTool({
    toolName: 'mail_mailbox_settings_get' as never,
    // The provider's answer as it came: the fake names the token's user in `subject`, which no concise answer keeps.
    toolInput: { response_format: 'detailed' } as never,
    connectionName: 'mail',
    identifier,
  });
}

/** Both instances, interleaved, all at once. */
function burst(p: Pair, identifier: string) {
  const calls: Array<Promise<unknown>> = [];
  for (let i = 0; i < CALLS_PER_INSTANCE; i++)
    calls.push(settings(p.h.client, identifier), settings(p.clientB, identifier));
  return Promise.allSettled(calls);
}

function storedSecrets(p: Pair, sealed: string | null, id: string): Record<string, string> {
  return JSON.parse(p.h.running.services.sealer.open(sealed!, aad.accountSecrets(id))) as Record<string, string>;
}

/** A refresh done by someone else, straight at the provider, with the token the service is about to use. */
async function refreshElsewhere(p: Pair, refreshToken: string) {
  const res = await fetch(p.h.oauth.tokenUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: 'client-race',
      client_secret: p.clientSecret,
    }),
  });
  expect(res.status).toBe(200);
  const t = (await res.json()) as { access_token: string; refresh_token: string; expires_in: number };
  p.tap.pairs.push({ access_token: t.access_token, refresh_token: t.refresh_token });
  return t;
}

/** Every row of every table of the schema, as JSON text. */
async function tableRows(store: PostgresStore): Promise<string[]> {
  const tables = await store.pool.query<{ table_name: string }>(
    'SELECT table_name FROM information_schema.tables WHERE table_schema = $1',
    [store.schema],
  );
  const rows: string[] = [];
  for (const { table_name } of tables.rows) {
    const r = await store.pool.query<{ j: string }>(`SELECT row_to_json(t)::text AS j FROM ${table_name} t`);
    rows.push(...r.rows.map((x) => x.j));
  }
  return rows;
}

for (const kind of ['sqlite', 'postgres'] as const) {
  describe(`token refresh across two service instances sharing one ${kind} store`, () => {
    let p: Pair;
    const secrets = new SecretRegistry();

    beforeAll(async () => {
      p = await startPair(kind);
    });
    afterAll(async () => {
      if (p) {
        secrets.add('provider client secret', p.clientSecret);
        secrets.add('API client secret', TEST_CLIENT_SECRET);
        for (const t of p.tap.pairs) {
          secrets.add('access token', t.access_token);
          secrets.add('refresh token', t.refresh_token);
        }
        secrets.addAll(
          'PKCE verifier',
          p.h.oauth.tokenRequests.map((r) => r.code_verifier),
        );
        const logs = [...p.h.logs, ...p.logsB];
        const findings = [
          ...secrets.findInTexts(logs, 'log line'),
          ...secrets.findInTexts(p.responses, 'response'),
          ...(kind === 'sqlite'
            ? secrets.findInFiles(sqliteFiles(join(p.h.dataDir, 'acs.sqlite')))
            : secrets.findInTexts(await tableRows(p.side as PostgresStore), 'database row')),
        ];
        recordScan(
          `token lifecycle, two instances (${kind}): logs, responses, database`,
          secrets,
          findings,
          secrets.scanned,
        );
        await stopPair(p);
        expect(findings).toEqual([]);
      }
    });

    it('an expired token seen by both instances at once is refreshed once; the loser re-reads and succeeds', async () => {
      const id = await authorize(p.h, 'mail', 'racer');
      let failedRounds = 0;
      const perRound: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        await expireStoredToken(p.side, id);
        const before = p.h.oauth.counts.refresh_token;
        // Holds the winner's refresh at the provider, so the other instance surely reads the expired token too.
        p.h.oauth.refreshDelayMs = 150;
        const results = await burst(p, 'racer');
        p.h.oauth.refreshDelayMs = 0;
        const refreshes = p.h.oauth.counts.refresh_token - before;
        perRound.push(refreshes);
        const failed = results.filter((r) => r.status === 'rejected');
        const account = (await p.side.getAccount(id))!;
        const s = storedSecrets(p, account.secretsSealed, id);
        const ok =
          refreshes === 1 &&
          failed.length === 0 &&
          account.status === 'ACTIVE' &&
          p.tap.issuedTogether(s.access_token, s.refresh_token) &&
          p.h.oauth.liveRefreshTokens().includes(s.refresh_token!);
        if (!ok) failedRounds++;
        expect(failed.map((f) => String(f.reason))).toEqual([]);
        expect(refreshes).toBe(1);
        expect(account.status).toBe('ACTIVE');
      }
      record({
        category: 'faults injected',
        what: `expired token seen by two instances at once (${kind}, ${CALLS_PER_INSTANCE * 2} calls per round): one refresh reaches the provider`,
        tried: ROUNDS,
        failed: failedRounds,
        detail: `refresh requests per round: ${perRound.join(',')}`,
      });
    });

    it('a 401 seen by both instances at once is refreshed once', async () => {
      let failedRounds = 0;
      for (let round = 0; round < ROUNDS; round++) {
        p.h.oauth.expireAccessTokens();
        const before = p.h.oauth.counts.refresh_token;
        p.h.oauth.refreshDelayMs = 150;
        const results = await burst(p, 'racer');
        p.h.oauth.refreshDelayMs = 0;
        const refreshes = p.h.oauth.counts.refresh_token - before;
        const rejected = results.filter((r) => r.status === 'rejected').length;
        if (refreshes !== 1 || rejected) failedRounds++;
        expect(rejected).toBe(0);
        expect(refreshes).toBe(1);
      }
      record({
        category: 'faults injected',
        what: `upstream 401 seen by two instances at once (${kind}): one reactive refresh`,
        tried: ROUNDS,
        failed: failedRounds,
      });
    });

    it('invalid_grant after a refresh made outside the lock: re-reads, stays ACTIVE; a real revocation still expires', async () => {
      // The race: between the service's read and its refresh, someone else rotated the token and stored the result.
      const id = await authorize(p.h, 'mail', 'outside');
      await expireStoredToken(p.side, id);
      let stored: { access_token: string; refresh_token: string } | undefined;
      p.tap.beforeRefresh = async (rt) => {
        p.tap.beforeRefresh = undefined;
        stored = await refreshElsewhere(p, rt);
        const sealed = p.h.running.services.accounts.sealSecrets(id, {
          access_token: stored.access_token,
          refresh_token: stored.refresh_token,
          token_type: 'Bearer',
        });
        await p.side.updateAccount(id, { secretsSealed: sealed, tokenExpiresAt: Date.now() + 3_600_000 }, Date.now());
      };
      const before = p.h.oauth.counts.refresh_token;
      const results = await burst(p, 'outside');
      const rejected = results.filter((r) => r.status === 'rejected').map((r) => String(r.reason));
      expect(stored).toBeDefined();
      // The outside refresh and the service's refused one; the instance that lost the lock re-read instead.
      expect(p.h.oauth.counts.refresh_token - before).toBe(2);
      const account = (await p.side.getAccount(id))!;
      const raceOk =
        rejected.length === 0 &&
        account.status === 'ACTIVE' &&
        storedSecrets(p, account.secretsSealed, id).access_token === stored!.access_token;
      expect(rejected).toEqual([]);
      expect(account.status).toBe('ACTIVE');
      expect(account.lastError).toBeNull();
      expect(storedSecrets(p, account.secretsSealed, id).refresh_token).toBe(stored!.refresh_token);
      const after = results.map((r) => (r as PromiseFulfilledResult<{ data: { subject: string } }>).value.data.subject);
      expect(new Set(after)).toEqual(new Set(['outside']));

      // The control: the token was consumed elsewhere but nothing new was stored — a revocation, not a race.
      const id2 = await authorize(p.h, 'mail', 'revoked');
      await expireStoredToken(p.side, id2);
      p.tap.beforeRefresh = async (rt) => {
        p.tap.beforeRefresh = undefined;
        await refreshElsewhere(p, rt);
      };
      const control = await burst(p, 'revoked');
      const expired = (await p.side.getAccount(id2))!;
      const controlOk =
        control.every(
          (r) => r.status === 'rejected' && (r.reason as { code?: string }).code === 'authorization_required',
        ) && expired.status === 'EXPIRED';
      expect(expired.status).toBe('EXPIRED');
      expect(expired.lastError).toContain('invalid_grant');
      expect(controlOk).toBe(true);
      record({
        category: 'faults injected',
        what: `invalid_grant to the refresher after an outside refresh (${kind}): not EXPIRED when the stored token changed; EXPIRED when it did not`,
        tried: 2,
        failed: (raceOk ? 0 : 1) + (controlOk ? 0 : 1),
      });
    });

    it('stores a rotated refresh token atomically with its access token (sampled throughout)', async () => {
      const id = await authorize(p.h, 'mail', 'atomic');
      const observed = new Map<string, string>();
      let sampling = true;
      let samples = 0;
      const sampler = (async () => {
        while (sampling) {
          const a = await p.side.getAccount(id);
          if (a?.secretsSealed) {
            const s = storedSecrets(p, a.secretsSealed, id);
            observed.set(`${s.access_token} ${s.refresh_token}`, a.status);
            samples++;
          }
          await new Promise((r) => setImmediate(r));
        }
      })();
      const refreshes = ROUNDS * 4;
      for (let i = 0; i < refreshes; i++) {
        await expireStoredToken(p.side, id);
        await (i % 2 ? settings(p.clientB, 'atomic') : settings(p.h.client, 'atomic'));
        const a = (await p.side.getAccount(id))!;
        const s = storedSecrets(p, a.secretsSealed, id);
        observed.set(`${s.access_token} ${s.refresh_token}`, a.status);
        expect(p.tap.issuedTogether(s.access_token, s.refresh_token)).toBe(true);
        expect(p.h.oauth.liveRefreshTokens()).toContain(s.refresh_token);
      }
      sampling = false;
      await sampler;
      const mixed = [...observed.keys()].filter((k) => {
        const [access, refresh] = k.split(' ');
        return !p.tap.issuedTogether(access, refresh);
      });
      record({
        category: 'faults injected',
        what: `refresh-token rotation stored with its access token (${kind}): stored pairs not issued together`,
        tried: observed.size,
        failed: mixed.length,
        detail: `${refreshes} refreshes alternating instances, ${samples} samples of the stored row`,
      });
      expect(mixed).toEqual([]);
      expect(observed.size).toBeGreaterThan(refreshes);
    });
  });
}
