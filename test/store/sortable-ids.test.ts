/**
 * The keys of rows written in bulk sort by time (issue 35: the webhook fan-out at 1,000,000 events): an event's id,
 * a delivery's, an account's. A key of random characters puts each new row at a random place in its index, so a
 * batch of 200 deliveries touched about 200 pages of each such index, and each page went to the WAL at the COMMIT:
 * 14.5 ms of COMMIT a batch at 300,000 events, against 0.9 ms with keys that only grow (tmp experiment, same
 * machine). Counted here as the WAL frames (pages written) a fan-out of 20,000 events appends.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { accountEvent } from '../../runtime/webhooks/events.ts';
import { newId } from '../../runtime/ids.ts';
import type { Account, WebhookEvent } from '../../runtime/store/types.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-sortable-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const account = { id: 'ca_x', identifier: 'u', status: 'ACTIVE', lastError: null } as unknown as Account;
const connection = { name: 'c', connector: 'apify' };

/** WAL frames appended while the events are fanned out to one endpoint, 200 a batch; and a delivery's id. */
async function fanOut(events: WebhookEvent[]): Promise<{ frames: number; delivery: string }> {
  const store = new SqliteStore(join(dir, `${newId('s')}.sqlite`));
  try {
    await store.migrate();
    const raw = (store as unknown as { backend: { raw: Database.Database } }).backend.raw;
    await store.createWebhookEndpoint({
      id: 'whe_1',
      url: 'http://127.0.0.1:1/hooks',
      events: ['connected_account.deleted'],
      secretSealed: 'x',
      createdAt: 1,
      updatedAt: 1,
    });
    for (let i = 0; i < events.length; i += 500) await store.addWebhookEvents(events.slice(i, i + 500));
    // Nothing copied back meanwhile: the WAL keeps every page the fan-out writes.
    raw.pragma('wal_autocheckpoint = 0');
    raw.pragma('wal_checkpoint(TRUNCATE)');
    let moved = 0;
    for (let n = -1; n !== 0;) moved += n = await store.fanOutWebhookEvents(200, Date.now());
    expect(moved).toBe(events.length);
    const frames = (raw.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>)[0]!.log;
    return { frames, delivery: (await store.listWebhookDeliveries('whe_1', 1))[0]!.id };
  } finally {
    await store.close();
  }
}

describe('keys that sort by time', () => {
  it('are what an event and a delivery get, and keep a fan-out to a few pages a batch', async () => {
    const at = Date.now();
    const events = Array.from({ length: 20_000 }, (_, i) =>
      accountEvent('connected_account.deleted', account, connection, null, at + i),
    );
    expect(events.every((e) => /^msg_[0-9a-z]{25}$/.test(e.id))).toBe(true);
    // Their time part (after `msg_`) never goes back: within a millisecond only the random part differs.
    const times = events.map((e) => e.id.slice(4, 13));
    expect(times.every((t, i) => i === 0 || t >= times[i - 1]!)).toBe(true);
    expect(parseInt(times[0]!, 36)).toBeGreaterThanOrEqual(at - 60_000);
    const sorted = await fanOut(events);
    // A delivery's id starts with the time it was made (`whd_` and 9 base-36 digits of milliseconds).
    expect(Math.abs(parseInt(sorted.delivery.slice(4, 13), 36) - Date.now())).toBeLessThan(600_000);
    // The same events with random ids, as every id was before: 7,530 frames against 26,257 when this was written.
    const random = await fanOut(events.map((e) => ({ ...e, id: newId('msg') })));
    expect(sorted.frames).toBeLessThan(random.frames / 2);
  });
});
