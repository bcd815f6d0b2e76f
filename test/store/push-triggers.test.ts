/**
 * Push triggers in the store (issue 41, migration 016), on SQLite and on a real PostgreSQL: a connection's ingress
 * token is made once (a second candidate does not replace it) and finds its connection; app-webhook routing finds
 * a connection's push instances by route key, and no other connection's; a connection's or an account's push
 * instances are listed for unregistration; the token goes with its connection; the per-instance secret column has
 * its associated data for key rotation.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { aadForCell } from '../../runtime/crypto/aad.ts';
import { SqliteStore } from '../../runtime/store/sqlite.ts';
import { PostgresStore } from '../../runtime/store/postgres.ts';
import type { Store, TriggerInstance } from '../../runtime/store/types.ts';
import { pendingAccount } from '../../runtime/store/types.ts';
import { newId } from '../../runtime/ids.ts';
import { PG_URL } from '../helpers/harness.ts';

const dir = mkdtempSync(join(tmpdir(), 'acs-push-store-'));
const schema = `push_${Date.now().toString(36)}`;
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  const pg = new PostgresStore(PG_URL);
  await pg.pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await pg.close();
});

function pushInstance(connectionId: string, accountId: string, trigger = 'crm_contact_created'): TriggerInstance {
  const now = Date.now();
  return {
    id: newId('trg'),
    trigger,
    connector: 'crm',
    kind: 'push',
    connectionId,
    accountId,
    config: {},
    status: 'active',
    intervalMs: 60_000,
    state: {},
    secretSealed: null,
    nextRunAt: null,
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

async function connection(store: Store): Promise<string> {
  const id = newId('conn');
  const now = Date.now();
  await store.createConnection({
    id,
    name: `hubspot-${id}`,
    connector: 'crm',
    authKind: 'oauth2',
    clientId: 'app',
    clientSecretSealed: null,
    scopes: [],
    apiBaseUrl: null,
    apiHosts: {},
    oauth: {},
    registrationSealed: null,
    createdAt: now,
    updatedAt: now,
  });
  return id;
}

describe.each([
  ['sqlite', () => new SqliteStore(join(dir, 'push.sqlite'))],
  ['postgres', () => new PostgresStore(PG_URL, schema)],
] as Array<[string, () => Store]>)('push triggers on %s', (_kind, open) => {
  it('ingress tokens, routing and the instances to unregister', async () => {
    const store = open();
    await store.migrate();
    const c1 = await connection(store);
    const c2 = await connection(store);
    const now = Date.now();
    const [a1, a2, b1] = [newId('ca'), newId('ca'), newId('ca')];
    await store.insertAccounts([
      pendingAccount(a1, c1, 'portal-a', now),
      pendingAccount(a2, c1, 'portal-b', now),
      pendingAccount(b1, c2, 'portal-a', now),
    ]);

    const token = await store.triggerIngressToken(c1, 'token-one', now);
    expect(token).toBe('token-one');
    expect(await store.triggerIngressToken(c1, 'token-two', now)).toBe('token-one');
    expect(await store.triggerIngressToken(c2, 'token-three', now)).toBe('token-three');
    expect(await store.triggerIngressConnection('token-one')).toBe(c1);
    expect(await store.triggerIngressConnection('token-two')).toBeUndefined();

    const contacts = pushInstance(c1, a1);
    const deals = pushInstance(c1, a1, 'crm_deal_updated');
    const otherPortal = pushInstance(c1, a2);
    const otherConnection = pushInstance(c2, b1);
    for (const t of [contacts, deals, otherPortal, otherConnection]) await store.createTriggerInstance(t);
    await store.setTriggerRouteKey(contacts.id, '111');
    await store.setTriggerRouteKey(deals.id, '111');
    await store.setTriggerRouteKey(otherPortal.id, '222');
    await store.setTriggerRouteKey(otherConnection.id, '111');
    expect((await store.triggerInstancesByRoute(c1, '111', 10)).map((t) => t.id).sort()).toEqual(
      [contacts.id, deals.id].sort(),
    );
    expect((await store.triggerInstancesByRoute(c1, '111', 1)).length).toBe(1);
    expect((await store.triggerInstancesByRoute(c1, '333', 10)).length).toBe(0);
    expect((await store.triggerInstancesByRoute(c2, '111', 10)).map((t) => t.id)).toEqual([otherConnection.id]);

    expect((await store.pushTriggerInstances({ accountId: a1 }, 10)).map((t) => t.id).sort()).toEqual(
      [contacts.id, deals.id].sort(),
    );
    expect((await store.pushTriggerInstances({ connectionId: c1 }, 10)).length).toBe(3);

    // The token goes with its connection (and the instances with it).
    await store.deleteConnection(c2);
    expect(await store.triggerIngressConnection('token-three')).toBeUndefined();
    expect(await store.getTriggerInstance(otherConnection.id)).toBeUndefined();
    await store.close();
  });

  it('the sealed per-instance secret has its associated data', () => {
    expect(aadForCell({ table: 'trigger_instances', column: 'secret_sealed', id: 'trg_1' })).toBe(
      'trigger_instance:trg_1:secret',
    );
  });
});
