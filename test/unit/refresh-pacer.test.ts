/**
 * The refresh bulkhead (runtime/accounts/refresh-pacer.ts): a connection is paced only once most of its recent
 * refreshes were refused or failed; then at most `concurrency` run, the rest wait in a bounded queue, in order;
 * a success ends it. Counted with refreshes that finish when the test says so: no timing.
 */
import { describe, expect, it } from 'vitest';
import { RefreshPacer } from '../../runtime/accounts/refresh-pacer.ts';
import { CacheSet } from '../../runtime/caches.ts';
import { UpstreamFailure } from '../../core/errors.ts';

/** A refresh the test finishes: `started` says whether it began running. */
function refresh() {
  let finish!: () => void;
  const done = new Promise<void>((r) => (finish = r));
  const r = { started: false, finish, run: () => ((r.started = true), done) };
  return r;
}

const turn = () => new Promise((r) => setImmediate(r));

function pacer(concurrency = 4, queue = 256, connections = 100) {
  return new RefreshPacer({ concurrency, queue }, new CacheSet(), connections);
}

function refuse(p: RefreshPacer, connection: string, n: number) {
  for (let i = 0; i < n; i++) p.record(connection, 'refused');
}

describe('RefreshPacer', () => {
  it('never paces a connection whose refreshes succeed, however many run at once', async () => {
    const p = pacer();
    for (let i = 0; i < 100; i++) p.record('c', 'success');
    const rs = Array.from({ length: 200 }, refresh);
    const all = rs.map((r) => p.run('c', r.run));
    await turn();
    expect(rs.every((r) => r.started)).toBe(true);
    expect(p.load('c')).toEqual({ running: 200, waiting: 0 });
    rs.forEach((r) => r.finish());
    await Promise.all(all);
    expect(p.counters.waited).toBe(0);
    expect(p.load('c')).toEqual({ running: 0, waiting: 0 });
  });

  it('needs 16 outcomes before a share of failures counts, and paces from there', () => {
    const p = pacer();
    refuse(p, 'c', 15);
    expect(p.paced('c')).toBe(false);
    refuse(p, 'c', 1);
    expect(p.paced('c')).toBe(true);
    // Failures (an endpoint that is down) count as refusals do.
    for (let i = 0; i < 16; i++) p.record('d', 'failed');
    expect(p.paced('d')).toBe(true);
    // A mostly healthy connection is not paced by a few refused grants among its successes.
    for (let i = 0; i < 64; i++) p.record('e', i % 3 === 0 ? 'refused' : 'success');
    expect(p.paced('e')).toBe(false);
  });

  it('runs at most `concurrency` refreshes of a paced connection, the others in arrival order', async () => {
    const p = pacer(4);
    refuse(p, 'c', 16);
    const rs = Array.from({ length: 40 }, refresh);
    const order: number[] = [];
    const all = rs.map((r, i) => p.run('c', () => (order.push(i), r.run())));
    await turn();
    expect(rs.filter((r) => r.started)).toHaveLength(4);
    expect(p.load('c')).toEqual({ running: 4, waiting: 36 });
    let peak = 0;
    for (let i = 0; i < 40; i++) {
      rs[i]!.finish();
      p.record('c', 'refused');
      await turn();
      peak = Math.max(peak, rs.filter((r, j) => r.started && j > i).length);
    }
    await Promise.all(all);
    expect(peak).toBeLessThanOrEqual(4);
    expect(order).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(p.counters.waited).toBe(36);
    // The gate is forgotten once nothing runs or waits on it.
    expect(p.load('c')).toEqual({ running: 0, waiting: 0 });
  });

  it('answers 503 refresh_paced to a refresh beyond the queue, and runs every one it took', async () => {
    const p = pacer(2, 8);
    refuse(p, 'c', 16);
    const rs = Array.from({ length: 20 }, refresh);
    const settled = rs.map((r) =>
      p.run('c', r.run).then(
        () => 'ran',
        (e: unknown) => e,
      ),
    );
    await turn();
    expect(p.load('c')).toEqual({ running: 2, waiting: 8 });
    rs.forEach((r) => r.finish());
    const outcomes = await Promise.all(settled);
    expect(outcomes.filter((o) => o === 'ran')).toHaveLength(10);
    const refused = outcomes.filter((o): o is UpstreamFailure => o instanceof UpstreamFailure);
    expect(refused).toHaveLength(10);
    expect(refused.every((e) => e.code === 'refresh_paced' && e.status === 503)).toBe(true);
    expect(p.counters).toEqual({ waited: 8, refused_queue_full: 10 });
  });

  it('lets every waiting refresh go once successes end the pacing', async () => {
    const p = pacer(1);
    refuse(p, 'c', 16);
    const rs = Array.from({ length: 10 }, refresh);
    const all = rs.map((r) => p.run('c', r.run));
    await turn();
    expect(p.load('c')).toEqual({ running: 1, waiting: 9 });
    // The provider answers again: 16 refusals weigh 0.64, and the fourth success takes the share below a half.
    for (let i = 0; i < 3; i++) p.record('c', 'success');
    expect(p.paced('c')).toBe(true);
    p.record('c', 'success');
    expect(p.paced('c')).toBe(false);
    await turn();
    expect(rs.every((r) => r.started)).toBe(true);
    expect(p.load('c')).toEqual({ running: 10, waiting: 0 });
    rs.forEach((r) => r.finish());
    await Promise.all(all);
  });

  it('paces one connection without holding another', async () => {
    const p = pacer(1);
    refuse(p, 'c', 16);
    const [a, b, other] = [refresh(), refresh(), refresh()];
    const all = [p.run('c', a.run), p.run('c', b.run), p.run('d', other.run)];
    await turn();
    expect([a.started, b.started, other.started]).toEqual([true, false, true]);
    [a, b, other].forEach((r) => r.finish());
    await Promise.all(all);
  });

  it('keeps the health of at most its limit of connections (one forgotten starts afresh)', () => {
    const p = pacer(4, 256, 2);
    for (const c of ['a', 'b', 'c']) refuse(p, c, 16);
    expect(['a', 'b', 'c'].map((c) => p.paced(c))).toEqual([false, true, true]);
  });
});
