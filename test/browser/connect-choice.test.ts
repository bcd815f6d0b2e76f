/**
 * The hosted connect page's choice of auth kinds (issue 38) in a real browser (Debian's headless Chromium,
 * playwright-core), at 1280 px and 390 px with axe-core's WCAG 2 A/AA rules run inside the page: call intelligence
 * on one connection with OAuth or an access key. The choice is a fieldset of submit buttons (no script); OAuth goes on
 * to the fake authorization server and back, the access key shows its fields, Gong's refusal shows next to the
 * secret, and the right key connects. A tool call then runs with each kind. Screenshots go to
 * test-output/screenshots/ (connect-choice-*.png).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkLayout, SCREENSHOTS } from '../helpers/page-checks.ts';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { oauthConnection, startHarness, type Harness } from '../helpers/harness.ts';
import { FakeGong } from '../fakes/gong.ts';

const CHROMIUM = '/usr/bin/chromium';
const KEY = 'QWERTY1234567890';
const SECRET = 'gong-secret-browser-5e6f7a';

let h: Harness;
let gong: FakeGong;
let context: BrowserContext;
let page: Page;
let userDataDir: string;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`The browser tests need Debian's Chromium at ${CHROMIUM} (apt-get install chromium).`);
  }
  mkdirSync(SCREENSHOTS, { recursive: true });
  gong = await new FakeGong({ accessKey: KEY, accessKeySecret: SECRET }).start();
  h = await startHarness({
    env: { CONNECT_PRODUCT_NAME: 'Acme Assistant', CONNECT_PRIMARY_COLOUR: '#2d3a8c' },
    oauth: { requirePkce: false, extraTokenFields: { api_base_url_for_customer: gong.url } },
  });
  gong.bearerScopes = (t) => h.oauth.validate(t)?.scope.split(' ');
  await oauthConnection(h, 'gong', 'callintel', gong.url, {
    authMethod: 'client_secret_basic',
    extra: { auth_kinds: ['oauth2', 'api_key'] },
  });
  userDataDir = mkdtempSync(join(tmpdir(), 'acs-chromium-connect-choice-'));
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
  await gong?.close();
  await h?.close();
});

const workspaces = async (identifier: string) => {
  const r = await h.client.executeTool({
    toolName: 'callintel_engage_workspaces_list',
    toolInput: {},
    connectionName: 'gong',
    identifier,
  } as never);
  return (r.data as { workspaces: unknown[] }).workspaces;
};

describe('the connect page of a connection with several auth kinds', () => {
  it('offers OAuth or an access key; OAuth goes to the provider and back, and the account works', async () => {
    const { link, connected_account_id: id } = await h.client.getAuthorizationLink({
      connectionName: 'gong',
      identifier: 'rep-1',
    });
    await page.goto(link);
    expect(await page.locator('h1').textContent()).toBe('Connect your Call intelligence account');
    expect(await page.locator('legend').textContent()).toBe('How do you want to connect?');
    const buttons = page.locator('fieldset button');
    expect(await buttons.allTextContents()).toEqual(['Continue with OAuth 2.0 (Gong app)', 'Use Access key']);
    await checkLayout(page, 'choice', 'connect-choice-choice');

    await Promise.all([page.waitForURL(/Account connected|\/callback/), page.click('button[value=oauth2]')]);
    expect(await page.locator('h1').textContent()).toBe('Account connected');
    const account = await h.client.getConnectedAccount(id);
    expect(account.status).toBe('ACTIVE');
    expect((account as unknown as { auth_kind: string }).auth_kind).toBe('oauth2');
    expect(await workspaces('rep-1')).toHaveLength(2);
    expect(gong.requests.at(-1)!.authorization).toMatch(/^Bearer /);
  });

  it('the access key: its fields, Gong’s refusal next to the secret, then the key connects and works', async () => {
    const { link, connected_account_id: id } = await h.client.getAuthorizationLink({
      connectionName: 'gong',
      identifier: 'acme',
    });
    await page.goto(link);
    await Promise.all([page.waitForLoadState(), page.click('button[value=api_key]')]);
    expect(await page.getAttribute('#f-access_key_secret', 'type')).toBe('password');
    await checkLayout(page, 'access-key', 'connect-choice-access-key');

    await page.fill('#f-access_key', KEY);
    await page.fill('#f-access_key_secret', 'not-the-secret');
    await Promise.all([page.waitForLoadState(), page.click('form button[type=submit]')]);
    expect(await page.locator('#f-access_key_secret-error').textContent()).toMatch(/refused these credentials/);
    expect(await page.getAttribute('#f-access_key_secret', 'aria-invalid')).toBe('true');
    expect(await page.inputValue('#f-access_key')).toBe(KEY);
    expect((await h.client.getConnectedAccount(id)).status).toBe('PENDING_AUTH');
    await checkLayout(page, 'access-key-refused', 'connect-choice-access-key-refused');

    await page.fill('#f-access_key_secret', SECRET);
    await Promise.all([page.waitForLoadState(), page.click('form button[type=submit]')]);
    expect(await page.locator('h1').textContent()).toBe('Account connected');
    const account = await h.client.getConnectedAccount(id);
    expect(account.status).toBe('ACTIVE');
    expect((account as unknown as { auth_kind: string }).auth_kind).toBe('api_key');
    expect(await workspaces('acme')).toHaveLength(2);
    expect(gong.requests.at(-1)!.authorization).toBe(`Basic ${Buffer.from(`${KEY}:${SECRET}`).toString('base64')}`);

    // Single use: the link no longer opens.
    const again = await page.goto(link);
    expect(again!.status()).toBe(410);
  });
});
