/** A golden-test failure names the tool and the example and shows what differs. */
import { describe, expect, it } from 'vitest';
import { assertSameRequests } from './golden-compare.ts';

const example = [{ method: 'GET', url: 'https://h/items?a=1&b=2', headers: { accept: 'application/json' } }];

describe('golden comparison', () => {
  it('passes on the same requests', () => {
    expect(() => assertSameRequests('demo_list, example 1', structuredClone(example), example)).not.toThrow();
  });

  it('names the tool and example and shows the query parameters that differ, order included', () => {
    const planned = [{ ...example[0]!, url: 'https://h/items?b=2&a=1' }];
    let message = '';
    try {
      assertSameRequests('demo_list, example 2 (sorted)', planned, example);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(
      /^demo_list, example 2 \(sorted\): the planned requests \(\+\) differ from the example's \(-\)/,
    );
    expect(message).toContain(['-       "a=1",', '-       "b=2"', '+       "b=2",', '+       "a=1"'].join('\n'));
  });

  it('shows a header or body that differs', () => {
    const planned = [{ ...example[0]!, headers: { accept: 'text/plain' }, body: { n: 1 } }];
    let message = '';
    try {
      assertSameRequests('demo_list, example 1', planned, example);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain('-       "accept": "application/json"\n+       "accept": "text/plain"');
    expect(message).toContain('+     },\n+     "body": {\n+       "n": 1');
  });
});
