/**
 * The background work gives way to requests in flight (runtime/jobs/foreground.ts, issue 35: no operation that
 * freezes the service): a batch starts at a turn of the event loop with no request being served, or once it waited
 * its most; an event stream that stays open is let go of. Turns counted, not timed.
 */
import { EventEmitter } from 'node:events';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { Foreground } from '../../runtime/jobs/foreground.ts';

/** A response: something that closes. */
const response = () => new EventEmitter() as EventEmitter & { once(e: 'close', l: () => void): unknown };

/** Whether `p` settles within `turns` turns of the event loop. */
async function settlesWithin(p: Promise<unknown>, turns: number): Promise<boolean> {
  let settled = false;
  void p.then(() => (settled = true));
  for (let i = 0; i < turns && !settled; i++) await nextTurn();
  return settled;
}

describe('Foreground', () => {
  it('lets a batch start at the next turn when no request is in flight', async () => {
    const fg = new Foreground(Infinity);
    expect(await settlesWithin(fg.gap(), 2)).toBe(true);
    expect(fg.stats).toEqual({ waits: 0, timedOut: 0 });
  });

  it('holds a batch while a request is served, and lets it start once the response closes', async () => {
    const fg = new Foreground(Infinity);
    const [a, b] = [response(), response()];
    fg.track(a);
    fg.track(b);
    const gap = fg.gap();
    expect(await settlesWithin(gap, 50)).toBe(false);
    a.emit('close');
    expect(await settlesWithin(gap, 50)).toBe(false);
    b.emit('close');
    expect(await settlesWithin(gap, 3)).toBe(true);
    expect(fg.active).toBe(0);
    expect(fg.stats.waits).toBe(1);
  });

  it('serves first a request that came in the turn the last one ended', async () => {
    const fg = new Foreground(Infinity);
    const [a, b] = [response(), response()];
    fg.track(a);
    const gap = fg.gap();
    expect(await settlesWithin(gap, 5)).toBe(false);
    a.emit('close');
    fg.track(b);
    expect(await settlesWithin(gap, 50)).toBe(false);
    b.emit('close');
    expect(await settlesWithin(gap, 3)).toBe(true);
  });

  it('lets go of an event stream once open: it holds no batch, and its close counts once', async () => {
    const fg = new Foreground(Infinity);
    const [stream, other] = [response(), response()];
    fg.track(stream);
    fg.release(stream);
    fg.release(stream);
    expect(fg.active).toBe(0);
    expect(await settlesWithin(fg.gap(), 2)).toBe(true);
    fg.track(other);
    stream.emit('close');
    expect(fg.active).toBe(1);
    other.emit('close');
    expect(fg.active).toBe(0);
  });

  it('waits one turn only where batches do not hold the event loop (a longest wait of 0: PostgreSQL)', async () => {
    const fg = new Foreground(0);
    fg.track(response());
    expect(await settlesWithin(fg.gap(), 2)).toBe(true);
    expect(fg.stats).toEqual({ waits: 0, timedOut: 0 });
  });

  it('under requests that never pause, starts the batch after its longest wait', async () => {
    const fg = new Foreground(5);
    fg.track(response());
    await fg.gap();
    expect(fg.stats).toEqual({ waits: 1, timedOut: 1 });
    expect(fg.active).toBe(1);
  });
});
