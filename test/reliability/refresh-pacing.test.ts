/**
 * A provider revoking grants in bulk (issue 35: N OAuth accounts found expired): once most of a connection's
 * recent refreshes were refused, its refreshes run REFRESH_PACED_CONCURRENCY at a time, so that a burst of them
 * cannot hold every other request on the event loop, while every account still gets its one refresh and ends
 * EXPIRED, and another connection's refreshes are not held. The fake token endpoint holds each refresh until the
 * test lets it be answered: what is in flight is counted, not timed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceToken, startHarness, type Harness } from '../helpers/harness.ts';
import { oauthConnection, seedAccounts } from '../helpers/scale.ts';

let h: Harness;
let token: string;

beforeAll(async () => {
  h = await startHarness({ env: { REFRESH_PACED_CONCURRENCY: '4', REFRESH_PACED_QUEUE: '256' } });
  token = await serviceToken(h.url);
  h.oauth.addClient({ client_id: 'scale-client', client_secret: 'scale-client-secret', auth: 'client_secret_post' });
});
afterAll(() => h.close());

/** Waits, a timer turn at a time, until `cond` holds (no time limit: the suite's own applies). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 2));
}

describe('refreshes on a connection whose grants the provider revoked', () => {
  it('run four at a time once most are refused; each account is tried once and ends EXPIRED', async () => {
    const { store, sealer, accounts } = h.running.services;
    const [revoking, other] = [
      oauthConnection('revoking', h.oauth.url, h.oauth.url, sealer),
      oauthConnection('other', h.oauth.url, h.oauth.url, sealer),
    ];
    for (const c of [revoking, other]) await store.createConnection(c);
    const ids = await seedAccounts(store, sealer, revoking.id, 56, { prefix: 'u-', expired: true });
    await seedAccounts(store, sealer, other.id, 1, { prefix: 'o-', expired: true });
    h.oauth.holdRefreshes = true;
    const answers: number[] = [];
    const call = (connection: string, identifier: string) =>
      fetch(`${h.url}/proxy/v2/users/me`, {
        headers: { authorization: `Bearer ${token}`, 'x-connection-name': connection, 'x-identifier': identifier },
      }).then(async (res) => {
        await res.arrayBuffer();
        answers.push(res.status);
        return res.status;
      });

    // The first 16 run at once: nothing is known against the connection yet.
    const first = Array.from({ length: 16 }, (_, i) => call('revoking', `u-${i}`));
    await until(() => h.oauth.heldRefreshes === 16);
    h.oauth.releaseRefreshes();
    expect(await Promise.all(first)).toEqual(Array(16).fill(403));
    expect(accounts.pacer.paced(revoking.id)).toBe(true);

    // The next 40: four reach the provider, 36 wait their turn.
    const rest = Array.from({ length: 40 }, (_, i) => call('revoking', `u-${16 + i}`));
    await until(() => accounts.pacer.load(revoking.id).waiting === 36);
    expect(accounts.pacer.load(revoking.id)).toEqual({ running: 4, waiting: 36 });
    expect(h.oauth.heldRefreshes).toBe(4);
    // Another connection's refresh is not held behind them.
    const beside = call('other', 'o-0');
    await until(() => h.oauth.heldRefreshes === 5);

    let peak = 0;
    while (answers.length < 57) {
      await until(() => h.oauth.heldRefreshes > 0 || answers.length === 57);
      peak = Math.max(peak, h.oauth.heldRefreshes);
      h.oauth.releaseRefreshes();
    }
    expect(await Promise.all(rest)).toEqual(Array(40).fill(403));
    expect(await beside).toBe(403);
    // At most the four of "revoking" and the one of "other" were at the provider at once.
    expect(peak).toBeLessThanOrEqual(5);
    expect(h.oauth.counts.refresh_token).toBe(57);
    const statuses = await Promise.all(ids.map(async (id) => (await store.getAccount(id))?.status));
    expect(statuses).toEqual(Array(56).fill('EXPIRED'));
    expect(accounts.pacer.counters).toEqual({ waited: 36, refused_queue_full: 0 });
    expect(accounts.pacer.load(revoking.id)).toEqual({ running: 0, waiting: 0 });
    const metrics = await (await fetch(`${h.url}/metrics`)).text();
    expect(metrics).toMatch(/^acs_token_refresh_pacing_total\{what="waited"\} 36$/m);
  });
});
