/**
 * Dashboard sign-in through the company's OpenID provider (issue 37, item 4) at the HTTP level, against a real
 * `oidc-provider` running in this test (test/helpers/oidc-idp.ts): users are made with the role their groups map to
 * (the highest wins), refused when their e-mail domain is not admitted, their e-mail is not verified or no group gives
 * them a role; a tampered state, a callback this browser did not start, a wrong nonce or PKCE verifier is refused;
 * a user taken out of the admin group is a viewer from their next sign-in; every outcome is in the audit log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, startHarness, type Harness } from '../helpers/harness.ts';
import { DashboardClient, type Page } from '../helpers/dashboard-client.ts';
import { signInAtIdp, startTestIdp, type TestIdp } from '../helpers/oidc-idp.ts';

const CLIENT_ID = 'acs-dashboard';
const CLIENT_SECRET = 'dashboard-oidc-client-secret-5d1f';
let h: Harness;
let idp: TestIdp;

beforeAll(async () => {
  const port = await freePort();
  h = await startHarness({
    env: {
      ADMIN_PASSWORD: 'oidc-admin-password-a1b2',
      DASHBOARD_OIDC_ISSUER: `http://127.0.0.1:${port}`,
      DASHBOARD_OIDC_CLIENT_ID: CLIENT_ID,
      DASHBOARD_OIDC_CLIENT_SECRET: CLIENT_SECRET,
      DASHBOARD_OIDC_NAME: 'Acme SSO',
      DASHBOARD_OIDC_ALLOWED_DOMAINS: 'acme.example',
      DASHBOARD_OIDC_ROLES: 'admins:admin,ops:operator,staff:viewer',
    },
  });
  idp = await startTestIdp({
    port,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    redirectUri: `${h.url}/dashboard/oidc/callback`,
  });
  idp.accounts.set('ada', { email: 'ada@acme.example', email_verified: true, groups: ['staff', 'admins'] });
  idp.accounts.set('vic', { email: 'vic@acme.example', email_verified: true, groups: ['staff', 'unrelated'] });
  idp.accounts.set('eve', { email: 'eve@elsewhere.example', email_verified: true, groups: ['admins'] });
  idp.accounts.set('uma', { email: 'uma@acme.example', email_verified: false, groups: ['admins'] });
  idp.accounts.set('nog', { email: 'nog@acme.example', email_verified: true, groups: ['unrelated'] });
});
afterAll(async () => {
  await idp?.close();
  await h?.close();
});

/** Starts a sign-in in a fresh browser, signs in at the provider as `login`; the service's answer at the callback. */
async function oidcSignIn(
  login: string,
  tamper?: (callback: URL) => void,
): Promise<{ c: DashboardClient; page: Page }> {
  const c = new DashboardClient(h.url);
  const start = await c.get('/dashboard/oidc/start?next=%2Fdashboard%2Fwebhooks');
  expect(start.status, start.html).toBe(303);
  const authorize = new URL(start.location!);
  expect(authorize.origin).toBe(idp.issuer);
  expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
  expect(authorize.searchParams.get('nonce')).toBeTruthy();
  const back = await signInAtIdp(start.location!, new URL(h.url).origin, login);
  expect(back.pathname).toBe('/dashboard/oidc/callback');
  tamper?.(back);
  return { c, page: await c.get(back.pathname + back.search) };
}

const user = async (sub: string) => h.running.services.store.getDashboardUserBySubject(`${idp.issuer} ${sub}`);

async function audit(action: string) {
  return h.running.services.store.listAuditEvents({ action, order: 'asc', limit: 1000 });
}

/** The POST forms of a page, but signing out. */
const changingForms = (html: string) =>
  [...html.matchAll(/<form\b[^>]*method="post"[^>]*>/g)].map((m) => m[0]).filter((f) => !f.includes('/sign-out'));

describe('dashboard sign-in through OpenID Connect', () => {
  it('offers the provider on the sign-in page', async () => {
    const page = await new DashboardClient(h.url).get('/dashboard/sign-in?next=%2Fdashboard%2Ftools');
    expect(page.html).toContain('Sign in with Acme SSO');
    // (Handlebars writes = as &#x3D; in attributes.)
    expect(page.html).toContain('href="/dashboard/oidc/start?next&#x3D;%2Fdashboard%2Ftools"');
  });

  it('makes a member of the admin group an admin (the highest of their groups)', async () => {
    const { c, page } = await oidcSignIn('ada');
    expect(page.status, page.html).toBe(303);
    expect(page.location).toBe('/dashboard/webhooks');
    const users = await c.get('/dashboard/users');
    expect(users.status).toBe(200);
    const row = /<tr data-username="ada@acme.example">[\s\S]*?<\/tr>/.exec(users.html)?.[0];
    expect(row).toContain('<td data-label="Signs in with" class="small">OpenID Connect</td>');
    const stored = await user('ada');
    expect(stored).toMatchObject({ username: 'ada@acme.example', role: 'admin' });
    // No password signs in as a user made by OpenID Connect.
    const pw = await new DashboardClient(h.url).signIn('oidc:no-password', 'ada@acme.example');
    expect(pw.status).toBe(401);
  });

  it('makes a member of the staff group a viewer, who changes nothing', async () => {
    const { c, page } = await oidcSignIn('vic');
    expect(page.status, page.html).toBe(303);
    expect((await user('vic'))?.role).toBe('viewer');
    for (const path of ['/dashboard/connections', '/dashboard/api-credentials', '/dashboard/webhooks']) {
      const p = await c.get(path);
      expect(p.status, path).toBe(200);
      expect(changingForms(p.html), path).toEqual([]);
    }
    expect((await c.get('/dashboard/users')).status).toBe(403);
    const csrf = DashboardClient.csrf((await c.get('/dashboard/webhooks')).html);
    const forged = await c.post('/dashboard/api-credentials', { _csrf: csrf, name: 'forged' });
    expect(forged.status).toBe(403);
    expect((await h.running.services.store.listApiCredentials()).map((x) => x.name)).not.toContain('forged');
  });

  it('refuses an e-mail domain that is not admitted, and makes no user', async () => {
    const { c, page } = await oidcSignIn('eve');
    expect(page.status).toBe(403);
    expect(page.html).toContain('elsewhere.example is not one this dashboard admits');
    expect(await user('eve')).toBeUndefined();
    expect((await c.get('/dashboard/connections')).status).toBe(303);
  });

  it('refuses an unverified e-mail when domains are filtered', async () => {
    const { page } = await oidcSignIn('uma');
    expect(page.status).toBe(403);
    expect(page.html).toContain('is not verified');
    expect(await user('uma')).toBeUndefined();
  });

  it('refuses a user none of whose groups is mapped (no default role)', async () => {
    const { page } = await oidcSignIn('nog');
    expect(page.status).toBe(403);
    expect(page.html).toContain('None of your groups gives access');
    expect(await user('nog')).toBeUndefined();
  });

  it('refuses a tampered state, and a callback this browser did not start', async () => {
    const tampered = await oidcSignIn('vic', (u) => u.searchParams.set('state', `${u.searchParams.get('state')}x`));
    expect(tampered.page.status).toBe(403);
    expect(tampered.page.html).toContain('not valid');
    expect(tampered.page.headers.getSetCookie().some((x) => x.startsWith('acs_dashboard='))).toBe(false);
    expect((await tampered.c.get('/dashboard/connections')).status).toBe(303);

    let stolen: URL | undefined;
    await oidcSignIn('vic', (u) => {
      stolen = new URL(u);
      u.searchParams.set('code', 'spent');
    });
    const other = new DashboardClient(h.url);
    const replay = await other.get(stolen!.pathname + stolen!.search);
    expect(replay.status).toBe(400);
    expect(replay.html).toContain('not started in this browser');
    expect((await other.get('/dashboard/connections')).status).toBe(303);
  });

  it('checks the ID token nonce and the PKCE verifier of the sign-in this browser started', async () => {
    for (const [field, says] of [
      ['nonce', /unexpected ID Token (&quot;|")nonce/],
      ['verifier', /invalid_grant/],
    ] as const) {
      const c = new DashboardClient(h.url);
      const start = await c.get('/dashboard/oidc/start?next=%2Fdashboard%2Fconnections');
      // The state cookie re-signed with one value changed, as if it came from another sign-in (the test holds the key).
      const raw = c.cookies.get('acs_dashboard_oidc')!;
      const pending = JSON.parse(Buffer.from(raw.split('.')[0]!, 'base64url').toString()) as Record<string, string>;
      pending[field] = 'y'.repeat(43);
      const set = h.running.services.dashboard.signedCookie(
        'acs_dashboard_oidc',
        'dashboard-oidc-state',
        JSON.stringify(pending),
        600,
      );
      c.cookies.set('acs_dashboard_oidc', set.split(';')[0]!.slice('acs_dashboard_oidc='.length));
      const back = await signInAtIdp(start.location!, new URL(h.url).origin, 'vic');
      const page = await c.get(back.pathname + back.search);
      expect(page.status, field).toBe(403);
      expect(page.html, field).toMatch(says);
      expect((await c.get('/dashboard/connections')).status, field).toBe(303);
    }
  });

  it('re-derives the role at each sign-in: out of the admin group, a viewer', async () => {
    const before = (await oidcSignIn('ada')).c;
    expect((await before.get('/dashboard/users')).status).toBe(200);
    idp.accounts.set('ada', { email: 'ada@acme.example', email_verified: true, groups: ['staff'] });
    const { c, page } = await oidcSignIn('ada');
    expect(page.status, page.html).toBe(303);
    expect((await user('ada'))?.role).toBe('viewer');
    expect((await c.get('/dashboard/users')).status).toBe(403);
    // The role is read at each request: the session opened as an admin is a viewer's now too.
    expect((await before.get('/dashboard/users')).status).toBe(403);
    // Back in the ops group: an operator.
    idp.accounts.set('ada', { email: 'ada@acme.example', email_verified: true, groups: ['ops', 'staff'] });
    expect((await oidcSignIn('ada')).page.status).toBe(303);
    expect((await user('ada'))?.role).toBe('operator');
    // Still one user for the subject.
    expect(
      (await h.running.services.store.listDashboardUsers()).filter((u) => u.username === 'ada@acme.example'),
    ).toHaveLength(1);
  });

  it('records every sign-in, success or failure, in the audit log', async () => {
    const ok = await audit('dashboard.sign_in');
    const oidcOk = ok.filter((e) => e.changes.method === 'oidc');
    expect(oidcOk.map((e) => [e.actorId, e.changes.role, e.changes.previous_role ?? null])).toEqual([
      ['ada@acme.example', 'admin', null],
      ['vic@acme.example', 'viewer', null],
      ['ada@acme.example', 'admin', null],
      ['ada@acme.example', 'viewer', 'admin'],
      ['ada@acme.example', 'operator', 'viewer'],
    ]);
    expect(oidcOk[0]).toMatchObject({ actorType: 'dashboard_user', changes: { user_created: true } });
    expect(oidcOk.every((e) => e.sourceAddress && e.requestId)).toBe(true);
    const failed = (await audit('dashboard.sign_in_failed')).filter((e) => e.changes.method === 'oidc');
    expect(failed.map((e) => [e.actorId, e.changes.reason])).toEqual([
      ['eve@elsewhere.example', 'domain_not_allowed'],
      ['uma@acme.example', 'email_not_verified'],
      ['nog@acme.example', 'no_role'],
      ['(unknown)', 'invalid_response'],
      ['(unknown)', 'invalid_response'],
      ['(unknown)', 'no_pending_sign_in'],
      ['(unknown)', 'invalid_response'],
      ['(unknown)', 'invalid_response'],
    ]);
    // The password sign-in (tried above with the made-up password) is recorded as ever.
    expect((await audit('dashboard.sign_in_failed')).some((e) => e.changes.reason === 'wrong_credentials')).toBe(true);
  });
});
