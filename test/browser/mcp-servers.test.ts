/**
 * The dashboard's MCP servers page in a real browser (Debian's headless Chromium, playwright-core): create a
 * server from a connection and single tools (errors next to the field), make a URL for an end user (shown once;
 * an MCP SDK client then uses it as it is), see it listed, revoke it, delete the server. Screenshots go to
 * test-output/screenshots/ (mcp-*.png), at 1280 px and at a phone's 390×844.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startHarness, type Harness } from '../helpers/harness.ts';
import { FakeDesk } from '../fakes/desk.ts';
import { connectors } from '../../generated/registry.ts';

declare const document: any;
declare const window: { innerWidth: number };

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = join(process.cwd(), 'test-output', 'screenshots');
const ADMIN_PASSWORD = 'browser-admin-password-mcp';
const DOMAIN = 'acme.zendesk.com';
const EMAIL = 'agent@acme.com';
const API_TOKEN = 'zd-browser-mcp-token-3d91';

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
  await h.client.createConnection({
    connection_name: 'helpdesk',
    connector: 'helpdesk',
    api_base_url: desk.baseUrlTemplate,
  });
  await h.client.upsertConnectedAccount({
    connectionName: 'helpdesk',
    identifier: 'user-1',
    credentials: { domain: DOMAIN, email: EMAIL, api_token: API_TOKEN },
  });
  userDataDir = mkdtempSync(join(tmpdir(), 'acs-chromium-mcp-'));
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
  await desk?.close();
  await h?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

const url = (path: string) => `${h.url}${path}`;
const shot = (p: Page, name: string) => p.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });

async function noSidewaysScroll(p: Page, name: string) {
  const { scrollWidth, innerWidth } = await p.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  }));
  expect(scrollWidth, name).toBeLessThanOrEqual(innerWidth);
}

describe('MCP servers in the dashboard', () => {
  let serverPath: string;
  let mcpUrl: string;

  it('creates an MCP server from a connection and single tools, with errors next to the field', async () => {
    await page.goto(url('/dashboard/mcp-servers'));
    await page.fill('#password', ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/dashboard/mcp-servers');
    expect(await page.locator('h1').textContent()).toBe('MCP servers');
    expect(await page.locator('nav a[aria-current="page"]').textContent()).toBe('MCP servers');

    await page.fill('[name="name"]', 'has space');
    await page.getByRole('button', { name: 'Create MCP server' }).click();
    expect(await page.locator('.field[data-field="name"] .error').textContent()).toContain('letters, digits');
    await page.fill('[name="name"]', 'support-agent');
    await page.getByRole('button', { name: 'Create MCP server' }).click();
    expect(await page.locator('.errors').textContent()).toContain('must name at least one tool');

    await page.check('input[name="connections"][value="helpdesk"]');
    await page.locator('summary', { hasText: connectors.get('mail')!.title }).click();
    await page.check('input[name="tools"][value="mail_send_message"]');
    await shot(page, 'mcp-01-new-server');
    await page.getByRole('button', { name: 'Create MCP server' }).click();
    await page.waitForURL('**/dashboard/mcp-servers/mcp_*?done=mcp-server-created');
    serverPath = new URL(page.url()).pathname;
    expect(await page.locator('.notice').textContent()).toContain('MCP server created');
    expect(await page.locator('h1').textContent()).toBe('support-agent');
    const helpdeskTools = connectors.get('helpdesk')!.toolNames.length;
    expect(await page.locator('tr[data-tool]').count()).toBe(helpdeskTools + 1);
    // No mail connection yet: the page says why that tool cannot run.
    expect(await page.locator('tr[data-tool="mail_send_message"]').textContent()).toContain(
      'No connection uses the mail connector yet',
    );
  });

  it('makes a URL for an end user, shown once, that an MCP client uses as it is', async () => {
    await page.fill('[name="identifier"]', '');
    await page.getByRole('button', { name: 'Make URL' }).click();
    expect(await page.locator('.field[data-field="identifier"] .error').textContent()).toBeTruthy();

    await page.fill('[name="identifier"]', 'user-1');
    await page.fill('[name="days"]', '7');
    await page.getByRole('button', { name: 'Make URL' }).click();
    await page.waitForSelector('#mcp-url');
    expect(await page.locator('h1').textContent()).toBe('MCP URL for user-1');
    mcpUrl = await page.inputValue('#mcp-url');
    expect(mcpUrl).toMatch(new RegExp(`^${h.url}/mcp/[A-Za-z0-9_-]{43}$`));
    expect(JSON.parse((await page.locator('#mcp-config').textContent())!)).toEqual({
      mcpServers: { 'support-agent': { url: mcpUrl } },
    });
    await shot(page, 'mcp-02-url-created');

    const client = new Client({ name: 'browser-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
    const result = await client.callTool({ name: 'helpdesk_tickets_list', arguments: { per_page: 1 } });
    expect(result.isError).toBeFalsy();
    await client.close();

    await page.goto(url(serverPath));
    const row = page.locator('tr[data-url-identifier="user-1"]');
    expect(await row.locator('.badge').textContent()).toBe('active');
    // The page that lists URLs never shows one.
    expect(await page.content()).not.toContain(mcpUrl.split('/').pop());
    await shot(page, 'mcp-03-server');
  });

  it('fits a phone: no sideways scrolling on the list, the server and the new URL', async () => {
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(url('/dashboard/mcp-servers'));
    await noSidewaysScroll(phone, 'list');
    await shot(phone, 'phone-mcp-01-list');
    await phone.goto(url(serverPath));
    await noSidewaysScroll(phone, 'server');
    await shot(phone, 'phone-mcp-02-server');
    await phone.fill('[name="identifier"]', 'user-2');
    await phone.getByRole('button', { name: 'Make URL' }).click();
    await phone.waitForSelector('#mcp-url');
    await noSidewaysScroll(phone, 'url');
    await shot(phone, 'phone-mcp-03-url');
    await phone.close();
  });

  it('revokes a URL (the client is refused) and deletes the server', async () => {
    await page.goto(url(serverPath));
    await page.locator('tr[data-url-identifier="user-1"]').getByRole('link', { name: 'Revoke' }).click();
    expect(await page.locator('h1').textContent()).toBe('Revoke the URL of user-1?');
    await page.getByRole('button', { name: 'Revoke the URL' }).click();
    await page.waitForURL('**?done=mcp-url-revoked');
    expect(await page.locator('tr[data-url-identifier="user-1"] .badge').textContent()).toBe('revoked');
    const client = new Client({ name: 'browser-test', version: '1.0.0' });
    await expect(client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)))).rejects.toThrow();

    await page.getByRole('link', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Delete the MCP server' }).click();
    await page.waitForURL('**/dashboard/mcp-servers?done=mcp-server-deleted');
    expect(await page.locator('tr[data-mcp-server]').count()).toBe(0);
    await shot(page, 'mcp-04-deleted');
  });
});
