/**
 * Dashboard users in a real browser (Debian's Chromium, driven by playwright-core): an admin invites a viewer on the
 * Users page and creates an API credential; the viewer opens the invitation link in a browser of their own, sets a
 * password, and finds the connections, credentials and webhooks pages without a single form that changes anything;
 * a POST forged with their session and a valid CSRF token is refused 403 and changes nothing.
 */
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startHarness, type Harness } from '../helpers/harness.ts';

const CHROMIUM = '/usr/bin/chromium';
const ADMIN_PASSWORD = 'browser-users-admin-password-7c';
const VIEWER_PASSWORD = 'browser-viewer-password-19';

let h: Harness;
let browser: Browser;
let admin: Page;
let viewer: Page;
let invitationLink: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `The browser tests need Debian's Chromium at ${CHROMIUM} (apt-get install chromium); it is not installed.`,
    );
  }
  h = await startHarness({ env: { ADMIN_PASSWORD } });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-sync', '--no-first-run'],
  });
  // Two browsers' worth of cookies: the admin's and the viewer's.
  admin = await (await browser.newContext()).newPage();
  viewer = await (await browser.newContext()).newPage();
});
afterAll(async () => {
  await browser?.close();
  await h?.close();
});

const url = (path: string) => `${h.url}${path}`;
/** Forms that send a change: every POST form but signing out. */
const changingForms = (page: Page) => page.locator('form[method="post"]:not(.sign-out)');

describe('dashboard users in a browser', () => {
  it('an admin invites a viewer and creates an API credential', async () => {
    await admin.goto(url('/dashboard/users'));
    await admin.fill('#password', ADMIN_PASSWORD);
    await admin.getByRole('button', { name: 'Sign in' }).click();
    await admin.waitForURL('**/dashboard/users');
    await admin.fill('#invite-username', 'vera@example.com');
    await admin.selectOption('#invite-role', 'viewer');
    await admin.getByRole('button', { name: 'Make invitation link' }).click();
    invitationLink = await admin.inputValue('#invitation-link');
    expect(invitationLink).toMatch(/\/dashboard\/invitations\/[\w-]{20,}$/);

    await admin.goto(url('/dashboard/api-credentials'));
    expect(await changingForms(admin).count()).toBeGreaterThan(0);
    await admin.fill('[name="name"]', 'made-by-admin');
    await admin.getByRole('button', { name: 'Create credential' }).click();
    expect(await admin.locator('h1').textContent()).toContain('made-by-admin');
  });

  it('the viewer accepts the invitation and sees read-only pages', async () => {
    await viewer.goto(invitationLink);
    await viewer.fill('#password', VIEWER_PASSWORD);
    await viewer.fill('#password_again', VIEWER_PASSWORD);
    await viewer.getByRole('button', { name: 'Set password and sign in' }).click();
    await viewer.waitForURL('**/dashboard/connections');
    expect(await viewer.locator('.sign-out .who').textContent()).toBe('vera@example.com');
    for (const path of ['/dashboard/connections', '/dashboard/api-credentials', '/dashboard/webhooks']) {
      await viewer.goto(url(path));
      expect(await viewer.locator('h1').count(), path).toBe(1);
      expect(await changingForms(viewer).count(), path).toBe(0);
    }
    // The credential the admin made is listed, without a way to revoke it.
    await viewer.goto(url('/dashboard/api-credentials'));
    expect(await viewer.getByText('made-by-admin').count()).toBeGreaterThan(0);
    expect(await viewer.getByRole('link', { name: 'Revoke' }).count()).toBe(0);
    // No way to the Users page for a viewer (an admin's name in the header links there).
    expect(await viewer.locator('a[href="/dashboard/users"]').count()).toBe(0);
    // The invitation works once.
    const again = await viewer.goto(invitationLink);
    expect(again!.status()).toBe(410);
  });

  it('refuses a POST the viewer forges with a valid CSRF token, and changes nothing', async () => {
    await viewer.goto(url('/dashboard/webhooks'));
    const csrf = await viewer.locator('form.sign-out input[name="_csrf"]').inputValue();
    for (const [path, form] of [
      ['/dashboard/webhooks', { url: 'https://example.com/hook', events: 'connected_account.active' }],
      ['/dashboard/api-credentials', { name: 'forged' }],
      ['/dashboard/connections/new/helpdesk', { connection_name: 'forged' }],
    ] as const) {
      const res = await viewer.context().request.post(url(path), { form: { _csrf: csrf, ...form }, maxRedirects: 0 });
      expect(res.status(), path).toBe(403);
      // Refused for the role, not for a token or cookie the request lacked.
      expect(await res.text()).toContain('Your role (viewer) does not allow this');
    }
    const names = (await h.running.services.store.listApiCredentials()).map((c) => c.name);
    expect(names).toContain('made-by-admin');
    expect(names).not.toContain('forged');
    expect(await h.running.services.store.listWebhookEndpoints()).toEqual([]);
  });
});
