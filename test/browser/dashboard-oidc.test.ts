/**
 * Dashboard sign-in through the company's OpenID provider in a real browser (Debian's Chromium, driven by
 * playwright-core), the provider a real `oidc-provider` running in this test with its own login form: a member of
 * the staff group clicks "Sign in with Acme SSO", signs in at the provider and lands on the dashboard as a viewer,
 * whose connections, credentials and webhooks pages hold no form that changes anything, and whose forged POST is
 * refused 403; a member of the admin group signs in the same way and creates an API credential.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { freePort, startHarness, type Harness } from '../helpers/harness.ts';
import { IDP_PASSWORD, startTestIdp, type TestIdp } from '../helpers/oidc-idp.ts';

const CHROMIUM = '/usr/bin/chromium';
const CLIENT_ID = 'acs-dashboard-browser';
const CLIENT_SECRET = 'dashboard-oidc-browser-secret-8e2a';

let h: Harness;
let idp: TestIdp;
let browser: Browser;
let admin: Page;
let viewer: Page;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `The browser tests need Debian's Chromium at ${CHROMIUM} (apt-get install chromium); it is not installed.`,
    );
  }
  const port = await freePort();
  h = await startHarness({
    env: {
      ADMIN_PASSWORD: 'browser-oidc-admin-password-3f',
      DASHBOARD_OIDC_ISSUER: `http://127.0.0.1:${port}`,
      DASHBOARD_OIDC_CLIENT_ID: CLIENT_ID,
      DASHBOARD_OIDC_CLIENT_SECRET: CLIENT_SECRET,
      DASHBOARD_OIDC_NAME: 'Acme SSO',
      DASHBOARD_OIDC_ALLOWED_DOMAINS: 'acme.example',
      DASHBOARD_OIDC_ROLES: 'admins:admin,staff:viewer',
    },
  });
  idp = await startTestIdp({
    port,
    clientId: CLIENT_ID,
    clientSecret: CLIENT_SECRET,
    redirectUri: `${h.url}/dashboard/oidc/callback`,
  });
  idp.accounts.set('ada', { email: 'ada@acme.example', email_verified: true, groups: ['admins', 'staff'] });
  idp.accounts.set('vic', { email: 'vic@acme.example', email_verified: true, groups: ['staff'] });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-sync', '--no-first-run'],
  });
  admin = await (await browser.newContext()).newPage();
  viewer = await (await browser.newContext()).newPage();
});
afterAll(async () => {
  await browser?.close();
  await idp?.close();
  await h?.close();
});

const url = (path: string) => `${h.url}${path}`;
/** Forms that send a change: every POST form but signing out. */
const changingForms = (page: Page) => page.locator('form[method="post"]:not(.sign-out)');

/** From a dashboard page that asks to sign in: through the provider's login form, back to `landing`. */
async function signInWithProvider(page: Page, path: string, login: string): Promise<void> {
  await page.goto(url(path));
  await page.getByRole('link', { name: 'Sign in with Acme SSO' }).click();
  await page.waitForURL(`${idp.issuer}/interaction/**`);
  expect(await page.locator('h1').textContent()).toBe('Company sign-in');
  await page.fill('#idp-login', login);
  await page.fill('#idp-password', IDP_PASSWORD);
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.waitForURL(`**${path}`);
}

describe('dashboard sign-in through OpenID Connect in a browser', () => {
  it('signs a staff member in as a viewer, whose pages are read-only', async () => {
    await signInWithProvider(viewer, '/dashboard/webhooks', 'vic');
    expect(await viewer.locator('.sign-out .who').textContent()).toBe('vic@acme.example');
    for (const path of ['/dashboard/connections', '/dashboard/api-credentials', '/dashboard/webhooks']) {
      await viewer.goto(url(path));
      expect(await viewer.locator('h1').count(), path).toBe(1);
      expect(await changingForms(viewer).count(), path).toBe(0);
    }
    expect(idp.logins).toEqual(['vic']);
  });

  it('refuses a POST the viewer forges with a valid CSRF token, and changes nothing', async () => {
    await viewer.goto(url('/dashboard/webhooks'));
    const csrf = await viewer.locator('form.sign-out input[name="_csrf"]').inputValue();
    for (const [path, form] of [
      ['/dashboard/webhooks', { url: 'https://example.com/hook', events: 'connected_account.active' }],
      ['/dashboard/api-credentials', { name: 'forged-by-viewer' }],
      ['/dashboard/connections/new/helpdesk', { connection_name: 'forged' }],
    ] as const) {
      const res = await viewer.context().request.post(url(path), { form: { _csrf: csrf, ...form }, maxRedirects: 0 });
      expect(res.status(), path).toBe(403);
      expect(await res.text()).toContain('Your role (viewer) does not allow this');
    }
    expect((await h.running.services.store.listApiCredentials()).map((c) => c.name)).not.toContain('forged-by-viewer');
    expect(await h.running.services.store.listWebhookEndpoints()).toEqual([]);
  });

  it('signs an admin-group member in as an admin, who creates an API credential', async () => {
    await signInWithProvider(admin, '/dashboard/api-credentials', 'ada');
    expect(await admin.locator('.sign-out .who').textContent()).toBe('ada@acme.example');
    expect(await changingForms(admin).count()).toBeGreaterThan(0);
    await admin.fill('[name="name"]', 'made-by-sso-admin');
    await admin.getByRole('button', { name: 'Create credential' }).click();
    expect(await admin.locator('h1').textContent()).toContain('made-by-sso-admin');
    expect((await h.running.services.store.listApiCredentials()).map((c) => c.name)).toContain('made-by-sso-admin');
    // The viewer sees it, without a way to revoke it.
    await viewer.goto(url('/dashboard/api-credentials'));
    expect(await viewer.getByText('made-by-sso-admin').count()).toBeGreaterThan(0);
    expect(await viewer.getByRole('link', { name: 'Revoke' }).count()).toBe(0);
  });
});
