/**
 * The dashboard in a real browser: Debian's headless Chromium driven by playwright-core, against the
 * service with the fake support desk and the fake OAuth authorization server. The tests run in order
 * (one signed-in browser) and each saves a screenshot under test-output/screenshots/.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { connectors } from '../../generated/registry.ts';
import type { OAuth2AuthSpec } from '../../core/spec-model.ts';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = join(process.cwd(), 'test-output', 'screenshots');
const ADMIN_PASSWORD = 'browser-admin-password-42';
const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const API_TOKEN = 'zd-browser-token-61c0f2';
const OAUTH_CLIENT_ID = 'dashboard-mail-app';
const OAUTH_CLIENT_SECRET = 'mail-app-secret-b7e1d94c';
const mailAuth = connectors.get('mail')!.auth.find((a) => a.kind === 'oauth2') as OAuth2AuthSpec;

let h: Harness;
let desk: FakeDesk;
let context: BrowserContext;
let page: Page;
let userDataDir: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `The browser tests need Debian's Chromium at ${CHROMIUM} (apt-get install chromium); it is not installed.`,
    );
  }
  mkdirSync(SCREENSHOTS, { recursive: true });
  h = await startHarness({ env: { ADMIN_PASSWORD } });
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, API_TOKEN);
  userDataDir = mkdtempSync(join(tmpdir(), 'acs-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
    viewport: { width: 1280, height: 860 },
    permissions: ['clipboard-read', 'clipboard-write'],
  });
  page = context.pages()[0] ?? (await context.newPage());
});

afterAll(async () => {
  await context?.close();
  await desk?.close();
  await h?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

const url = (path: string) => `${h.url}${path}`;
const path = () => new URL(page.url()).pathname;
const shot = (name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
const clipboard = () => page.evaluate('navigator.clipboard.readText()') as Promise<string>;
const fieldError = (name: string) => page.locator(`.field[data-field="${name}"] .error`);

describe('dashboard in a browser', () => {
  it('signs in', async () => {
    await page.goto(url('/dashboard'));
    expect(path()).toBe('/dashboard/sign-in');
    await page.fill('#password', ADMIN_PASSWORD);
    await shot('01-sign-in');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/dashboard/connections');
    expect(await page.locator('h1').textContent()).toBe('Connections');
    expect(await page.locator('.sign-out .who').textContent()).toBe('admin');
  });

  it('creates a helpdesk connection and adds an account with its fields', async () => {
    await page.getByRole('link', { name: 'New connection' }).click();
    await shot('02a-connector-catalogue');
    await page.getByRole('link', { name: 'Choose Support desk' }).click();
    expect(await page.inputValue('[name="connection_name"]')).toBe('helpdesk');
    await page.locator('summary', { hasText: 'Advanced' }).click();
    await page.fill('[name="api_base_url"]', desk.baseUrlTemplate);
    await page.getByRole('button', { name: 'Create connection' }).click();
    await page.waitForURL('**/dashboard/connections/helpdesk?done=connection-created');
    expect(await page.locator('.notice').textContent()).toContain('Connection created');

    await page.getByRole('link', { name: 'Add account' }).click();
    await page.fill('[name="identifier"]', 'user-1');
    await page.fill('[name="cred.domain"]', DOMAIN);
    await page.fill('[name="cred.email"]', 'not-an-email');
    await page.fill('[name="cred.api_token"]', API_TOKEN);
    await page.getByRole('button', { name: 'Save account' }).click();
    // Validated like the API: the error sits next to the field, the secret is not sent back.
    expect(await fieldError('cred.email').textContent()).toBe('must be an email address');
    expect(await page.inputValue('[name="cred.domain"]')).toBe(DOMAIN);
    expect(await page.inputValue('[name="cred.api_token"]')).toBe('');

    await page.fill('[name="cred.email"]', EMAIL);
    await page.fill('[name="cred.api_token"]', API_TOKEN);
    await page.getByLabel(/Check the credentials with the provider first/).check();
    await page.getByRole('button', { name: 'Save account' }).click();
    await page.waitForURL('**/dashboard/connections/helpdesk?done=account-saved&q=user-1');
    const row = page.locator('tr[data-identifier="user-1"]');
    expect(await row.locator('.badge').textContent()).toBe('ACTIVE');
    expect(await row.textContent()).toContain(DOMAIN);
    expect(await page.content()).not.toContain(API_TOKEN);
    // The provider saw the check with the credentials, as the desk expects them.
    expect(desk.requests.some((r) => r.path.endsWith('/users/me'))).toBe(true);
    await shot('02-helpdesk-account');
  });

  it('creates an OAuth connection, copies its redirect URI, and connects an account through an authorization link', async () => {
    await page.goto(url('/dashboard/connections/new'));
    await page.getByRole('link', { name: 'Choose Mail and calendar' }).click();
    expect(await page.inputValue('[name="connection_name"]')).toBe('mail');
    await page.locator('summary', { hasText: 'Advanced' }).click();
    await page.fill('[name="oauth.authorize_url"]', h.oauth.authorizeUrl);
    await page.fill('[name="oauth.token_url"]', h.oauth.tokenUrl);
    await page.getByRole('button', { name: 'Create and continue' }).click();
    await page.waitForURL('**/dashboard/connections/mail/edit?step=2');
    expect(await page.locator('h1').textContent()).toContain('Step 2 of 2');

    await page.locator('button[data-copy="redirect-uri"]').click();
    const redirectUri = await clipboard();
    const { id } = await h.client.getConnection('mail');
    expect(redirectUri).toBe(`${h.config.publicUrl}/sso/v1/oauth/${id}/callback`);
    // Registered at the provider exactly as copied: the fake refuses any other redirect URI.
    h.oauth.addClient({
      client_id: OAUTH_CLIENT_ID,
      client_secret: OAUTH_CLIENT_SECRET,
      auth: mailAuth.token_auth ?? 'client_secret_post',
      redirect_uris: [redirectUri],
    });

    await page.fill('[name="client_id"]', OAUTH_CLIENT_ID);
    await page.fill('[name="client_secret"]', OAUTH_CLIENT_SECRET);
    for (const scope of mailAuth.scopes.default)
      expect(await page.isChecked(`input[name="scopes"][value="${scope}"]`)).toBe(true);
    await page.uncheck('input[name="scopes"][value="Contacts.ReadWrite"]');
    await page.check('input[name="scopes"][value="Contacts.Read"]');
    await page.fill('[name="scopes_extra"]', 'openid');
    await shot('03a-oauth-settings');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL('**/dashboard/connections/mail?done=connection-saved');
    const summary = await page.locator('dl.summary').textContent();
    expect(summary).toContain(OAUTH_CLIENT_ID);
    expect(summary).toMatch(/Client secret\s*set/);
    expect(await page.content()).not.toContain(OAUTH_CLIENT_SECRET);
    const saved = await h.client.getConnection('mail');
    expect(saved.scopes).toContain('Contacts.Read');
    expect(saved.scopes).not.toContain('Contacts.ReadWrite');
    expect(saved.scopes).toContain('openid');

    await page.fill('[name="identifier"]', 'alice@example.com');
    await page.getByRole('button', { name: 'Create authorization link' }).click();
    await page.waitForSelector('#authorization-link');
    await page.locator('button[data-copy="authorization-link"]').click();
    const link = await clipboard();
    expect(link).toBe(await page.inputValue('#authorization-link'));
    expect(link.startsWith(`${h.config.publicUrl}/sso/v1/oauth/${id}/authorize?link=`)).toBe(true);

    // The user opens the link: service → fake provider (consents as user-1) → service callback.
    await page.goto(link);
    expect(await page.locator('h1').textContent()).toBe('Account connected');
    expect(h.oauth.tokenRequests.at(-1)).toMatchObject({
      grant_type: 'authorization_code',
      client_id: OAUTH_CLIENT_ID,
      redirect_uri: redirectUri,
    });

    await page.goto(url('/dashboard/connections/mail'));
    const row = page.locator('tr[data-identifier="alice@example.com"]');
    expect(await row.locator('.badge').textContent()).toBe('ACTIVE');
    expect(await row.locator('td').nth(4).textContent()).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    await shot('03-oauth-account');
  });

  it('executes a tool from the explorer and shows the provider’s data', async () => {
    await page.goto(url('/dashboard/tools'));
    await page.getByRole('link', { name: 'helpdesk_tickets_list' }).click();
    expect(await page.locator('h1').textContent()).toBe('helpdesk_tickets_list');
    expect(await page.locator('.docs table.params').textContent()).toContain('per_page');
    await page.selectOption('[name="connection"]', 'helpdesk');
    await page.fill('[name="identifier"]', 'user-1');
    await page.fill('[name="input.per_page"]', '2');
    await page.selectOption('[name="input.sort_order"]', 'asc');

    const sentBefore = desk.requests.length;
    await page.getByRole('button', { name: 'Dry run' }).click();
    const planned = await page.locator('#result pre').first().textContent();
    expect(planned).toContain(`GET ${desk.url}/desks/${DOMAIN}/api/v2/tickets?per_page=2&sort_order=asc`);
    expect(planned).toContain('authorization: Basic [REDACTED]');
    expect(desk.requests.length).toBe(sentBefore);

    await page.getByRole('button', { name: 'Execute' }).click();
    const data = await page.locator('#result pre').textContent();
    expect(JSON.parse(data!).tickets.map((t: { subject: string }) => t.subject)).toEqual([
      'Seed ticket 1',
      'Seed ticket 2',
    ]);
    expect(desk.requests.at(-1)).toMatchObject({
      method: 'GET',
      path: '/tickets',
      query: { per_page: '2', sort_order: 'asc' },
    });
    await shot('04-tool-explorer');
  });

  it('shows validation errors next to the field for bad input, and sends nothing', async () => {
    await page.goto(url('/dashboard/tools/helpdesk_search_tickets?connection=helpdesk&identifier=user-1'));
    await page.fill('[name="input.query"]', 'type:ticket status:open');
    await page.fill('[name="input.per_page"]', '500');
    await page.fill('[name="input.page"]', '11');
    const sentBefore = desk.requests.length;
    await page.getByRole('button', { name: 'Execute' }).click();
    expect(await fieldError('input.per_page').textContent()).toBe('must be at most 100');
    expect(await fieldError('input.page').textContent()).toMatch(/^must be at most 2 when per_page is 500/);
    expect(await page.getAttribute('[name="input.page"]', 'aria-invalid')).toBe('true');
    expect(await fieldError('input.query').count()).toBe(0);
    expect(await page.inputValue('[name="input.query"]')).toBe('type:ticket status:open');
    await shot('05a-validation-errors');

    // Malformed JSON in an array field is caught by the form, next to the field too.
    await page.goto(url('/dashboard/tools/helpdesk_ticket_create?connection=helpdesk&identifier=user-1'));
    await page.fill('[name="input.comment_body"]', 'Printer on fire');
    await page.fill('[name="input.tags"]', '["hardware", ');
    await page.getByRole('button', { name: 'Execute' }).click();
    expect(await fieldError('input.tags').textContent()).toMatch(/^must be valid JSON/);
    expect(desk.requests.length).toBe(sentBefore);
    await shot('05-validation-error');
  });

  it('revokes an API credential, and the API refuses its token', async () => {
    await page.goto(url('/dashboard/api-credentials'));
    await page.fill('[name="name"]', 'browser test');
    await page.getByRole('button', { name: 'Create credential' }).click();
    const clientId = await page.inputValue('#client-id');
    const clientSecret = await page.inputValue('#client-secret');
    expect(clientSecret).toMatch(/^acs_sk_/);
    await shot('06a-api-credential-created');

    const tokenRes = await fetch(url('/oauth/token'), {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
    });
    expect(tokenRes.status).toBe(200);
    const { access_token: token } = (await tokenRes.json()) as { access_token: string };
    const call = () => fetch(url('/v1/connections'), { headers: { authorization: `Bearer ${token}` } });
    expect((await call()).status).toBe(200);

    await page.goto(url('/dashboard/api-credentials'));
    expect(await page.content()).not.toContain(clientSecret);
    await page.locator(`tr[data-client-id="${clientId}"]`).getByRole('link', { name: 'Revoke' }).click();
    expect(await page.locator('main p').first().textContent()).toContain(clientId);
    await page.getByRole('button', { name: 'Revoke the credential' }).click();
    await page.waitForURL('**/dashboard/api-credentials?done=credential-revoked');
    expect(await page.locator(`tr[data-client-id="${clientId}"] .badge`).textContent()).toMatch(/^revoked/);

    const refused = await call();
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/revoked/);
    const again = await fetch(url('/oauth/token'), {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret }),
    });
    expect(again.status).toBe(401);
    await shot('06-api-credential-revoked');
  });

  it('lists recent activity and signs out', async () => {
    await page.goto(url('/dashboard/activity'));
    const first = page.locator('table.list tbody tr').first();
    expect(await first.textContent()).toContain('helpdesk_tickets_list');
    expect(await first.textContent()).toContain('user-1');
    await shot('07-activity');

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL('**/dashboard/sign-in?done=signed-out');
    await page.goto(url('/dashboard/connections'));
    expect(path()).toBe('/dashboard/sign-in');
  });
});
