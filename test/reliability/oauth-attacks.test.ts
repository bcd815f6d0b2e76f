/**
 * Attacks on the OAuth flow (group "proxy and OAuth security"), against the fake authorization server:
 * state replayed (one after the other and all at once), expired, forged, or carried to another connection;
 * a code from one account's flow presented with another account's state; the PKCE verifier looked for in
 * every URL, page, response, log line and file the service writes; open redirects through the client's return
 * URL; and a provider whose token response names a host of its choosing.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import { followAuthorizationLink, oauthConnection, startHarness, type Harness } from '../helpers/harness.ts';
import { ConnectorServiceError } from '../../packages/client/src/index.ts';
import { FakeOAuthServer } from '../fakes/oauth-server.ts';
import { Sentinel } from './sentinel.ts';
import { record, tallied, type Tally } from './summary.ts';

const RETURN_ORIGIN = 'https://app.client.example';
let h: Harness;
let api: Sentinel;
const tally: Tally = { tried: 0, failed: 0 };

beforeAll(async () => {
  h = await startHarness({ env: { ALLOWED_REDIRECT_ORIGINS: RETURN_ORIGIN, LOG_LEVEL: 'debug' } });
  api = await new Sentinel().start();
  await oauthConnection(h, 'mail', 'mail', api.url);
  await oauthConnection(h, 'mail-b', 'mail', api.url);
});
afterEach(() => {
  vi.restoreAllMocks();
});
afterAll(async () => {
  record({
    category: 'attacks tried',
    what: 'OAuth flow: state, codes, PKCE verifier, return URLs, token-response hosts',
    tried: tally.tried,
    failed: tally.failed,
  });
  await api?.close();
  await h?.close();
});

/** Counts one attack (or `n`) and whether it held. */
const attack = (n: number, fn: () => Promise<void>) => tallied(tally, n, fn);

/** Opens a link up to the provider: the authorization URL the browser is sent to. */
async function startFlow(identifier: string, connectionName = 'mail', redirectUrl?: string) {
  const { link, connected_account_id } = await h.client.getAuthorizationLink({
    connectionName,
    identifier,
    ...(redirectUrl ? { redirectUrl } : {}),
  });
  const start = await fetch(link, { redirect: 'manual' });
  expect(start.status).toBe(302);
  const authorize = new URL(start.headers.get('location')!);
  return { link, accountId: connected_account_id, authorize, state: authorize.searchParams.get('state')! };
}

/** The user consents at the provider: the callback URL (with code and state) the provider redirects to. */
async function consent(authorize: URL, user: string): Promise<URL> {
  const u = new URL(authorize);
  u.searchParams.set('fake_user', user);
  const res = await fetch(u, { redirect: 'manual' });
  expect(res.status).toBe(302);
  return new URL(res.headers.get('location')!);
}

const status = async (accountId: string) => (await h.client.getConnectedAccount(accountId)).status;

describe('state', () => {
  it('is single-use, also when the same callback arrives many times at once', async () => {
    await attack(6, async () => {
      const flow = await startFlow('concurrent');
      const callback = await consent(flow.authorize, 'concurrent');
      const exchanges = h.oauth.counts.authorization_code;
      const results = await Promise.all(Array.from({ length: 6 }, () => fetch(callback, { redirect: 'manual' })));
      expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400, 400, 400, 400]);
      // The replays were refused for their state: only one of them ever presented the code to the provider.
      expect(h.oauth.counts.authorization_code - exchanges).toBe(1);
      expect(await status(flow.accountId)).toBe('ACTIVE');
    });
  });

  it('is refused once expired, and so is an expired link', async () => {
    await attack(2, async () => {
      const flow = await startFlow('late');
      const callback = await consent(flow.authorize, 'late');
      const exchanges = h.oauth.counts.authorization_code;
      const now = Date.now();
      vi.spyOn(Date, 'now').mockReturnValue(now + 11 * 60_000);
      const res = await fetch(callback, { redirect: 'manual' });
      vi.restoreAllMocks();
      expect(res.status).toBe(400);
      // Refused for its state, before the code went anywhere.
      expect(await res.text()).toMatch(/authorization state is unknown, expired/);
      expect(h.oauth.counts.authorization_code).toBe(exchanges);
      expect(await status(flow.accountId)).toBe('PENDING_AUTH');

      const { link } = await h.client.getAuthorizationLink({ connectionName: 'mail', identifier: 'late-link' });
      vi.spyOn(Date, 'now').mockReturnValue(Date.now() + (h.config.linkTtlSeconds + 1) * 1000);
      const opened = await fetch(link, { redirect: 'manual' });
      vi.restoreAllMocks();
      expect(opened.status).toBe(400);
    });
  });

  it('is refused at another connection, and forged states never reach the provider', async () => {
    await attack(1, async () => {
      const flow = await startFlow('crossed');
      const callback = await consent(flow.authorize, 'crossed');
      const other = await h.client.getConnection('mail-b');
      const exchanges = h.oauth.counts.authorization_code;
      const crossed = await fetch(`${h.config.publicUrl}/sso/v1/oauth/${other.id}/callback${callback.search}`, {
        redirect: 'manual',
      });
      expect(crossed.status).toBe(400);
      expect(await crossed.text()).toMatch(/belongs to another connection/);
      expect(h.oauth.counts.authorization_code).toBe(exchanges);
      expect(await status(flow.accountId)).toBe('PENDING_AUTH');
    });
    const c = await h.client.getConnection('mail');
    const exchanges = h.oauth.counts.authorization_code;
    let n = 0;
    await attack(0, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            fc.string(),
            fc.string({ unit: 'binary', maxLength: 64 }),
            fc.constantFrom('', ' ', 'null', '[]', 'x'.repeat(10_000), '%00', '../../'),
          ),
          async (state) => {
            n++;
            const q = new URLSearchParams({ code: 'code-from-nowhere', state });
            const res = await fetch(`${h.config.publicUrl}/sso/v1/oauth/${c.id}/callback?${q}`, { redirect: 'manual' });
            expect(res.status).toBe(400);
            expect(res.headers.get('location')).toBeNull();
          },
        ),
        { numRuns: 60 },
      );
    });
    tally.tried += n;
    expect(h.oauth.counts.authorization_code).toBe(exchanges);
  });

  it("cannot carry a code from one account's flow into another's", async () => {
    await attack(1, async () => {
      // At a provider that does not insist on PKCE, only the service's own challenge binds a code to its flow.
      const lenient = await new FakeOAuthServer({ requirePkce: false }).start();
      lenient.addClient({ client_id: 'lenient-client', client_secret: 'lenient-secret', auth: 'client_secret_post' });
      await h.client.createConnection({
        connection_name: 'mail-lenient',
        connector: 'mail',
        client_id: 'lenient-client',
        client_secret: 'lenient-secret',
        api_base_url: api.url,
        oauth: { authorize_url: lenient.authorizeUrl, token_url: lenient.tokenUrl },
      });
      const victim = await startFlow('victim', 'mail-lenient');
      expect(victim.authorize.searchParams.get('code_challenge_method')).toBe('S256');
      const victimCallback = await consent(victim.authorize, 'victim-user');
      const attacker = await startFlow('attacker', 'mail-lenient');
      // The attacker's state with the victim's code: the service exchanges it with the attacker's PKCE verifier.
      const mixed = new URL(victimCallback);
      mixed.searchParams.set('state', attacker.state);
      const res = await fetch(mixed, { redirect: 'manual' });
      expect(res.status).toBe(400);
      expect(await res.text()).toMatch(/refused the authorization code/);
      expect(await status(attacker.accountId)).toBe('PENDING_AUTH');
      expect(lenient.issuedAccessTokens().map((t) => lenient.validate(t)?.subject)).not.toContain('victim-user');
      await lenient.close();
    });
  });
});

describe('the PKCE verifier', () => {
  it('never appears in a URL, page, API response, log line or file of the service', async () => {
    await attack(1, async () => {
      const seen: string[] = [];
      const { link, connected_account_id } = await h.client.getAuthorizationLink({
        connectionName: 'mail',
        identifier: 'pkce',
        redirectUrl: `${RETURN_ORIGIN}/done`,
      });
      seen.push(link);
      const start = await fetch(link, { redirect: 'manual' });
      seen.push(start.headers.get('location')!, await start.text());
      const callback = await consent(new URL(start.headers.get('location')!), 'pkce');
      seen.push(callback.toString());
      const done = await fetch(callback, { redirect: 'manual' });
      seen.push(done.headers.get('location') ?? '', await done.text(), JSON.stringify([...done.headers]));
      const failed = await fetch(callback, { redirect: 'manual' });
      seen.push(await failed.text());
      seen.push(JSON.stringify(await h.client.getConnectedAccount(connected_account_id)));
      seen.push(JSON.stringify(await h.client.listConnectedAccounts({ connectionName: 'mail' })));
      seen.push(JSON.stringify(await h.client.getConnection('mail')));
      seen.push(
        JSON.stringify(
          await h.client.executeTool({
            toolName: 'mail_mailbox_settings_get' as never,
            toolInput: {} as never,
            connectionName: 'mail',
            identifier: 'pkce',
            dryRun: true,
          }),
        ),
      );
      await h.running.services.activity.flush();
      seen.push(h.logs.join(''));
      // The verifier reached the provider's token endpoint, the one place it belongs.
      const verifier = h.oauth.tokenRequests
        .filter((r) => r.grant_type === 'authorization_code')
        .at(-1)!.code_verifier!;
      expect(verifier).toMatch(/^[A-Za-z0-9_-]{43,128}$/);
      const forms = [verifier, Buffer.from(verifier).toString('base64'), Buffer.from(verifier).toString('hex')];
      for (const text of seen) for (const f of forms) expect(text).not.toContain(f);
      for (const file of readdirSync(h.dataDir)) {
        const bytes = readFileSync(join(h.dataDir, file));
        for (const f of forms) expect(bytes.includes(f), `${file} holds the verifier`).toBe(false);
      }
      expect(h.logs.length).toBeGreaterThan(0);
    });
  });
});

describe('return URLs', () => {
  const REFUSED = [
    'https://evil.example/cb',
    'javascript:alert(document.domain)',
    'JaVaScRiPt:alert(1)',
    'data:text/html,<script>alert(1)</script>',
    'vbscript:msgbox(1)',
    '//evil.example/cb',
    '/relative/path',
    'https://app.client.example@evil.example/',
    'https://evil.example#@app.client.example',
    'https://evil.example?@app.client.example',
    'https://evil.example\\@app.client.example',
    'https://app.client.example.evil.example/',
    'https://evil.example/https://app.client.example',
    'http://app.client.example/cb',
    'https://app.client.example:8443/cb',
    'https://app.client.example./cb',
    'https://аpp.client.example/cb',
    'https://app.client.example%2eevil.example/',
    'https://user:pass@app.client.example/cb',
    'https:/\\evil.example',
    ' https://evil.example',
    'ftp://app.client.example/',
    'https://evil.example:443\\app.client.example',
    `${RETURN_ORIGIN.replace('https', 'wss')}/cb`,
  ];
  const ALLOWED = [
    'https://app.client.example/cb',
    'https://APP.client.example/cb?x=1#frag',
    'https://app.client.example:443/cb',
    '\thttps://app.client.example/cb',
  ];

  it.each(REFUSED.map((u) => [u]))('refuses %j', async (redirectUrl) => {
    await attack(1, async () => {
      const e = await h.client
        .getAuthorizationLink({ connectionName: 'mail', identifier: 'redirect', redirectUrl })
        .catch((x: unknown) => x);
      expect(e).toBeInstanceOf(ConnectorServiceError);
      expect((e as ConnectorServiceError).status).toBe(400);
      expect((e as ConnectorServiceError).details[0]!.field).toBe('redirect_url');
    });
  });

  it('sends the user back only to the configured origin, whatever the callback carries', async () => {
    await attack(ALLOWED.length + 2, async () => {
      for (const redirectUrl of ALLOWED) {
        const { link } = await h.client.getAuthorizationLink({
          connectionName: 'mail',
          identifier: `back-${redirectUrl.length}`,
          redirectUrl,
        });
        const res = await followAuthorizationLink(link, 'back');
        expect(res.status).toBe(302);
        expect(new URL(res.headers.get('location')!).origin).toBe(RETURN_ORIGIN);
      }
      // A return address added to the callback by whoever crafts it is ignored.
      const flow = await startFlow('no-return');
      const callback = await consent(flow.authorize, 'no-return');
      callback.searchParams.set('redirect_url', 'https://evil.example/');
      callback.searchParams.set('redirect_uri', 'https://evil.example/');
      const res = await fetch(callback, { redirect: 'manual' });
      expect(res.status).toBe(200);
      expect(res.headers.get('location')).toBeNull();
      // A provider error is escaped in the page, and encoded in the return URL.
      const denied = await startFlow('denied', 'mail', `${RETURN_ORIGIN}/cb`);
      const back = new URL(`${h.config.publicUrl}/sso/v1/oauth/${(await h.client.getConnection('mail')).id}/callback`);
      back.searchParams.set('state', denied.state);
      back.searchParams.set('error', 'access_denied"><script>alert(1)</script>');
      back.searchParams.set('error_description', '<img src=x onerror=alert(1)>');
      const page = await fetch(back, { redirect: 'manual' });
      expect(page.status).toBe(302);
      const location = new URL(page.headers.get('location')!);
      expect(location.origin).toBe(RETURN_ORIGIN);
      expect(location.searchParams.get('error')).toBe('access_denied"><script>alert(1)</script>');
      const noReturn = await startFlow('denied-page');
      back.searchParams.set('state', noReturn.state);
      const html = await (await fetch(back, { redirect: 'manual' })).text();
      expect(html).not.toContain('<script>alert(1)</script>');
      expect(html).not.toContain('<img src=x');
      expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    });
  });
});

describe('a provider that names its own API host', () => {
  it('cannot send the tools of an OAuth account to a host outside the allowlist', async () => {
    await attack(7, async () => {
      const s = h.running.services;
      // The real provider's token endpoint (no operator override): the per-customer host it names is checked.
      await h.client.createConnection({
        connection_name: 'calls',
        connector: 'callintel',
        client_id: 'gong-client',
        client_secret: 'gong-secret-value',
      });
      const a = await h.client.getOrCreateConnectedAccount({ connectionName: 'calls', identifier: 'u' });
      const setHost = async (api_base_url: string) => {
        const stored = (await s.store.getAccount(a.id))!;
        await s.store.updateAccount(
          a.id,
          {
            status: 'ACTIVE',
            fields: { api_base_url },
            secretsSealed: s.accounts.sealSecrets(a.id, { access_token: 'provider-token' }),
            tokenExpiresAt: Date.now() + 3600_000,
          },
          Date.now(),
          stored.version,
        );
        s.accounts.forgetAccount(a.id);
      };
      const before = api.requests.length;
      for (const host of [
        'http://169.254.169.254/latest/meta-data',
        'https://127.0.0.1',
        'http://us-1.api.gong.io',
        'https://gong.io.evil.example',
        'https://user@us-1.api.gong.io',
        `${api.url}/gong`,
      ]) {
        await setHost(host);
        const e = await h.client
          .executeTool({
            toolName: 'callintel_users_list' as never,
            toolInput: {} as never,
            connectionName: 'calls',
            identifier: 'u',
            dryRun: true,
          })
          .catch((x: unknown) => x);
        expect((e as ConnectorServiceError).code, host).toBe('host_not_allowed');
        const p = await h.client
          .request({ connectionName: 'calls', identifier: 'u', path: '/v2/users' })
          .catch((x: unknown) => x);
        expect((p as ConnectorServiceError).code, host).toBe('host_not_allowed');
      }
      expect(api.requests.length).toBe(before);
      await setHost('https://us-12345.api.gong.io');
      const planned = await h.client.executeTool({
        toolName: 'callintel_users_list' as never,
        toolInput: {} as never,
        connectionName: 'calls',
        identifier: 'u',
        dryRun: true,
      });
      expect((planned.data as { requests: Array<{ url: string }> }).requests[0]!.url).toBe(
        'https://us-12345.api.gong.io/v2/users',
      );
      // Tokens a client brings for an OAuth account are held to the same rule.
      const bad = await h.client
        .upsertConnectedAccount({
          connectionName: 'calls',
          identifier: 'brought',
          credentials: { access_token: 't', api_base_url: 'https://evil.example' },
        })
        .catch((x: unknown) => x);
      expect((bad as ConnectorServiceError).details.map((d) => d.field)).toEqual(['credentials.api_base_url']);
    });
  });
});

describe('the /sso result pages (issue 12, point 9)', () => {
  it('are sent with a CSP that allows no script and no framing, X-Frame-Options DENY and no-store', async () => {
    const res = await fetch(`${h.url}/sso/v1/oauth/conn_nope/callback?state=forged&code=x`, { redirect: 'manual' });
    const html = await res.text();
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(html).toContain('<h1>');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('script-src');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('cache-control')).toBe('no-store');
  });
});
