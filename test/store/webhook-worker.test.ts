/**
 * The webhook worker's rounds under trigger load (issue 41), on SQLite and on a real PostgreSQL, against a real
 * HTTP receiver, counted in rounds and store calls (no clock):
 *   - one round delivers a whole burst of one trigger instance (events in order by ordering key): the next event
 *     is claimable as soon as the one before it succeeded, so the round claims again instead of leaving it to the
 *     next timer round (the burst used to go out one event a second);
 *   - an outbox refilled as fast as the worker moves it (pollers writing events under load) does not keep every
 *     delivery waiting: deliveries are claimed between bounded fan-out passes (under the bench's load, 21 of 50,000
 *     events were delivered).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import type { Store, WebhookEvent } from '../../runtime/store/types.ts';
import { loadConfig } from '../../runtime/config.ts';
import { createLogger } from '../../runtime/log.ts';
import { Metrics } from '../../runtime/metrics.ts';
import { CacheSet } from '../../runtime/caches.ts';
import { aad } from '../../runtime/crypto/aad.ts';
import { newId } from '../../runtime/ids.ts';
import { FAN_OUT_BATCHES_PER_PASS, WebhookWorker } from '../../runtime/webhooks/worker.ts';
import { PG_URL, serviceEnv } from '../helpers/harness.ts';
import { testKeys } from '../helpers/scale.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-wh-worker-'));
const schema = `whw_${Date.now().toString(36)}`;
const received: string[] = [];
let receiver: http.Server;
let receiverUrl: string;

beforeAll(async () => {
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received.push(String(req.headers['webhook-id']));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/in`;
});
afterAll(async () => {
  receiver?.closeAllConnections();
  receiver?.close();
  rmSync(dir, { recursive: true, force: true });
  const pg = new PostgresStore(PG_URL, schema);
  await pg.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pg.close();
});

describe.each([
  ['sqlite', () => new SqliteStore(join(dir, 'w.sqlite'))],
  ['postgres', () => new PostgresStore(PG_URL, schema)],
] as Array<[string, () => Store]>)('the webhook worker on %s', (kind, open) => {
  let store: Store;
  let worker: WebhookWorker;
  /** Rounds run by `round()` below: each is one poke, awaited to its end. */
  let claims = 0;
  const { sealer } = testKeys();
  const type = 'trigger.callintel_call_created';
  let n = 0;
  const event = (orderingKey: string): WebhookEvent => {
    const i = n++;
    return {
      id: `msg_${kind}_${i}`,
      type,
      payload: JSON.stringify({ type, data: { i } }),
      createdAt: 1_000_000 + i,
      orderingKey,
    };
  };
  /** One round of the worker, run to its end (the worker's timer is never started). */
  const round = async () => {
    worker.poke();
    await (worker as unknown as { running: Promise<void> | undefined }).running;
  };

  it('sets up a store, an endpoint and a worker', async () => {
    store = open();
    await store.migrate();
    const now = Date.now();
    const id = newId('wh');
    await store.createWebhookEndpoint({
      id,
      url: receiverUrl,
      events: [type],
      secretSealed: sealer.seal('whsec_' + Buffer.alloc(24, 7).toString('base64'), aad.webhookSecret(id)),
      createdAt: now,
      updatedAt: now,
    });
    const config = loadConfig({ ...serviceEnv(dir), WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' });
    worker = new WebhookWorker(store, sealer, config, createLogger('silent'), new Metrics(store, new CacheSet()));
    const claim = store.claimWebhookDeliveries.bind(store);
    store.claimWebhookDeliveries = (...a) => {
      claims++;
      return claim(...a);
    };
  });

  it('delivers a burst of one instance, in order, in one round', async () => {
    received.length = 0;
    const burst = Array.from({ length: 45 }, () => event('trg_burst'));
    await store.addWebhookEvents(burst);
    await round();
    expect(received).toEqual(burst.map((e) => e.id));
  });

  it('moves the outbox in smaller batches after one that took longer than its budget', async () => {
    received.length = 0;
    // A budget of 0: every batch is over it, so the sizes the worker asks for are counted, not timed.
    worker.batchBudgetMs = 0;
    const limits: number[] = [];
    const fanOut = store.fanOutWebhookEvents.bind(store);
    store.fanOutWebhookEvents = (limit, now) => {
      limits.push(limit);
      return fanOut(limit, now);
    };
    const events = Array.from({ length: 230 }, (_, i) => event(`trg_budget_${i}`));
    await store.addWebhookEvents(events);
    await round();
    store.fanOutWebhookEvents = fanOut;
    worker.batchBudgetMs = Infinity;
    // 200 moved, then batches of 10 until the outbox is empty (the fourth finds nothing).
    expect(limits.slice(0, 5)).toEqual([200, 10, 10, 10, 10]);
    expect(new Set(received)).toEqual(new Set(events.map((e) => e.id)));
  });

  it('claims deliveries while the outbox is refilled as fast as it is moved', async () => {
    received.length = 0;
    claims = 0;
    // A producer that writes a full fan-out batch (200 events of 200 instances) each time the worker moves one,
    // for 2 passes' worth of batches, then stops the worker: before the fix the round only moved batches meanwhile.
    const batches = FAN_OUT_BATCHES_PER_PASS * 2;
    const fanOut = store.fanOutWebhookEvents.bind(store);
    let produced = 0;
    let deliveredWhileProducing = 0;
    const produce = () => store.addWebhookEvents(Array.from({ length: 200 }, (_, i) => event(`trg_${i}`)));
    await produce();
    store.fanOutWebhookEvents = async (limit, now) => {
      const moved = await fanOut(limit, now);
      if (produced < batches) {
        produced++;
        deliveredWhileProducing = received.length;
        await produce();
        if (produced === batches) void worker.stop();
      }
      return moved;
    };
    await round();
    store.fanOutWebhookEvents = fanOut;
    expect(produced).toBe(batches);
    // Deliveries went out between the passes, not only after the producer stopped.
    expect(deliveredWhileProducing).toBeGreaterThan(0);
    // One claim after each pass of FAN_OUT_BATCHES_PER_PASS batches.
    expect(claims).toBe(batches / FAN_OUT_BATCHES_PER_PASS);
    await store.close();
  });
});
