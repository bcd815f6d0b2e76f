/**
 * The dashboard at the HTTP level (no browser): sessions, CSRF, sign-in throttling, sign-out, security
 * headers, and a walk over every page after secrets were saved, checking that none of them shows up.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { authorize, oauthConnection, startHarness, TEST_CLIENT_SECRET, type Harness } from '../helpers/harness.ts';
import { DashboardClient } from '../helpers/dashboard-client.ts';
import { connectors, tools } from '../../generated/registry.ts';
import type { OAuth2AuthSpec } from '../../core/spec-model.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { record } from '../reliability/summary.ts';
import { findTools } from '../../runtime/dashboard/tool-filter.ts';

const ADMIN_PASSWORD = 'e2e-admin-password-5d1f';
const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const API_TOKEN = 'zd-token-dashboard-e2e-9b27c4';
const mailAuth = connectors.get('mail')!.auth.find((a) => a.kind === 'oauth2') as OAuth2AuthSpec;

let h: Harness;
let desk: FakeDesk;

beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_PASSWORD } });
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, API_TOKEN);
});
afterAll(async () => {
  await desk?.close();
  await h?.close();
});
afterEach(() => {
  vi.useRealTimers();
});

const unescapeHtml = (s: string) =>
  s.replace(
    /&(amp|quot|lt|gt|#x27|#x3D|#x60);/g,
    (_m, e: string) => ({ amp: '&', quot: '"', lt: '<', gt: '>', '#x27': "'", '#x3D': '=', '#x60': '`' })[e]!,
  );

async function signedIn(): Promise<DashboardClient> {
  const c = new DashboardClient(h.url);
  const res = await c.signIn(ADMIN_PASSWORD);
  expect(res.status).toBe(303);
  expect(res.location).toBe('/dashboard/connections');
  return c;
}

const PAGES = [
  '/dashboard',
  '/dashboard/connections',
  '/dashboard/connections/new',
  '/dashboard/tools',
  '/dashboard/tools?q=ticket',
  '/dashboard/activity',
  '/dashboard/api-credentials',
];

describe('sessions', () => {
  it('sends every page but sign-in to the sign-in page without a session', async () => {
    const anonymous = new DashboardClient(h.url);
    const paths = [
      ...PAGES,
      '/dashboard/connections/new/helpdesk',
      '/dashboard/tools/helpdesk_ticket_get',
      '/dashboard/no-such-page',
    ];
    const responses = await Promise.all(paths.map((path) => anonymous.get(path)));
    record({
      category: 'attacks tried',
      what: 'dashboard pages without a session',
      tried: paths.length,
      failed: responses.filter((r) => r.status !== 303).length,
    });
    for (const [i, path] of paths.entries()) {
      const res = responses[i]!;
      expect(res.status, path).toBe(303);
      expect(res.location, path).toBe(`/dashboard/sign-in?next=${encodeURIComponent(path)}`);
      expect(res.html).not.toContain('<table');
    }
    // Forms too: nothing is created without a session.
    const before = (await h.running.services.store.listApiCredentials()).length;
    const post = await anonymous.post('/dashboard/api-credentials', { name: 'sneaky' });
    expect(post.status).toBe(303);
    expect(post.location).toBe('/dashboard/sign-in');
    expect((await h.running.services.store.listApiCredentials()).length).toBe(before);
    // The sign-in page and its stylesheet need none.
    expect((await anonymous.get('/dashboard/sign-in')).status).toBe(200);
    expect((await anonymous.get('/dashboard/static/dashboard.css')).status).toBe(200);
  });

  it('signs in with HttpOnly, SameSite cookies and returns to the page asked for, never to another origin', async () => {
    const c = new DashboardClient(h.url);
    const page = await c.get('/dashboard/sign-in?next=%2Fdashboard%2Factivity');
    const res = await c.post('/dashboard/sign-in', {
      _csrf: DashboardClient.csrf(page.html),
      username: 'admin',
      password: ADMIN_PASSWORD,
      next: '/dashboard/activity',
    });
    expect(res.status).toBe(303);
    expect(res.location).toBe('/dashboard/activity');
    const cookie = res.headers.getSetCookie().find((l) => l.startsWith('acs_dashboard='))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\//);
    // Only the hash of the session id is stored.
    const id = c.cookies.get('acs_dashboard')!.split('.')[0]!;
    const { createHash } = await import('node:crypto');
    expect(await h.running.services.store.getDashboardSession(id, Date.now())).toBeUndefined();
    expect(
      await h.running.services.store.getDashboardSession(createHash('sha256').update(id).digest('hex'), Date.now()),
    ).toBeDefined();

    const hostile = [
      'https://evil.example/',
      '//evil.example/x',
      '/dashboard/../v1/connections',
      '/dashboard/%2E%2e/v1',
      '/\\evil.example',
    ];
    const landed: Array<string | null> = [];
    for (const next of hostile) {
      const other = new DashboardClient(h.url);
      const p = await other.get('/dashboard/sign-in');
      landed.push(
        (
          await other.post('/dashboard/sign-in', {
            _csrf: DashboardClient.csrf(p.html),
            username: 'admin',
            password: ADMIN_PASSWORD,
            next,
          })
        ).location,
      );
    }
    record({
      category: 'attacks tried',
      what: 'open redirects through the sign-in return path',
      tried: hostile.length,
      failed: landed.filter((l) => l !== '/dashboard/connections').length,
    });
    expect(landed).toEqual(hostile.map(() => '/dashboard/connections'));
  });

  it('refuses a tampered session cookie', async () => {
    const c = await signedIn();
    const [id, mac] = c.cookies.get('acs_dashboard')!.split('.');
    const forged = [`${id}x.${mac}`, `${id}.${mac!.slice(0, -2)}AA`, id!, `${id}.`, `.${mac}`];
    const statuses: number[] = [];
    for (const value of forged) {
      c.cookies.set('acs_dashboard', value);
      statuses.push((await c.get('/dashboard/connections')).status);
    }
    record({
      category: 'attacks tried',
      what: 'forged dashboard session cookies',
      tried: forged.length,
      failed: statuses.filter((x) => x !== 303).length,
    });
    expect(statuses).toEqual(forged.map(() => 303));
    c.cookies.set('acs_dashboard', `${id}.${mac}`);
    expect((await c.get('/dashboard/connections')).status).toBe(200);
  });

  it('sign-out invalidates the session, also for a copy of the cookie', async () => {
    const c = await signedIn();
    const stolen = c.cookies.get('acs_dashboard')!;
    const page = await c.get('/dashboard/connections');
    const out = await c.post('/dashboard/sign-out', { _csrf: DashboardClient.csrf(page.html) });
    expect(out.status).toBe(303);
    expect(out.location).toBe('/dashboard/sign-in?done=signed-out');
    expect(c.cookies.has('acs_dashboard')).toBe(false);
    expect((await c.get('/dashboard/connections')).status).toBe(303);

    const replay = new DashboardClient(h.url);
    replay.cookies.set('acs_dashboard', stolen);
    const res = await replay.get('/dashboard/connections');
    expect(res.status).toBe(303);
    expect(res.location).toMatch(/^\/dashboard\/sign-in/);
  });

  it('expires a session after its lifetime', async () => {
    const c = await signedIn();
    expect((await c.get('/dashboard/connections')).status).toBe(200);
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + h.config.dashboardSessionTtlSeconds * 1000 + 1000 });
    const res = await c.get('/dashboard/connections');
    expect(res.status).toBe(303);
    expect(res.location).toMatch(/^\/dashboard\/sign-in/);
  });

  it('throttles wrong passwords: after five, even the right one waits', async () => {
    // A service of its own, so the blocked admin does not disturb the other tests; the clock stands still
    // (Date only) so the block cannot run out while the test runs.
    const t = await startHarness({ env: { ADMIN_PASSWORD } });
    try {
      vi.useFakeTimers({ toFake: ['Date'] });
      const c = new DashboardClient(t.url);
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await c.signIn(`wrong-password-${i}`)).status);
      expect(statuses).toEqual([401, 401, 401, 401, 401, 401]);
      const blocked = await c.signIn(ADMIN_PASSWORD);
      expect(blocked.status).toBe(429);
      expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(blocked.html).toContain('Too many failed sign-in attempts');
      expect(c.cookies.has('acs_dashboard')).toBe(false);
      // Another browser (same address) is blocked for this account too: the throttle is per username.
      expect((await new DashboardClient(t.url).signIn(ADMIN_PASSWORD)).status).toBe(429);

      vi.setSystemTime(Date.now() + 60_000);
      const after = await c.signIn(ADMIN_PASSWORD);
      expect(after.status).toBe(303);
      expect((await c.get('/dashboard/connections')).status).toBe(200);
    } finally {
      vi.useRealTimers();
      await t.close();
    }
  });
});

describe('the admin account', () => {
  it('is created on first start with a password shown once; ADMIN_PASSWORD replaces it and ends old sessions', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'acs-admin-'));
    try {
      const first = await startHarness({ dataDir, waitForAdmin: false });
      // Set up after the start (the start does not wait for its scrypt hash); sign-ins wait for it.
      const generated = (await first.running.services.firstAdminPassword)!;
      expect(generated.length).toBeGreaterThanOrEqual(20);
      const browser = new DashboardClient(first.url);
      expect((await browser.signIn(generated)).status).toBe(303);
      await first.close();

      // A restart keeps the account and the session, and prints nothing.
      const second = await startHarness({ dataDir });
      expect(await second.running.services.firstAdminPassword).toBeUndefined();
      const same = new DashboardClient(second.url);
      for (const [k, v] of browser.cookies) same.cookies.set(k, v);
      expect((await same.get('/dashboard/connections')).status).toBe(200);
      await second.close();

      const third = await startHarness({
        dataDir,
        env: { ADMIN_PASSWORD: 'a-new-admin-password' },
        waitForAdmin: false,
      });
      // Before the new password is in place, the old session is refused all the same: requests wait for it.
      const old = new DashboardClient(third.url);
      for (const [k, v] of browser.cookies) old.cookies.set(k, v);
      expect((await old.get('/dashboard/connections')).status).toBe(303);
      expect(await third.running.services.firstAdminPassword).toBeUndefined();
      expect((await new DashboardClient(third.url).signIn(generated)).status).toBe(401);
      expect((await new DashboardClient(third.url).signIn('a-new-admin-password')).status).toBe(303);
      await third.close();

      await expect(startHarness({ dataDir, env: { ADMIN_PASSWORD: 'too-short' } })).rejects.toThrow(
        /ADMIN_PASSWORD must have at least 12 characters/,
      );
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('CSRF and headers', () => {
  it('refuses forms with a missing or wrong CSRF token, and changes nothing', async () => {
    const c = await signedIn();
    const other = await signedIn();
    const otherToken = DashboardClient.csrf((await other.get('/dashboard/connections')).html);
    const store = h.running.services.store;
    const before = (await store.listApiCredentials()).length;
    const forms: Array<Record<string, string>> = [
      { name: 'no token' },
      { name: 'wrong token', _csrf: 'x'.repeat(43) },
      { name: 'another session’s token', _csrf: otherToken },
    ];
    const refused: number[] = [];
    for (const form of forms) {
      const res = await c.post('/dashboard/api-credentials', form);
      refused.push(res.status);
      expect(res.html).toContain('security token');
    }
    record({
      category: 'attacks tried',
      what: 'dashboard forms with a missing, wrong or foreign CSRF token',
      tried: forms.length,
      failed: refused.filter((x) => x !== 403).length,
    });
    expect(refused).toEqual(forms.map(() => 403));
    expect((await store.listApiCredentials()).length).toBe(before);

    const connections = await store.listConnections();
    const newConnection = await c.post('/dashboard/connections/new/helpdesk', { connection_name: 'csrf-test' });
    expect(newConnection.status).toBe(403);
    expect(await store.listConnections()).toEqual(connections);

    // Sign-out is a form as well: without the token the session stays.
    expect((await c.post('/dashboard/sign-out', {})).status).toBe(403);
    expect((await c.get('/dashboard/connections')).status).toBe(200);

    // The right token works.
    const ok = await c.submit('/dashboard/api-credentials', '/dashboard/api-credentials', { name: 'with token' });
    expect(ok.status).toBe(200);
    expect((await store.listApiCredentials()).length).toBe(before + 1);
  });

  it('refuses a sign-in form without its CSRF token or from another browser', async () => {
    const c = new DashboardClient(h.url);
    await c.get('/dashboard/sign-in');
    const missing = await c.post('/dashboard/sign-in', { username: 'admin', password: ADMIN_PASSWORD });
    expect(missing.status).toBe(403);
    const elsewhere = new DashboardClient(h.url);
    const token = DashboardClient.csrf((await elsewhere.get('/dashboard/sign-in')).html);
    const crossed = await c.post('/dashboard/sign-in', { _csrf: token, username: 'admin', password: ADMIN_PASSWORD });
    expect(crossed.status).toBe(403);
    expect(c.cookies.has('acs_dashboard')).toBe(false);
  });

  it('sends security headers and no inline script on every page', async () => {
    const c = await signedIn();
    for (const path of ['/dashboard/sign-in', ...PAGES.slice(1), '/dashboard/tools/helpdesk_ticket_create']) {
      const res = path.endsWith('sign-in') ? await new DashboardClient(h.url).get(path) : await c.get(path);
      expect(res.status, path).toBe(200);
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
      expect(res.html).not.toMatch(/\son[a-z]+=/i);
    }
  });
});

describe('connections', () => {
  it('asks each auth kind only what it needs: MCP nothing but the name, OAuth the app, keys nothing on the connection', async () => {
    const c = await signedIn();
    const mcp = [...connectors.values()].find((x) => x.auth.length === 1 && x.auth[0]!.kind === 'oauth2_mcp')!;
    const form = await c.get(`/dashboard/connections/new/${mcp.name}`);
    expect(form.html).not.toContain('name="client_id"');
    expect(form.html).not.toContain('name="auth_kind"');
    const created = await c.post(`/dashboard/connections/new/${mcp.name}`, {
      _csrf: DashboardClient.csrf(form.html),
      connection_name: 'mcp-conn',
    });
    expect(created.location).toBe('/dashboard/connections/mcp-conn?done=connection-created');
    const settings = await c.get('/dashboard/connections/mcp-conn/edit');
    expect(settings.html).not.toContain('name="client_id"');
    expect(settings.html).toContain('registered dynamically');
    expect((await h.client.getConnection('mcp-conn')).auth_kind).toBe('oauth2_mcp');

    // A connector with two auth kinds lets the user choose; the choice decides the next step.
    const both = [...connectors.values()].find(
      (x) => x.auth.some((a) => a.kind === 'oauth2') && x.auth.some((a) => a.kind === 'api_key'),
    )!;
    const choose = await c.get(`/dashboard/connections/new/${both.name}`);
    expect(choose.html).toContain('name="auth_kind"');
    const keyed = await c.post(`/dashboard/connections/new/${both.name}`, {
      _csrf: DashboardClient.csrf(choose.html),
      connection_name: 'keyed',
      auth_kind: 'api_key',
    });
    expect(keyed.location).toBe('/dashboard/connections/keyed?done=connection-created');
    const oauthKind = await c.post(`/dashboard/connections/new/${both.name}`, {
      _csrf: DashboardClient.csrf(choose.html),
      connection_name: 'oauthed',
      auth_kind: 'oauth2',
    });
    expect(oauthKind.location).toBe('/dashboard/connections/oauthed/edit?step=2');
    expect((await c.get('/dashboard/connections/oauthed/edit?step=2')).html).toContain('name="client_id"');
    const wrong = await c.post(`/dashboard/connections/new/${both.name}`, {
      _csrf: DashboardClient.csrf(choose.html),
      connection_name: 'odd',
      auth_kind: 'basic',
    });
    expect(wrong.status).toBe(400);
    expect(wrong.html).toMatch(/<p class="error" id="f-auth_kind-error">must be one of/);
  });
});

describe('connected accounts', () => {
  it('pages through thousands of accounts by keyset, filtered by identifier and status', async () => {
    const c = await signedIn();
    expect(
      (
        await c.submit('/dashboard/connections/new/helpdesk', '/dashboard/connections/new/helpdesk', {
          connection_name: 'paged',
        })
      ).status,
    ).toBe(303);
    const store = h.running.services.store;
    const connection = (await store.getConnectionByName('paged'))!;
    const base = Date.now();
    for (let i = 0; i < 1200; i++) {
      const { account } = await store.getOrCreateAccount({
        id: `ca_paged_${String(i).padStart(4, '0')}`,
        connectionId: connection.id,
        identifier: `u-${String(i).padStart(4, '0')}`,
        status: 'PENDING_AUTH',
        fields: {},
        secretsSealed: null,
        tokenExpiresAt: null,
        lastUsedAt: null,
        lastError: null,
        version: 0,
        // Many accounts share a creation time: the cursor must still order them without gaps or repeats.
        createdAt: base + Math.floor(i / 7),
        updatedAt: base,
      });
      if (i % 100 === 0) await store.updateAccount(account.id, { status: 'ACTIVE' }, base);
    }
    const walk = async (start: string) => {
      const seen: string[] = [];
      let next: string | undefined = start;
      let pages = 0;
      while (next) {
        const page = await c.get(next);
        expect(page.status, next).toBe(200);
        pages++;
        seen.push(...[...page.html.matchAll(/<tr data-identifier="([^"]+)"/g)].map((m) => m[1]!));
        const link = /<a href="([^"]+)" rel="next">/.exec(page.html)?.[1];
        next = link ? unescapeHtml(link) : undefined;
      }
      return { seen, pages };
    };
    const all = await walk('/dashboard/connections/paged');
    expect(all.pages).toBe(24);
    expect(all.seen).toHaveLength(1200);
    expect(new Set(all.seen).size).toBe(1200);

    const filtered = await walk('/dashboard/connections/paged?q=u-01');
    expect(filtered.seen).toHaveLength(100);
    expect(filtered.seen.every((id) => id.startsWith('u-01'))).toBe(true);
    const active = await walk('/dashboard/connections/paged?status=ACTIVE');
    expect(active.seen).toEqual(Array.from({ length: 12 }, (_, i) => `u-${String(i * 100).padStart(4, '0')}`));
    const both = await walk('/dashboard/connections/paged?q=u-05&status=ACTIVE');
    expect(both.seen).toEqual(['u-0500']);

    expect((await c.get('/dashboard/connections/paged?after=not-a-cursor')).status).toBe(400);
    expect((await c.get('/dashboard/connections/paged?status=SLEEPING')).status).toBe(400);
  });

  it('deletes a connection after a confirmation that counts its accounts', async () => {
    const c = await signedIn();
    const confirm = await c.get('/dashboard/connections/paged/delete');
    expect(confirm.html).toContain('its 1200 connected accounts');
    const res = await c.post('/dashboard/connections/paged/delete', { _csrf: DashboardClient.csrf(confirm.html) });
    expect(res.location).toBe('/dashboard/connections?done=connection-deleted');
    expect(await h.running.services.store.getConnectionByName('paged')).toBeUndefined();
    expect((await c.get('/dashboard/connections/paged')).status).toBe(404);
  });
});

describe('secrets', () => {
  it('never shows a saved secret again, on any page', async () => {
    const c = await signedIn();
    const clientSecret = `oauth-client-secret-${Math.random().toString(36).slice(2)}`;

    // A key-type connection and account, through the dashboard's forms.
    expect(
      (
        await c.submit('/dashboard/connections/new/helpdesk', '/dashboard/connections/new/helpdesk', {
          connection_name: 'desk',
          api_base_url: desk.baseUrlTemplate,
        })
      ).status,
    ).toBe(303);
    const saved = await c.submit(
      '/dashboard/connections/desk/accounts/new',
      '/dashboard/connections/desk/accounts/new',
      {
        identifier: 'user-1',
        'cred.domain': DOMAIN,
        'cred.email': EMAIL,
        'cred.api_token': API_TOKEN,
      },
    );
    expect(saved.status).toBe(303);
    // A failed save does not echo the secret it was given either.
    const failed = await c.submit(
      '/dashboard/connections/desk/accounts/new',
      '/dashboard/connections/desk/accounts/new',
      {
        identifier: 'user-2',
        'cred.domain': 'not a domain',
        'cred.email': EMAIL,
        'cred.api_token': API_TOKEN,
      },
    );
    expect(failed.status).toBe(400);
    expect(failed.html).toContain('must be a domain name');
    expect(failed.html).not.toContain(API_TOKEN);

    // An OAuth connection with a client secret, set in the dashboard, and an account authorized through it.
    expect(
      (
        await c.submit('/dashboard/connections/new/mail', '/dashboard/connections/new/mail', {
          connection_name: 'oauth-conn',
          'oauth.authorize_url': h.oauth.authorizeUrl,
          'oauth.token_url': h.oauth.tokenUrl,
        })
      ).location,
    ).toBe('/dashboard/connections/oauth-conn/edit?step=2');
    h.oauth.addClient({
      client_id: 'dash-client',
      client_secret: clientSecret,
      auth: mailAuth.token_auth ?? 'client_secret_post',
    });
    const edit = await c.submit('/dashboard/connections/oauth-conn/edit', '/dashboard/connections/oauth-conn/edit', {
      client_id: 'dash-client',
      client_secret: clientSecret,
      scopes: mailAuth.scopes.default,
    });
    expect(edit.status).toBe(303);
    await authorize(h, 'oauth-conn', 'oauth-user');
    // And one made through the API, like the harness does.
    const viaApi = await oauthConnection(h, 'oauth-api', 'mail', 'https://graph.example.test');
    expect(viaApi.has_client_secret).toBe(true);

    // A new API credential: its secret is on the page that creates it, and only there.
    const created = await c.submit('/dashboard/api-credentials', '/dashboard/api-credentials', { name: 'one-time' });
    expect(created.status).toBe(200);
    expect(created.headers.get('cache-control')).toBe('no-store');
    const credentialSecret = /id="client-secret"[^>]*value="([^"]+)"/.exec(created.html)?.[1];
    expect(credentialSecret).toMatch(/^acs_sk_/);

    // Calls so the activity page and the explorer have something to show.
    await h.client.executeTool({
      toolName: 'helpdesk_tickets_list',
      toolInput: {},
      connectionName: 'desk',
      identifier: 'user-1',
    });
    const dryRun = await c.submit('/dashboard/tools/helpdesk_ticket_get', '/dashboard/tools/helpdesk_ticket_get', {
      action: 'dry_run',
      connection: 'desk',
      identifier: 'user-1',
      'input.ticket_id': '1001',
    });
    expect(dryRun.html).toContain('authorization: Basic [REDACTED]');
    // The URL may wrap after its slashes and before ? and &, and reads the same without the break hints.
    const requestLine = /<pre class="code http">([^\n]*)/.exec(dryRun.html)![1]!;
    expect(requestLine).toContain('/<wbr>');
    expect(unescapeHtml(requestLine.replaceAll('<wbr>', ''))).toBe(
      `GET ${desk.url}/desks/${DOMAIN}/api/v2/tickets/1001`,
    );
    const executed = await c.submit(
      '/dashboard/tools/helpdesk_tickets_list',
      '/dashboard/tools/helpdesk_tickets_list',
      { action: 'execute', connection: 'desk', identifier: 'user-1' },
    );
    expect(executed.html).toContain('Seed ticket 1');
    // A misspelt tool name in the address gets a 404 that suggests the tool it most likely meant.
    const misspelt = await c.get('/dashboard/tools/helpdesk_tiket_get');
    expect(misspelt.status).toBe(404);
    expect(misspelt.html).toContain('did you mean helpdesk_ticket_get');

    const secrets = [
      API_TOKEN,
      clientSecret,
      credentialSecret!,
      TEST_CLIENT_SECRET,
      ADMIN_PASSWORD,
      ...h.oauth.issuedAccessTokens(),
      ...h.oauth.liveRefreshTokens(),
      // Basic credentials as the desk receives them.
      Buffer.from(`${EMAIL}/token:${API_TOKEN}`).toString('base64'),
    ];
    expect(h.oauth.issuedAccessTokens().length).toBeGreaterThan(0);

    // Every page reachable by a link, from the start page.
    const seen = new Set<string>();
    const queue = ['/dashboard/connections'];
    const pages: Array<{ path: string; html: string }> = [
      { path: 'POST dry run', html: dryRun.html },
      { path: 'POST execute', html: executed.html },
    ];
    while (queue.length && seen.size < 500) {
      const path = queue.shift()!;
      if (seen.has(path)) continue;
      seen.add(path);
      const res = await c.get(path);
      expect(res.status, path).toBe(200);
      pages.push({ path, html: res.html });
      for (const m of res.html.matchAll(/href="(\/dashboard[^"#]*)"/g)) {
        const link = unescapeHtml(m[1]!);
        if (!link.startsWith('/dashboard/static/') && !seen.has(link)) queue.push(link);
      }
    }
    // The walk reached the pages that hold or once held secrets.
    for (const p of [
      '/dashboard/connections/desk',
      '/dashboard/connections/oauth-conn',
      '/dashboard/connections/oauth-conn/edit',
      '/dashboard/connections/oauth-api/edit',
      '/dashboard/connections/desk/accounts/new',
      '/dashboard/api-credentials',
      '/dashboard/activity',
      '/dashboard/tools/helpdesk_tickets_list',
    ]) {
      expect([...seen], p).toContain(p);
    }
    for (const tool of tools.keys()) expect([...seen]).toContain(`/dashboard/tools/${tool}`);
    const leaks = pages.flatMap(({ path, html }) => secrets.filter((secret) => html.includes(secret)).map(() => path));
    record({
      category: 'secrets scanned',
      what: `dashboard pages (${pages.length}) for saved secrets (${secrets.length})`,
      tried: pages.length * secrets.length,
      failed: leaks.length,
    });
    expect(leaks).toEqual([]);
    // What the pages say instead.
    const editPage = pages.find((p) => p.path === '/dashboard/connections/oauth-conn/edit')!.html;
    expect(editPage).toContain('Set. Leave empty to keep it');
    expect(pages.find((p) => p.path === '/dashboard/connections/oauth-conn')!.html).toMatch(
      /<dt>Client secret<\/dt><dd>set<\/dd>/,
    );
  });
});

describe('tool explorer', () => {
  const toolLinks = (html: string) =>
    [...html.matchAll(/<a href="\/dashboard\/tools\/([a-z0-9_]+)[^"]*"><code>/g)].map((m) => m[1]!);

  it('finds tools by every word of the query in name, title, description or connector', () => {
    expect(findTools('')).toHaveLength(tools.size);
    expect(findTools('  ')).toHaveLength(tools.size);
    const helpdesk = connectors.get('helpdesk')!.toolNames;
    // By connector name and by connector title, in any case.
    expect(findTools('helpdesk').map((t) => t.name)).toEqual(expect.arrayContaining([...helpdesk]));
    expect(findTools('SUPPORT desk').map((t) => t.name)).toEqual(expect.arrayContaining([...helpdesk]));
    // Words in any order; each must appear somewhere.
    const listed = findTools('list Tickets');
    expect(listed.map((t) => t.name)).toContain('helpdesk_tickets_list');
    for (const t of listed) {
      const c = connectors.get(t.connector)!;
      const text = [t.name, t.title, t.description, c.name, c.title].join(' ').toLowerCase();
      expect(text, t.name).toContain('list');
      expect(text, t.name).toContain('tickets');
    }
    // A phrase only a description holds.
    expect(findTools('collaboration add-on').map((t) => t.name)).toEqual([
      'helpdesk_side_conversation_get',
      'helpdesk_side_conversations_list',
    ]);
    expect(findTools('tickets zzz-no-such-word')).toEqual([]);
  });

  it('shows the search results grouped by connector, and every tool when nothing is searched', async () => {
    const c = await signedIn();
    const all = await c.get('/dashboard/tools');
    expect(all.status).toBe(200);
    expect(toolLinks(all.html)).toEqual(findTools('').map((t) => t.name));
    expect(all.html.match(/<details class="connector card"/g)).toHaveLength(connectors.size);
    expect(all.html).not.toMatch(/<details class="connector card"[^>]* open>/);
    expect(all.html).toContain(`${tools.size} tools in ${connectors.size} connectors`);

    const found = await c.get('/dashboard/tools?q=collaboration+add-on');
    expect(toolLinks(found.html)).toEqual(['helpdesk_side_conversation_get', 'helpdesk_side_conversations_list']);
    expect(found.html.match(/<details class="connector card" id="connector-helpdesk" open>/g)).toHaveLength(1);
    expect(found.html.match(/<details /g)).toHaveLength(1);
    expect(found.html).toContain(`2 of ${tools.size} tools match.`);
    expect(found.html).toContain('2 of 16 tools');

    // Groups follow the order of their first match; a connector narrows the search.
    const users = await c.get('/dashboard/tools?q=user');
    const groupOrder = [...users.html.matchAll(/id="connector-([a-z]+)"/g)].map((m) => m[1]!);
    expect(groupOrder).toEqual([...new Set(findTools('user').map((t) => t.connector))]);
    expect(groupOrder.length).toBeGreaterThan(1);
    const narrowed = await c.get('/dashboard/tools?q=user&connector=callintel');
    expect(toolLinks(narrowed.html)).toEqual(
      findTools('user')
        .filter((t) => t.connector === 'callintel')
        .map((t) => t.name),
    );
    expect(narrowed.html).toMatch(/<option value="callintel" selected>/);

    const none = await c.get('/dashboard/tools?q=zzz-no-such-word');
    expect(toolLinks(none.html)).toEqual([]);
    expect(none.html).toContain('No tool matches “zzz-no-such-word”');
    expect((await c.get('/dashboard/tools?connector=nope')).status).toBe(404);
  });

  it('escapes the query, cuts a long one, and carries the chosen account into the tool links', async () => {
    const c = await signedIn();
    const hostile = await c.get(`/dashboard/tools?q=${encodeURIComponent('<script>alert(1)</script>')}`);
    expect(hostile.status).toBe(200);
    expect(hostile.html).not.toContain('<script>alert');
    expect(hostile.html).toContain('value="&lt;script&gt;alert(1)&lt;/script&gt;"');

    const long = await c.get(`/dashboard/tools?q=${'a'.repeat(500)}`);
    expect(long.html).toContain(`value="${'a'.repeat(200)}"`);
    expect(long.html).not.toContain('a'.repeat(201));

    const carried = await c.get('/dashboard/tools?q=ticket&connection=desk&identifier=user-1');
    expect(carried.html).toContain('<input type="hidden" name="connection" value="desk">');
    expect(carried.html).toContain('<input type="hidden" name="identifier" value="user-1">');
    expect(carried.html).toContain(
      'href="/dashboard/tools/helpdesk_ticket_get?connection&#x3D;desk&amp;identifier&#x3D;user-1"',
    );
    expect(carried.html).toContain(
      'href="/dashboard/tools?connection&#x3D;desk&amp;identifier&#x3D;user-1" id="clear-search"',
    );
  });
});

describe('page details', () => {
  it('shows a one-sentence summary on each connector card and the full notes on the connector page', async () => {
    const c = await signedIn();
    const catalogue = await c.get('/dashboard/connections/new');
    const drive = connectors.get('drive')!;
    expect(drive.description).toContain('fileNotDownloadable');
    expect(catalogue.html).not.toContain('fileNotDownloadable');
    expect(catalogue.html).toContain(
      '<p class="summary-line">Files and folders of a cloud file storage account: metadata by ID, search by name, type, owner or parent, and full-text search inside file bodies.</p>',
    );
    // The provider's short name on the card, its full description on the connector page.
    expect(catalogue.html).toContain('HarvestAPI REST API · API key');
    expect(catalogue.html).not.toContain('api.harvest-api.com');
    const page = await c.get('/dashboard/connections/new/drive');
    expect(page.html).toContain('fileNotDownloadable');
    expect(page.html).toContain(drive.provider);
    expect(page.html).toContain(`href="${drive.docsUrl}" rel="noreferrer">provider docs</a>`);
    expect(page.html).toContain(`<a href="/dashboard/tools?connector&#x3D;drive">${drive.toolNames.length} tools</a>`);
  });

  it('draws breadcrumbs as a list, with no separator in the text', async () => {
    const c = await signedIn();
    for (const path of [
      '/dashboard/connections/new',
      '/dashboard/connections/new/helpdesk',
      '/dashboard/tools/helpdesk_ticket_get',
    ]) {
      const res = await c.get(path);
      expect(res.html, path).toMatch(/<nav class="crumbs" aria-label="Breadcrumb"><ol><li><a href="[^"]+">/);
      expect(res.html, path).not.toContain('›');
    }
  });

  it('answers /favicon.ico with an icon, and links the SVG icon from every page', async () => {
    const anonymous = new DashboardClient(h.url);
    const signIn = await anonymous.get('/dashboard/sign-in');
    expect(signIn.html).toContain('<link rel="icon" href="/dashboard/static/favicon.svg" type="image/svg+xml">');
    const svg = await fetch(`${h.url}/dashboard/static/favicon.svg`);
    expect(svg.status).toBe(200);
    expect(svg.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    expect(await svg.text()).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);

    const res = await fetch(`${h.url}/favicon.ico`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/x-icon');
    expect(res.headers.get('cache-control')).toBe('public, max-age=86400');
    const ico = Buffer.from(await res.arrayBuffer());
    // An ICO directory (reserved 0, type 1) whose entries are PNG images of the sizes they claim.
    expect(ico.readUInt16LE(0)).toBe(0);
    expect(ico.readUInt16LE(2)).toBe(1);
    const sizes: number[] = [];
    for (let i = 0; i < ico.readUInt16LE(4); i++) {
      const entry = 6 + 16 * i;
      const [width, bytes, offset] = [ico[entry]!, ico.readUInt32LE(entry + 8), ico.readUInt32LE(entry + 12)];
      const png = ico.subarray(offset, offset + bytes);
      expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
      expect(png.readUInt32BE(16)).toBe(width);
      expect(png.readUInt32BE(20)).toBe(width);
      sizes.push(width);
    }
    expect(sizes).toEqual([16, 32]);
  });
});
