/**
 * The OAuth lifecycle end to end, on the mail connector against the fake authorization server and a
 * small resource server that accepts only the fake's live access tokens: authorization link, PKCE,
 * callback, forged and replayed state, return URLs, proactive and reactive refresh (single-flight),
 * rotation, revocation (EXPIRED, then reconnected by a new link), and a provider outage during refresh.
 */
import express from 'express';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { followAuthorizationLink, oauthConnection, startHarness, type Harness } from '../helpers/harness.ts';
import { expireStoredToken, failure } from '../helpers/tools.ts';
import type { AuthorizationRequiredError } from '../../packages/client/src/index.ts';
import { listen, type Listening } from '../fakes/listen.ts';
import { record, tallied, type Tally } from '../reliability/summary.ts';

let h: Harness;
let api: Listening;
const RETURN_ORIGIN = 'https://app.client.example';

beforeAll(async () => {
  h = await startHarness({ env: { ALLOWED_REDIRECT_ORIGINS: RETURN_ORIGIN } });
  const app = express();
  app.use((req, res, next) => {
    if (!h.oauth.validate(req.headers.authorization)) {
      res.status(401).json({
        error: { code: 'InvalidAuthenticationToken', message: 'Access token has expired or is not yet valid.' },
      });
      return;
    }
    next();
  });
  app.get('/v1.0/me/mailboxSettings', (_req, res) => res.json({ timeZone: 'UTC', language: { locale: 'en-US' } }));
  app.get('/v1.0/me', (req, res) => res.json({ id: h.oauth.validate(req.headers.authorization)!.subject }));
  api = await listen(app);
  await oauthConnection(h, 'mail', 'mail', api.url);
});
afterAll(async () => {
  await api?.close();
  await h?.close();
});

const services = () => h.running.services;
async function settings(identifier: string) {
  return h.client.executeTool({
    toolName: 'mail_mailbox_settings_get' as never,
    toolInput: {} as never,
    connectionName: 'mail',
    identifier,
  });
}
describe('authorization', () => {
  it('shows the redirect URI the provider app must register', async () => {
    const c = await h.client.getConnection('mail');
    expect(c.redirect_uri).toBe(`${h.config.publicUrl}/sso/v1/oauth/${c.id}/callback`);
    expect(c.has_client_secret).toBe(true);
    expect(JSON.stringify(c)).not.toMatch(/secret-mail/);
  });

  it('redirects to the provider with state and a PKCE S256 challenge, and activates the account', async () => {
    const { link, connected_account_id } = await h.client.getAuthorizationLink({
      connectionName: 'mail',
      identifier: 'alice',
    });
    expect((await h.client.getConnectedAccount(connected_account_id)).status).toBe('PENDING_AUTH');
    const start = await fetch(link, { redirect: 'manual' });
    expect(start.status).toBe(302);
    const to = new URL(start.headers.get('location')!);
    expect(`${to.origin}${to.pathname}`).toBe(h.oauth.authorizeUrl);
    expect(to.searchParams.get('code_challenge_method')).toBe('S256');
    expect(to.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(to.searchParams.get('state')!.length).toBeGreaterThanOrEqual(32);
    expect(to.searchParams.get('scope')).toContain('offline_access');
    expect(to.searchParams.get('redirect_uri')).toBe((await h.client.getConnection('mail')).redirect_uri);
    expect(to.searchParams.has('code_verifier')).toBe(false);

    to.searchParams.set('fake_user', 'alice');
    const consent = await fetch(to, { redirect: 'manual' });
    const callback = await fetch(consent.headers.get('location')!, { redirect: 'manual' });
    expect(callback.status).toBe(200);
    expect(await callback.text()).toContain('Account connected');
    const account = await h.client.getConnectedAccount(connected_account_id);
    expect(account.status).toBe('ACTIVE');
    expect(account.token_expires_at).not.toBeNull();
    // The verifier sent at the token endpoint matched the challenge (the fake checks it) and never left otherwise.
    const exchange = h.oauth.tokenRequests.find((r) => r.grant_type === 'authorization_code')!;
    expect(exchange.code_verifier).toMatch(/^[A-Za-z0-9_-]{43,128}$/);
    expect(link).not.toContain(exchange.code_verifier);

    // Replaying the same callback (same state and code) is refused.
    const replay = await fetch(consent.headers.get('location')!, { redirect: 'manual' });
    expect(replay.status).toBe(400);
    expect(await replay.text()).toMatch(/already used|unknown|expired/);
    expect((await settings('alice')).data).toEqual({ timeZone: 'UTC', language: { locale: 'en-US' } });
  });

  it('refuses a forged state and a state from another connection', async () => {
    const c = await h.client.getConnection('mail');
    const forged = await fetch(`${h.config.publicUrl}/sso/v1/oauth/${c.id}/callback?code=x&state=forged-state-value`, {
      redirect: 'manual',
    });
    expect(forged.status).toBe(400);

    await oauthConnection(h, 'mail-b', 'mail', api.url);
    const { link } = await h.client.getAuthorizationLink({ connectionName: 'mail', identifier: 'carol' });
    const start = await fetch(link, { redirect: 'manual' });
    const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
    const callback = new URL(consent.headers.get('location')!);
    const other = await h.client.getConnection('mail-b');
    const crossed = await fetch(`${h.config.publicUrl}/sso/v1/oauth/${other.id}/callback${callback.search}`, {
      redirect: 'manual',
    });
    expect(crossed.status).toBe(400);
    expect((await h.client.getOrCreateConnectedAccount({ connectionName: 'mail', identifier: 'carol' })).status).toBe(
      'PENDING_AUTH',
    );
  });

  it('refuses an invalid or expired link', async () => {
    const c = await h.client.getConnection('mail');
    const res = await fetch(`${h.config.publicUrl}/sso/v1/oauth/${c.id}/authorize?link=not-a-real-link`, {
      redirect: 'manual',
    });
    expect(res.status).toBe(400);
  });

  it('returns the user only to allowed origins, with the outcome', async () => {
    const bad = await failure(
      h.client.getAuthorizationLink({
        connectionName: 'mail',
        identifier: 'dave',
        redirectUrl: 'https://evil.example/cb',
      }),
    );
    expect(bad.status).toBe(400);
    expect(bad.details[0]!.field).toBe('redirect_url');
    const { link } = await h.client.getAuthorizationLink({
      connectionName: 'mail',
      identifier: 'dave',
      redirectUrl: `${RETURN_ORIGIN}/done?x=1`,
    });
    const res = await followAuthorizationLink(link, 'dave');
    expect(res.status).toBe(302);
    const back = new URL(res.headers.get('location')!);
    expect(back.origin).toBe(RETURN_ORIGIN);
    expect(back.searchParams.get('status')).toBe('success');
    expect(back.searchParams.get('x')).toBe('1');
    expect(back.searchParams.get('identifier')).toBe('dave');
  });

  it('records a refusal at the provider without activating the account', async () => {
    const { link, connected_account_id } = await h.client.getAuthorizationLink({
      connectionName: 'mail',
      identifier: 'erin',
    });
    const start = await fetch(link, { redirect: 'manual' });
    const to = new URL(start.headers.get('location')!);
    to.searchParams.set('fake_decision', 'deny');
    const consent = await fetch(to, { redirect: 'manual' });
    const callback = await fetch(consent.headers.get('location')!, { redirect: 'manual' });
    expect(callback.status).toBe(400);
    const account = await h.client.getConnectedAccount(connected_account_id);
    expect(account.status).toBe('PENDING_AUTH');
    expect(account.last_error).toContain('access_denied');
  });
});

/** Opens a link and goes through the fake provider's consent as `user`; returns the callback URL (not yet followed). */
async function consentThrough(link: string, user: string): Promise<string> {
  const start = await fetch(link, { redirect: 'manual' });
  expect(start.status).toBe(302);
  const to = new URL(start.headers.get('location')!);
  to.searchParams.set('fake_user', user);
  const consent = await fetch(to, { redirect: 'manual' });
  return consent.headers.get('location')!;
}
/** Who the provider thinks the account's stored token belongs to. */
const whoAmI = async (identifier: string) =>
  (await h.client.request({ connectionName: 'mail', identifier, path: '/v1.0/me' })).data;

describe('single-use authorization links (issue 12 point 3)', () => {
  const replays: Tally = { tried: 0, failed: 0 };
  afterAll(() =>
    record({
      category: 'link replays',
      what: 'authorization links opened or completed again after a flow completed or a newer link was issued',
      ...replays,
    }),
  );

  it('answers "already used" to a link opened again after a flow completed through it', () =>
    tallied(replays, 1, async () => {
      const { link } = await h.client.getAuthorizationLink({ connectionName: 'mail', identifier: 'frank' });
      expect((await followAuthorizationLink(link, 'frank-at-provider')).status).toBe(200);
      const again = await fetch(link, { redirect: 'manual' });
      expect(again.status).toBe(410);
      expect(again.headers.get('content-type')).toContain('text/html');
      expect(await again.text()).toContain('This link was already used');
      expect(await whoAmI('frank')).toEqual({ id: 'frank-at-provider' });
    }));

  it('never lets a second completion through the same link replace the first account tokens', () =>
    tallied(replays, 1, async () => {
      const { link } = await h.client.getAuthorizationLink({ connectionName: 'mail', identifier: 'grace' });
      // Two flows started from one link (the victim's tab and an attacker who copied the link) before either ends.
      const victim = await consentThrough(link, 'grace-at-provider');
      const attacker = await consentThrough(link, 'attacker-at-provider');
      expect((await fetch(victim, { redirect: 'manual' })).status).toBe(200);
      const second = await fetch(attacker, { redirect: 'manual' });
      expect(second.status).toBe(410);
      expect(await second.text()).toContain('This link was already used');
      expect(await whoAmI('grace')).toEqual({ id: 'grace-at-provider' });
    }));

  it('spends an opened link once a newer link is issued for the same account', () =>
    tallied(replays, 2, async () => {
      const first = await h.client.getAuthorizationLink({ connectionName: 'mail', identifier: 'heidi' });
      const pending = await consentThrough(first.link, 'heidi-at-provider');
      const second = await h.client.getAuthorizationLink({ connectionName: 'mail', identifier: 'heidi' });
      const reopened = await fetch(first.link, { redirect: 'manual' });
      expect(reopened.status).toBe(410);
      expect(await reopened.text()).toContain('This link was already used');
      // The flow already under way from the replaced link cannot complete either.
      expect((await fetch(pending, { redirect: 'manual' })).status).toBe(410);
      expect((await followAuthorizationLink(second.link, 'heidi-at-provider')).status).toBe(200);
      expect(await whoAmI('heidi')).toEqual({ id: 'heidi-at-provider' });
    }));
});

describe('user verification after OAuth (issue 11 point 4)', () => {
  const verifyUrl = `${RETURN_ORIGIN}/verify-user`;
  async function authorizeWithVerification(identifier: string, user: string) {
    const { link, connected_account_id } = await h.client.getAuthorizationLink({
      connectionName: 'mail',
      identifier,
      userVerifyUrl: verifyUrl,
    });
    const res = await followAuthorizationLink(link, user);
    expect(res.status).toBe(302);
    const to = new URL(res.headers.get('location')!);
    expect(`${to.origin}${to.pathname}`).toBe(verifyUrl);
    return { id: connected_account_id, authRequestId: to.searchParams.get('auth_request_id')! };
  }

  it('keeps the account PENDING_VERIFICATION until the application confirms the user, then ACTIVE', async () => {
    const { id, authRequestId } = await authorizeWithVerification('ivan', 'ivan-at-provider');
    expect(authRequestId).toMatch(/^[A-Za-z0-9_-]{32,}$/);
    expect((await h.client.getConnectedAccount(id)).status).toBe('PENDING_VERIFICATION');
    const listed = await h.client.listConnectedAccounts({ connectionName: 'mail', status: 'PENDING_VERIFICATION' });
    expect(listed.connected_accounts.map((a) => a.id)).toContain(id);
    const early = await failure(settings('ivan'));
    expect(early.status).toBe(409);
    expect(early.code).toBe('account_pending_verification');

    const verified = await h.client.verifyConnectedAccountUser({ authRequestId, identifier: 'ivan' });
    expect(verified.status).toBe('ACTIVE');
    expect(await whoAmI('ivan')).toEqual({ id: 'ivan-at-provider' });
    // Single use.
    const again = await failure(h.client.verifyConnectedAccountUser({ authRequestId, identifier: 'ivan' }));
    expect(again.status).toBe(404);
    expect(again.details[0]!.field).toBe('auth_request_id');
  });

  it('refuses an unknown request id and another identifier, which discards that authorization', async () => {
    const unknown = await failure(
      h.client.verifyConnectedAccountUser({ authRequestId: 'not-a-request', identifier: 'judy' }),
    );
    expect(unknown.status).toBe(404);
    const { id, authRequestId } = await authorizeWithVerification('judy', 'mallory-at-provider');
    const mismatch = await failure(h.client.verifyConnectedAccountUser({ authRequestId, identifier: 'mallory' }));
    expect(mismatch.status).toBe(403);
    expect(mismatch.details[0]!.field).toBe('identifier');
    const late = await failure(h.client.verifyConnectedAccountUser({ authRequestId, identifier: 'judy' }));
    expect(late.status).toBe(404);
    // The refused authorization is discarded: the never-connected account waits for a connection again.
    expect((await h.client.getConnectedAccount(id)).status).toBe('PENDING_AUTH');
    expect((await failure(settings('judy'))).code).not.toBe('account_pending_verification');
  });

  it('keeps a working account on its own tokens while a re-authorization waits, and once it is refused (issue 34, finding 5)', async () => {
    // Connected without verification: ACTIVE on the user's own tokens.
    const first = await h.client.getAuthorizationLink({ connectionName: 'mail', identifier: 'mia' });
    expect((await followAuthorizationLink(first.link, 'mia-at-provider')).status).toBe(200);
    expect(await whoAmI('mia')).toEqual({ id: 'mia-at-provider' });
    // Someone else completes a re-authorization link that carries a user_verify_url: nothing the account uses moves.
    const { id, authRequestId } = await authorizeWithVerification('mia', 'attacker-at-provider');
    expect((await h.client.getConnectedAccount(id)).status).toBe('ACTIVE');
    expect(await whoAmI('mia')).toEqual({ id: 'mia-at-provider' });
    // The application refuses the verification: still ACTIVE, still the user's own tokens.
    const refused = await failure(h.client.verifyConnectedAccountUser({ authRequestId, identifier: 'not-mia' }));
    expect(refused.status).toBe(403);
    expect((await h.client.getConnectedAccount(id)).status).toBe('ACTIVE');
    expect(await whoAmI('mia')).toEqual({ id: 'mia-at-provider' });
    // A re-authorization the application verifies replaces the tokens, on the same account.
    const again = await authorizeWithVerification('mia', 'mia-again-at-provider');
    expect(again.id).toBe(id);
    expect(await whoAmI('mia')).toEqual({ id: 'mia-at-provider' });
    const verified = await h.client.verifyConnectedAccountUser({
      authRequestId: again.authRequestId,
      identifier: 'mia',
    });
    expect(verified.status).toBe('ACTIVE');
    expect(await whoAmI('mia')).toEqual({ id: 'mia-again-at-provider' });
    record({
      category: 'verification keeps the account',
      what: "a working account's re-authorization by someone else, waiting, refused, then a verified one",
      tried: 3,
      failed: 0,
    });
  });

  it('puts a never-connected account back to PENDING_AUTH once its verification expires unused', async () => {
    const { id } = await authorizeWithVerification('nina', 'nina-at-provider');
    expect((await h.client.getConnectedAccount(id)).status).toBe('PENDING_VERIFICATION');
    const s = services();
    // The verification's time runs out: the upkeep settles the account (at most its batch per call).
    const later = Date.now() + (s.config.linkTtlSeconds + 1) * 1000;
    await s.store.deleteExpiredOAuth(later, 1000);
    expect(await s.oauth.settleExpiredVerifications(later)).toBeGreaterThanOrEqual(1);
    expect((await h.client.getConnectedAccount(id)).status).toBe('PENDING_AUTH');
  });

  it('refuses a user_verify_url outside the allowed origins, naming the field', async () => {
    const bad = await failure(
      h.client.getAuthorizationLink({
        connectionName: 'mail',
        identifier: 'ken',
        userVerifyUrl: 'https://evil.example/v',
      }),
    );
    expect(bad.status).toBe(400);
    expect(bad.details[0]!.field).toBe('user_verify_url');
  });
});

describe('token refresh', () => {
  it('refreshes an expired token once for 50 concurrent calls', async () => {
    const id = (await h.client.getOrCreateConnectedAccount({ connectionName: 'mail', identifier: 'alice' })).id;
    await expireStoredToken(services().store, id);
    const before = h.oauth.counts.refresh_token;
    const results = await Promise.all(Array.from({ length: 50 }, () => settings('alice')));
    expect(results.every((r) => (r.data as { timeZone: string }).timeZone === 'UTC')).toBe(true);
    expect(h.oauth.counts.refresh_token - before).toBe(1);
  });

  it('refreshes once for 500 concurrent calls (the count the benchmark also reports)', async () => {
    const id = (await h.client.getOrCreateConnectedAccount({ connectionName: 'mail', identifier: 'alice' })).id;
    await expireStoredToken(services().store, id);
    const before = h.oauth.counts.refresh_token;
    const results = await Promise.allSettled(Array.from({ length: 500 }, () => settings('alice')));
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    expect(h.oauth.counts.refresh_token - before).toBe(1);
  });

  it('sends every token request on a connection of its own: a server dropping a reused one loses none', async () => {
    const id = (await h.client.getOrCreateConnectedAccount({ connectionName: 'mail', identifier: 'alice' })).id;
    h.oauth.dropReusedConnections = true;
    try {
      const before = h.oauth.counts.refresh_token;
      for (let i = 0; i < 3; i++) {
        await expireStoredToken(services().store, id);
        expect((await settings('alice')).data).toMatchObject({ timeZone: 'UTC' });
      }
      expect(h.oauth.counts.refresh_token - before).toBe(3);
      expect(h.oauth.droppedOnReuse).toBe(0);
    } finally {
      h.oauth.dropReusedConnections = false;
    }
  });

  it('stores the rotated refresh token: the next refresh uses the new one', async () => {
    const id = (await h.client.getOrCreateConnectedAccount({ connectionName: 'mail', identifier: 'alice' })).id;
    const used = new Set(
      h.oauth.tokenRequests.filter((r) => r.grant_type === 'refresh_token').map((r) => r.refresh_token),
    );
    await expireStoredToken(services().store, id);
    await settings('alice');
    const last = h.oauth.tokenRequests.filter((r) => r.grant_type === 'refresh_token').at(-1)!;
    expect(used.has(last.refresh_token)).toBe(false);
    expect(h.oauth.liveRefreshTokens()).toContain(
      JSON.parse(
        services().sealer.open((await services().store.getAccount(id))!.secretsSealed!, `account:${id}:secrets`),
      ).refresh_token,
    );
  });

  it('keeps the rotated tokens when an unrelated change lands during the refresh', async () => {
    const id = (await h.client.getOrCreateConnectedAccount({ connectionName: 'mail', identifier: 'alice' })).id;
    await expireStoredToken(services().store, id);
    h.oauth.refreshDelayMs = 300;
    const call = settings('alice');
    // While the provider is answering, something else writes the account (bumping its version).
    await new Promise((r) => setTimeout(r, 100));
    const a = (await services().store.getAccount(id))!;
    await services().store.updateAccount(id, { lastError: 'an unrelated note' }, Date.now(), a.version);
    expect((await call).data).toMatchObject({ timeZone: 'UTC' });
    h.oauth.refreshDelayMs = 0;
    const stored = JSON.parse(
      services().sealer.open((await services().store.getAccount(id))!.secretsSealed!, `account:${id}:secrets`),
    );
    expect(h.oauth.liveRefreshTokens()).toContain(stored.refresh_token);
    // The next refresh works with what was stored (the provider rotates: a lost token would be invalid_grant).
    await expireStoredToken(services().store, id);
    expect((await settings('alice')).data).toMatchObject({ timeZone: 'UTC' });
    expect((await h.client.getConnectedAccount(id)).status).toBe('ACTIVE');
  });

  it('refreshes reactively after an upstream 401 and retries once', async () => {
    h.oauth.expireAccessTokens();
    const before = h.oauth.counts.refresh_token;
    expect((await settings('alice')).data).toMatchObject({ timeZone: 'UTC' });
    expect(h.oauth.counts.refresh_token - before).toBe(1);
    // The proxy does the same for a bodyless request.
    h.oauth.expireAccessTokens();
    const res = await h.client.request({ connectionName: 'mail', identifier: 'alice', path: '/v1.0/me' });
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ id: 'alice' });
  });

  it('keeps the account ACTIVE through a provider outage during refresh, and recovers', async () => {
    const id = (await h.client.getOrCreateConnectedAccount({ connectionName: 'mail', identifier: 'alice' })).id;
    await expireStoredToken(services().store, id);
    h.oauth.failNext = { count: 1, status: 503 };
    const e = await failure(settings('alice'));
    expect(e.status).toBe(503);
    expect(e.code).toBe('refresh_failed');
    expect(e.isProviderError).toBe(false);
    expect((await h.client.getConnectedAccount(id)).status).toBe('ACTIVE');
    expect((await settings('alice')).data).toMatchObject({ timeZone: 'UTC' });
  });

  it('marks the account EXPIRED on invalid_grant, then a new link makes it ACTIVE again', async () => {
    await h.client
      .getAuthorizationLink({ connectionName: 'mail', identifier: 'bob' })
      .then(({ link }) => followAuthorizationLink(link, 'bob'));
    const id = (await h.client.getOrCreateConnectedAccount({ connectionName: 'mail', identifier: 'bob' })).id;
    expect((await settings('bob')).data).toMatchObject({ timeZone: 'UTC' });
    h.oauth.revokeSubject('bob');
    await expireStoredToken(services().store, id);
    const store = services().store;
    const reads = [vi.spyOn(store, 'getAccount'), vi.spyOn(store, 'findAccount')];
    let e: Awaited<ReturnType<typeof failure>>;
    try {
      e = await failure(settings('bob'));
      // Counted, a wave of expired accounts being a population's cost: the account is found by its identifier
      // once (the call's resolve) and read by id once (under its refresh lock); the refused refresh marks it
      // EXPIRED by a compare-and-set without reading it again, and its link is made without looking it up again.
      expect(reads.map((r) => r.mock.calls.length)).toEqual([1, 1]);
    } finally {
      for (const r of reads) r.mockRestore();
    }
    expect(e.status).toBe(403);
    expect(e.code).toBe('authorization_required');
    expect((e as AuthorizationRequiredError).reason).toBe('expired');
    expect(e.message).toMatch(/connected again/);
    const expired = await h.client.getConnectedAccount(id);
    expect(expired.status).toBe('EXPIRED');
    expect(expired.last_error).toContain('invalid_grant');
    // Still EXPIRED on the next call, without another refresh attempt.
    const before = h.oauth.counts.refresh_token;
    expect((await failure(settings('bob'))).code).toBe('authorization_required');
    expect(h.oauth.counts.refresh_token).toBe(before);

    const { link } = await h.client.getAuthorizationLink({ connectionName: 'mail', identifier: 'bob' });
    expect((await followAuthorizationLink(link, 'bob')).status).toBe(200);
    expect((await h.client.getConnectedAccount(id)).status).toBe('ACTIVE');
    expect((await settings('bob')).data).toMatchObject({ timeZone: 'UTC' });
  });

  it('never writes a token or a client secret to the logs', () => {
    const text = h.logs.join('');
    for (const t of [...h.oauth.issuedAccessTokens(), ...h.oauth.liveRefreshTokens()]) expect(text).not.toContain(t);
    expect(text).not.toMatch(/secret-mail/);
    expect(h.logs.length).toBeGreaterThan(0);
  });
});
