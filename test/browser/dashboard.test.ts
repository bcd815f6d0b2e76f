/**
 * The dashboard in a real browser: Debian's headless Chromium driven by playwright-core, against the
 * service with the fake support desk and the fake OAuth authorization server. The tests run in order
 * (one signed-in browser) and each saves a screenshot under test-output/screenshots/: desktop pages at
 * 1280 px, and every main page again at a phone's 390×844 (phone-*.png).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { connectors, tools } from '../../generated/registry.ts';
import { findTools } from '../../runtime/dashboard/tool-filter.ts';
import type { OAuth2AuthSpec } from '../../core/spec-model.ts';

// Functions passed to evaluate() run in the page; the project compiles without the DOM library, so the
// browser globals they use are declared here, for this file only.
declare const document: any;
declare const window: { innerWidth: number };
declare const NodeFilter: { SHOW_TEXT: number };
declare function getComputedStyle(
  el: unknown,
  pseudo?: string,
): { content: string; display: string; overflowX: string; borderTopWidth: string; paddingTop: string };

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
/** The same signed-in browser at a phone's size. */
let phone: Page;
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
const clipboard = () => page.evaluate<string>('navigator.clipboard.readText()');
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
    await page.fill('#q', 'tickets list');
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

  it('lists recent activity', async () => {
    await page.goto(url('/dashboard/activity'));
    const first = page.locator('table.list tbody tr').first();
    expect(await first.textContent()).toContain('helpdesk_tickets_list');
    expect(await first.textContent()).toContain('user-1');
    await shot('07-activity');
  });

  it('finds tools by search, grouped by connector, as you type and without JavaScript', async () => {
    await page.goto(url('/dashboard/tools'));
    const groups = page.locator('details.connector');
    expect(await groups.count()).toBe(connectors.size);
    // Nothing searched: every group closed, so the page is a short list of connectors, not 127 rows.
    expect(await page.locator('details.connector[open]').count()).toBe(0);
    expect(await page.evaluate(() => document.documentElement.scrollHeight)).toBeLessThan(1600);
    await shot('08a-tool-explorer-groups');

    const shown = () =>
      page
        .locator('#tool-results details[open] table.tools a code')
        .evaluateAll((els) => els.map((e) => e.textContent));
    const expectResults = async (query: string, connector = '') => {
      const expected = findTools(query)
        .filter((t) => !connector || t.connector === connector)
        .map((t) => t.name);
      await expect.poll(shown).toEqual(expected);
      return expected;
    };

    // As you type: the page asks the server's filter, and the groups with matches open.
    await page.locator('#q').pressSequentially('calendar event');
    const typed = await expectResults('calendar event');
    expect(typed.length).toBeGreaterThan(1);
    expect(typed.every((n) => n.startsWith('mail_'))).toBe(true);
    expect(await page.locator('#tool-count').textContent()).toBe(`${typed.length} of ${tools.size} tools match.`);
    expect(new URL(page.url()).search).toBe('?q=calendar+event');
    await shot('08b-tool-search');

    await page.fill('#q', 'user');
    await page.selectOption('#connector', 'callintel');
    const narrowed = await expectResults('user', 'callintel');
    expect(narrowed.length).toBeGreaterThan(0);
    expect(await page.locator('details.connector').count()).toBe(1);

    await page.selectOption('#connector', '');
    await page.fill('#q', 'no tool has these words');
    await expect.poll(() => page.locator('#tool-results .empty').count()).toBe(1);
    await page.locator('#clear-search').click();
    await expect.poll(() => page.locator('details.connector').count()).toBe(connectors.size);

    // Without the script the form is a plain GET, filtered by the same function on the server.
    await context.route('**/dashboard/static/dashboard.js', (r) => r.abort());
    try {
      await page.goto(url('/dashboard/tools'));
      await page.fill('#q', 'ticket comment');
      await page.keyboard.press('Enter');
      await page.waitForURL('**/dashboard/tools?q=ticket+comment&connector=');
      await expectResults('ticket comment');
    } finally {
      await context.unroute('**/dashboard/static/dashboard.js');
    }
  });

  it('keeps the small things right: cards, breadcrumbs, spacing, control heights, titles, favicon', async () => {
    // Connector cards carry one sentence; the notes are on the connector's page, so the cards are even.
    await page.goto(url('/dashboard/connections/new'));
    const heights = await page.locator('.catalogue > li').evaluateAll((els) => els.map((e) => e.clientHeight));
    expect(Math.max(...heights) / Math.min(...heights)).toBeLessThan(1.3);
    expect(await page.locator('.catalogue').textContent()).not.toContain('fileNotDownloadable');
    await page.getByRole('link', { name: 'Choose File storage' }).click();
    expect(await page.locator('.connector-notes').textContent()).toContain('fileNotDownloadable');

    // Breadcrumbs: a separator between items and none after the last.
    for (const [p, items] of [
      ['/dashboard/connections/helpdesk', 1],
      ['/dashboard/connections/helpdesk/accounts/new', 2],
      ['/dashboard/tools/helpdesk_ticket_get', 2],
    ] as const) {
      await page.goto(url(p));
      const marks = await page
        .locator('.crumbs li')
        .evaluateAll((els) =>
          els.map((e) => [getComputedStyle(e, '::before').content, getComputedStyle(e, '::after').content]),
        );
      expect(marks, p).toEqual([['none', 'none'], ...Array(items - 1).fill(['"›"', 'none'])]);
      expect((await page.locator('.crumbs').textContent())!.trim(), p).not.toMatch(/›$/);
    }

    // The filter's text box, select and button are equally tall.
    await page.goto(url('/dashboard/connections/helpdesk'));
    const controls = await page
      .locator('form.filter')
      .evaluate((f) => ['#q', '#status', 'button'].map((s) => f.querySelector(s)!.getBoundingClientRect().height));
    expect(Math.max(...controls) - Math.min(...controls)).toBeLessThanOrEqual(1);

    // No gap above the first heading of a card.
    await page.goto(url('/dashboard/api-credentials'));
    const gap = await page.locator('form.inline-form').evaluate((form) => {
      const style = getComputedStyle(form);
      const h2 = form.querySelector('h2')!;
      return (
        h2.getBoundingClientRect().top -
        form.getBoundingClientRect().top -
        parseFloat(style.borderTopWidth) -
        parseFloat(style.paddingTop)
      );
    });
    expect(Math.abs(gap)).toBeLessThanOrEqual(1);
    await shot('09-api-credentials');

    // The icon the layout links, and the one browsers ask for by themselves.
    const icon = await page.locator('link[rel="icon"]').getAttribute('href');
    const svg = await page.request.get(url(icon!));
    expect(svg.status()).toBe(200);
    expect(svg.headers()['content-type']).toMatch(/^image\/svg\+xml/);
    const ico = await page.request.get(url('/favicon.ico'));
    expect(ico.status()).toBe(200);
    expect(ico.headers()['content-type']).toBe('image/x-icon');
  });

  it('is usable on a phone (390×844): no sideways scrolling, a collapsed menu that opens, stacked tables', async () => {
    phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    const visited: string[] = [];
    const visit = async (name: string, path?: string) => {
      if (path) await phone.goto(url(path));
      await checkLayout(phone, name);
      expect(await phone.locator('#menu').isVisible(), name).toBe(false);
      expect(await phone.locator('header.top').evaluate((e) => e.getBoundingClientRect().height), name).toBeLessThan(
        64,
      );
      await phone.screenshot({ path: join(SCREENSHOTS, `phone-${name}.png`), fullPage: true });
      visited.push(name);
    };

    await visit('01-connections', '/dashboard/connections');
    // Stacked rows: each cell shows its column's name.
    expect(
      await phone
        .locator('table.list tbody td')
        .first()
        .evaluate((td) => [getComputedStyle(td).display, getComputedStyle(td, '::before').content]),
    ).toEqual(['block', '"Name"']);
    await visit('02-connection-accounts', '/dashboard/connections/helpdesk');
    await visit('03-oauth-connection', '/dashboard/connections/mail');
    await phone.fill('[name="identifier"]', 'bob@example.com');
    await phone.getByRole('button', { name: 'Create authorization link' }).click();
    await phone.waitForSelector('#authorization-link');
    await visit('04-authorization-link');
    expect(await phone.locator('.card h1').count()).toBe(0);
    expect(await phone.locator('main > h1').textContent()).toBe('Authorization link for bob@example.com');
    await visit('05-new-connection', '/dashboard/connections/new');
    await visit('06-connector-page', '/dashboard/connections/new/drive');
    await visit('07-new-account', '/dashboard/connections/helpdesk/accounts/new');
    await visit('08-connection-settings', '/dashboard/connections/mail/edit');
    await visit('09-tools', '/dashboard/tools');
    await visit('10-tool-search', '/dashboard/tools?q=ticket');
    await visit('11-tool', '/dashboard/tools/helpdesk_tickets_list?connection=helpdesk&identifier=user-1');
    await phone.fill('[name="input.per_page"]', '2');
    await phone.getByRole('button', { name: 'Dry run' }).click();
    await phone.waitForSelector('#result pre');
    await visit('12-tool-dry-run');
    // The long URL wraps, and never in the middle of a word (between two letters or digits).
    const breaks = await urlLineBreaks(phone.locator('#result pre').first());
    expect(breaks.length).toBeGreaterThan(1);
    for (const [before, after] of breaks) expect(`${before}|${after}`).not.toMatch(/^[\w%]\|[\w%]$/);
    await visit('13-activity', '/dashboard/activity');
    await visit('14-api-credentials', '/dashboard/api-credentials');

    // The menu opens from its button, also without the script, and leads to the pages.
    await context.route('**/dashboard/static/dashboard.js', (r) => r.abort());
    try {
      await phone.goto(url('/dashboard/connections'));
      await phone.getByText('Menu', { exact: true }).click();
      expect(await phone.locator('#menu').isVisible()).toBe(true);
      for (const name of ['Connections', 'Tool explorer', 'Activity', 'API credentials'])
        expect(await phone.getByRole('link', { name, exact: true }).isVisible(), name).toBe(true);
      expect(await phone.getByRole('button', { name: 'Sign out' }).isVisible()).toBe(true);
      await checkLayout(phone, 'menu open');
      await phone.screenshot({ path: join(SCREENSHOTS, 'phone-15-menu-open.png') });
      await phone.getByRole('link', { name: 'Tool explorer' }).click();
      await phone.waitForURL('**/dashboard/tools');
      expect(await phone.locator('#menu').isVisible()).toBe(false);
    } finally {
      await context.unroute('**/dashboard/static/dashboard.js');
    }
    expect(visited).toHaveLength(14);
  });

  it('keeps the desktop layout: no sideways scrolling, the navigation shown in the header', async () => {
    for (const [name, p] of [
      ['connections', '/dashboard/connections'],
      ['connection-accounts', '/dashboard/connections/helpdesk'],
      ['new-connection', '/dashboard/connections/new'],
      ['connector-page', '/dashboard/connections/new/drive'],
      ['new-account', '/dashboard/connections/helpdesk/accounts/new'],
      ['tool-search', '/dashboard/tools?q=ticket'],
      ['tool', '/dashboard/tools/helpdesk_tickets_list'],
      ['activity', '/dashboard/activity'],
    ] as const) {
      await page.goto(url(p));
      await checkLayout(page, name);
      expect(await page.locator('#menu nav').isVisible(), name).toBe(true);
      expect(await page.getByText('Menu', { exact: true }).isVisible(), name).toBe(false);
      expect(await page.locator('header.top').evaluate((e) => e.getBoundingClientRect().height), name).toBeLessThan(64);
    }
    await page.goto(url('/dashboard/connections/mail'));
    await page.fill('[name="identifier"]', 'carol@example.com');
    await page.getByRole('button', { name: 'Create authorization link' }).click();
    await page.waitForSelector('#authorization-link');
    await checkLayout(page, 'authorization link');
    expect(await page.locator('.card h1').count()).toBe(0);
    await shot('10-authorization-link');
  });

  it('signs out, and the sign-in page fits a phone', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL('**/dashboard/sign-in?done=signed-out');
    await page.goto(url('/dashboard/connections'));
    expect(path()).toBe('/dashboard/sign-in');

    await phone.goto(url('/dashboard/sign-in'));
    await checkLayout(phone, 'sign-in');
    expect(await phone.locator('#password').isVisible()).toBe(true);
    await phone.screenshot({ path: join(SCREENSHOTS, 'phone-16-sign-in.png'), fullPage: true });
  });
});

/**
 * The page does not scroll sideways, and nothing inside main is cut off by a box that hides its overflow
 * (a table too wide for its card would be, rather than widen the page). Boxes that scroll (code) may.
 */
async function checkLayout(p: Page, name: string) {
  const layout = await p.evaluate(() => {
    const clipped: string[] = [];
    for (const el of document.querySelectorAll('body *')) {
      // Form controls scroll their own value; a 1-pixel box is hidden on purpose (for screen readers only).
      if (el.matches('input, textarea, select') || el.clientWidth <= 1) continue;
      const o = getComputedStyle(el).overflowX;
      if ((o === 'hidden' || o === 'clip') && el.scrollWidth > el.clientWidth + 1)
        clipped.push(`${el.tagName.toLowerCase()}.${el.className}`);
    }
    return {
      scrollWidth: document.documentElement.scrollWidth,
      innerWidth: window.innerWidth,
      clipped,
    };
  });
  expect(layout.scrollWidth, name).toBeLessThanOrEqual(layout.innerWidth);
  expect(layout.clipped, name).toEqual([]);
}

/** Where the first line of a box (the request line) wraps: the characters either side of each break. */
async function urlLineBreaks(box: Locator): Promise<Array<[string, string]>> {
  return box.evaluate((el) => {
    const chars: Array<{ ch: string; top: number }> = [];
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const text = n as { data: string };
      for (let i = 0; i < text.data.length; i++) {
        if (text.data[i] === '\n') return breaksOf(chars);
        const r = document.createRange();
        r.setStart(text, i);
        r.setEnd(text, i + 1);
        chars.push({ ch: text.data[i]!, top: Math.round(r.getBoundingClientRect().top) });
      }
    }
    return breaksOf(chars);
    function breaksOf(cs: typeof chars): Array<[string, string]> {
      const out: Array<[string, string]> = [];
      for (let i = 1; i < cs.length; i++) if (cs[i]!.top > cs[i - 1]!.top) out.push([cs[i - 1]!.ch, cs[i]!.ch]);
      return out;
    }
  });
}
