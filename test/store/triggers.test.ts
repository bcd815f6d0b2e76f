/**
 * Trigger instances in the store (issue 41), on SQLite and on a real PostgreSQL: due instances are leased soonest
 * first and never to two claimers at once (two PostgreSQL stores claiming together share them without overlap:
 * SKIP LOCKED); a lease holder's write lands, a lost lease's does not; the outbox keeps one row per item id and
 * hands an instance's events to an endpoint in order; instances go with their account.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import type { Store, TriggerInstance } from '../../runtime/store/types.ts';
import { pendingAccount } from '../../runtime/store/types.ts';
import { newId } from '../../runtime/ids.ts';
import { PG_URL } from '../helpers/harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-trg-store-'));
const schema = `trg_${Date.now().toString(36)}`;
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  const pg = new PostgresStore(PG_URL);
  await pg.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pg.close();
});

function instance(
  connectionId: string,
  accountId: string,
  nextRunAt: number,
  connector = 'callintel',
): TriggerInstance {
  const now = Date.now();
  return {
    id: newId('trg'),
    trigger: `${connector}_call_created`,
    connector,
    kind: 'polling',
    connectionId,
    accountId,
    config: {},
    status: 'active',
    intervalMs: 60_000,
    state: { seen: [] },
    secretSealed: null,
    nextRunAt,
    leaseOwner: null,
    leaseUntil: null,
    failures: 0,
    eventsSent: 0,
    lastEventAt: null,
    lastPollAt: null,
    lastError: null,
    lastErrorAt: null,
    createdAt: now,
    updatedAt: now,
  };
}

describe.each([
  // SQLite has one writer: the service runs one process on it, so the second claimer is the same store.
  ['sqlite', () => new SqliteStore(join(dir, 'a.sqlite')), (s: Store) => s],
  ['postgres', () => new PostgresStore(PG_URL, schema), () => new PostgresStore(PG_URL, schema)],
] as Array<[string, () => Store, (s: Store) => Store]>)('trigger instances on %s', (_kind, open, openOther) => {
  let store: Store;
  let other: Store;
  let connectionId: string;
  let accountId: string;

  it('migrates, and two claimers never lease the same instance', async () => {
    store = open();
    await store.migrate();
    other = openOther(store);
    if (other !== store) await other.migrate();
    const now = Date.now();
    connectionId = newId('conn');
    await store.createConnection({
      id: connectionId,
      name: `gong-${connectionId}`,
      connector: 'callintel',
      authKind: 'api_key',
      clientId: null,
      clientSecretSealed: null,
      scopes: [],
      apiBaseUrl: null,
      apiHosts: {},
      oauth: {},
      registrationSealed: null,
      createdAt: now,
      updatedAt: now,
    });
    accountId = newId('ca');
    await store.insertAccounts([pendingAccount(accountId, connectionId, 'acme', now)]);
    const due = Array.from({ length: 40 }, (_, i) => instance(connectionId, accountId, now - 1000 + i));
    for (const t of due) await store.createTriggerInstance(t);
    await store.createTriggerInstance(instance(connectionId, accountId, now + 3_600_000));
    await store.createTriggerInstance(instance(connectionId, accountId, now - 5000, 'drive'));

    const [a, b] = await Promise.all([
      store.claimDueTriggerInstances(now, 'owner-a', now + 60_000, 25, ['drive']),
      other.claimDueTriggerInstances(now, 'owner-b', now + 60_000, 25, ['drive']),
    ]);
    const ids = [...a, ...b].map((t) => t.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.sort()).toEqual(due.map((t) => t.id).sort());
    expect(a.every((t) => t.leaseOwner === 'owner-a')).toBe(true);
    // Nothing due is left but the skipped provider's, and leased ones are not claimed again.
    expect(await store.claimDueTriggerInstances(now, 'owner-c', now + 60_000, 100, ['drive'])).toEqual([]);
    expect((await store.claimDueTriggerInstances(now, 'owner-c', now + 60_000, 100)).map((t) => t.connector)).toEqual([
      'drive',
    ]);
    // An expired lease is free again.
    const later = now + 61_000;
    expect((await store.claimDueTriggerInstances(later, 'owner-d', later + 1000, 100)).length).toBe(41);
  });

  it('writes only under the lease it holds', async () => {
    const [t] = await store.listTriggerInstances({ connectionId, limit: 1 });
    expect(t!.leaseOwner).toBe('owner-d');
    expect(await store.updateTriggerInstance(t!.id, { state: { cursor: 'x' } }, Date.now(), 'owner-a')).toBeUndefined();
    const done = await store.updateTriggerInstance(
      t!.id,
      { state: { cursor: 'y' }, eventsSentDelta: 2 },
      Date.now(),
      'owner-d',
    );
    expect(done).toMatchObject({ state: { cursor: 'y' }, leaseOwner: null, eventsSent: 2 });
  });

  it('keeps one outbox row per item id, and delivers an instance’s events in order', async () => {
    const now = Date.now();
    await store.createWebhookEndpoint({
      id: newId('wh'),
      url: 'http://127.0.0.1:9/x',
      events: ['trigger.callintel_call_created'],
      secretSealed: 'sealed',
      createdAt: now,
      updatedAt: now,
    });
    const ev = (n: number) => ({
      id: `msg_item_${_kind}_${n}`,
      type: 'trigger.callintel_call_created',
      payload: JSON.stringify({ n }),
      createdAt: now + n,
      orderingKey: 'trg_one',
    });
    await store.addWebhookEvents([ev(0), ev(1), ev(2)]);
    await store.addWebhookEvents([ev(1), ev(2)]);
    expect(await store.fanOutWebhookEvents(100, now + 10)).toBe(3);
    // One at a time: the next waits until the one before it is no longer pending.
    const first = await store.claimWebhookDeliveries(now + 10, 30_000, 10);
    expect(first.map((d) => d.eventId)).toEqual([ev(0).id]);
    // Its lease over, the first is due again; the second still waits behind it.
    const again = await store.claimWebhookDeliveries(now + 40_000, 30_000, 10);
    expect(again.map((d) => d.eventId)).toEqual([ev(0).id]);
    await store.finishWebhookAttempt(
      again[0]!.id,
      { status: 'succeeded', nextAttemptAt: null, lastStatus: 204, lastError: null, lastLatencyMs: 1 },
      now + 11,
    );
    expect((await store.claimWebhookDeliveries(now + 40_001, 30_000, 10)).map((d) => d.eventId)).toEqual([ev(1).id]);
  });

  it('removes instances with their account', async () => {
    expect(await store.deleteAccount(accountId)).toBe(true);
    expect(await store.listTriggerInstances({ connectionId, limit: 100 })).toEqual([]);
    if (other !== store) await other.close();
    await store.close();
  });
});
