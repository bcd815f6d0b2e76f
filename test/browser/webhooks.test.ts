/**
 * The dashboard's webhooks page in a real browser (Debian's headless Chromium, playwright-core): create an
 * endpoint (errors next to the field: no event chosen, a private address), its signing secret shown once; the
 * delivery log shows each event's status, attempts, the receiver's last answer and latency; "Send again"
 * redelivers the same event; rotating the secret shows a new one that signs what follows; delete. Text from an
 * account identifier is escaped; a form without its CSRF token is refused. Screenshots go to
 * test-output/screenshots/ (webhooks-*.png), at 1280 px and at a phone's 390×844.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { startHarness, type Harness } from '../helpers/harness.ts';

declare const document: any;
declare const window: { innerWidth: number };

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = join(process.cwd(), 'test-output', 'screenshots');
const ADMIN_PASSWORD = 'browser-admin-password-webhooks';
/** An identifier that would run script if the page did not escape it. */
const HOSTILE_IDENTIFIER = '<img src=x onerror="window.pwned=1">';

interface Received {
  headers: Record<string, string>;
  body: string;
  answered: number;
}

let h: Harness;
let context: BrowserContext;
let page: Page;
let userDataDir: string;
let receiver: http.Server;
let receiverUrl: string;
const received: Received[] = [];
/**
 * How the receiver answers the next deliveries of each event type, first to last (then 200). By type, not by arrival:
 * the service delivers the events that are due together at once, so their order at the receiver is not fixed.
 */
const script = new Map<string, number[]>();

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `The browser tests need Debian's Chromium at ${CHROMIUM} (apt-get install chromium); it is not installed.`,
    );
  }
  mkdirSync(SCREENSHOTS, { recursive: true });
  receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d: string) => (body += d));
    req.on('end', () => {
      const answered = script.get(typeOfBody(body))?.shift() ?? 200;
      received.push({ headers: req.headers as Record<string, string>, body, answered });
      res.writeHead(answered).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  h = await startHarness({
    env: { ADMIN_PASSWORD, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_RETRY_BASE_MS: '40' },
  });
  await h.client.createConnection({ connection_name: 'helpdesk', connector: 'helpdesk' });
  userDataDir = mkdtempSync(join(tmpdir(), 'acs-chromium-webhooks-'));
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
  await h?.close();
  receiver?.closeAllConnections();
  receiver?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

const url = (path: string) => `${h.url}${path}`;
const shot = (p: Page, name: string) => p.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function noSidewaysScroll(p: Page, name: string) {
  const { scrollWidth, innerWidth } = await p.evaluate(() => ({
    scrollWidth: document.documentElement.scrollWidth,
    innerWidth: window.innerWidth,
  }));
  expect(scrollWidth, name).toBeLessThanOrEqual(innerWidth);
}

/** Reloads the webhook's page until `ready` holds for it. */
async function reloadUntil(path: string, ready: () => Promise<boolean>): Promise<void> {
  for (;;) {
    await page.goto(url(path));
    if (await ready()) return;
    await sleep(100);
  }
}

/** A delivery row's status, or undefined while the row is not on the page (no waiting). */
async function badge(row: Locator): Promise<string | undefined> {
  return (await row.count()) ? ((await row.locator('.badge').textContent()) ?? undefined) : undefined;
}

const typeOfBody = (body: string) => (JSON.parse(body) as { type: string }).type;
const typeOf = (r: Received) => typeOfBody(r.body);

describe('webhooks in the dashboard', () => {
  let webhookPath: string;
  let secret: string;

  it('creates a webhook, with errors next to the field, and shows its secret once', async () => {
    await page.goto(url('/dashboard/webhooks'));
    await page.fill('#password', ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/dashboard/webhooks');
    expect(await page.locator('h1').textContent()).toBe('Webhooks');
    expect(await page.locator('nav a[aria-current="page"]').textContent()).toBe('Webhooks');
    expect(await page.locator('.empty').textContent()).toBe('No webhooks yet.');

    // No event chosen.
    await page.fill('[name="url"]', receiverUrl);
    await page.getByRole('button', { name: 'Create webhook' }).click();
    expect(await page.locator('fieldset[data-field="events"] .error').textContent()).toBe(
      'Events must have at least one item',
    );
    // What was typed stays.
    expect(await page.inputValue('[name="url"]')).toBe(receiverUrl);

    // A private address, not named in WEBHOOK_ALLOWED_HOSTS.
    await page.fill('[name="url"]', 'http://10.20.30.40/hooks');
    await page.check('input[name="events"][value="connected_account.active"]');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const urlError = await page.locator('.field[data-field="url"] .error').textContent();
    expect(urlError).toContain('not a public address');
    expect(urlError).toContain('WEBHOOK_ALLOWED_HOSTS');
    expect(await page.isChecked('input[name="events"][value="connected_account.active"]')).toBe(true);

    await page.fill('[name="url"]', receiverUrl);
    await page.check('input[name="events"][value="connected_account.created"]');
    await page.check('input[name="events"][value="connected_account.deleted"]');
    await shot(page, 'webhooks-01-new');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.waitForSelector('#webhook-secret');
    expect(await page.locator('h1').textContent()).toBe('Webhook created');
    secret = await page.inputValue('#webhook-secret');
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]{32}$/);
    await shot(page, 'webhooks-02-created');
    await page.getByRole('link', { name: 'Done' }).click();
    await page.waitForURL('**/dashboard/webhooks/wh_*');
    webhookPath = new URL(page.url()).pathname;
    expect(await page.locator('.empty').textContent()).toContain('No deliveries yet');
    // Never shown again: not on the webhook's page, nor in the list.
    expect(await page.content()).not.toContain(secret);
    await page.goto(url('/dashboard/webhooks'));
    expect(await page.content()).not.toContain(secret);
    expect(await page.locator('tr[data-webhook-id] code').first().textContent()).toBe(receiverUrl);
  });

  it('shows each delivery with its status, attempts, last answer and latency, escaping what it shows', async () => {
    // created: 200; active: 500 once, then 200.
    script.set('connected_account.active', [500]);
    await h.client.upsertConnectedAccount({
      connectionName: 'helpdesk',
      identifier: HOSTILE_IDENTIFIER,
      credentials: { domain: 'acme.zendesk.com', email: 'agent@acme.com', api_token: 'zd-browser-webhooks-51c2' },
    });
    const active = page.locator('tr[data-event-type="connected_account.active"]');
    await reloadUntil(webhookPath, async () => (await badge(active)) === 'succeeded');
    expect(await active.locator('td[data-label="Attempts"]').textContent()).toBe('2');
    expect(await active.locator('td[data-label="Last answer"]').textContent()).toBe('HTTP 200');
    expect(await active.locator('td[data-label="Latency"]').textContent()).toMatch(/^\d+ ms$/);
    // The identifier is shown as text: no element was made of it, no script ran.
    expect(await active.locator('td[data-label="Account"]').textContent()).toContain(HOSTILE_IDENTIFIER);
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();

    const created = page.locator('tr[data-event-type="connected_account.created"]');
    expect(await created.locator('.badge').textContent()).toBe('succeeded');
    expect(await created.locator('td[data-label="Attempts"]').textContent()).toBe('1');
    // Every delivery the receiver got verifies with the secret the page showed.
    const answers = (type: string) => received.filter((r) => typeOf(r) === type).map((r) => r.answered);
    expect(received).toHaveLength(3);
    expect(answers('connected_account.created')).toEqual([200]);
    expect(answers('connected_account.active')).toEqual([500, 200]);
    for (const r of received) expect(new Webhook(secret).verify(r.body, r.headers)).toEqual(JSON.parse(r.body));
    await shot(page, 'webhooks-03-deliveries');
  });

  it('sends a delivery again with the same webhook-id', async () => {
    const row = page.locator('tr[data-event-type="connected_account.created"]');
    const eventId = await row.locator('td[data-label="Event"] .muted code').textContent();
    const before = received.length;
    await row.getByRole('button', { name: 'Send again' }).click();
    await page.waitForURL('**?done=webhook-redelivered');
    expect(await page.locator('.notice').textContent()).toContain('sent again');
    await reloadUntil(
      webhookPath,
      async () =>
        (await row.locator('td[data-label="Attempts"]').textContent()) === '2' &&
        (await row.locator('.badge').textContent()) === 'succeeded',
    );
    const again = received.slice(before);
    expect(again).toHaveLength(1);
    expect(again[0]!.headers['webhook-id']).toBe(eventId);
    expect(new Webhook(secret).verify(again[0]!.body, again[0]!.headers)).toMatchObject({
      type: 'connected_account.created',
    });
  });

  it('refuses a form without its CSRF token', async () => {
    const row = page.locator('tr[data-event-type="connected_account.created"]');
    const action = await row.locator('form').getAttribute('action');
    const before = received.length;
    const res = await page.request.post(url(action!), { form: { _csrf: 'not-the-token' }, maxRedirects: 0 });
    expect(res.status()).toBe(403);
    expect(await res.text()).toContain('Form refused');
    await sleep(300);
    expect(received.length).toBe(before);
  });

  it('rotates the secret: the new one is shown once and signs what follows', async () => {
    await page.goto(url(webhookPath));
    await page.getByRole('link', { name: 'Rotate secret' }).click();
    expect(await page.locator('h1').textContent()).toBe('Rotate the signing secret?');
    await page.getByRole('button', { name: 'Rotate the secret' }).click();
    await page.waitForSelector('#webhook-secret');
    expect(await page.locator('h1').textContent()).toBe('Signing secret rotated');
    const rotated = await page.inputValue('#webhook-secret');
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);

    const before = received.length;
    const account = await h.client.getOrCreateConnectedAccount({
      connectionName: 'helpdesk',
      identifier: HOSTILE_IDENTIFIER,
    });
    await h.client.deleteConnectedAccount(account.id);
    await reloadUntil(
      webhookPath,
      async () => (await badge(page.locator('tr[data-event-type="connected_account.deleted"]'))) === 'succeeded',
    );
    const deleted = received.slice(before).find((r) => typeOf(r) === 'connected_account.deleted')!;
    expect(new Webhook(rotated).verify(deleted.body, deleted.headers)).toMatchObject({
      data: { connected_account_id: account.id, status: 'DELETED' },
    });
    expect(() => new Webhook(secret).verify(deleted.body, deleted.headers)).toThrow();
  });

  it('fits a phone: no sideways scrolling on the list, the webhook and its secret', async () => {
    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(url('/dashboard/webhooks'));
    await noSidewaysScroll(phone, 'list');
    await shot(phone, 'phone-webhooks-01-list');
    await phone.goto(url(webhookPath));
    await noSidewaysScroll(phone, 'webhook');
    // The delivery log's cells stack under their column's name; the button is still there.
    expect(await phone.locator('tr[data-event-type] button', { hasText: 'Send again' }).first().isVisible()).toBe(true);
    await shot(phone, 'phone-webhooks-02-webhook');
    await phone.getByRole('link', { name: 'Rotate secret' }).click();
    await phone.getByRole('button', { name: 'Rotate the secret' }).click();
    await phone.waitForSelector('#webhook-secret');
    await noSidewaysScroll(phone, 'secret');
    await shot(phone, 'phone-webhooks-03-secret');
    // Between a phone and a wide screen the header stays one line: the links fit, or the menu button replaces them.
    for (const width of [900, 1000, 1060, 1280]) {
      await phone.setViewportSize({ width, height: 800 });
      await phone.goto(url('/dashboard/webhooks'));
      await noSidewaysScroll(phone, `header at ${width}px`);
      expect(
        await phone.locator('header.top').evaluate((e) => e.getBoundingClientRect().height),
        `${width}px`,
      ).toBeLessThan(64);
    }
    await phone.close();
  });

  it('deletes the webhook', async () => {
    await page.goto(url(webhookPath));
    await page.getByRole('link', { name: 'Delete' }).click();
    expect(await page.locator('h1').textContent()).toBe('Delete the webhook?');
    await page.getByRole('button', { name: 'Delete the webhook' }).click();
    await page.waitForURL('**/dashboard/webhooks?done=webhook-deleted');
    expect(await page.locator('.notice').textContent()).toContain('Webhook deleted');
    expect(await page.locator('tr[data-webhook-id]').count()).toBe(0);
    const gone = await page.goto(url(webhookPath));
    expect(gone!.status()).toBe(404);
    await shot(page, 'webhooks-04-deleted');
  });
});
