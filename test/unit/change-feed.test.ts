/**
 * ChangeFeed.pollOnce: the check for changes made by other processes runs once per request scope, however many
 * cached reads the request makes, and on every call without a scope.
 */
import { describe, expect, it } from 'vitest';
import { ChangeFeed } from '../../runtime/store/changes.ts';

function countingFeed() {
  const feed = new ChangeFeed({ poll: () => feed.polls++ }) as ChangeFeed & { polls: number };
  feed.polls = 0;
  return feed;
}

describe('ChangeFeed.pollOnce', () => {
  it('polls once per scope, for each new scope, and on every call without one', () => {
    const feed = countingFeed();
    const first = {};
    const second = {};
    feed.pollOnce(first);
    feed.pollOnce(first);
    feed.pollOnce(first);
    expect(feed.polls).toBe(1);
    feed.pollOnce(second);
    feed.pollOnce(second);
    expect(feed.polls).toBe(2);
    feed.pollOnce(undefined);
    feed.pollOnce(undefined);
    expect(feed.polls).toBe(4);
  });

  it('keeps the scopes of two feeds apart: each polls once for the same request', () => {
    const a = countingFeed();
    const b = countingFeed();
    const request = {};
    a.pollOnce(request);
    b.pollOnce(request);
    b.pollOnce(request);
    expect([a.polls, b.polls]).toEqual([1, 1]);
  });

  it('leaves no enumerable trace on the scope', () => {
    const feed = countingFeed();
    const request = { url: '/x' };
    feed.pollOnce(request);
    expect(Object.keys(request)).toEqual(['url']);
    expect(JSON.stringify(request)).toBe('{"url":"/x"}');
  });
});
