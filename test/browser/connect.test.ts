/**
 * The hosted connect page (issue 38) in a real browser (Debian's headless Chromium, playwright-core), at 1280 px and at
 * a phone's 390 px, with axe-core's WCAG 2 A/AA rules run inside the page: the support desk (domain, email, token; a
 * wrong token refused by the fake desk and shown next to its field, then the right one connects the account), the
 * scraping platform (one token); the link is single use, and a form posted without the page's CSRF cookie is refused.
 * Screenshots go to test-output/screenshots/ (connect-*.png).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLayout, SCREENSHOTS } from '../helpers/page-checks.ts';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { serviceToken, startHarness, type Harness } from '../helpers/harness.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { FakeApify, routeLocalhostSubdomains } from '../fakes/apify.ts';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitationCompleteNotificationSchema, McpError } from '@modelcontextprotocol/sdk/types.js';

const CHROMIUM = '/usr/bin/chromium';
const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const TOKEN = 'zd-api-token-connect-page-42';
const SCRAPER_TOKEN = 'apify_api_connect_page_token_7';

let h: Harness;
let desk: FakeDesk;
let apify: FakeApify;
let restoreDns: () => void;
let context: BrowserContext;
let page: Page;
let userDataDir: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`The browser tests need Debian's Chromium at ${CHROMIUM} (apt-get install chromium).`);
  }
  mkdirSync(SCREENSHOTS, { recursive: true });
  restoreDns = routeLocalhostSubdomains();
  h = await startHarness({ env: { CONNECT_PRODUCT_NAME: 'Acme Assistant', CONNECT_PRIMARY_COLOUR: '#2d3a8c' } });
  desk = await new FakeDesk().start();
  desk.addTenant(DOMAIN, EMAIL, TOKEN);
  await h.client.createConnection({
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
  apify = await new FakeApify().start();
  apify.addToken(SCRAPER_TOKEN);
  await h.client.createConnection({
    connection_name: 'scraper',
    connector: 'scraper',
    api_base_url: apify.url,
    api_hosts: apify.hosts,
  });
  userDataDir = mkdtempSync(join(tmpdir(), 'acs-chromium-connect-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
    viewport: { width: 1280, height: 860 },
  });
  page = context.pages()[0] ?? (await context.newPage());
});

afterAll(async () => {
  await context?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  await apify?.close();
  await desk?.close();
  await h?.close();
  restoreDns?.();
});

describe('the hosted connect page', () => {
  it('the support desk: domain, email and token; a wrong token is refused next to its field; the right one connects', async () => {
    const { link, connected_account_id: id } = await h.client.getAuthorizationLink({
      connectionName: 'helpdesk',
      identifier: 'desk-user',
    });
    await page.goto(link);
    expect(await page.locator('h1').textContent()).toBe('Connect your Support desk account');
    expect(await page.locator('header').textContent()).toContain('Acme Assistant');
    expect(await page.getAttribute('#f-api_token', 'type')).toBe('password');
    await checkLayout(page, 'helpdesk', 'connect-helpdesk');

    await page.fill('#f-domain', DOMAIN);
    await page.fill('#f-email', EMAIL);
    await page.fill('#f-api_token', 'wrong-token');
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    const error = page.locator('#f-api_token-error');
    expect(await error.textContent()).toMatch(/refused these credentials/);
    expect(await page.getAttribute('#f-api_token', 'aria-invalid')).toBe('true');
    // What was typed stays, except the secret.
    expect(await page.inputValue('#f-domain')).toBe(DOMAIN);
    expect(await page.inputValue('#f-api_token')).toBe('');
    expect((await h.client.getConnectedAccount(id)).status).toBe('PENDING_AUTH');
    await checkLayout(page, 'helpdesk-refused', 'connect-helpdesk-refused');

    await page.fill('#f-api_token', TOKEN);
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    expect(await page.locator('h1').textContent()).toBe('Account connected');
    const account = await h.client.getConnectedAccount(id);
    expect(account.status).toBe('ACTIVE');
    const r = await h.client.executeTool({
      toolName: 'helpdesk_groups_list',
      toolInput: {},
      connectionName: 'helpdesk',
      identifier: 'desk-user',
    });
    expect(r.executionId).toMatch(/^exe_/);

    // Single use: the link no longer opens.
    const again = await page.goto(link);
    expect(again!.status()).toBe(410);
  });

  it('checks fields as the API does, each problem next to its field', async () => {
    const { link } = await h.client.getAuthorizationLink({ connectionName: 'helpdesk', identifier: 'desk-typo' });
    await page.goto(link);
    await page.fill('#f-domain', 'evil.example.com');
    await page.fill('#f-email', 'not-an-email');
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    expect(await page.locator('#f-domain-error').textContent()).toBeTruthy();
    expect(await page.locator('#f-email-error').textContent()).toBeTruthy();
    expect(await page.locator('#f-api_token-error').textContent()).toMatch(/required/);
    expect(await page.locator('[role=alert]').textContent()).toMatch(/attention/);
  });

  it('the scraping platform: one token', async () => {
    const { link, connected_account_id: id } = await h.client.getAuthorizationLink({
      connectionName: 'scraper',
      identifier: 'scraper-user',
    });
    await page.goto(link);
    expect(await page.locator('input:not([type=hidden])').count()).toBe(1);
    await checkLayout(page, 'scraper', 'connect-scraper');
    await page.fill('#f-token', SCRAPER_TOKEN);
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    expect(await page.locator('h1').textContent()).toBe('Account connected');
    expect((await h.client.getConnectedAccount(id)).status).toBe('ACTIVE');
  });

  it('refuses a form posted without the page’s CSRF cookie, and saves nothing', async () => {
    const { link, connected_account_id: id } = await h.client.getAuthorizationLink({
      connectionName: 'scraper',
      identifier: 'forged',
    });
    const u = new URL(link);
    const res = await fetch(`${u.origin}${u.pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ link: u.searchParams.get('link')!, csrf: 'guessed', c_token: SCRAPER_TOKEN }),
    });
    expect(res.status).toBe(403);
    expect((await h.client.getConnectedAccount(id)).status).toBe('PENDING_AUTH');
  });
});

describe('just in time over MCP, completed in the browser', () => {
  it('a client declaring URL elicitation gets -32042, the user connects on the hosted page, the completion arrives, the retry works', async () => {
    const token = await serviceToken(h.url);
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const server = (await (
      await fetch(`${h.url}/v1/mcp-servers`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ name: 'desk-agent', connections: ['helpdesk'] }),
      })
    ).json()) as { id: string };
    const { url } = (await (
      await fetch(`${h.url}/v1/mcp-servers/${server.id}/urls`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ identifier: 'mcp-desk-user' }),
      })
    ).json()) as { url: string };

    const client = new McpClient(
      { name: 'elicit-browser', version: '1.0.0' },
      { capabilities: { elicitation: { url: {} } } },
    );
    const completed = new Promise<string>((resolve) =>
      client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => resolve(n.params.elicitationId)),
    );
    // The completion comes on the client's GET stream: known open once its answer's headers arrive.
    let streamOpen!: () => void;
    const opened = new Promise<void>((resolve) => (streamOpen = resolve));
    const transport = new StreamableHTTPClientTransport(new URL(url), {
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        if ((init?.method ?? 'GET') === 'GET' && res.status === 200) streamOpen();
        return res;
      },
    });
    await client.connect(transport);
    try {
      await opened;
      const refused = await client.callTool({ name: 'helpdesk_groups_list', arguments: {} }).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(McpError);
      expect((refused as McpError).code).toBe(-32042);
      const [e] = ((refused as McpError).data as { elicitations: Array<{ url: string; elicitationId: string }> })
        .elicitations;

      // The person opens the link in their browser and connects on the hosted page.
      await page.goto(e!.url);
      expect(await page.locator('h1').textContent()).toBe('Connect your Support desk account');
      expect(await page.locator('.who').textContent()).toContain('mcp-desk-user');
      await page.fill('#f-domain', DOMAIN);
      await page.fill('#f-email', EMAIL);
      await page.fill('#f-api_token', TOKEN);
      await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
      expect(await page.locator('h1').textContent()).toBe('Account connected');

      expect(await completed).toBe(e!.elicitationId);
      const after = await client.callTool({ name: 'helpdesk_groups_list', arguments: {} });
      expect(after.isError).toBeFalsy();
    } finally {
      await client.close();
    }
  });
});
