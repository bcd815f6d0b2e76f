/**
 * One poll of a polling trigger, as its YAML declares it (docs/triggers.md): the list request with the instance's
 * config, `since` and `cursor`; the pages of one poll; the items read by a path or the connector's hook; each
 * identified by its id paths; items seen before (or older than the instance) dropped. Pure apart from `send`: the
 * caller writes the new state and the events in one transaction.
 */
import type { TriggerPoll, UpstreamRequest } from '../../core/tool-types.ts';

/** Ids remembered per instance, newest last: a repeated page or a look-back window is not sent again. */
export const SEEN_MAX = 1_000;

export interface FeedState {
  /** A cursor feed's position (the changes feed's page token). */
  cursor?: string;
  /** A since feed: the newest item time seen (epoch ms). */
  newest?: number;
  /** Item keys already sent or found at the start, with their time (epoch ms, or 0 when the item has none). */
  seen?: Array<[string, number]>;
}

export interface NewItem {
  key: string;
  item: Record<string, unknown>;
}

export interface PollResult {
  items: NewItem[];
  state: FeedState;
}

/** What the caller sends a request with: the provider's answer (parsed), or a thrown error. */
export type Send = (req: UpstreamRequest) => Promise<unknown>;

export function pick(value: unknown, path: readonly string[] | undefined): unknown {
  if (!path) return value;
  let v = value;
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

export function itemKey(poll: Pick<TriggerPoll, 'id'>, item: unknown): string | undefined {
  const parts: string[] = [];
  for (const path of poll.id) {
    const v = pick(item, path);
    if (v === undefined || v === null || v === '') return undefined;
    parts.push(typeof v === 'string' ? v : JSON.stringify(v));
  }
  return parts.join('\u001f');
}

function itemsOf(poll: TriggerPoll, answer: unknown): unknown[] {
  if (poll.itemsHook) return poll.itemsHook(answer);
  const list = pick(answer, poll.items);
  return Array.isArray(list) ? list : [];
}

function itemTime(poll: TriggerPoll, item: unknown): number | undefined {
  if (!poll.time) return undefined;
  const v = pick(item, poll.time);
  const t = typeof v === 'string' ? Date.parse(v) : typeof v === 'number' ? v : NaN;
  return Number.isFinite(t) ? t : undefined;
}

const one = (reqs: UpstreamRequest[]): UpstreamRequest => {
  if (reqs.length !== 1) throw new Error(`a poll sends one request at a time, the template made ${reqs.length}`);
  return reqs[0]!;
};

const text = (v: unknown): string | undefined =>
  typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined;

/**
 * Where a new instance starts: a cursor feed's first cursor, and the items listed now (remembered, never sent),
 * so that nothing that existed before the instance is an event.
 */
export async function startFeed(
  poll: TriggerPoll,
  config: Record<string, unknown>,
  createdAt: number,
  base: (host?: string) => string,
  send: Send,
): Promise<FeedState> {
  if (poll.start) {
    const answer = await send(one(poll.start.build(config, { base })));
    const cursor = text(pick(answer, poll.start.cursor));
    if (cursor === undefined) {
      throw new Error(`the provider's answer has no cursor at ${poll.start.cursor.join('.')}`);
    }
    return { cursor, seen: [] };
  }
  // A since (or plain list) feed: what is listed now is the past.
  const first = await pollFeed(poll, config, { newest: createdAt, seen: [] }, createdAt, base, send, true);
  return first.state;
}

/** One poll: the pages up to `maxPages`, the new items in the provider's order, and the state after them. */
export async function pollFeed(
  poll: TriggerPoll,
  config: Record<string, unknown>,
  state: FeedState,
  createdAt: number,
  base: (host?: string) => string,
  send: Send,
  baseline = false,
): Promise<PollResult> {
  const seen = new Map<string, number>(state.seen ?? []);
  const items: NewItem[] = [];
  let newest = state.newest ?? createdAt;
  const since = Math.max(createdAt, newest - (poll.lookbackSeconds ?? 0) * 1000);
  let cursor = state.cursor;
  let nextCursor: string | undefined;
  for (let page = 0; page < poll.maxPages; page++) {
    const input: Record<string, unknown> = { ...config };
    if (poll.time) input.since = new Date(since).toISOString();
    if (cursor !== undefined) input.cursor = cursor;
    const answer = await send(one(poll.build(input, { base })));
    for (const raw of itemsOf(poll, answer)) {
      if (!raw || typeof raw !== 'object' || Array.isArray(raw)) continue;
      const key = itemKey(poll, raw);
      if (key === undefined || seen.has(key)) continue;
      const t = itemTime(poll, raw);
      seen.set(key, t ?? 0);
      if (t !== undefined && t > newest) newest = t;
      if (baseline || (t !== undefined && t < createdAt)) continue;
      if (poll.skipWhen?.some((s) => pick(raw, s.path) === s.value)) continue;
      items.push({ key, item: raw as Record<string, unknown> });
    }
    const next = text(pick(answer, poll.nextPage));
    if (next === undefined) {
      nextCursor = text(pick(answer, poll.nextCursor));
      cursor = undefined;
      break;
    }
    cursor = next;
  }
  // A cursor feed resumes where this poll stopped: at the next page when pages were left, else at the new cursor.
  const after: FeedState = {};
  if (poll.start) after.cursor = cursor ?? nextCursor ?? state.cursor;
  if (poll.time) after.newest = newest;
  const entries = [...seen];
  after.seen = entries.length > SEEN_MAX ? entries.slice(entries.length - SEEN_MAX) : entries;
  return { items, state: after };
}
