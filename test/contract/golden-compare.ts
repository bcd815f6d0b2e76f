/**
 * Compares the requests a tool plans with the ones its example states, and on a difference fails naming the
 * tool and the example and showing a line diff, with the query split into its parameters (so a wrong order
 * shows as such).
 */
import { isDeepStrictEqual } from 'node:util';

export interface RequestLike {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
}

function view(r: RequestLike) {
  const q = r.url.indexOf('?');
  return {
    request: `${r.method} ${q < 0 ? r.url : r.url.slice(0, q)}`,
    query: q < 0 ? [] : r.url.slice(q + 1).split('&'),
    headers: Object.fromEntries(Object.entries(r.headers ?? {}).sort(([a], [b]) => a.localeCompare(b))),
    ...(r.body !== undefined ? { body: r.body } : {}),
  };
}

/** A line diff (longest common subsequence): `- ` only in `a`, `+ ` only in `b`, `  ` in both. */
export function lineDiff(a: string[], b: string[]): string[] {
  const common: number[][] = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--)
    for (let j = b.length - 1; j >= 0; j--)
      common[i]![j] = a[i] === b[j] ? common[i + 1]![j + 1]! + 1 : Math.max(common[i + 1]![j]!, common[i]![j + 1]!);
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      out.push(`  ${a[i++]}`);
      j++;
    } else if (i < a.length && (j === b.length || common[i + 1]![j]! >= common[i]![j + 1]!)) out.push(`- ${a[i++]}`);
    else out.push(`+ ${b[j++]}`);
  }
  return out;
}

export function assertSameRequests(label: string, planned: RequestLike[], example: RequestLike[]): void {
  const want = example.map(view);
  const got = planned.map(view);
  if (isDeepStrictEqual(got, want)) return;
  const lines = (v: unknown) => JSON.stringify(v, null, 2).split('\n');
  throw new Error(
    `${label}: the planned requests (+) differ from the example's (-)\n${lineDiff(lines(want), lines(got)).join('\n')}`,
  );
}
