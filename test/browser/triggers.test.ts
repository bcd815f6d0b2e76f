/**
 * The dashboard's triggers page in a real browser (Debian's headless Chromium, playwright-core) with JavaScript
 * turned off, so the forms work as plain HTML: a polling instance on the fake Gong is paused (it stops polling),
 * resumed (it polls again and sends the call added meanwhile) and deleted after a confirmation page; a form without
 * its CSRF token is refused and changes nothing. Screenshots go to test-output/screenshots/ (triggers-*.png).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { FakeGong, U_REP, WS_SALES } from '../fakes/gong.ts';
import { startHarness, type Harness } from '../helpers/harness.ts';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = join(process.cwd(), 'test-output', 'screenshots');
const ADMIN_PASSWORD = 'browser-admin-password-triggers';
const KEY = 'QWERTY1234567890';
const SECRET = 'gong-secret-browser-trigger-9a8b';
const who = { connection_name: 'callintel-key', identifier: 'acme' };

let h: Harness;
let gong: FakeGong;
let context: BrowserContext;
let page: Page;
let userDataDir: string;
let receiver: http.Server;
const delivered: string[] = [];
let instance: string;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (;;) {
    const v = await what();
    if (v !== undefined) return v;
    await sleep(50);
  }
}
const listCalls = () => gong.requests.filter((r) => r.path === '/v2/calls').length;

let seq = 0;
function addCall(title: string): string {
  const id = `66${String(Date.now()).slice(-9)}${String(seq++).padStart(4, '0')}`;
  gong.calls.set(id, {
    id,
    workspaceId: WS_SALES,
    title,
    started: new Date(Date.now() + 1000).toISOString(),
    duration: 300,
    direction: 'Inbound',
    primaryUserId: U_REP,
    parties: [],
    topics: [],
    trackers: [],
    transcript: [],
  });
  return id;
}

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
      const event = JSON.parse(body) as { data: { item_id?: string } };
      if (event.data.item_id) delivered.push(event.data.item_id);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  gong = await new FakeGong({ accessKey: KEY, accessKeySecret: SECRET }).start();
  h = await startHarness({
    env: { ADMIN_PASSWORD, WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', TRIGGER_MIN_INTERVAL_SECONDS: '1' },
  });
  await h.client.createConnection({
    connection_name: who.connection_name,
    connector: 'callintel',
    auth_kind: 'api_key',
    api_base_url: gong.url,
  });
  await h.client.upsertConnectedAccount({
    connectionName: who.connection_name,
    identifier: who.identifier,
    credentials: { access_key: KEY, access_key_secret: SECRET },
  });
  await h.client.createWebhook({
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
    events: ['trigger.callintel_call_created'],
  });
  instance = (await h.client.createTrigger({ trigger: 'callintel_call_created', ...who, interval_seconds: 1 })).id;
  userDataDir = mkdtempSync(join(tmpdir(), 'acs-chromium-triggers-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    // No script at all: the buttons are forms.
    javaScriptEnabled: false,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
    viewport: { width: 1280, height: 860 },
  });
  page = context.pages()[0] ?? (await context.newPage());
});

afterAll(async () => {
  await context?.close();
  await h?.close();
  await gong?.close();
  receiver?.closeAllConnections();
  receiver?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

const url = (path: string) => `${h.url}${path}`;
const shot = (name: string) => page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
const row = () => page.locator(`tr[data-trigger-id="${instance}"]`);

describe('trigger instances in the dashboard', () => {
  it('lists the instance as active, with a Pause button and a Delete link', async () => {
    await page.goto(url('/dashboard/triggers'));
    await page.fill('#password', ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL('**/dashboard/triggers');
    expect(await page.locator('h1').textContent()).toBe('Triggers');
    await until(() => listCalls() > 1 || undefined);
    await page.reload();
    expect(await row().locator('.badge').textContent()).toBe('active');
    expect(
      await row()
        .getByRole('button', { name: `Pause ${instance}` })
        .count(),
    ).toBe(1);
    expect(
      await row()
        .getByRole('button', { name: `Resume ${instance}` })
        .count(),
    ).toBe(0);
    await shot('triggers-01-active');
  });

  it('pauses the instance: it stops polling', async () => {
    await row()
      .getByRole('button', { name: `Pause ${instance}` })
      .click();
    await page.waitForURL('**/dashboard/triggers');
    expect(await row().locator('.badge').textContent()).toBe('paused');
    expect(
      await row()
        .getByRole('button', { name: `Resume ${instance}` })
        .count(),
    ).toBe(1);
    expect((await h.client.getTrigger(instance)).status).toBe('paused');
    // A poll already leased may finish; after it, none.
    await sleep(1_500);
    const polls = listCalls();
    const meanwhile = addCall('While paused from the dashboard');
    await sleep(2_500);
    expect(listCalls()).toBe(polls);
    expect(delivered).not.toContain(meanwhile);
    // The paused filter shows it, and keeps the filter after a form.
    await page.goto(url('/dashboard/triggers?status=paused'));
    expect(await row().count()).toBe(1);
    await shot('triggers-02-paused');
  });

  it('resumes the instance from the filtered list: it polls again and sends what came meanwhile', async () => {
    const polls = listCalls();
    await row()
      .getByRole('button', { name: `Resume ${instance}` })
      .click();
    await page.waitForURL('**/dashboard/triggers?status=paused');
    // Back on the paused list, which no longer holds it.
    expect(await row().count()).toBe(0);
    expect((await h.client.getTrigger(instance)).status).toBe('active');
    await until(() => (listCalls() > polls ? true : undefined));
    await until(() => (delivered.length ? true : undefined));
    expect(delivered).toEqual([[...gong.calls.keys()].at(-1)]);
    await page.goto(url('/dashboard/triggers'));
    expect(await row().locator('.badge').textContent()).toBe('active');
    expect(await row().locator('td[data-label="Events"]').textContent()).toBe('1');
  });

  it('refuses a pause without the CSRF token, changing nothing', async () => {
    const res = await page.request.post(url(`/dashboard/triggers/${instance}/pause`), {
      form: { back: '' },
      maxRedirects: 0,
    });
    expect(res.status()).toBe(403);
    expect((await h.client.getTrigger(instance)).status).toBe('active');
  });

  it('deletes the instance after a confirmation page', async () => {
    await row()
      .getByRole('link', { name: `Delete ${instance}` })
      .click();
    await page.waitForURL(`**/dashboard/triggers/${instance}/delete`);
    expect(await page.locator('h1').textContent()).toBe('Delete the trigger instance?');
    expect(await page.locator('main').textContent()).toContain('callintel_call_created for acme');
    await shot('triggers-03-delete');
    await page.getByRole('button', { name: 'Delete the trigger instance' }).click();
    await page.waitForURL('**/dashboard/triggers');
    expect(await row().count()).toBe(0);
    await expect(h.client.getTrigger(instance)).rejects.toMatchObject({ status: 404 });
    // An unknown instance: an error page, not a crash.
    const res = await page.goto(url(`/dashboard/triggers/${instance}/delete`));
    expect(res?.status()).toBe(404);
  });
});
