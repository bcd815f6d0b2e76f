/**
 * The `drive_file_changed` polling trigger end to end (issue 41): the real service follows the fake Drive's changes
 * feed (changes.getStartPageToken when the instance is made, then changes.list with the page token, paging with
 * nextPageToken and resuming at newStartPageToken), while the test creates, renames, trashes and removes files.
 * Each change reaches a Standard Webhooks receiver once, verified with the `standardwebhooks` library; changes made
 * before the instance are not sent; removals only when the instance asks for them. The fake refuses any page token
 * it did not issue, so a service that lost or invented its cursor fails here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookReceiver } from '../helpers/webhook-receiver.ts';
import { FakeDrive } from '../fakes/google-drive.ts';
import { authorizeCapturing } from '../fakes/google-setup.ts';
import { oauthConnection, startHarness, type Harness } from '../helpers/harness.ts';

const who = { connection_name: 'drive', identifier: 'user-1' };
const TYPE = 'trigger.drive_file_changed';

interface Change {
  fileId: string;
  time: string;
  removed?: boolean;
  changeType?: string;
  file?: { id?: string; name?: string; trashed?: boolean; mimeType?: string };
}
interface Received {
  id: string;
  type: string;
  data: { trigger_instance_id?: string; item_id?: string; item?: Change };
}

let h: Harness;
let drive: FakeDrive;
let receiver: { url: string; close(): void };
let secret: string;
const received: Received[] = [];
const refused: string[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: () => Promise<T | undefined> | T | undefined): Promise<T> {
  for (;;) {
    const v = await what();
    if (v !== undefined) return v;
    await sleep(25);
  }
}

/** The changes.list requests, of every instance or of those with includeRemoved false or true. */
const changeLists = (includeRemoved?: boolean) =>
  drive.requests.filter(
    (r) =>
      r.path === '/drive/v3/changes' &&
      (includeRemoved === undefined || r.query.includeRemoved === String(includeRemoved)),
  );
const startTokens = () => drive.requests.filter((r) => r.path === '/drive/v3/changes/startPageToken');
const itemEvents = (instance: string) =>
  received.filter((r) => r.type === TYPE && r.data.trigger_instance_id === instance);
/** Waits for `n` more polls of the first instance (its changes.list requests: includeRemoved false). */
async function polls(n: number): Promise<void> {
  const before = changeLists(false).length;
  await until(() => (changeLists(false).length >= before + n ? true : undefined));
}

beforeAll(async () => {
  receiver = await startWebhookReceiver({ received, refused, secret: () => secret });
  h = await startHarness({
    oauth: { rotateRefreshTokens: false },
    env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', WEBHOOK_RETRY_BASE_MS: '40', TRIGGER_MIN_INTERVAL_SECONDS: '1' },
  });
  drive = await new FakeDrive(h.oauth).start();
  await oauthConnection(h, who.connection_name, 'drive', drive.url);
  await authorizeCapturing(h, who.connection_name, who.identifier);
  const hook = await h.client.createWebhook({
    url: receiver.url,
    events: [TYPE],
  });
  secret = hook.secret;
});
afterAll(async () => {
  await h?.close();
  await drive?.close();
  receiver?.close();
});

describe('drive_file_changed: the changes feed', () => {
  let instance: string;
  let withRemovals: string;
  const made: Array<{ fileId: string; time: string }> = [];
  let removedId: string;

  it('takes the start page token when the instance is made; changes before it are not sent', async () => {
    drive.addFile({ name: 'Before the instance.txt', mimeType: 'text/plain', content: 'old' });
    const old = drive.addFile({ name: 'Changed before.txt', mimeType: 'text/plain', content: 'old' });
    drive.updateFile(old.id, { name: 'Renamed before.txt' });
    const tokenBefore = drive.startPageToken;
    const created = await h.client.createTrigger({ trigger: 'drive_file_changed', ...who, interval_seconds: 1 });
    instance = created.id;
    expect(created.status).toBe('active');
    // One getStartPageToken, with what the YAML sends; no list yet.
    expect(startTokens().map((r) => r.query)).toEqual([{ supportsAllDrives: 'true' }]);
    expect(startTokens()[0]!.headers.authorization).toMatch(/^Bearer /);
    expect(changeLists()).toHaveLength(0);
    await polls(1);
    // The first list starts exactly at the token the fake gave at creation, with the declared parameters.
    expect(changeLists()[0]!.query).toEqual({
      pageToken: tokenBefore,
      includeRemoved: 'false',
      supportsAllDrives: 'true',
      includeItemsFromAllDrives: 'true',
      pageSize: '100',
      fields:
        'nextPageToken,newStartPageToken,changes(changeType,time,removed,fileId,file(id,name,mimeType,modifiedTime,trashed,webViewLink))',
    });
    withRemovals = (
      await h.client.createTrigger({
        trigger: 'drive_file_changed',
        ...who,
        config: { include_removed: true },
        interval_seconds: 1,
      })
    ).id;
  });

  it('sends each change made while the service runs once, in the feed’s order', async () => {
    for (let i = 0; i < 4; i++) {
      drive.addFile({ name: `New ${i}.txt`, mimeType: 'text/plain', content: `file ${i}` });
      await polls(1);
    }
    const renamed = drive.files.get(drive.changes.at(-1)!.fileId)!;
    drive.updateFile(renamed.id, { name: 'New 3, renamed.txt' });
    drive.updateFile(renamed.id, { trashed: true });
    const gone = drive.addFile({ name: 'Short-lived.txt', mimeType: 'text/plain', content: 'x' });
    await polls(1);
    drive.removeFile(gone.id);
    removedId = gone.id;
    // A burst larger than a page (pageSize 100): one poll follows nextPageToken to the end.
    for (let i = 0; i < 130; i++) drive.addFile({ name: `Burst ${i}.txt`, mimeType: 'text/plain', content: `${i}` });
    for (const c of drive.changes.slice(3)) if (!c.removed) made.push({ fileId: c.fileId, time: c.time });

    await until(() => (itemEvents(instance).length >= made.length ? true : undefined));
    await polls(3);
    const events = itemEvents(instance);
    // Every change after the start token, once, in order; the removal not (include_removed is false).
    expect(events.map((e) => [e.data.item!.fileId, e.data.item!.time])).toEqual(made.map((m) => [m.fileId, m.time]));
    expect(new Set(events.map((e) => e.id)).size).toBe(made.length);
    expect(refused).toEqual([]);
    // Each change carries the file as Drive has it when listed: created, then renamed and trashed (one poll saw both).
    const ofRenamed = events.filter((e) => e.data.item!.fileId === renamed.id).map((e) => e.data.item!);
    expect(ofRenamed.map((c) => [c.changeType, c.file?.name, c.file?.trashed])).toEqual([
      ['file', 'New 3.txt', false],
      ['file', 'New 3, renamed.txt', true],
      ['file', 'New 3, renamed.txt', true],
    ]);
    expect((await h.client.getTrigger(instance)).events_sent).toBe(made.length);
  });

  it('follows the tokens the fake gave: nextPageToken within a poll, newStartPageToken between polls', async () => {
    // The fake answers 400 to a token it did not issue; no poll failed.
    expect((await h.client.getTrigger(instance)).last_error).toBeNull();
    const tokens = changeLists(false).map((r) => r.query.pageToken!);
    expect(tokens.filter((t) => !drive.issuedTokens.has(t))).toEqual([]);
    expect(drive.issuedTokens.get(tokens[0]!)).toBe('startPageToken');
    // The burst took a second page within one poll: a token the fake gave only as a nextPageToken.
    expect(tokens.map((t) => drive.issuedTokens.get(t))).toContain('nextPageToken');
    // Never backwards: the cursor only moves on; at rest it is the feed's current start token.
    for (let i = 1; i < tokens.length; i++) expect(Number(tokens[i])).toBeGreaterThanOrEqual(Number(tokens[i - 1]));
    expect(tokens.at(-1)).toBe(drive.startPageToken);
  });

  it('an instance with include_removed gets the removal, without a file', async () => {
    await until(() => itemEvents(withRemovals).find((e) => e.data.item?.fileId === removedId && e.data.item.removed));
    const events = itemEvents(withRemovals);
    const removal = events.find((e) => e.data.item!.removed)!;
    expect(removal.data.item!.fileId).toBe(removedId);
    expect(removal.data.item!.file).toBeUndefined();
    expect(changeLists().some((r) => r.query.includeRemoved === 'true')).toBe(true);
    // It was made after the first instance's first poll: the changes before it are not its events.
    const after = made.map((m) => `${m.fileId}\u001f${m.time}`);
    expect(events.filter((e) => !e.data.item!.removed).map((e) => e.data.item_id)).toEqual(after);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
  });

  it('a token the provider no longer knows is an error on the instance, not a silent restart', async () => {
    // Drive answers 400 to a page token it does not know: the poll fails and keeps its cursor.
    await h.client.pauseTrigger(withRemovals);
    const before = changeLists(false).length;
    const cursor = drive.startPageToken;
    drive.issuedTokens.clear();
    await until(async () => ((await h.client.getTrigger(instance)).last_error ? true : undefined));
    const view = await h.client.getTrigger(instance);
    expect(view.last_error).toMatch(/HTTP 400.*Invalid Value/);
    expect(view.events_sent).toBe(made.length);
    // The failed poll asked with the cursor it had; no new start token was taken behind the instance's back.
    const asked = changeLists(false)
      .slice(before)
      .map((r) => r.query.pageToken);
    expect(asked.length).toBeGreaterThan(0);
    expect(new Set(asked)).toEqual(new Set([cursor]));
    expect(startTokens()).toHaveLength(2);
  });
});
